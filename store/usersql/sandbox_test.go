package usersql_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"dataplatform/store"
	"dataplatform/store/datasets"
	"dataplatform/store/pgtest"
	"dataplatform/store/usersql"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

// sandbox is an organization's schema with one dataset-like table of five people (Bob
// soft-deleted) and the organization's query role, in a database of its own.
func sandbox(t *testing.T) (db *sqlx.DB, org, table string) {
	t.Helper()
	ctx := context.Background()
	st, err := store.Open(ctx, pgtest.NewDatabase(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	org, table = store.NewID("org"), store.NewID("ds")
	if err := datasets.EnsureSchema(ctx, st.DB, org); err != nil {
		t.Fatal(err)
	}
	qualified := datasets.Table(org, table)
	for _, q := range append([]string{
		`CREATE TABLE ` + qualified + ` (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, name text NOT NULL,
			score integer, joined date, deleted_at timestamptz)`,
		`INSERT INTO ` + qualified + ` (name, score, joined, deleted_at) VALUES ('Ann', 90, '2024-01-05', NULL),
			('Bob', 40, '2024-02-10', now()), ('Cid', NULL, NULL, NULL), ('Dee', 60, '2024-03-01', NULL), ('Eve', 10, '2023-12-24', NULL)`,
	}, datasets.RowSecurity(qualified)...) {
		if _, err := st.DB.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := datasets.EnsureQueryRole(ctx, st.DB, org); err != nil {
		t.Fatal(err)
	}
	return st.DB, org, table
}

func TestRunQuery(t *testing.T) {
	t.Parallel()
	db, org, table := sandbox(t)
	ctx := context.Background()
	q := fmt.Sprintf(`SELECT name, score, joined FROM %s WHERE score > $1 ORDER BY name`, pq.QuoteIdentifier(table))
	res, err := usersql.RunQuery(ctx, db, org, q, []any{5}, usersql.QueryOptions{Timeout: 5 * time.Second, MaxRows: 10})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Columns) != 3 || res.Columns[0].Name != "name" || res.Columns[1].Type != "int4" || res.Columns[2].Type != "date" || res.Truncated {
		t.Fatalf("columns: %+v truncated %v", res.Columns, res.Truncated)
	}
	if fmt.Sprint(res.Objects()) != "[map[joined:2024-01-05 name:Ann score:90] map[joined:2024-03-01 name:Dee score:60] map[joined:2023-12-24 name:Eve score:10]]" {
		t.Fatalf("rows (Bob is deleted): %v", res.Objects())
	}
	res, err = usersql.RunQuery(ctx, db, org, q, []any{5}, usersql.QueryOptions{Timeout: 5 * time.Second, MaxRows: 2})
	if err != nil || len(res.Rows) != 2 || !res.Truncated {
		t.Fatalf("row limit: %d rows, truncated %v, %v", len(res.Rows), res.Truncated, err)
	}
	_, err = usersql.RunQuery(ctx, db, org, `SELECT count(*) FROM generate_series(1, 100000) a, generate_series(1, 100000) b`, nil, usersql.QueryOptions{Timeout: 100 * time.Millisecond, MaxRows: 1})
	if !usersql.IsTimeout(err) {
		t.Fatalf("timeout: %v", err)
	}
}

// TestRunQueryRefuses: what the guard or the database refuses changes nothing.
func TestRunQueryRefuses(t *testing.T) {
	t.Parallel()
	db, org, table := sandbox(t)
	ctx := context.Background()
	for _, sql := range []string{
		fmt.Sprintf(`DELETE FROM %s`, pq.QuoteIdentifier(table)),
		fmt.Sprintf(`WITH d AS (DELETE FROM %s RETURNING 1) SELECT * FROM d`, pq.QuoteIdentifier(table)),
		`SELECT * FROM platform.users`,
		`SELECT 1; SELECT 2`,
		`SELECT pg_sleep(0)`,
	} {
		// Also wrapped by the row size cap, which must not let a second statement through.
		for _, capped := range []int64{0, 1 << 20} {
			if _, err := usersql.RunQuery(ctx, db, org, sql, nil, usersql.QueryOptions{Timeout: time.Second, MaxRows: 1, MaxRowBytes: capped}); err == nil {
				t.Errorf("%s (row cap %d): not refused", sql, capped)
			}
		}
	}
	var n int
	if err := db.Get(&n, `SELECT count(*) FROM `+datasets.Table(org, table)); err != nil || n != 5 {
		t.Fatalf("rows after refused writes: %d %v", n, err)
	}
}

// TestRunQueryByteCap: the audit's SELECT repeat('x', 10000000) FROM generate_series(1, 20)
// (scaled to rows of 1 MB against a 3 MiB cap) stops being read at the cap; a single row
// larger than the row cap is refused by the database before it is sent, also when it is
// stored compressed, and through a cursor.
func TestRunQueryByteCap(t *testing.T) {
	t.Parallel()
	db, org, table := sandbox(t)
	ctx := context.Background()
	o := usersql.QueryOptions{Timeout: 10 * time.Second, MaxRows: 10_000, MaxBytes: 3 << 20, MaxRowBytes: 3 << 20}
	res, err := usersql.RunQuery(ctx, db, org, `SELECT repeat('x', 1000000) AS v FROM generate_series(1, 20);  -- the audit's, scaled`, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Rows) != 3 || !res.Truncated || !res.TooLarge || res.Bytes > o.MaxBytes || res.Columns[0].Name != "v" {
		t.Fatalf("byte cap: %d rows, truncated %v, too large %v, %d bytes, %+v", len(res.Rows), res.Truncated, res.TooLarge, res.Bytes, res.Columns)
	}
	// Under the cap: everything, counted as the JSON it becomes (["a\"b",1,null]: a number
	// counts as 24, its longest form).
	res, err = usersql.RunQuery(ctx, db, org, `SELECT 'a"b' AS s, 1 AS n, NULL AS z FROM generate_series(1, 2)`, nil, o)
	if err != nil || len(res.Rows) != 2 || res.Truncated || res.Bytes != 2*int64(len(`["a\"b",,null]`)+24) {
		t.Fatalf("small result: %+v %v", res, err)
	}
	var rte *usersql.RowTooLargeError
	_, err = usersql.RunQuery(ctx, db, org, `SELECT 1 AS a, (SELECT string_agg(repeat('x', 1000000), '') FROM generate_series(1, 5)) AS b`, nil, o)
	if !errors.As(err, &rte) || rte.Bytes < 5_000_000 || rte.Max != o.MaxRowBytes {
		t.Fatalf("huge row: %v", err)
	}
	// Stored compressed (a few hundred KB on disk for 20 MB of text).
	if _, err := db.Exec(`UPDATE ` + datasets.Table(org, table) + ` SET name = repeat('x', 20000000) WHERE name = 'Ann'`); err != nil {
		t.Fatal(err)
	}
	_, err = usersql.RunQuery(ctx, db, org, `SELECT name FROM `+pq.QuoteIdentifier(table)+` ORDER BY id`, nil, o)
	if !errors.As(err, &rte) || rte.Bytes < 20_000_000 {
		t.Fatalf("huge stored value: %v", err)
	}
	cur, err := usersql.OpenCursor(ctx, db, org, `SELECT name FROM `+pq.QuoteIdentifier(table)+` ORDER BY id`, nil, o)
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close()
	n, _, err := cur.Each(ctx, func([]usersql.QueryColumn) error { return nil }, func([]any) error { return nil })
	if !errors.As(err, &rte) || n != 0 {
		t.Fatalf("huge row through a cursor: %d rows, %v", n, err)
	}
}

// TestRowCapPositions: the row cap's wrapping does not move the positions of errors in the
// statement, through RunQuery or a cursor.
func TestRowCapPositions(t *testing.T) {
	t.Parallel()
	db, org, table := sandbox(t)
	ctx := context.Background()
	q := "  -- the name is misspelt\nSELECT nmae\nFROM " + pq.QuoteIdentifier(table) + ";  -- é"
	position := func(err error) string {
		var pe *pq.Error
		if !errors.As(err, &pe) {
			t.Fatalf("not a database error: %v", err)
		}
		return pe.Position
	}
	want := fmt.Sprint(strings.Index(q, "nmae") + 1)
	for _, capped := range []int64{0, 1 << 20} {
		o := usersql.QueryOptions{Timeout: 5 * time.Second, MaxRows: 10, MaxRowBytes: capped}
		_, err := usersql.RunQuery(ctx, db, org, q, nil, o)
		if got := position(err); got != want {
			t.Errorf("RunQuery, row cap %d: position %s, want %s", capped, got, want)
		}
		_, err = usersql.OpenCursor(ctx, db, org, q, nil, o)
		if got := position(err); got != want {
			t.Errorf("OpenCursor, row cap %d: position %s, want %s", capped, got, want)
		}
	}
}

// TestSizedFunctions: what repeat, lpad, rpad, array_fill and generate_series are asked to
// make is bounded before it is allocated; sizes under the bounds work as the built-ins do.
func TestSizedFunctions(t *testing.T) {
	t.Parallel()
	db, org, table := sandbox(t)
	ctx := context.Background()
	o := usersql.QueryOptions{Timeout: 10 * time.Second, MaxRows: 10}
	for sql, want := range map[string]string{
		`SELECT length(repeat('ab', 524288)), lpad('7', 3, '0'), rpad(name, 4, '.'), lpad(NULL, 3), repeat(NULL, 5) FROM ` +
			pq.QuoteIdentifier(table) + ` WHERE name = 'Ann'`: `[[1048576 007 Ann. <nil> <nil>]]`,
		`SELECT count(*), sum(g) FROM generate_series(1, 10000000) g`:                                                      `[[10000000 50000005000000]]`,
		`SELECT count(*) FROM generate_series(10, 1, -3)`:                                                                  `[[4]]`,
		`SELECT count(*) FROM generate_series('2024-01-01'::date, '2024-12-31', '1 day')`:                                  `[[366]]`,
		`SELECT count(*) FROM generate_series(0.5, 2.5, 0.5)`:                                                              `[[5]]`,
		`SELECT cardinality(array_fill(0, ARRAY[1024, 1024])), array_length(array_fill('x'::text, ARRAY[2], ARRAY[0]), 1)`: `[[1048576 2]]`,
	} {
		res, err := usersql.RunQuery(ctx, db, org, sql, nil, o)
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		if got := fmt.Sprint(res.Rows); got != want {
			t.Errorf("%s: %s, want %s", sql, got, want)
		}
	}
	for sql, limit := range map[string]string{
		`SELECT length(repeat('x', 400000000))`:                                                   `"limit":1048576,"current":400000000,"unit":"bytes"`,
		`SELECT length(repeat('ab', 524289))`:                                                     `"limit":1048576,"current":1048578,"unit":"bytes"`,
		`SELECT length(repeat(name, 1000000)) FROM ` + pq.QuoteIdentifier(table):                  `"unit":"bytes"`,
		`SELECT lpad('', 2000000)`:                                                                `"current":2000000,"unit":"characters"`,
		`SELECT rpad('x', 1048577, 'yz')`:                                                         `"current":1048577,"unit":"characters"`,
		`SELECT cardinality(array_fill(0, ARRAY[1025, 1024]))`:                                    `"current":1049600,"unit":"elements"`,
		`SELECT count(*) FROM generate_series(1, 10000001)`:                                       `"limit":10000000,"current":10000001,"unit":"rows"`,
		`SELECT generate_series(1::bigint, 20000000000, 2)`:                                       `"current":10000000000,"unit":"rows"`,
		`SELECT count(*) FROM generate_series('2000-01-01'::timestamp, '2030-01-01', '1 minute')`: `"unit":"rows"`,
		`SELECT count(*) FROM (SELECT 5 AS n) s, LATERAL generate_series(1, n * 10000000)`:        `"current":50000000,"unit":"rows"`,
	} {
		_, err := usersql.RunQuery(ctx, db, org, sql, nil, o)
		var pe *pq.Error
		if !errors.As(err, &pe) || pe.Code != "54000" || !strings.Contains(strings.ReplaceAll(pe.Detail, " ", ""), limit) {
			t.Errorf("%s: %v (%s), want program_limit_exceeded with %s", sql, err, detail(pe), limit)
		}
	}
}

func detail(pe *pq.Error) string {
	if pe == nil {
		return ""
	}
	return pe.Detail
}

// userSlots gives the options of a user's query (the user named after prefix) with two slots
// of its own, drawing on shared.
func userSlots(shared *usersql.SharedSlot, prefix string) func(user string) usersql.QueryOptions {
	return func(user string) usersql.QueryOptions {
		return usersql.QueryOptions{Timeout: 10 * time.Second, MaxRows: 10,
			Slot: &usersql.Slot{Key: prefix + user, Max: 2, Shared: shared}}
	}
}

// TestSharedSlot: user SQL past the database's share waits for a slot, up to its wait, then
// is refused (ErrBusy); a slot freed while it waits lets it run. The user's own slots are
// counted apart.
func TestSharedSlot(t *testing.T) {
	t.Parallel()
	db, org, _ := sandbox(t)
	ctx := context.Background()
	shared := &usersql.SharedSlot{Max: 1, Wait: 400 * time.Millisecond}
	o := userSlots(shared, "test."+org+".")
	// A cursor holds its slots until it is closed.
	cur, err := usersql.OpenCursor(ctx, db, org, `SELECT 1`, nil, o("ann"))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = usersql.RunQuery(ctx, db, org, `SELECT 1`, nil, o("bob"))
	if !errors.Is(err, usersql.ErrBusy) || !usersql.NotRun(err) || time.Since(start) < 300*time.Millisecond {
		t.Fatalf("past the shared slots: %v after %s, want ErrBusy after waiting", err, time.Since(start))
	}
	done := make(chan error, 1)
	go func() {
		_, err := usersql.RunQuery(ctx, db, org, `SELECT 1`, nil, o("bob"))
		done <- err
	}()
	time.Sleep(100 * time.Millisecond)
	cur.Close()
	if err := <-done; err != nil {
		t.Fatalf("a slot freed while waiting: %v", err)
	}
	// No shared bound: only the user's own slots count.
	cur, err = usersql.OpenCursor(ctx, db, org, `SELECT 1`, nil, o("ann"))
	if err != nil {
		t.Fatal(err)
	}
	defer cur.Close()
	free := o("bob")
	free.Slot.Shared = nil
	if _, err := usersql.RunQuery(ctx, db, org, `SELECT 1`, nil, free); err != nil {
		t.Fatalf("without a shared bound: %v", err)
	}
}

// TestOrgShare: an organization's SQL holds at most its share of the database's slots; a
// query past it waits, holding none of the database's slots meanwhile (another organization
// still finds one), then is refused (OrgBusyError); one freed while it waits lets it run.
// User SQL runs without parallel workers, one core a query.
func TestOrgShare(t *testing.T) {
	t.Parallel()
	db, org, _ := sandbox(t)
	ctx := context.Background()
	other := store.NewID("org")
	if err := datasets.EnsureSchema(ctx, db, other); err != nil {
		t.Fatal(err)
	}
	big := datasets.Table(other, "big")
	for _, q := range []string{`CREATE TABLE ` + big + ` (n integer, pad text, deleted_at timestamptz)`,
		`INSERT INTO ` + big + ` SELECT g, 'padding padding padding', NULL FROM generate_series(1, 300000) g`, `ANALYZE ` + big} {
		if _, err := db.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	if err := datasets.EnsureQueryRole(ctx, db, other); err != nil {
		t.Fatal(err)
	}
	// The same plan is parallel outside user SQL.
	var outside string
	if err := db.Get(&outside, `EXPLAIN (FORMAT JSON) SELECT count(*) FROM `+big); err != nil || !strings.Contains(outside, "Gather") {
		t.Fatalf("outside user SQL: %v %s, want a parallel plan", err, outside)
	}
	res, err := usersql.RunQuery(ctx, db, other, `SELECT count(*) FROM big`, nil, usersql.QueryOptions{Timeout: 10 * time.Second, MaxRows: 1, PlanOnly: true})
	if err != nil || len(res.Plan) == 0 || strings.Contains(string(res.Plan), "Gather") {
		t.Fatalf("user SQL's plan: %v %s, want no parallel workers", err, res.Plan)
	}
	shared := &usersql.SharedSlot{Max: 2, PerOrg: 1, Wait: 600 * time.Millisecond}
	o := userSlots(shared, "test.")
	cur, err := usersql.OpenCursor(ctx, db, org, `SELECT 1`, nil, o("ann"))
	if err != nil {
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	start := time.Now()
	go func() {
		_, err := usersql.RunQuery(ctx, db, org, `SELECT 1`, nil, o("bob"))
		waited <- err
	}()
	time.Sleep(200 * time.Millisecond) // bob waits for the organization's share
	if _, err := usersql.RunQuery(ctx, db, other, `SELECT 1`, nil, o("cid")); err != nil {
		t.Fatalf("another organization while one waits for its share: %v", err)
	}
	var ob *usersql.OrgBusyError
	if err := <-waited; !errors.As(err, &ob) || ob.Max != 1 || !usersql.NotRun(err) || time.Since(start) < 500*time.Millisecond {
		t.Fatalf("past the organization's share: %v after %s, want OrgBusyError after waiting", err, time.Since(start))
	}
	go func() {
		_, err := usersql.RunQuery(ctx, db, org, `SELECT 1`, nil, o("bob"))
		waited <- err
	}()
	time.Sleep(100 * time.Millisecond)
	cur.Close()
	if err := <-waited; err != nil {
		t.Fatalf("a share freed while waiting: %v", err)
	}
}

// TestWaitingHoldsNoConnection: queries waiting for their organization's share wait in the
// process, in turn, holding no database connection; a slot held elsewhere (another
// replica's query: an advisory lock of the same key) is still waited for in the database.
func TestWaitingHoldsNoConnection(t *testing.T) {
	t.Parallel()
	db, org, _ := sandbox(t)
	ctx := context.Background()
	shared := &usersql.SharedSlot{Max: 3, PerOrg: 1, Wait: 3 * time.Second}
	o := userSlots(shared, "wait."+org+".")
	cur, err := usersql.OpenCursor(ctx, db, org, `SELECT 1`, nil, o("ann"))
	if err != nil {
		t.Fatal(err)
	}
	before := db.Stats().InUse
	done := make(chan int, 5)
	for i := range 5 {
		go func() {
			if _, err := usersql.RunQuery(ctx, db, org, `SELECT 1`, nil, o(fmt.Sprint("user", i))); err != nil {
				t.Errorf("waiter %d: %v", i, err)
			}
			done <- i
		}()
		// in this order: the next comes once this one is counted at the gate (and has had
		// time to queue for the share)
		for usersql.OrgQueued(shared, org) < i+2 {
			time.Sleep(time.Millisecond)
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(200 * time.Millisecond)
	if inUse := db.Stats().InUse; inUse != before {
		t.Fatalf("%d connections in use while 5 queries wait, %d before they came", inUse, before)
	}
	cur.Close()
	for want := range 5 {
		if got := <-done; got != want {
			t.Errorf("waiter %d ran %dth: not in turn", got, want)
		}
	}
	// Another replica's query holds the organization's slot: admitted by this process's gate,
	// the query waits for it in the database, and runs once it is free.
	other, err := db.Beginx()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := other.Exec(`SELECT pg_advisory_xact_lock(hashtext($1), 0)`, "platform.slot.org."+org); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(300 * time.Millisecond)
		_ = other.Rollback()
	}()
	start := time.Now()
	if _, err := usersql.RunQuery(ctx, db, org, `SELECT 1`, nil, o("ann")); err != nil || time.Since(start) < 250*time.Millisecond {
		t.Fatalf("behind another replica's query: %v after %s", err, time.Since(start))
	}
}

// TestSizedAttackMemory: five concurrent SELECT length(repeat('x', 400000000)) (an outside
// audit's attack, which took ~1.8 GB of the database's memory each) are refused, and no
// backend of the test's database grows: each one's peak resident memory (VmHWM) is read
// from /proc when the database runs on this machine.
func TestSizedAttackMemory(t *testing.T) {
	t.Parallel()
	db, org, _ := sandbox(t)
	ctx := context.Background()
	o := usersql.QueryOptions{Timeout: 30 * time.Second, MaxRows: 1}
	errs := make(chan error, 5)
	for range 5 {
		go func() {
			_, err := usersql.RunQuery(ctx, db, org, `SELECT length(repeat('x', 400000000))`, nil, o)
			errs <- err
		}()
	}
	for range 5 {
		var pe *pq.Error
		if err := <-errs; !errors.As(err, &pe) || pe.Code != "54000" {
			t.Fatalf("attack: %v, want program_limit_exceeded", err)
		}
	}
	var pids []int
	if err := db.Select(&pids, `SELECT pid FROM pg_stat_activity WHERE datname = current_database()`); err != nil {
		t.Fatal(err)
	}
	var peak, sum int64
	for _, pid := range pids {
		status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
		if err != nil {
			t.Skipf("the database's processes are not readable here (%v): the refusals are checked, not the memory", err)
		}
		for _, line := range strings.Split(string(status), "\n") {
			var kb int64
			if _, err := fmt.Sscanf(line, "VmHWM: %d kB", &kb); err == nil {
				peak, sum = max(peak, kb<<10), sum+kb<<10
			}
		}
	}
	t.Logf("%d backends of the test database: peak resident memory %d MB at most, %d MB together", len(pids), peak>>20, sum>>20)
	if peak > 200<<20 {
		t.Fatalf("a backend reached %d MB of resident memory", peak>>20)
	}
}

// TestCancelStaysWithItsQuery: a context cancelled while its statement runs sends the server
// a cancel request from another connection, which could land on whatever the same backend
// runs next; the driver must drop that connection instead, so the next statement on the
// pool is never the one cancelled. Statements are cancelled at every moment around their
// end, on a pool of one connection.
func TestCancelStaysWithItsQuery(t *testing.T) {
	t.Parallel()
	db, _, _ := sandbox(t)
	db.SetMaxOpenConns(1)
	cancelled := 0
	for i := range 200 {
		ctx, cancel := context.WithTimeout(context.Background(), time.Duration(i%40)*100*time.Microsecond)
		_, err := db.ExecContext(ctx, `SELECT pg_sleep(0.002)`)
		cancel()
		if err != nil {
			cancelled++
		}
		if _, err := db.ExecContext(context.Background(), `SELECT pg_sleep(0.003)`); err != nil {
			t.Fatalf("round %d: the statement after a cancelled one failed: %v", i, err)
		}
	}
	t.Logf("%d of 200 statements cancelled", cancelled)
	if cancelled == 0 {
		t.Fatal("no statement was cancelled: the test did not test anything")
	}
}
