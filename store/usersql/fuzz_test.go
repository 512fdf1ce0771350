package usersql

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	pg_query "github.com/pganalyze/pg_query_go/v6"
)

// FuzzCheck gives the SQL guard arbitrary text. Invariants: it answers nil, a *SyntaxError
// (exactly when PostgreSQL's parser, or its check of the encoding, refuses the text) or a
// *ForbiddenError; what it accepts is
// one statement, a SelectStmt, with no data-modifying statement, INTO or locking clause
// anywhere in its tree; and the accepted statement deparsed by PostgreSQL's own deparser
// (when that gives SQL that parses) is accepted again and means the same (equal
// fingerprints).
func FuzzCheck(f *testing.F) {
	for _, s := range []string{
		"SELECT * FROM o.t",
		"SELECT status, count(*) FROM o.t WHERE amount > $1 GROUP BY 1 ORDER BY 2 DESC LIMIT 10",
		"WITH x AS (SELECT id FROM o.t) SELECT * FROM x JOIN o.u USING (id)",
		"SELECT 'DELETE FROM t' AS s, lower(name) FROM o.t",
		"SELECT * FROM o.t UNION ALL SELECT * FROM o.u",
		"WITH d AS (DELETE FROM o.t RETURNING *) SELECT * FROM d",
		"SELECT * INTO newt FROM o.t",
		"SELECT * FROM o.t FOR UPDATE",
		"SELECT 1; SELECT 2",
		"SELECT set_config('role', 'postgres', true)",
		"SELECT * FROM pg_catalog.pg_class",
		"SELECT (o.t).name FROM o.t",
		"SELECT x::regclass FROM o.t",
		"SELECT a FROM o.t TABLESAMPLE BERNOULLI (10) ORDER BY a USING <",
		"SELECT jsonb_path_query(j, '$.a[*] ? (@ > 1)') FROM o.t",
		"SELECT * FROM (VALUES (1), (2)) v(a) WHERE a = ANY (ARRAY[1, 2])",
		"SELECT\n  *\nFROM o.t\nWHERE a = = 1",
		"EXPLAIN ANALYZE DELETE FROM o.t",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		if len(sql) > 4096 {
			t.Skip()
		}
		err := Check(sql)
		tree, perr := pg_query.Parse(sql)
		if perr == nil && !utf8.ValidString(sql) {
			perr = errors.New("not UTF-8") // PostgreSQL refuses such a query as it arrives
		}
		var se *SyntaxError
		var fe *ForbiddenError
		switch {
		case perr != nil:
			if !errors.As(err, &se) {
				t.Fatalf("the parser refuses %q (%v); Check says %v", sql, perr, err)
			}
			return
		case errors.As(err, &se):
			t.Fatalf("Check calls parsable %q a syntax error: %v", sql, err)
		case err != nil && !errors.As(err, &fe):
			t.Fatalf("Check(%q): %v (%T)", sql, err, err)
		case err != nil:
			return
		}
		if len(tree.Stmts) != 1 || tree.Stmts[0].Stmt.GetSelectStmt() == nil {
			t.Fatalf("accepted %q: %v", sql, tree.Stmts)
		}
		js, jerr := pg_query.ParseToJSON(sql)
		if jerr != nil {
			t.Fatal(jerr)
		}
		for _, k := range []string{`"InsertStmt":`, `"UpdateStmt":`, `"DeleteStmt":`, `"MergeStmt":`, `"intoClause":`, `"lockingClause":`} {
			if strings.Contains(js, k) {
				t.Fatalf("accepted %q, whose tree has %s", sql, k)
			}
		}
		out, derr := pg_query.Deparse(tree)
		if derr != nil {
			return // the deparser does not know every node; nothing to compare
		}
		if _, err := pg_query.Parse(out); err != nil {
			// libpg_query's deparser drops some nodes (JSON(...) in FROM became "...,",
			// found by this target): its limit, not the guard's.
			return
		}
		if err := Check(out); err != nil {
			t.Fatalf("accepted %q but not its deparsed form %q: %v", sql, out, err)
		}
		f1, err1 := pg_query.Fingerprint(sql)
		f2, err2 := pg_query.Fingerprint(out)
		if err1 != nil || err2 != nil || f1 != f2 {
			t.Fatalf("%q deparses to %q, which means something else (%s %v, %s %v)", sql, out, f1, err1, f2, err2)
		}
	})
}

// FuzzBindNames gives the :name and {{name}} binders arbitrary text. Invariants: no failure
// but a *SyntaxError; the names are distinct; binding is idempotent (the bound text has no
// placeholder left) and changes the text only where it put $n.
func FuzzBindNames(f *testing.F) {
	for _, s := range []string{
		"SELECT * FROM t WHERE a > :min AND b = ':min' AND c < :max -- :x\nAND d = :MIN",
		"SELECT a::text, b FROM t WHERE c = :c",
		"SELECT * FROM t WHERE a > {{min}} AND b = '{{min}}' AND c < {{ max }} -- {{x}}\nAND d = {{MIN}}",
		"SELECT $$:x {{y}}$$, :select, {{from}}",
		"SELECT 'é' || :naïve, {{ünï}}",
		"SELECT '",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, sql string) {
		if len(sql) > 4096 {
			t.Skip()
		}
		for _, bind := range []struct {
			name string
			fn   func(string, int) (string, []string, error)
		}{{"BindNames", BindNames}, {"BindBraces", BindBraces}} {
			out, names, err := bind.fn(sql, 1)
			if err != nil {
				var se *SyntaxError
				if !errors.As(err, &se) {
					t.Fatalf("%s(%q): %v (%T)", bind.name, sql, err, err)
				}
				continue
			}
			seen := map[string]bool{}
			for _, n := range names {
				if seen[n] {
					t.Fatalf("%s(%q) names %q twice: %v", bind.name, sql, n, names)
				}
				seen[n] = true
			}
			if len(names) == 0 && out != sql {
				t.Fatalf("%s(%q) bound nothing but changed the text to %q", bind.name, sql, out)
			}
			again, more, err := bind.fn(out, len(names)+1)
			if err != nil || len(more) != 0 || again != out {
				t.Fatalf("%s(%q) = %q, which binds again to %q %v %v", bind.name, sql, out, again, more, err)
			}
		}
	})
}
