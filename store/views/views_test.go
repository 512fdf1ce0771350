package views

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"dataplatform/store"
	"dataplatform/store/datasets"
	"dataplatform/store/pgtest"
	"dataplatform/store/queries"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// TestCheck: a definition is compiled, planned and created without anything kept, as the
// dashboards' planner uses it.
func TestCheck(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	now := time.Date(2024, 6, 1, 12, 0, 0, 0, time.UTC)
	_, org, prj := pgtest.Tenant(t, st, now)
	if err := datasets.EnsureSchema(ctx, st.DB, org); err != nil {
		t.Fatal(err)
	}
	ds := store.NewID("ds")
	d := &store.Dataset{ID: ds, ProjectID: prj, OrgID: org, Name: "Orders", Type: "file", Status: "active", SourceType: "csv", TableSchema: org,
		Columns: `[{"name":"region","type":"text","nullable":true},{"name":"amount","type":"numeric","nullable":true}]`, CreatedAt: now, UpdatedAt: now}
	if err := store.CreateDataset(ctx, st.DB, d); err != nil {
		t.Fatal(err)
	}
	table := datasets.Table(org, ds)
	for _, q := range append([]string{`CREATE TABLE ` + table + ` (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, region text, amount numeric,
		created_at timestamptz NOT NULL DEFAULT now(), updated_at timestamptz NOT NULL DEFAULT now(), deleted_at timestamptz, version int NOT NULL DEFAULT 1)`},
		datasets.RowSecurity(table)...) {
		if _, err := st.DB.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	q := "SELECT region, sum(amount) AS total FROM orders GROUP BY region"
	sql, cols, err := Check(ctx, st.DB, org, prj, Definition{SQL: &q})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sql, org+"."+ds) || len(cols) != 2 || cols[0] != (Column{Name: "region", Type: "text", Nullable: true}) || cols[1].Type != "numeric" {
		t.Fatalf("checked: %s %+v", sql, cols)
	}
	var n int
	if err := st.DB.Get(&n, `SELECT count(*) FROM pg_class c JOIN pg_namespace s ON s.oid = c.relnamespace WHERE s.nspname = $1 AND c.relkind = 'v'`, org); err != nil || n != 0 {
		t.Fatalf("a check kept a view: %d %v", n, err)
	}
	// Its refusals are Create's.
	bad := "SELECT nope FROM orders"
	var se *SQLError
	if _, _, err := Check(ctx, st.DB, org, prj, Definition{SQL: &bad}); !errors.As(err, &se) {
		t.Fatalf("missing column: %v", err)
	}
	unknown := "SELECT * FROM customers"
	var ue *queries.UnknownError
	if _, _, err := Check(ctx, st.DB, org, prj, Definition{SQL: &unknown}); !errors.As(err, &ue) {
		t.Fatalf("unknown dataset: %v", err)
	}
	if _, cols, err := Check(ctx, st.DB, org, prj, Definition{Join: &Join{Base: "orders", Columns: []JoinColumn{{Source: "orders.id"}, {Source: "orders.amount", As: "a"}}}}); err != nil ||
		len(cols) != 2 || cols[0].Type != "bigint" || cols[1].Name != "a" {
		t.Fatalf("join: %+v %v", cols, err)
	}
}
