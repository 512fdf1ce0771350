package store_test

import (
	"context"
	"testing"
	"time"

	"dataplatform/store"
	"dataplatform/store/pgtest"
)

// TestColumnIndexJobsMigration: the migration that makes column indexes end with the key
// queues the index job of each active uploaded dataset, and of no other.
func TestColumnIndexJobsMigration(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	now := time.Date(2024, 6, 1, 12, 0, 0, 0, time.UTC)
	_, org, prj := pgtest.Tenant(t, st, now)
	ids := map[string]string{}
	for _, k := range []struct{ name, typ, status string }{{"uploaded", "file", "active"}, {"loading", "file", "processing"}, {"connected", "database", "active"}} {
		d := &store.Dataset{ID: store.NewID("ds"), ProjectID: prj, OrgID: org, Name: k.name, Type: k.typ, Status: k.status, SourceType: "csv",
			TableSchema: org, Columns: "[]", CreatedAt: now, UpdatedAt: now}
		if err := store.CreateDataset(ctx, st.DB, d); err != nil {
			t.Fatal(err)
		}
		ids[k.name] = d.ID
	}
	if err := store.MigrateDownTo(ctx, st.DB.DB, 40); err != nil {
		t.Fatal(err)
	}
	if err := store.Migrate(ctx, st.DB.DB); err != nil {
		t.Fatal(err)
	}
	var jobs []struct {
		Resource string `db:"resource_id"`
		Dataset  string `db:"dataset_id"`
		Org      string `db:"organization_id"`
	}
	if err := st.DB.Select(&jobs, `SELECT resource_id, payload->>'dataset_id' AS dataset_id, organization_id FROM platform.jobs
		WHERE kind = 'dataset.search_index' AND status = 'queued'`); err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 1 || jobs[0].Resource != ids["uploaded"] || jobs[0].Dataset != ids["uploaded"] || jobs[0].Org != org {
		t.Fatalf("jobs %+v, want one for %s", jobs, ids["uploaded"])
	}
}
