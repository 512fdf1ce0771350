package usersql

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

func TestCheck(t *testing.T) {
	ok := []string{
		"SELECT * FROM o.t",
		"SELECT status, count(*) FROM o.t WHERE amount > $1 GROUP BY 1 ORDER BY 2 DESC LIMIT 10",
		"WITH x AS (SELECT id FROM o.t) SELECT * FROM x JOIN o.u USING (id)",
		"SELECT 'DELETE FROM t' AS s, lower(name) FROM o.t",
		"SELECT * FROM o.t UNION ALL SELECT * FROM o.u",
	}
	for _, s := range ok {
		if err := Check(s); err != nil {
			t.Errorf("%s: %v", s, err)
		}
	}
	forbidden := []string{
		"DELETE FROM o.t",
		"SELECT 1; SELECT 2",
		"WITH d AS (DELETE FROM o.t RETURNING *) SELECT * FROM d",
		"WITH u AS (UPDATE o.t SET a = 1 RETURNING *) SELECT 1",
		"SELECT * INTO newt FROM o.t",
		"SELECT * FROM o.t FOR UPDATE",
		"SELECT * FROM o.t FOR SHARE SKIP LOCKED",
		"SELECT set_config('role', 'postgres', true)",
		"SELECT pg_catalog.set_config('role', 'postgres', false)",
		"SELECT pg_advisory_lock(1)",
		"SELECT pg_try_advisory_xact_lock(1)",
		// the sized functions only bare, where sql_limits bounds them
		"SELECT pg_catalog.repeat('x', 400000000)",
		"SELECT length(pg_catalog.lpad('', 10))",
		"SELECT * FROM pg_catalog.generate_series(1, 10)",
		"SELECT generate_series('2024-01-01'::timestamptz, '2024-02-01', '1 day', 'UTC')",
		"SELECT pg_sleep(10)",
		"SELECT * FROM dblink('host=x', 'select 1') AS t(a int)",
		"SELECT pg_read_file('/etc/passwd')",
		"SELECT lo_import('/etc/passwd')",
		"SELECT query_to_xml('delete from o.t', true, true, '')",
		"SELECT nextval('s')",
		"SELECT * FROM pg_catalog.pg_class",
		"SELECT * FROM pg_class",
		"SELECT * FROM information_schema.tables",
		"SELECT * FROM platform.users",
		"SET ROLE postgres",
		"RESET ROLE",
		"COPY o.t TO STDOUT",
		"CREATE TABLE x (a int)",
		"EXPLAIN ANALYZE DELETE FROM o.t",
		"SELECT (SELECT pg_terminate_backend(1))",
	}
	for _, s := range forbidden {
		var fe *ForbiddenError
		if err := Check(s); !errors.As(err, &fe) {
			t.Errorf("%s: %v, want forbidden", s, err)
		}
	}
	var se *SyntaxError
	if err := Check("SELECT *\nFROM o.t\nWHERE a = = 1"); !errors.As(err, &se) || se.Line != 3 || se.Column < 10 {
		t.Errorf("syntax: %+v", err)
	}
}

func TestBindNames(t *testing.T) {
	out, names, err := BindNames("SELECT * FROM t WHERE a = :min AND b::text = ':min' /* :c */ AND c > :max AND d < :min", 1)
	if err != nil || out != "SELECT * FROM t WHERE a = $1 AND b::text = ':min' /* :c */ AND c > $2 AND d < $1" || len(names) != 2 || names[1] != "max" {
		t.Fatalf("%q %v %v", out, names, err)
	}
}

func TestRelations(t *testing.T) {
	q := `WITH recent AS (SELECT * FROM orders WHERE placed_at > now() - interval '7 days')
SELECT c.name, count(*) FROM "Customers" c JOIN recent r ON r.customer_id = c.id, shop . items, x.y.z
WHERE c.id IN (SELECT customer_id FROM ds_abc) GROUP BY 1`
	rels, err := Relations(q)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range rels {
		got = append(got, fmt.Sprintf("%s|%s|%s|%v", r.Schema, r.Name, r.Text(q), r.Aliased))
	}
	slices.Sort(got)
	want := []string{"shop|items|shop . items|false", "y|z|x.y.z|false", "|Customers|\"Customers\"|true", "|ds_abc|ds_abc|false", "|orders|orders|false"}
	if !slices.Equal(got, want) {
		t.Fatalf("relations:\n got %q\nwant %q", got, want)
	}
	out := Splice(q, rels, []string{"A", "B", "C", "D", "E"})
	if strings.Contains(out, "orders") || strings.Contains(out, "Customers") || !strings.Contains(out, "JOIN recent r") {
		t.Fatalf("splice: %s", out)
	}
	if _, err := Relations("SELECT FROM WHERE"); !errors.As(err, new(*SyntaxError)) {
		t.Fatalf("syntax error: %v", err)
	}
}

func TestBindBraces(t *testing.T) {
	q, names, err := BindBraces("SELECT * FROM t WHERE a > {{min}} AND b = '{{min}}' AND c < {{ max }} -- {{x}}\nAND d = {{MIN}}", 1)
	if err != nil {
		t.Fatal(err)
	}
	if q != "SELECT * FROM t WHERE a > $1 AND b = '{{min}}' AND c < $2 -- {{x}}\nAND d = $1" || !slices.Equal(names, []string{"min", "max"}) {
		t.Fatalf("%q %q", q, names)
	}
}

// relationList is Relations as "schema|name|text|type" lines, sorted.
func relationList(t *testing.T, q string) []string {
	t.Helper()
	rels, err := Relations(q)
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	got := []string{}
	for _, r := range rels {
		kind := "table"
		if r.Type {
			kind = "type"
		}
		got = append(got, fmt.Sprintf("%s|%s|%s|%s", r.Schema, r.Name, r.Text(q), kind))
	}
	slices.Sort(got)
	return got
}

// TestRelationsEveryPosition: a relation is found wherever a SELECT can name one, and a WITH
// query's name hides a relation only where PostgreSQL's scoping says it does.
func TestRelationsEveryPosition(t *testing.T) {
	for _, tc := range []struct {
		sql  string
		want []string
	}{
		{`SELECT secret FROM ds_p`, []string{"|ds_p|ds_p|table"}},
		{`SELECT secret FROM "org_a"."ds_p"`, []string{`org_a|ds_p|"org_a"."ds_p"|table`}},
		{`TABLE ds_p`, []string{"|ds_p|ds_p|table"}},
		{`SELECT * FROM ONLY ds_p`, []string{"|ds_p|ds_p|table"}},
		{`WITH s AS (SELECT secret FROM ds_p) SELECT * FROM s`, []string{"|ds_p|ds_p|table"}},
		{`SELECT x.secret FROM o.t m, LATERAL (SELECT secret FROM ds_p LIMIT 1) x`, []string{"o|t|o.t|table", "|ds_p|ds_p|table"}},
		{`SELECT * FROM o.t WHERE EXISTS (SELECT 1 FROM ds_p WHERE secret = 'x')`, []string{"o|t|o.t|table", "|ds_p|ds_p|table"}},
		{`SELECT * FROM o.t WHERE a IN (SELECT a FROM ds_p)`, []string{"o|t|o.t|table", "|ds_p|ds_p|table"}},
		{`SELECT (SELECT max(secret) FROM ds_p)`, []string{"|ds_p|ds_p|table"}},
		{`SELECT 1 HAVING 1 < (SELECT count(*) FROM ds_p)`, []string{"|ds_p|ds_p|table"}},
		{`SELECT 1 ORDER BY (SELECT min(a) FROM ds_p)`, []string{"|ds_p|ds_p|table"}},
		{`SELECT * FROM o.t JOIN o.u ON u.a = (SELECT min(a) FROM ds_p)`, []string{"o|t|o.t|table", "o|u|o.u|table", "|ds_p|ds_p|table"}},
		{`SELECT 1 UNION ALL SELECT a FROM vw_p`, []string{"|vw_p|vw_p|table"}},
		{`SELECT * FROM ds_p TABLESAMPLE BERNOULLI (50)`, []string{"|ds_p|ds_p|table"}},
		// WITH scoping: a name is a WITH query only inside the statement that defines it.
		{`SELECT * FROM (WITH ds_p AS (SELECT 1) SELECT * FROM ds_p) a, ds_p`, []string{"|ds_p|ds_p|table"}},
		{`(WITH ds_p AS (SELECT 1) SELECT * FROM ds_p) UNION SELECT * FROM ds_p`, []string{"|ds_p|ds_p|table"}},
		{`SELECT (WITH ds_p AS (SELECT 1) SELECT 1), (SELECT count(*) FROM ds_p)`, []string{"|ds_p|ds_p|table"}},
		{`WITH ds_p AS (SELECT 1) SELECT * FROM ds_p UNION SELECT * FROM ds_p`, []string{}},
		{`WITH ds_p AS (SELECT * FROM ds_p) SELECT * FROM ds_p`, []string{"|ds_p|ds_p|table"}},               // not recursive: the body reads the table
		{`WITH a AS (SELECT * FROM ds_p), ds_p AS (SELECT 1) SELECT * FROM a`, []string{"|ds_p|ds_p|table"}}, // a later sibling is not seen
		{`WITH RECURSIVE a AS (SELECT * FROM ds_p), ds_p AS (SELECT 1) SELECT * FROM a`, []string{}},
		{`WITH ds_p AS (SELECT 1) SELECT * FROM o.ds_p`, []string{"o|ds_p|o.ds_p|table"}},
		// Type references that can only be a relation's row type.
		{`SELECT row_to_json(json_populate_record(NULL::ds_p, '{}'))::text`, []string{"|ds_p|ds_p|type"}},
		{`SELECT CAST(NULL AS ds_p)`, []string{"|ds_p|ds_p|type"}},
		{`SELECT NULL::ds_p[]`, []string{"|ds_p|ds_p|type"}},
		{`SELECT NULL::"org_a"."ds_p"`, []string{`org_a|ds_p|"org_a"."ds_p"|type`}},
		{`SELECT ds_p '(1)'`, []string{"|ds_p|ds_p|type"}},
		{`SELECT NULL::_ds_p`, []string{"|_ds_p|_ds_p|type"}},
		{`SELECT * FROM json_to_record('{}') AS t(r ds_p)`, []string{"|ds_p|ds_p|type"}},
		{`SELECT JSON_VALUE('1', '$' RETURNING ds_p)`, []string{"|ds_p|ds_p|type"}},
		{`WITH ds_p AS (SELECT 1) SELECT NULL::ds_p`, []string{"|ds_p|ds_p|type"}}, // a WITH query has no row type
		// PL/pgSQL's %ROWTYPE and %TYPE are no SQL: they parse as a cast and a modulo.
		{`SELECT NULL::ds_p%ROWTYPE`, []string{"|ds_p|ds_p|type"}},
		{`SELECT NULL::ds_p.secret%TYPE`, []string{"ds_p|secret|ds_p.secret|type"}},
		// Built-in types are not relations, however they are spelled.
		{`SELECT x::int, x::text, x::"char", x::timestamptz, x::double precision, DATE '2020-01-01', x::numeric(3,1), x::text[],
			CAST(x AS varchar(3)), x::jsonb, x::pg_catalog.int8, x::interval day, x::int4range FROM o.t`, []string{"o|t|o.t|table"}},
	} {
		if got := relationList(t, tc.sql); !slices.Equal(got, tc.want) {
			t.Errorf("%s:\n got %q\nwant %q", tc.sql, got, tc.want)
		}
	}
}

// TestCheckTypes: a type is a built-in one user SQL may use, a refused one (catalog
// internals, catalog rows), or a relation's row type, allowed only where the caller's
// mapping of the relations allows it (Check's rowTypes).
func TestCheckTypes(t *testing.T) {
	for _, tc := range []struct {
		sql      string
		rowTypes []Relation
	}{
		{`SELECT x::int, x::text, x::"char", x::timestamptz, x::numeric(3,1), x::text[], x::jsonb, x::uuid, x::tstzrange FROM o.t`, nil},
		{`SELECT json_populate_record(NULL::ds_p, '{}')`, []Relation{{Name: "ds_p"}}},
		{`SELECT NULL::"o"."ds_p"[], CAST(NULL AS o.ds_p)`, []Relation{{Name: "x"}, {Schema: "o", Name: "ds_p"}}},
	} {
		if err := Check(tc.sql, tc.rowTypes...); err != nil {
			t.Errorf("%s: %v", tc.sql, err)
		}
	}
	for _, tc := range []struct {
		sql      string
		rowTypes []Relation
	}{
		// row types the caller did not allow
		{`SELECT row_to_json(json_populate_record(NULL::ds_p, '{}'))::text`, nil},
		{`SELECT NULL::o.ds_p`, []Relation{{Name: "ds_p"}}},
		{`SELECT NULL::ds_p`, []Relation{{Schema: "o", Name: "ds_p"}}},
		{`SELECT NULL::_ds_p`, []Relation{{Name: "ds_p"}}},
		{`SELECT * FROM json_to_record('{}') AS t(r ds_p)`, nil},
		{`SELECT JSON_VALUE('1', '$' RETURNING ds_p)`, nil},
		{`SELECT ds_p '(1)'`, nil},
		{`SELECT 'x'::public.mytype`, nil},
		// catalogs, whatever the caller allows
		{`SELECT NULL::pg_class`, []Relation{{Name: "pg_class"}}},
		{`SELECT NULL::pg_catalog.pg_class`, []Relation{{Schema: "pg_catalog", Name: "pg_class"}}},
		{`SELECT NULL::pg_catalog.pg_authid[]`, nil},
		{`SELECT NULL::information_schema.tables`, []Relation{{Schema: "information_schema", Name: "tables"}}},
		{`SELECT NULL::platform.users`, []Relation{{Schema: "platform", Name: "users"}}},
		{`SELECT NULL::pg_toast.x`, nil},
		{`SELECT * FROM json_to_record('{}') AS t(r pg_user_mapping)`, nil},
		// built-in types that are not allowed
		{`SELECT x::regclass FROM o.t`, nil},
		{`SELECT x::"REGCLASS" FROM o.t`, nil},
		{`SELECT x::pg_catalog.oid FROM o.t`, nil},
		{`SELECT x::anyelement FROM o.t`, nil},
		{`SELECT x::pg_catalog.record FROM o.t`, nil},
	} {
		var fe *ForbiddenError
		if err := Check(tc.sql, tc.rowTypes...); !errors.As(err, &fe) {
			t.Errorf("%s: %v, want forbidden", tc.sql, err)
		}
	}
}
