package views

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"dataplatform/store"
	"dataplatform/store/datasets"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// Subject is what a change touches: a dataset (or a view) by id, what its messages call it
// ("dataset orders"), and its relations (quoted schema.relation).
type Subject struct {
	ID, Label string
	Relations []string
}

// DatasetSubject is a dataset as a Subject: its table, or a connected dataset's views.
func DatasetSubject(d *store.Dataset) (Subject, error) {
	ts, err := datasets.Tables(d)
	if err != nil {
		return Subject{}, err
	}
	s := Subject{ID: d.ID, Label: "dataset " + d.Name}
	for _, t := range ts {
		s.Relations = append(s.Relations, t.QueryName())
	}
	return s, nil
}

// ViewSubject is a view as a Subject.
func ViewSubject(v *store.View) Subject {
	return Subject{ID: v.ID, Label: "view " + v.Name, Relations: []string{Relation(v.OrgID, v.ID)}}
}

// dep is a column (attnum > 0) or a whole relation (0) of a subject a view read.
type dep struct {
	View    string `db:"view"`
	Rel     uint32 `db:"rel"`
	RelName string `db:"relname"`
	Subject int    `db:"subject"`
	Attnum  int    `db:"attnum"`
	Name    string `db:"attname"`
	Type    string `db:"type"`
}

// AroundDataset is Around for the one dataset d (its table changes as a schema change or an
// import with add_columns changes it).
func AroundDataset(ctx context.Context, tx *sqlx.Tx, d *store.Dataset, now time.Time, ddl func() error) error {
	s, err := DatasetSubject(d)
	if err != nil {
		return err
	}
	return Around(ctx, tx, now, []Subject{s}, ddl)
}

// Around runs ddl in tx, which changes or drops the subjects' relations: the views that read
// them (directly or through other views) are dropped first, since PostgreSQL refuses to change
// what a view reads, and recreated after it, in order, from their kept text. A view that no
// longer compiles is marked broken with what changed ("column amount of dataset orders was
// dropped"); one that was broken is tried again (what broke it may be back). An error of ddl
// is returned as is, and the caller rolls tx back.
func Around(ctx context.Context, tx *sqlx.Tx, now time.Time, subjects []Subject, ddl func() error) error {
	ids := make([]string, len(subjects))
	var rels []string
	relSubject := []int{}
	for i, s := range subjects {
		ids[i] = s.ID
		for _, r := range s.Relations {
			rels, relSubject = append(rels, r), append(relSubject, i)
		}
	}
	vs, _, err := store.ViewsReading(ctx, tx, ids)
	if err != nil {
		return err
	}
	if len(vs) == 0 {
		return ddl()
	}
	var live []string
	for _, v := range vs {
		if v.Status == "active" {
			live = append(live, Relation(v.OrgID, v.ID))
		}
	}
	// What each view reads of the subjects, to say what changed when it no longer compiles.
	var deps []dep
	if len(live) > 0 {
		err := tx.SelectContext(ctx, &deps, `SELECT DISTINCT v.relname AS view, d.refobjid::int8 AS rel, s.rel AS relname, s.i - 1 AS subject, d.refobjsubid AS attnum,
				coalesce(a.attname, '') AS attname, coalesce(format_type(a.atttypid, a.atttypmod), '') AS type
			FROM unnest($1::text[]) WITH ORDINALITY AS s(rel, i)
			JOIN pg_depend d ON d.refclassid = 'pg_class'::regclass AND d.refobjid = to_regclass(s.rel)
			JOIN pg_rewrite r ON d.classid = 'pg_rewrite'::regclass AND r.oid = d.objid
			JOIN pg_class v ON v.oid = r.ev_class AND v.oid <> d.refobjid
			LEFT JOIN pg_attribute a ON a.attrelid = d.refobjid AND a.attnum = d.refobjsubid AND d.refobjsubid > 0
			WHERE v.oid = ANY ($2::regclass[])
			ORDER BY 1, 4, 5`, pq.StringArray(rels), pq.StringArray(live))
		if err != nil {
			return err
		}
		for i := range deps {
			deps[i].Subject = relSubject[deps[i].Subject]
		}
		if _, err := tx.ExecContext(ctx, `DROP VIEW IF EXISTS `+strings.Join(live, ", ")); err != nil {
			return err
		}
	}
	if err := ddl(); err != nil {
		return err
	}
	broken := map[string]string{} // view id → its name, of the views that are broken now
	for i := range vs {
		v := &vs[i]
		was := v.Status
		reason := ""
		for _, r := range v.DatasetIDs {
			if name, ok := broken[r]; ok {
				reason = "the view " + name + brokenRead
				break
			}
		}
		if reason == "" {
			reason, err = recreate(ctx, tx, v)
			if err != nil {
				return err
			}
			if reason != "" {
				if was == "broken" && v.Error != nil && !strings.HasSuffix(*v.Error, brokenRead) {
					reason = *v.Error // still broken, for the reason it broke
				} else if why := changed(ctx, tx, subjects, deps, v.ID); why != "" {
					reason = why
				} else {
					reason = "it no longer runs after a change to " + labels(subjects) + ": " + reason
				}
			}
		}
		if reason != "" {
			broken[v.ID] = v.Name
			v.Status, v.Error = "broken", &reason
		} else {
			v.Status, v.Error = "active", nil
		}
		if v.Status != was || v.Status == "active" {
			if v.Status != was {
				v.UpdatedAt = now
			}
			if err := store.UpdateView(ctx, tx, v); err != nil {
				return err
			}
		}
	}
	return nil
}

// brokenRead ends the reason of a view broken because a view it reads is.
const brokenRead = " it reads is broken"

// recreate creates a view again from its kept text, in a savepoint: "" when it compiles (its
// sql and columns renewed), else the database's reason.
func recreate(ctx context.Context, tx *sqlx.Tx, v *store.View) (string, error) {
	if _, err := tx.ExecContext(ctx, `SAVEPOINT dp_view`); err != nil {
		return "", err
	}
	if err := createView(ctx, tx, v.OrgID, v.ID, v.SQL); err != nil {
		if _, rerr := tx.ExecContext(ctx, `ROLLBACK TO SAVEPOINT dp_view`); rerr != nil {
			return "", rerr
		}
		var pe *pq.Error
		if errors.As(err, &pe) {
			return pe.Message, nil
		}
		return "", err
	}
	sql, cols, err := read(ctx, tx, v.OrgID, v.ID)
	if err != nil {
		return "", err
	}
	cj, _ := json.Marshal(cols)
	v.SQL, v.Columns = sql, string(cj)
	_, err = tx.ExecContext(ctx, `RELEASE SAVEPOINT dp_view`)
	return "", err
}

// changed says what changed of what the view read: a subject gone, a column dropped, renamed
// or of another type ("" when none of it did).
func changed(ctx context.Context, tx *sqlx.Tx, subjects []Subject, deps []dep, viewID string) string {
	for _, d := range deps {
		if d.View != viewID {
			continue
		}
		label := subjects[d.Subject].Label
		var now []struct {
			Name    string `db:"attname"`
			Type    string `db:"type"`
			Dropped bool   `db:"attisdropped"`
		}
		// A dataset's table keeps its oid through a change of its columns, which keep their
		// numbers (so a rename shows); a redefined view is a new relation of the same name,
		// whose columns are known by name only.
		byOID := `SELECT coalesce(a.attname, '') AS attname, coalesce(format_type(a.atttypid, a.atttypmod), '') AS type,
				coalesce(a.attisdropped, true) AS attisdropped
			FROM pg_class c LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum = $2 WHERE c.oid = $1::oid`
		args := []any{d.Rel, d.Attnum}
		var exists bool
		if err := tx.GetContext(ctx, &exists, `SELECT EXISTS (SELECT 1 FROM pg_class WHERE oid = $1::oid)`, d.Rel); err != nil {
			return ""
		}
		if !exists {
			byOID = `SELECT coalesce(a.attname, '') AS attname, coalesce(format_type(a.atttypid, a.atttypmod), '') AS type,
					coalesce(a.attisdropped, true) AS attisdropped
				FROM pg_class c LEFT JOIN pg_attribute a ON a.attrelid = c.oid AND a.attname = $2 AND a.attnum > 0
				WHERE c.oid = to_regclass($1)`
			args = []any{d.RelName, d.Name}
		}
		if err := tx.SelectContext(ctx, &now, byOID, args...); err != nil {
			return ""
		}
		switch {
		case len(now) == 0:
			return label + " was deleted"
		case d.Attnum == 0:
			continue
		case now[0].Dropped || now[0].Name == "":
			return fmt.Sprintf("column %s of %s was dropped", d.Name, label)
		case now[0].Name != d.Name:
			return fmt.Sprintf("column %s of %s was renamed to %s", d.Name, label, now[0].Name)
		case now[0].Type != d.Type:
			return fmt.Sprintf("column %s of %s changed type from %s to %s", d.Name, label, d.Type, now[0].Type)
		}
	}
	return ""
}

func labels(subjects []Subject) string {
	out := make([]string, len(subjects))
	for i, s := range subjects {
		out[i] = s.Label
	}
	return strings.Join(out, ", ")
}
