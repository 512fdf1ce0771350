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
