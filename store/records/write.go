// One record read, and the writes: create, update, delete, and their bulk forms.

package records

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"dataplatform/store/datasets"
	"dataplatform/store/ingest"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// Get reads one live record.
func (t *Table) Get(ctx context.Context, q sqlx.QueryerContext, id string, fields []string, lock bool) (json.RawMessage, error) {
	i := 0
	if lock {
		i = 1
	}
	qs := t.getAll[i]
	if qs == "" || !slices.Equal(fields, t.all) {
		qs = t.getSQL(fields, lock)
	}
	var j []byte
	err := sqlx.GetContext(ctx, q, &j, qs, id)
	if errors.Is(err, errNoRows) {
		return nil, ErrNotFound
	} else if err != nil {
		return nil, fmt.Errorf("read record: %w", err)
	}
	return j, nil
}

// getSQL is Get's statement: the record of fields by its key ($1), live, locked or not.
func (t *Table) getSQL(fields []string, lock bool) string {
	qs := `SELECT to_json(r) FROM (SELECT ` + t.rowJSON(fields, "") + ` FROM ` + t.Qualified() + ` WHERE ` + t.keyIs("$1") + ` AND ` + t.Live()
	if lock {
		qs += ` FOR UPDATE`
	}
	return qs + `) r`
}

// values turns a body's fields into column = parameter pairs, converting each value with
// the column's type (the description has already checked them).
func (t *Table) values(b *builder, body map[string]any) ([]string, []string, error) {
	var cols, params []string
	for _, c := range t.Columns {
		v, ok := body[c.Name]
		if !ok || c.Computed {
			continue
		}
		if str, isString := v.(string); isString && c.Type == ingest.JSONB {
			// A body's string is a JSON string, which jsonb holds; Column.Text would read it
			// as JSON text, as a CSV cell is (FuzzJSONPatch: "Oslo" was refused, and "[1]"
			// would have been stored as an array).
			q, _ := json.Marshal(str)
			v = json.RawMessage(q)
		}
		s, null, err := c.Text(v)
		if err != nil {
			var re *ingest.RowError
			if errors.As(err, &re) {
				return nil, nil, &FieldError{"body." + c.Name, "type", re.Reason}
			}
			return nil, nil, err
		}
		cols = append(cols, pq.QuoteIdentifier(c.Name))
		if null {
			params = append(params, "NULL")
		} else {
			params = append(params, b.arg(s)+"::"+datasets.SQLType(c))
		}
	}
	return cols, params, nil
}

// Insert adds a record and returns it.
func (t *Table) Insert(ctx context.Context, q sqlx.QueryerContext, body map[string]any, fields []string) (json.RawMessage, error) {
	var b builder
	cols, params, err := t.values(&b, body)
	if err != nil {
		return nil, err
	}
	ins := `INSERT INTO ` + t.Qualified() + ` DEFAULT VALUES`
	if len(cols) > 0 {
		ins = `INSERT INTO ` + t.Qualified() + ` (` + strings.Join(cols, ", ") + `) VALUES (` + strings.Join(params, ", ") + `)`
	}
	var j []byte
	if err = sqlx.GetContext(ctx, q, &j, `WITH r AS (`+ins+` RETURNING *) SELECT to_json(x) FROM (SELECT `+t.rowJSON(fields, "r")+` FROM r) x`, b.args...); err != nil {
		return nil, fmt.Errorf("insert record: %w", err)
	}
	return j, nil
}

// Update writes body's fields (replace: every column, absent ones reset to their default)
// to record id at version, bumping version and updated_at; false when version is stale.
// A connected table has no version: version is not looked at (the caller compared ETags).
func (t *Table) Update(ctx context.Context, q sqlx.QueryerContext, id string, version int, body map[string]any, replace bool, fields []string) (json.RawMessage, bool, error) {
	body, err := t.keepKey(body, id)
	if err != nil {
		return nil, false, err
	}
	var b builder
	cols, params, err := t.values(&b, body)
	if err != nil {
		return nil, false, err
	}
	var sets []string
	if t.System() {
		sets = []string{"version = version + 1", "updated_at = now()"}
	}
	for i := range cols {
		sets = append(sets, cols[i]+" = "+params[i])
	}
	if replace {
		for _, c := range t.Columns {
			if _, ok := body[c.Name]; !ok && !c.Computed && !c.Key {
				sets = append(sets, pq.QuoteIdentifier(c.Name)+" = DEFAULT")
			}
		}
	}
	if len(sets) == 0 { // nothing to write
		j, err := t.Get(ctx, q, id, fields, false)
		return j, err == nil, err
	}
	where := t.keyIs(b.arg(id)) + ` AND ` + t.Live()
	if t.System() {
		where += ` AND version = ` + b.arg(version)
	}
	var j []byte
	err = sqlx.GetContext(ctx, q, &j, `WITH r AS (UPDATE `+t.Qualified()+` SET `+strings.Join(sets, ", ")+` WHERE `+where+
		` RETURNING *) SELECT to_json(x) FROM (SELECT `+t.rowJSON(fields, "r")+` FROM r) x`, b.args...)
	if errors.Is(err, errNoRows) {
		return nil, false, nil
	} else if err != nil {
		return nil, false, fmt.Errorf("update record: %w", err)
	}
	return j, true, nil
}

// keepKey is body without an uploaded record's key: the key names the record and does not
// change (links and other datasets' references follow it). A body may repeat it unchanged
// (a record read and written back); another value is refused. id "" (several records) refuses
// any value.
func (t *Table) keepKey(body map[string]any, id string) (map[string]any, error) {
	c, ok := datasets.UserKey(t.Columns)
	if !t.System() || !ok {
		return body, nil
	}
	v, ok := body[c.Name]
	if !ok {
		return body, nil
	}
	if text, null, err := c.Text(v); id == "" || err != nil || null || text != id {
		return nil, &FieldError{"body." + c.Name, "immutable", "a record's key (" + c.Name + ") does not change; create a record with the new key and delete this one"}
	}
	out := make(map[string]any, len(body))
	for k, x := range body {
		if k != c.Name {
			out[k] = x
		}
	}
	return out, nil
}

// Delete removes a record: soft (deleted_at set) or for good. It returns when it was deleted.
// A connected table's records are only deleted for good.
func (t *Table) Delete(ctx context.Context, q sqlx.QueryerContext, id string, soft bool) (time.Time, error) {
	qs := `WITH r AS (DELETE FROM ` + t.Qualified() + ` WHERE ` + t.keyIs("$1") + ` AND ` + t.Live() + ` RETURNING 1) SELECT now() FROM r`
	if soft && t.System() {
		qs = `UPDATE ` + t.Qualified() + ` SET deleted_at = now(), updated_at = now(), version = version + 1 WHERE ` + t.keyIs("$1") + ` AND deleted_at IS NULL
			RETURNING deleted_at`
	}
	var at time.Time
	err := sqlx.GetContext(ctx, q, &at, qs, id)
	if errors.Is(err, errNoRows) {
		return at, ErrNotFound
	} else if err != nil {
		return at, fmt.Errorf("delete record: %w", err)
	}
	return at.UTC(), nil
}

// Referring lists the keys of the live records whose column col holds value (the records
// referring to another dataset's record through a relationship).
func (t *Table) Referring(ctx context.Context, q sqlx.QueryerContext, col, value string) ([]string, error) {
	c, ok := t.cols[col]
	if !ok || t.key == "" {
		return nil, nil
	}
	text, _, err := c.Text(value)
	if err != nil {
		return nil, nil // a value this column cannot hold: nothing refers to it
	}
	k := pq.QuoteIdentifier(t.key)
	var ids []string
	err = sqlx.SelectContext(ctx, q, &ids, `SELECT `+k+`::text FROM `+t.Qualified()+` WHERE `+pq.QuoteIdentifier(col)+` = $1::`+datasets.SQLType(c)+
		` AND `+t.Live()+` ORDER BY `+k, text)
	return ids, err
}

// Selector picks records for a bulk update or delete: by key, and/or by filters.
type Selector struct {
	IDs     []string // key values as text
	Filters []Filter
}

func (t *Table) selectWhere(b *builder, s Selector) error {
	if len(s.IDs) == 0 && len(s.Filters) == 0 {
		return &FieldError{"ids", "required", "name the records with ids or a filter"}
	}
	if err := t.where(b, s.Filters, ""); err != nil {
		return err
	}
	if len(s.IDs) > 0 {
		b.conds = append(b.conds, pq.QuoteIdentifier(t.key)+" = ANY("+b.arg(pq.Array(s.IDs))+"::"+datasets.SQLType(t.cols[t.key])+"[])")
	}
	return nil
}

// UpdateWhere writes body's fields to every selected live record (version and updated_at
// move on) and returns their keys (as JSON values).
func (t *Table) UpdateWhere(ctx context.Context, q sqlx.QueryerContext, s Selector, body map[string]any) ([]json.RawMessage, error) {
	body, err := t.keepKey(body, "")
	if err != nil {
		return nil, err
	}
	var b builder
	cols, params, err := t.values(&b, body)
	if err != nil {
		return nil, err
	}
	if len(cols) == 0 {
		return nil, &FieldError{"data", "required", "an update needs data"}
	}
	if err := t.selectWhere(&b, s); err != nil {
		return nil, err
	}
	var sets []string
	if t.System() {
		sets = []string{"version = version + 1", "updated_at = now()"}
	}
	for i := range cols {
		sets = append(sets, cols[i]+" = "+params[i])
	}
	var ids []json.RawMessage
	err = sqlx.SelectContext(ctx, q, &ids, `UPDATE `+t.Qualified()+` SET `+strings.Join(sets, ", ")+` WHERE `+strings.Join(b.conds, " AND ")+
		` RETURNING to_json(`+pq.QuoteIdentifier(t.key)+`)`, b.args...)
	if err != nil {
		return nil, fmt.Errorf("update records: %w", err)
	}
	return ids, nil
}

// DeleteWhere deletes every selected live record (soft or for good; connected tables only
// for good) and returns their keys (as JSON values).
func (t *Table) DeleteWhere(ctx context.Context, q sqlx.QueryerContext, s Selector, soft bool) ([]json.RawMessage, error) {
	var b builder
	if err := t.selectWhere(&b, s); err != nil {
		return nil, err
	}
	where := strings.Join(b.conds, " AND ")
	ret := ` RETURNING to_json(` + pq.QuoteIdentifier(t.key) + `)`
	qs := `DELETE FROM ` + t.Qualified() + ` WHERE ` + where + ret
	if soft && t.System() {
		qs = `UPDATE ` + t.Qualified() + ` SET deleted_at = now(), updated_at = now(), version = version + 1 WHERE ` + where + ret
	}
	var ids []json.RawMessage
	if err := sqlx.SelectContext(ctx, q, &ids, qs, b.args...); err != nil {
		return nil, fmt.Errorf("delete records: %w", err)
	}
	return ids, nil
}
