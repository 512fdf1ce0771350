package datasets

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"dataplatform/store"
	"dataplatform/store/ingest"
	"dataplatform/store/pgtest"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

func ptr[T any](v T) *T { return &v }

// project is an organization with one project (and its owner) in a database of its own.
type project struct {
	st    *store.Store
	org   string
	id    string
	owner string
	now   time.Time
}

func newProject(t *testing.T) *project {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	now := time.Date(2024, 6, 1, 12, 0, 0, 0, time.UTC)
	p := &project{st: st, now: now}
	p.owner, p.org, p.id = pgtest.Tenant(t, st, now)
	if err := EnsureSchema(ctx, st.DB, p.org); err != nil {
		t.Fatal(err)
	}
	return p
}

// dataset creates an active file dataset of the project with a table made by createTable
// from cols, keyed as the ingest keys it (the key column marked in cols, or the generated id),
// with its row security, and inserts rows (values in the order of cols; nil is NULL).
func (p *project) dataset(t *testing.T, name string, cols []ingest.Column, rows ...[]any) *store.Dataset {
	t.Helper()
	d := p.loaded(t, name, cols, rows...)
	table := Table(d.TableSchema, d.ID)
	pk := `ALTER TABLE ` + table + ` ADD PRIMARY KEY (id)`
	if k, ok := UserKey(cols); ok && k.Name != "id" {
		pk = `ALTER TABLE ` + table + ` DROP COLUMN id, ADD PRIMARY KEY (` + pq.QuoteIdentifier(k.Name) + `)`
	}
	for _, q := range append([]string{pk}, RowSecurity(table)...) {
		if _, err := p.st.DB.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return d
}

// tableColumns are the table's columns as PostgreSQL describes them: name type [NOT NULL]
// [= default], in order.
func tableColumns(t *testing.T, db *sqlx.DB, d *store.Dataset) []string {
	t.Helper()
	var out []string
	err := db.Select(&out, `SELECT column_name || ' ' || format_type(a.atttypid, a.atttypmod) || CASE WHEN a.attnotnull THEN ' NOT NULL' ELSE '' END ||
			coalesce(' = ' || pg_get_expr(ad.adbin, ad.adrelid), '')
		FROM information_schema.columns c
		JOIN pg_attribute a ON a.attrelid = (quote_ident(c.table_schema) || '.' || quote_ident(c.table_name))::regclass AND a.attname = c.column_name
		LEFT JOIN pg_attrdef ad ON ad.adrelid = a.attrelid AND ad.adnum = a.attnum
		WHERE c.table_schema = $1 AND c.table_name = $2 AND a.attidentity = '' ORDER BY c.ordinal_position`, d.TableSchema, d.ID)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// tableConstraints are the names of the table's CHECK and UNIQUE constraints, sorted.
func tableConstraints(t *testing.T, db *sqlx.DB, d *store.Dataset) []string {
	t.Helper()
	var out []string
	if err := db.Select(&out, `SELECT conname FROM pg_constraint WHERE conrelid = $1::regclass AND contype IN ('c', 'u') ORDER BY 1`,
		Table(d.TableSchema, d.ID)); err != nil {
		t.Fatal(err)
	}
	return out
}

// colNames are the names of described columns ("name type ...").
func colNames(cols []string) []string {
	var out []string
	for _, c := range cols {
		out = append(out, strings.Fields(c)[0])
	}
	return out
}

func pqCode(err error) string {
	var pe *pq.Error
	if errors.As(err, &pe) {
		return string(pe.Code)
	}
	return ""
}

// declared is a dataset declared with every kind of constraint.
var declared = []ingest.Column{
	{Name: "name", Type: ingest.Text, Constraints: &ingest.Constraints{MinLength: ptr(2), MaxLength: ptr(10)}},
	{Name: "email", Type: ingest.Text, Nullable: true, Constraints: &ingest.Constraints{Unique: true, Format: "email"}},
	{Name: "status", Type: ingest.Text, Constraints: &ingest.Constraints{Enum: []string{"pending", "active"}, Default: json.RawMessage(`"pending"`)}},
	{Name: "age", Type: ingest.Integer, Nullable: true, Constraints: &ingest.Constraints{Minimum: ptr(0.0), Maximum: ptr(150.0)}},
	{Name: "code", Type: ingest.Text, Nullable: true, Constraints: &ingest.Constraints{Pattern: "^[A-Z]{3}$"}},
	{Name: "vip", Type: ingest.Boolean, Constraints: &ingest.Constraints{Default: json.RawMessage(`false`)}},
	{Name: "joined", Type: ingest.Date, Nullable: true},
	{Name: "tags", Type: ingest.TextArray, Nullable: true},
	{Name: "meta", Type: ingest.JSONB, Nullable: true},
}

// The table of a dataset: the system columns around the declared ones, with their types,
// nullability and defaults, and one named constraint per declared rule, which PostgreSQL
// then enforces on every write.
func TestCreateTable(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	d := p.dataset(t, "People", declared)
	db := p.st.DB
	want := []string{
		"name character varying(10) NOT NULL",
		"email text",
		"status text NOT NULL = 'pending'::text",
		"age integer",
		"code text",
		"vip boolean NOT NULL = false",
		"joined date",
		"tags text[]",
		"meta jsonb",
		"created_at timestamp with time zone NOT NULL = now()",
		"updated_at timestamp with time zone NOT NULL = now()",
		"deleted_at timestamp with time zone",
		"version integer NOT NULL = 1",
	}
	if got := tableColumns(t, db, d); !slices.Equal(got, want) {
		t.Fatalf("columns:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	wantCons := []string{"age_maximum", "age_minimum", "code_pattern", d.ID + "_email_key", "email_format", "name_min_length", "status_enum"}
	slices.Sort(wantCons)
	if got := tableConstraints(t, db, d); !slices.Equal(got, wantCons) {
		t.Fatalf("constraints %v, want %v", got, wantCons)
	}
	var rls bool
	if err := db.Get(&rls, `SELECT relrowsecurity FROM pg_class WHERE oid = $1::regclass`, Table(d.TableSchema, d.ID)); err != nil || !rls {
		t.Fatalf("row-level security: %v %v", rls, err)
	}

	insert := func(set string) error {
		_, err := db.Exec(`INSERT INTO ` + Table(d.TableSchema, d.ID) + ` ` + set)
		return err
	}
	if err := insert(`(name, email, age, code, tags) VALUES ('Ann', 'ann@example.com', 34, 'ABC', '{a}')`); err != nil {
		t.Fatal(err)
	}
	var row struct {
		ID      int64  `db:"id"`
		Status  string `db:"status"`
		VIP     bool   `db:"vip"`
		Version int    `db:"version"`
	}
	if err := db.Get(&row, `SELECT id, status, vip, version FROM `+Table(d.TableSchema, d.ID)); err != nil || row.ID != 1 || row.Status != "pending" || row.VIP || row.Version != 1 {
		t.Fatalf("defaults: %+v %v", row, err)
	}
	for _, tc := range []struct {
		name, set, code string
	}{
		{"name missing", `(email) VALUES ('x@example.com')`, "23502"},
		{"name too short", `(name) VALUES ('A')`, "23514"},
		{"name too long", `(name) VALUES ('Bartholomew the Third')`, "22001"},
		{"email taken", `(name, email) VALUES ('Bob', 'ann@example.com')`, "23505"},
		{"email malformed", `(name, email) VALUES ('Bob', 'not an email')`, "23514"},
		{"status outside the enum", `(name, status) VALUES ('Bob', 'gone')`, "23514"},
		{"age below the minimum", `(name, age) VALUES ('Bob', -1)`, "23514"},
		{"age above the maximum", `(name, age) VALUES ('Bob', 151)`, "23514"},
		{"code against the pattern", `(name, code) VALUES ('Bob', 'abc')`, "23514"},
		{"the id is the table's", `(id, name) VALUES (7, 'Bob')`, "428C9"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if err := insert(tc.set); pqCode(err) != tc.code {
				t.Fatalf("%s: %v, want SQLSTATE %s", tc.set, err, tc.code)
			}
		})
	}
}

// apply fits a declared schema to the columns a file has.
func TestApply(t *testing.T) {
	t.Parallel()
	found := []ingest.Column{{Name: "full_name", Original: "Full Name", Type: ingest.Text, NullCount: 2}, {Name: "age", Original: "Age", Type: ingest.Text}}
	decl := []ingest.Column{
		{Name: "age", Type: ingest.Integer, Nullable: true},
		{Name: "name", Original: "Full Name", Type: ingest.Text},
		{Name: "note", Type: ingest.Text, Nullable: true},
		{Name: "tier", Type: ingest.Text, Constraints: &ingest.Constraints{Default: json.RawMessage(`"basic"`)}},
	}
	read, table, err := apply(found, decl)
	if err != nil {
		t.Fatal(err)
	}
	// Read in file order with the declared names and types; the table in declared order.
	if len(read) != 2 || read[0].Name != "name" || read[0].Original != "Full Name" || read[0].NullCount != 2 || read[1].Name != "age" || read[1].Type != ingest.Integer {
		t.Fatalf("read: %+v", read)
	}
	var names []string
	for _, c := range table {
		names = append(names, c.Name+":"+c.Original)
	}
	if fmt.Sprint(names) != "[age:Age name:Full Name note: tier:]" {
		t.Fatalf("table: %v", names)
	}
	for _, tc := range []struct {
		name  string
		found []ingest.Column
		decl  []ingest.Column
		err   string
	}{
		{"a file column not declared", append(found, ingest.Column{Name: "extra", Original: "Extra"}), decl, `column "Extra" of the file is not in the declared schema`},
		{"a required declared column missing", found[:1], append(decl, ingest.Column{Name: "must", Type: ingest.Text}), `required column "must" of the declared schema is not in the file`},
	} {
		if _, _, err := apply(tc.found, tc.decl); err == nil || err.Error() != tc.err {
			t.Errorf("%s: %v, want %q", tc.name, err, tc.err)
		}
	}
}

// base is the table the schema changes start from: three rows, one email missing, two
// rows sharing a name, scores held as text.
var base = []ingest.Column{
	{Name: "name", Type: ingest.Text},
	{Name: "email", Type: ingest.Text, Nullable: true, Constraints: &ingest.Constraints{Unique: true}},
	{Name: "score", Type: ingest.Text, Nullable: true},
	{Name: "label", Type: ingest.Text, Nullable: true},
}

var baseRows = [][]any{
	{"Ann", "ann@example.com", "10", "a"},
	{"Bob", nil, "20", "b"},
	{"Ann", "ann2@example.com", nil, "c"},
}

func TestAlter(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	alter := func(f func(c *ingest.Column)) func(c *ingest.Column) { return f }
	for _, tc := range []struct {
		name    string
		changes []Change
		// accepted changes: the table's columns after them, and the values of one column
		cols   []string
		column string
		values []string
		cons   []string // the table's constraints after them (the unique one's name without the dataset id)
		// refused changes: the error
		changeErr  *ChangeError
		violations string // the violations, as "change op column constraint row_count ids=values"
	}{
		{
			name:    "add a nullable column",
			changes: []Change{{Op: "add_column", Define: &ingest.Column{Name: "note", Type: ingest.Text, Nullable: true}}},
			cols:    []string{"name text NOT NULL", "email text", "score text", "label text", "note text"},
			column:  "note", values: []string{"<nil>", "<nil>", "<nil>"},
			cons: []string{"_email_key"},
		},
		{
			name: "add a required column with a default",
			changes: []Change{{Op: "add_column", Define: &ingest.Column{Name: "tier", Type: ingest.Text,
				Constraints: &ingest.Constraints{Enum: []string{"basic", "gold"}, Default: json.RawMessage(`"basic"`)}}}},
			cols:   []string{"name text NOT NULL", "email text", "score text", "label text", "tier text NOT NULL = 'basic'::text"},
			column: "tier", values: []string{"basic", "basic", "basic"},
			cons: []string{"_email_key", "tier_enum"},
		},
		{
			name:    "rename a column: its data and constraints follow",
			changes: []Change{{Op: "rename_column", Column: "email", NewName: "mail"}},
			cols:    []string{"name text NOT NULL", "mail text", "score text", "label text"},
			column:  "mail", values: []string{"ann@example.com", "<nil>", "ann2@example.com"},
			cons: []string{"_mail_key"},
		},
		{
			name:    "drop a column",
			changes: []Change{{Op: "drop_column", Column: "label"}},
			cols:    []string{"name text NOT NULL", "email text", "score text"},
			column:  "score", values: []string{"10", "20", "<nil>"},
			cons: []string{"_email_key"},
		},
		{
			name:    "change a type the values fit",
			changes: []Change{{Op: "alter_column", Column: "score", Alter: alter(func(c *ingest.Column) { c.Type = ingest.Integer })}},
			cols:    []string{"name text NOT NULL", "email text", "score integer", "label text"},
			column:  "score", values: []string{"10", "20", "<nil>"},
			cons: []string{"_email_key"},
		},
		{
			name: "several changes in order",
			changes: []Change{
				{Op: "add_column", Define: &ingest.Column{Name: "note", Type: ingest.Text, Nullable: true}},
				{Op: "rename_column", Column: "note", NewName: "remark"},
				{Op: "alter_column", Column: "label", Alter: alter(func(c *ingest.Column) { c.Nullable = false; c.Constraints.Pattern = "^[a-z]$" })},
			},
			cols:   []string{"name text NOT NULL", "email text", "score text", "label text NOT NULL", "remark text"},
			column: "label", values: []string{"a", "b", "c"},
			cons: []string{"_email_key", "label_pattern"},
		},
		{
			name:      "rename to a name the dataset has",
			changes:   []Change{{Op: "rename_column", Column: "label", NewName: "name"}},
			changeErr: &ChangeError{Index: 0, Field: "new_name", Code: "duplicate"},
		},
		{
			name: "add a column the dataset has",
			changes: []Change{{Op: "drop_column", Column: "label"},
				{Op: "add_column", Define: &ingest.Column{Name: "score", Type: ingest.Integer, Nullable: true}}},
			changeErr: &ChangeError{Index: 1, Field: "column.name", Code: "duplicate"},
		},
		{
			name:      "drop a column the dataset lacks",
			changes:   []Change{{Op: "drop_column", Column: "nope"}},
			changeErr: &ChangeError{Index: 0, Field: "column", Code: "not_found"},
		},
		{
			name:       "a required column without a default",
			changes:    []Change{{Op: "add_column", Define: &ingest.Column{Name: "code", Type: ingest.Integer}}},
			violations: "0 add_column code required 3 1=<nil> 2=<nil> 3=<nil>",
		},
		{
			name:       "a type the values do not fit",
			changes:    []Change{{Op: "alter_column", Column: "label", Alter: alter(func(c *ingest.Column) { c.Type = ingest.Integer })}},
			violations: `0 alter_column label type 3 1="a" 2="b" 3="c"`,
		},
		{
			name: "unique over duplicates, required over a NULL: both reported",
			changes: []Change{
				{Op: "alter_column", Column: "name", Alter: alter(func(c *ingest.Column) { c.Constraints.Unique = true })},
				{Op: "alter_column", Column: "email", Alter: alter(func(c *ingest.Column) { c.Nullable = false })},
			},
			violations: `0 alter_column name unique 2 1="Ann" 3="Ann"; 1 alter_column email required 1 2=<nil>`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := p.st.DB
			d := p.dataset(t, "D "+tc.name, base, baseRows...)
			before := tableColumns(t, db, d)
			tx, err := db.BeginTxx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			checked := 0
			cols, err := Alter(ctx, tx, d, base, tc.changes, func(int, ingest.Column) error { checked++; return nil })
			if tc.changeErr != nil || tc.violations != "" {
				var ce *ChangeError
				var vs Violations
				switch {
				case tc.changeErr != nil && errors.As(err, &ce):
					if ce.Index != tc.changeErr.Index || ce.Field != tc.changeErr.Field || ce.Code != tc.changeErr.Code {
						t.Fatalf("change error %+v, want %+v", ce, tc.changeErr)
					}
				case tc.violations != "" && errors.As(err, &vs):
					var got []string
					for _, v := range vs {
						s := fmt.Sprintf("%d %s %s %s %d", v.Change, v.Op, v.Column, v.Constraint, v.RowCount)
						for _, r := range v.Rows {
							if r.Value == nil {
								s += fmt.Sprintf(" %s=<nil>", r.ID)
							} else {
								s += fmt.Sprintf(" %s=%s", r.ID, r.Value)
							}
						}
						got = append(got, s)
					}
					if strings.Join(got, "; ") != tc.violations {
						t.Fatalf("violations\n%s\nwant\n%s", strings.Join(got, "; "), tc.violations)
					}
				default:
					t.Fatalf("error %v (%T), want %+v %s", err, err, tc.changeErr, tc.violations)
				}
				tx.Rollback()
				if after := tableColumns(t, db, d); !slices.Equal(after, before) {
					t.Fatalf("a refused change set changed the table: %v", after)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, c := range cols {
				names = append(names, c.Name)
			}
			// The system columns aside (added columns come after them).
			got := slices.DeleteFunc(tableColumns(t, db, d), func(c string) bool {
				return slices.Contains([]string{"created_at", "updated_at", "deleted_at", "version"}, strings.Fields(c)[0])
			})
			if !slices.Equal(got, tc.cols) || !slices.Equal(names, colNames(tc.cols)) {
				t.Fatalf("columns %v (returned %v), want %v", got, names, tc.cols)
			}
			var values []string
			var raw []sql.NullString
			if err := db.Select(&raw, `SELECT `+pq.QuoteIdentifier(tc.column)+`::text FROM `+Table(d.TableSchema, d.ID)+` ORDER BY id`); err != nil {
				t.Fatal(err)
			}
			for _, v := range raw {
				if !v.Valid {
					values = append(values, "<nil>")
				} else {
					values = append(values, v.String)
				}
			}
			if !slices.Equal(values, tc.values) {
				t.Fatalf("%s: %v, want %v", tc.column, values, tc.values)
			}
			var cons []string
			for _, c := range tableConstraints(t, db, d) {
				cons = append(cons, strings.TrimPrefix(c, d.ID))
			}
			if !slices.Equal(cons, tc.cons) {
				t.Fatalf("constraints %v, want %v", cons, tc.cons)
			}
			adds := 0
			for _, ch := range tc.changes {
				if ch.Op == "add_column" || ch.Op == "alter_column" {
					adds++
				}
			}
			if checked != adds {
				t.Fatalf("check ran %d times, want once per added or altered column (%d)", checked, adds)
			}
		})
	}
}

// A renamed or dropped column takes its relationships with it.
func TestAlterRelationships(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	ctx := context.Background()
	db := p.st.DB
	customers := p.dataset(t, "Customers", []ingest.Column{{Name: "name", Type: ingest.Text}}, []any{"Ann"})
	orders := p.dataset(t, "Orders", []ingest.Column{{Name: "customer_id", Type: ingest.BigInt}, {Name: "buyer_id", Type: ingest.BigInt}}, []any{1, 1})
	for _, col := range []string{"customer_id", "buyer_id"} {
		if _, err := db.Exec(`INSERT INTO platform.dataset_relationships (from_dataset, from_table, from_column, to_dataset, to_table, to_column, origin, created_at)
			VALUES ($1, $1, $2, $3, $3, 'id', 'declared', now())`, orders.ID, col, customers.ID); err != nil {
			t.Fatal(err)
		}
	}
	tx := db.MustBeginTx(ctx, nil)
	defer tx.Rollback()
	cols := []ingest.Column{{Name: "customer_id", Type: ingest.BigInt}, {Name: "buyer_id", Type: ingest.BigInt}}
	if _, err := Alter(ctx, tx, orders, cols, []Change{{Op: "rename_column", Column: "customer_id", NewName: "client_id"}, {Op: "drop_column", Column: "buyer_id"}},
		func(int, ingest.Column) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	rels, err := store.Relationships(ctx, db, orders.ID)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rels {
		got = append(got, fmt.Sprintf("%+v", r))
	}
	if len(rels) != 1 || !strings.Contains(got[0], "client_id") || strings.Contains(got[0], "buyer_id") {
		t.Fatalf("relationships after the changes: %v", got)
	}
}

// The check a caller passes refuses a column before anything runs.
func TestAlterCheckRefuses(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	ctx := context.Background()
	d := p.dataset(t, "D", base, baseRows...)
	tx := p.st.DB.MustBeginTx(ctx, nil)
	defer tx.Rollback()
	refuse := &ChangeError{Index: 1, Field: "column.type", Code: "unsupported", Message: "no"}
	_, err := Alter(ctx, tx, d, base, []Change{
		{Op: "add_column", Define: &ingest.Column{Name: "ok", Type: ingest.Text, Nullable: true}},
		{Op: "add_column", Define: &ingest.Column{Name: "bad", Type: ingest.JSONB, Nullable: true}},
	}, func(i int, c ingest.Column) error {
		if c.Type == ingest.JSONB {
			return refuse
		}
		return nil
	})
	if err != refuse {
		t.Fatalf("error %v, want the check's", err)
	}
}

// Analysis: statistics per column, the search entries (names and frequent values), and the
// relationship to a dataset the values point into.
func TestAnalyze(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	ctx := context.Background()
	db := p.st.DB
	p.dataset(t, "Customers", []ingest.Column{{Name: "customer_id", Type: ingest.BigInt, Key: true}, {Name: "name", Type: ingest.Text}},
		[]any{3, "Ann"}, []any{1, "Bob"}, []any{2, "Cid"})
	cols := []ingest.Column{
		{Name: "customer_id", Type: ingest.BigInt},
		{Name: "amount", Type: ingest.Numeric, Nullable: true},
		{Name: "city", Type: ingest.Text, Nullable: true},
		{Name: "paid", Type: ingest.Boolean, Nullable: true},
	}
	orders := p.dataset(t, "Orders", cols,
		[]any{1, "10.5", "Oslo", true}, []any{1, "20", "Oslo", false}, []any{3, nil, "Rome", true}, []any{2, "4.5", nil, nil})
	if _, err := db.Exec(`UPDATE ` + Table(orders.TableSchema, orders.ID) + ` SET deleted_at = now() WHERE id = 4`); err != nil {
		t.Fatal(err)
	}
	tx := db.MustBeginTx(ctx, nil)
	defer tx.Rollback()
	if err := Analyze(ctx, tx, orders, p.now); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if orders.RowCount == nil || *orders.RowCount != 3 || orders.AnalyzedAt == nil || !orders.AnalyzedAt.Equal(p.now) || orders.AnalysisVersion != AnalysisVersion {
		t.Fatalf("analysis: rows %v at %v version %d", orders.RowCount, orders.AnalyzedAt, orders.AnalysisVersion)
	}
	var st Statistics
	if err := json.Unmarshal([]byte(orders.Statistics), &st); err != nil {
		t.Fatal(err)
	}
	ts := st.Tables[orders.ID]
	if ts == nil || ts.RowCount != 3 {
		t.Fatalf("statistics: %s", orders.Statistics)
	}
	for _, tc := range []struct {
		col             string
		distinct, nulls int64
		min, max        string
		avg             *float64
		completeness    float64
		samples         string
	}{
		{"id", 3, 0, "1", "3", ptr(2.0), 1, "[1,2,3]"},
		{"customer_id", 2, 0, "1", "3", ptr(5.0 / 3), 1, "[1,3]"},
		{"amount", 2, 1, "10.5", "20", ptr(15.25), 2.0 / 3, "[10.5,20]"},
		{"city", 2, 0, `"Oslo"`, `"Rome"`, nil, 1, `["Oslo","Rome"]`},
		{"paid", 2, 0, "false", "true", nil, 1, "[true,false]"},
	} {
		cs := ts.Columns[tc.col]
		if cs == nil {
			t.Fatalf("no statistics for %s: %s", tc.col, orders.Statistics)
		}
		sj, _ := json.Marshal(cs.SampleValues)
		samples := string(sj)
		avgOK := (tc.avg == nil) == (cs.Avg == nil) && (tc.avg == nil || fmt.Sprintf("%.4f", *tc.avg) == fmt.Sprintf("%.4f", *cs.Avg))
		if cs.DistinctCount != tc.distinct || cs.NullCount != tc.nulls || string(cs.Min) != tc.min || string(cs.Max) != tc.max || !avgOK ||
			fmt.Sprintf("%.4f", cs.Completeness) != fmt.Sprintf("%.4f", tc.completeness) || samples != tc.samples {
			t.Errorf("%s: %+v (min %s max %s samples %s)", tc.col, *cs, cs.Min, cs.Max, samples)
		}
	}

	// The search entries: the dataset's name, its columns, and the values of its text column.
	var entries []string
	if err := db.Select(&entries, `SELECT kind || ':' || coalesce(column_name, '') || ':' || content || ':' || coalesce(frequency::text, '')
		FROM platform.dataset_search WHERE dataset_id = $1 ORDER BY 1`, orders.ID); err != nil {
		t.Fatal(err)
	}
	wantEntries := []string{"column:amount:amount:", "column:city:city:", "column:customer_id:customer id:", "column:paid:paid:",
		"dataset::Orders:", "value:city:Oslo:2", "value:city:Rome:1"}
	if !slices.Equal(entries, wantEntries) || orders.VectorCount != int64(len(wantEntries)) {
		t.Fatalf("search entries %v (count %d), want %v", entries, orders.VectorCount, wantEntries)
	}

	// customer_id names Customers and every value is a customer: an inferred link.
	rels, err := store.Relationships(ctx, db, orders.ID)
	if err != nil {
		t.Fatal(err)
	}
	if len(rels) != 1 || !strings.Contains(fmt.Sprintf("%+v", rels[0]), "customer_id") || !strings.Contains(fmt.Sprintf("%+v", rels[0]), "inferred") {
		t.Fatalf("relationships: %+v", rels)
	}
	// A value with no customer breaks the link at the next analysis.
	if _, err := db.Exec(`INSERT INTO ` + Table(orders.TableSchema, orders.ID) + ` (customer_id) VALUES (9)`); err != nil {
		t.Fatal(err)
	}
	tx = db.MustBeginTx(ctx, nil)
	defer tx.Rollback()
	if err := Analyze(ctx, tx, orders, p.now); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if rels, err := store.Relationships(ctx, db, orders.ID); err != nil || len(rels) != 0 {
		t.Fatalf("relationships after an orphan value: %+v %v", rels, err)
	}
}

// An organization's query role reads its schema's live rows; dropping it forgets it, so the
// next EnsureQueryRole makes it again.
func TestQueryRole(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	ctx := context.Background()
	db := p.st.DB
	d := p.dataset(t, "D", base, baseRows...)
	if _, err := db.Exec(`UPDATE ` + Table(d.TableSchema, d.ID) + ` SET deleted_at = now() WHERE id = 2`); err != nil {
		t.Fatal(err)
	}
	count := func() (int, error) {
		tx, err := db.BeginTxx(ctx, nil)
		if err != nil {
			return 0, err
		}
		defer tx.Rollback()
		if _, err := tx.Exec(`SET LOCAL ROLE ` + pq.QuoteIdentifier(QueryRole(p.org))); err != nil {
			return 0, err
		}
		var n int
		err = tx.Get(&n, `SELECT count(*) FROM `+Table(d.TableSchema, d.ID))
		return n, err
	}
	for round := 0; round < 2; round++ {
		if err := EnsureQueryRole(ctx, db, p.org); err != nil {
			t.Fatal(err)
		}
		if n, err := count(); err != nil || n != 2 {
			t.Fatalf("round %d: the role counts %d rows (%v), want the 2 live ones", round, n, err)
		}
		tx := db.MustBeginTx(ctx, nil)
		if err := DropQueryRole(ctx, tx, p.org); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		var roles int
		if err := db.Get(&roles, `SELECT count(*) FROM pg_roles WHERE rolname = $1`, QueryRole(p.org)); err != nil || roles != 0 {
			t.Fatalf("round %d: %d roles after the drop (%v)", round, roles, err)
		}
		if _, err := count(); pqCode(err) != "22023" && pqCode(err) != "42704" {
			t.Fatalf("round %d: a dropped role still works: %v", round, err)
		}
	}
}
