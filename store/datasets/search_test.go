package datasets

import (
	"context"
	"strings"
	"testing"
	"time"

	"dataplatform/store/ingest"
)

// TestCreateIndexSmallInPlace: a small table's index is built at once though an older
// transaction of the database is open (CONCURRENTLY waits for it); a larger table's waits
// for it, writes going on; a small table whose writes hold its lock past a second is
// indexed CONCURRENTLY after that second.
func TestCreateIndexSmallInPlace(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	ctx := context.Background()
	d := p.dataset(t, "Tide gauges", []ingest.Column{{Name: "station", Type: ingest.Text}, {Name: "height", Type: ingest.Numeric}},
		[]any{"Brest", 4.2}, []any{"Cadiz", 1.9})
	x := &Indexer{Store: p.st}
	valid := func(name string) bool {
		var ok bool
		if err := p.st.DB.Get(&ok, `SELECT coalesce((SELECT i.indisvalid FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid
			WHERE c.relname = $1), false)`, name); err != nil {
			t.Fatal(err)
		}
		return ok
	}
	older := p.st.DB.MustBegin()
	older.MustExec(`SET TRANSACTION ISOLATION LEVEL REPEATABLE READ`)
	older.MustExec(`SELECT 1`) // holds its snapshot
	small, large := int64(2), smallTable+1
	d.RowCount = &small
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := x.createIndex(wctx, d, "gauges_station_idx", `(station)`); err != nil || !valid("gauges_station_idx") {
		t.Fatalf("small table beside an older transaction: %v", err)
	}
	d.RowCount = &large
	short, cancelShort := context.WithTimeout(ctx, 700*time.Millisecond)
	defer cancelShort()
	if err := x.createIndex(short, d, "gauges_height_idx", `(height)`); err == nil {
		t.Fatal("a large table's index did not wait for the older transaction")
	}
	_ = older.Rollback()
	p.st.DB.MustExec(`DROP INDEX IF EXISTS ` + Table(d.TableSchema, "gauges_height_idx"))
	if err := x.createIndex(ctx, d, "gauges_height_idx", `(height)`); err != nil || !valid("gauges_height_idx") {
		t.Fatalf("large table: %v", err)
	}
	// A write holds the small table's lock: in place gives up after a second.
	writer := p.st.DB.MustBegin()
	writer.MustExec(`INSERT INTO ` + Table(d.TableSchema, d.ID) + ` (station, height) VALUES ('Oban', 3.1)`)
	d.RowCount = &small
	go func() { time.Sleep(1500 * time.Millisecond); _ = writer.Commit() }()
	start := time.Now()
	if err := x.createIndex(ctx, d, "gauges_both_idx", `(station, height)`); err != nil || !valid("gauges_both_idx") || time.Since(start) < time.Second {
		t.Fatalf("small table behind a write: %v after %s", err, time.Since(start))
	}
}

// TestRebuildIndexTooLong: a column index of the column alone that cannot be built again with
// the key beside it (values too long for a btree) stays as it is, and the half-built one goes.
func TestRebuildIndexTooLong(t *testing.T) {
	t.Parallel()
	p := newProject(t)
	ctx := context.Background()
	d := p.dataset(t, "Manuscripts", []ingest.Column{{Name: "passage", Type: ingest.Text}}, []any{"short"})
	table := Table(d.TableSchema, d.ID)
	// About 3,200 bytes of random hex, which does not compress below btree's 2,704.
	p.st.DB.MustExec(`INSERT INTO ` + table + ` (passage) SELECT string_agg(md5(random()::text), '') FROM generate_series(1, 100)`)
	name := constraintName(d.ID + "_passage_idx")
	p.st.DB.MustExec(`CREATE INDEX ` + name + ` ON ` + table + ` (md5(passage))`) // one column, as an old index has
	x := &Indexer{Store: p.st}
	if err := x.rebuildIndex(ctx, d, name, `(passage, id)`); err != nil {
		t.Fatalf("rebuilding an index that cannot be rebuilt: %v", err)
	}
	var defs []string
	if err := p.st.DB.Select(&defs, `SELECT indexname || ' ' || indexdef FROM pg_indexes WHERE schemaname = $1 AND tablename = $2 AND indexname LIKE '%passage%'`,
		d.TableSchema, d.ID); err != nil {
		t.Fatal(err)
	}
	if len(defs) != 1 || !strings.HasPrefix(defs[0], name+" ") || !strings.Contains(defs[0], "md5(passage)") {
		t.Fatalf("indexes of the column after a failed rebuild: %v", defs)
	}
}
