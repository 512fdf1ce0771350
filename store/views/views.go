// Package views keeps a project's saved views: a named SELECT over its datasets (and other
// views), written as SQL or as a structured join, checked like a project query and kept as a
// real PostgreSQL view in the organization's schema (security_invoker, so that the query
// role's grants and row-level security apply to whoever reads it). Queries name a view like a
// dataset (queries.ProjectSources).
//
// PostgreSQL refuses to change or drop what a view reads, so every change to a dataset's
// table runs inside Around: the views reading it are dropped first and recreated afterwards
// in the same transaction; one that no longer compiles is marked broken with what changed.
package views

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"dataplatform/store"
	"dataplatform/store/datasets"
	"dataplatform/store/extdb"
	"dataplatform/store/queries"
	"dataplatform/store/usersql"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// Column is a column of a view.
type Column = store.ViewColumn

// Definition is what a view selects: exactly one of SQL (one SELECT over the project's
// datasets and views by name) and Join.
type Definition struct {
	SQL  *string `json:"sql,omitempty"`
	Join *Join   `json:"join,omitempty"`
}

// Join is a structured join of datasets (or views): base, joined in order by joins, selecting
// columns (every column of each, when empty).
type Join struct {
	Base    string       `json:"base"`
	Joins   []JoinStep   `json:"joins"`
	Columns []JoinColumn `json:"columns,omitempty"`
}

// JoinStep joins one more dataset on equal columns.
type JoinStep struct {
	Dataset string   `json:"dataset"`
	Type    string   `json:"type"` // inner or left
	On      []JoinOn `json:"on"`
}

// JoinOn is one equality of a join's condition, each side "dataset.column".
type JoinOn struct {
	Left  string `json:"left"`
	Right string `json:"right"`
}

// JoinColumn is a column of a join's result: source "dataset.column", named as (its own
// name when empty).
type JoinColumn struct {
	Source string `json:"source"`
	As     string `json:"as,omitempty"`
}

// DefinitionError is a definition that is wrong whatever the data: Field is its path under
// the definition ("join.joins[0].on[1].left"). Code unknown_dataset is a name that is no
// dataset or view of the project (Available lists those).
type DefinitionError struct {
	Field, Code, Message string
	Available            []string
}

func (e *DefinitionError) Error() string { return e.Field + ": " + e.Message }

// Compiled is a definition checked against the project: PostgreSQL's text of the view, its
// columns, and the datasets and views it reads.
type Compiled struct {
	SQL     string
	Columns []Column
	Reads   []string
}

// Relation is the quoted name of a view's PostgreSQL view.
func Relation(orgID, viewID string) string { return datasets.Table(orgID, viewID) }

// Check compiles and validates def against the project as a view would be created, without
// keeping anything: the text of the view PostgreSQL would keep, and its columns. Its errors
// are those of Create.
func Check(ctx context.Context, db *sqlx.DB, orgID, projectID string, def Definition) (sql string, cols []Column, err error) {
	tx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		return "", nil, err
	}
	defer tx.Rollback()
	c, err := compile(ctx, db, tx, orgID, projectID, store.NewID("vw"), def, "")
	if err != nil {
		return "", nil, err
	}
	return c.SQL, c.Columns, nil
}

// Create makes the PostgreSQL view of v from def in tx and fills v's sql, columns and the
// datasets it reads. Errors: *DefinitionError; what queries.Prepare refuses (usersql's
// *SyntaxError and *ForbiddenError, *queries.UnknownError, *queries.BrokenError); the
// database's *pq.Error for SQL that does not plan or create (a missing column, a type).
// The organization's query role must exist (datasets.EnsureQueryRole) before tx changes
// anything: making it grants on every relation of the schema, and would wait for tx.
func Create(ctx context.Context, db *sqlx.DB, tx *sqlx.Tx, v *store.View, def Definition) error {
	c, err := compile(ctx, db, tx, v.OrgID, v.ProjectID, v.ID, def, v.ID)
	if err != nil {
		return err
	}
	dj, err := json.Marshal(def)
	if err != nil {
		return err
	}
	cj, _ := json.Marshal(c.Columns)
	v.Definition, v.SQL, v.Columns, v.DatasetIDs, v.Status, v.Error = string(dj), c.SQL, string(cj), pq.StringArray(c.Reads), "active", nil
	return nil
}

// compile checks def (the view self, "" when new, may not read itself or what reads it),
// plans it through the sandbox under the organization's query role, and creates it in tx as
// the view id.
func compile(ctx context.Context, db *sqlx.DB, tx *sqlx.Tx, orgID, projectID, id string, def Definition, self string) (*Compiled, error) {
	sources, err := queries.ProjectSources(ctx, tx, projectID)
	if err != nil {
		return nil, err
	}
	if self != "" { // a view cannot read itself, nor a view that reads it
		readers, _, err := store.ViewsReading(ctx, tx, []string{self})
		if err != nil {
			return nil, err
		}
		skip := map[string]bool{self: true}
		for _, r := range readers {
			skip[r.ID] = true
		}
		kept := sources[:0]
		for _, s := range sources {
			if !skip[s.ID] {
				kept = append(kept, s)
			}
		}
		sources = kept
	}
	var text string
	switch {
	case def.SQL != nil && def.Join == nil:
		text = *def.SQL
	case def.Join != nil && def.SQL == nil:
		if text, err = compileJoin(def.Join, sources); err != nil {
			return nil, err
		}
	default:
		return nil, &DefinitionError{Field: "", Code: "one_of", Message: "a definition has exactly one of sql and join"}
	}
	prep, err := queries.Prepare(text, sources)
	if err != nil {
		return nil, err
	}
	if len(prep.Params) > 0 {
		return nil, &DefinitionError{Field: "sql", Code: "placeholders", Message: "a view cannot have {{placeholders}}: " +
			"write the values into its SQL, or filter the view in the query that reads it"}
	}
	// The SQL must run for the organization's query role, as every read of the view will
	// (made once per process; before tx changes anything, see Create).
	if err := datasets.EnsureQueryRole(ctx, db, orgID); err != nil {
		return nil, err
	}
	if _, err := usersql.RunQuery(ctx, db, orgID, prep.SQL, nil, usersql.QueryOptions{Timeout: 30 * time.Second, PlanOnly: true}); err != nil {
		return nil, sqlError(err, prep.SQL, len(`EXPLAIN (FORMAT JSON) `))
	}
	if err := createView(ctx, tx, orgID, id, prep.SQL); err != nil {
		return nil, sqlError(err, prep.SQL, len(createPrefix(orgID, id)))
	}
	sql, cols, err := read(ctx, tx, orgID, id)
	if err != nil {
		return nil, err
	}
	c := &Compiled{SQL: sql, Columns: cols, Reads: []string{}}
	for _, u := range prep.Used {
		c.Reads = append(c.Reads, u.ID)
	}
	return c, nil
}

func createPrefix(orgID, id string) string {
	return `CREATE VIEW ` + Relation(orgID, id) + ` WITH (security_invoker = true) AS `
}

// createView creates the view and grants reading it to the organization's query role, as
// dataset tables are.
func createView(ctx context.Context, tx *sqlx.Tx, orgID, id, sql string) error {
	if err := withLimits(ctx, tx, func() error {
		_, err := tx.ExecContext(ctx, createPrefix(orgID, id)+sql)
		return err
	}); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `GRANT SELECT ON `+Relation(orgID, id)+` TO `+pq.QuoteIdentifier(datasets.QueryRole(orgID)))
	return err
}

// withLimits runs fn with the functions of user SQL's search path (its tables are named
// with their schemas): a view binds repeat, generate_series and friends to the versions
// that bound their size, as a query does, and its text reads back with their bare names.
func withLimits(ctx context.Context, tx *sqlx.Tx, fn func() error) error {
	var prev string
	if err := tx.GetContext(ctx, &prev, `SELECT current_setting('search_path')`); err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, `SELECT set_config('search_path', $1, true)`, usersql.FunctionPath); err != nil {
		return err
	}
	if err := fn(); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `SELECT set_config('search_path', $1, true)`, prev)
	return err
}

// SQLError is the database's refusal of a view's SQL (a *pq.Error), whose position is one
// in SQL, the text that was checked (datasets named by their tables).
type SQLError struct {
	Err error
	SQL string
}

func (e *SQLError) Error() string { return e.Err.Error() }
func (e *SQLError) Unwrap() error { return e.Err }

// sqlError is a database error of a statement that ran sql after shift characters, with its
// position moved back into sql; other errors pass.
func sqlError(err error, sql string, shift int) error {
	var pe *pq.Error
	if !errors.As(err, &pe) {
		return err
	}
	if pos, perr := strconv.Atoi(pe.Position); perr == nil && pos > shift {
		pe.Position = strconv.Itoa(pos - shift)
	}
	return &SQLError{Err: err, SQL: sql}
}

// read is PostgreSQL's text of a view (what it is recreated from) and its columns.
func read(ctx context.Context, tx *sqlx.Tx, orgID, id string) (string, []Column, error) {
	var sql string
	if err := withLimits(ctx, tx, func() error {
		return tx.GetContext(ctx, &sql, `SELECT pg_get_viewdef($1::regclass, true)`, Relation(orgID, id))
	}); err != nil {
		return "", nil, err
	}
	var rows []struct {
		Name string `db:"attname"`
		Type string `db:"type"`
	}
	if err := tx.SelectContext(ctx, &rows, `SELECT attname, format_type(atttypid, atttypmod) AS type FROM pg_attribute
		WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum`, Relation(orgID, id)); err != nil {
		return "", nil, err
	}
	cols := make([]Column, len(rows))
	for i, r := range rows {
		// PostgreSQL keeps no NOT NULL through a view: every column may be NULL.
		cols[i] = Column{Name: r.Name, Type: string(extdb.PGType(r.Type)), Nullable: true}
	}
	return strings.TrimRight(strings.TrimSpace(sql), ";"), cols, nil
}

// Drop drops a view's PostgreSQL view (a broken view has none).
func Drop(ctx context.Context, tx *sqlx.Tx, v *store.View) error {
	_, err := tx.ExecContext(ctx, `DROP VIEW IF EXISTS `+Relation(v.OrgID, v.ID))
	return err
}

// DropScope drops the PostgreSQL views of a project's or an organization's views (scope
// "project" or "organization"), before their datasets' tables go; the rows go by cascade.
func DropScope(ctx context.Context, tx *sqlx.Tx, scope, id string) error {
	vs, err := store.ScopeViews(ctx, tx, scope, id)
	if err != nil || len(vs) == 0 {
		return err
	}
	rels := make([]string, len(vs))
	for i, v := range vs {
		rels[i] = Relation(v.OrgID, v.ID)
	}
	_, err = tx.ExecContext(ctx, `DROP VIEW IF EXISTS `+strings.Join(rels, ", "))
	return err
}

// Moved renews the text kept of an organization's views after their PostgreSQL views moved
// into its schema with the tables they read (datasets.MoveOrganization), which PostgreSQL's
// text names.
func Moved(ctx context.Context, tx *sqlx.Tx, orgID string) error {
	vs, err := store.ScopeViews(ctx, tx, "organization", orgID)
	if err != nil {
		return fmt.Errorf("move views: %w", err)
	}
	for i := range vs {
		v := &vs[i]
		if v.Status != "active" {
			continue
		}
		if v.SQL, _, err = read(ctx, tx, orgID, v.ID); err != nil {
			return fmt.Errorf("move views: %w", err)
		}
		if err := store.UpdateView(ctx, tx, v); err != nil {
			return fmt.Errorf("move views: %w", err)
		}
	}
	return nil
}

// Loaded is a view with its definition and columns read.
type Loaded struct {
	*store.View
	Def  Definition
	Cols []Column
}

// Load is a view of the project with its definition and columns (store.ErrNotFound when the
// project has none of that id). A broken view (Status "broken", Error why) has no PostgreSQL
// view to read.
func Load(ctx context.Context, q sqlx.QueryerContext, projectID, id string) (*Loaded, error) {
	v, err := store.ViewByID(ctx, q, projectID, id, false)
	if err != nil {
		return nil, fmt.Errorf("load view: %w", err)
	}
	out := &Loaded{View: v}
	if err := json.Unmarshal([]byte(v.Definition), &out.Def); err != nil {
		return nil, fmt.Errorf("load view: %w", err)
	}
	return out, json.Unmarshal([]byte(v.Columns), &out.Cols)
}
