package datasets

import (
	"context"
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
