package store_test

import (
	"context"
	"fmt"
	"os"
	"testing"

	"dataplatform/store"
	"dataplatform/store/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// TestPreparingEvicts: texts past what is kept are still answered, and right; the kept ones
// stay at the cap, a text used more often than the least recently used kept one displaces it
// (a text used again outlives those used before it), and a text seen once is not prepared.
func TestPreparingEvicts(t *testing.T) {
	ctx := context.Background()
	st, err := store.Open(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	q := st.Preparing(st.DB)
	text := func(i int) string { return fmt.Sprintf("SELECT $1::int + %d", i) }
	run := func(i int) {
		t.Helper()
		var got int
		if err := q.QueryRowxContext(ctx, text(i), 1000).Scan(&got); err != nil || got != 1000+i {
			t.Fatalf("text %d: %d, %v; want %d", i, got, err, 1000+i)
		}
	}
	const n = 300 // more than are kept
	for i := range n {
		for range 3 {
			run(i)
		}
	}
	run(0) // kept first, used last: the most recently used
	// Texts used more often than the kept ones displace the least recently used of them.
	for i := n - 100; i < n; i++ {
		for range 6 {
			run(i)
		}
	}
	kept, ring, zero := store.StmtCacheState(st.DB, text(0))
	if ring != kept || kept == 0 || kept >= n {
		t.Fatalf("kept %d statements, %d in the ring (-1: broken); want the cap, all in the ring", kept, ring)
	}
	if !zero {
		t.Error("text 0, used again before the others, was evicted")
	}
	if _, _, one := store.StmtCacheState(st.DB, text(1)); one {
		t.Error("text 1, the least recently used, is still kept")
	}
	if _, _, last := store.StmtCacheState(st.DB, text(n-1)); !last {
		t.Error("the last text used three times is not kept")
	}
	run(n + 1)
	if _, _, once := store.StmtCacheState(st.DB, text(n+1)); once {
		t.Error("a text used once was prepared")
	}
	for i := range n { // the evicted ones still answer
		run(i)
	}
}
