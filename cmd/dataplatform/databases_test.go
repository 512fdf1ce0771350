package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"dataplatform/store/pgembed"
)

// pgBouncer is a pgbouncer the test started in front of a PostgreSQL server.
type pgBouncer struct {
	addr string
	log  string
}

// startPgBouncer runs pgbouncer in transaction pooling mode in front of the server of
// target (a database URL), with a pool of poolSize server connections per database, and
// returns it. As root it runs as the postgres user (pgbouncer refuses root).
func startPgBouncer(t *testing.T, target string, poolSize int) *pgBouncer {
	t.Helper()
	bin, err := exec.LookPath("pgbouncer")
	if err != nil {
		t.Fatal("pgbouncer is not installed: run scripts/ensure-pgbouncer.sh (go tool task test does)")
	}
	u, _ := url.Parse(target)
	pw, _ := u.User.Password()
	dir, err := os.MkdirTemp("", "dp-pgbouncer-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o777)
	b := &pgBouncer{addr: freeAddr(t), log: filepath.Join(dir, "pgbouncer.log")}
	_, port, _ := net.SplitHostPort(b.addr)
	ini := fmt.Sprintf(`[databases]
* = host=%s port=%s
[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %s
unix_socket_dir =
auth_type = scram-sha-256
auth_file = %s
pool_mode = transaction
default_pool_size = %d
max_client_conn = 500
ignore_startup_parameters = extra_float_digits
logfile = %s
pidfile = %s
`, u.Hostname(), u.Port(), port, filepath.Join(dir, "users.txt"), poolSize, b.log, filepath.Join(dir, "pgbouncer.pid"))
	os.WriteFile(filepath.Join(dir, "users.txt"), []byte(fmt.Sprintf("%q %q\n", u.User.Username(), pw)), 0o644)
	os.WriteFile(filepath.Join(dir, "pgbouncer.ini"), []byte(ini), 0o644)
	args := []string{filepath.Join(dir, "pgbouncer.ini")}
	if os.Geteuid() == 0 {
		if _, err := user.Lookup("postgres"); err != nil {
			t.Fatal("running as root: pgbouncer refuses root and there is no postgres user to run it as")
		}
		args = append([]string{"-u", "postgres"}, args...)
	}
	cmd := exec.Command(bin, args...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for start := time.Now(); time.Since(start) < 10*time.Second; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", b.addr); err == nil {
			c.Close()
			return b
		}
	}
	log, _ := os.ReadFile(b.log)
	t.Fatalf("pgbouncer did not start\n%s", log)
	return nil
}

// through is database URL u reaching its server through b, as application name app.
func (b *pgBouncer) through(u, app string) string {
	pu, _ := url.Parse(u)
	pu.Host = b.addr
	return withApp(pu.String(), app)
}

// withApp is database URL u with application_name app (who is who in pg_stat_activity).
func withApp(u, app string) string {
	pu, _ := url.Parse(u)
	q := pu.Query()
	q.Set("application_name", app)
	pu.RawQuery = q.Encode()
	return pu.String()
}

// try is process.call for goroutines: it reports instead of failing the test.
func (p *process) try(method, path, token string, body any) (int, map[string]any, error) {
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, "http://"+p.addr+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+token)
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer r.Body.Close()
	var out map[string]any
	json.NewDecoder(r.Body).Decode(&out)
	return r.StatusCode, out, nil
}

// TestThroughPgBouncer: two servers with DATABASE_URL on PgBouncer in transaction pooling
// mode (a pool of 3 server connections for all their clients) and DATABASE_DIRECT_URL on
// PostgreSQL. Both start (the second after the first's migrations, whose session lock goes
// the direct way), load a dataset, and serve many concurrent clients record CRUD and user SQL
// (SET LOCAL ROLE sandbox) without an error; a change stream hears every creation once. Afterwards every
// server connection of the pool is as a new one (user, role, search path, timeouts, read-only),
// and every LISTEN is on a direct connection.
func TestThroughPgBouncer(t *testing.T) {
	t.Parallel()
	dbURL, db := processDB(t)
	pgb := startPgBouncer(t, dbURL, 3)
	env := []string{"DATABASE_DIRECT_URL=" + withApp(dbURL, "dp-direct"), "DP_JOB_LEASE=2s", "DP_DATA_DIR=" + t.TempDir(),
		"DP_RATE_LIMITS=records_write=10000-M,records_query=10000-M,queries=10000-M,records_read=10000-M"}
	a := serveOn(t, "a", pgb.through(dbURL, "dp-pooled"), env...)
	b := serveOn(t, "b", pgb.through(dbURL, "dp-pooled"), env...)
	tok, _, prj := a.owner(t)
	var csv strings.Builder
	csv.WriteString("text,score\n")
	for i := range 1000 {
		fmt.Fprintf(&csv, "n%d,%d\n", i, i%100)
	}
	id, _ := a.upload(t, tok, prj, "people", csv.String())
	b.waitActive(t, tok, prj, id)

	ctx, cancel := context.WithTimeout(context.Background(), 120*time.Second)
	defer cancel()
	events := sse(t, ctx, "http://"+b.addr+"/api/v1/datasets/"+id+"/data/stream", tok, "")

	const clients, rounds = 8, 15
	var wg sync.WaitGroup
	errs := make(chan string, clients*rounds*8)
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p := []*process{a, b}[c%2]
			check := func(what string, code, want int, out map[string]any, err error) bool {
				if err != nil || code != want {
					errs <- fmt.Sprintf("client %d, %s: %d %v %v", c, what, code, out, err)
					return false
				}
				return true
			}
			for r := range rounds {
				name := fmt.Sprintf("c%d-r%d", c, r)
				code, rec, err := p.try("POST", "/api/v1/datasets/"+id+"/data", tok, map[string]any{"text": name, "score": r})
				if !check("create", code, 201, rec, err) {
					return
				}
				path := "/api/v1/datasets/" + id + "/data/" + fmt.Sprint(rec["id"])
				code, got, err := p.try("GET", path, tok, nil)
				if check("read", code, 200, got, err) && got["text"] != name {
					errs <- fmt.Sprintf("client %d read %v, want %s", c, got, name)
				}
				code, out, err := p.try("PATCH", path, tok, map[string]any{"score": 1000 + r})
				check("patch", code, 200, out, err)
				code, out, err = p.try("GET", "/api/v1/datasets/"+id+"/data?limit=5&sort=-id", tok, nil)
				check("list", code, 200, out, err)
				code, out, err = p.try("POST", "/api/v1/datasets/"+id+"/data/query", tok, map[string]any{"sql": `SELECT count(*) AS n FROM ${table} WHERE score >= 0`})
				check("record SQL", code, 200, out, err)
				code, out, err = p.try("POST", "/api/v1/projects/"+prj+"/queries/execute", tok, map[string]any{"type": "sql", "query": `SELECT max(score) AS m FROM people`})
				check("project SQL", code, 200, out, err)
				if r%3 == 0 {
					code, out, err = p.try("DELETE", path, tok, nil)
					check("delete", code, 200, out, err)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	var failed []string
	for e := range errs {
		failed = append(failed, e)
	}
	if len(failed) > 0 {
		la, _ := os.ReadFile(a.log)
		t.Fatalf("%d failures through PgBouncer, first: %s\n(%d of %d)\nserver a's log:\n%s", len(failed), failed[0], len(failed), clients*rounds, tail(string(la), 30))
	}
	// The stream, through the pooler, heard every creation of the concurrent writers once.
	heard := map[string]int{}
	for _, ev := range take(t, events, clients*rounds) {
		heard[ev[1]]++
	}
	for c := range clients {
		for r := range rounds {
			if n := heard[fmt.Sprintf("c%d-r%d", c, r)]; n != 1 {
				t.Fatalf("the change stream heard c%d-r%d %d times", c, r, n)
			}
		}
	}

	// Every server connection of the pool, as the next client gets it: nothing of the
	// sandbox (role, search path, timeouts, read-only) left over.
	var want string
	const state = `SELECT current_user || ' ' || current_setting('role') || ' ' || current_setting('search_path') || ' ' ||
		current_setting('statement_timeout') || ' ' || current_setting('lock_timeout') || ' ' ||
		current_setting('idle_in_transaction_session_timeout') || ' ' || current_setting('transaction_read_only')`
	if err := db.QueryRow(state).Scan(&want); err != nil {
		t.Fatal(err)
	}
	pooled, err := sql.Open("postgres", pgb.through(dbURL, "dp-test"))
	if err != nil {
		t.Fatal(err)
	}
	defer pooled.Close()
	pooled.SetMaxOpenConns(12)
	var mu sync.Mutex
	seen := map[int]string{} // server pid → state
	var wg2 sync.WaitGroup
	for range 60 {
		wg2.Add(1)
		go func() {
			defer wg2.Done()
			var pid int
			var got string
			if err := pooled.QueryRow(`SELECT pg_backend_pid(), (`+state+`)`).Scan(&pid, &got); err != nil {
				t.Error(err)
				return
			}
			mu.Lock()
			seen[pid] = got
			mu.Unlock()
		}()
	}
	wg2.Wait()
	for pid, got := range seen {
		if got != want {
			t.Fatalf("server connection %d of the pool: %q, a fresh one: %q", pid, got, want)
		}
	}
	t.Logf("%d server connections of the pool checked: %q", len(seen), want)
	var listens, direct int
	db.QueryRow(`SELECT count(*), count(*) FILTER (WHERE application_name = 'dp-direct') FROM pg_stat_activity
		WHERE datname = current_database() AND query LIKE 'LISTEN %'`).Scan(&listens, &direct)
	if listens < 8 || direct != listens { // jobs, change streams, lookups, webhooks: 4 a server
		t.Fatalf("%d LISTEN sessions, %d of them direct", listens, direct)
	}
}

// tail is the last n lines of s.
func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// standbyPair is a primary and a hot standby streaming from it (pg_basebackup -R), started
// from the machine's PostgreSQL binaries the way the embedded database is.
type standbyPair struct {
	primary, standby *pgembed.Cluster
}

// startStandbyPair makes a primary with a database dp and a standby of it whose replay runs
// applyDelay behind (recovery_min_apply_delay), so that a read made at once after a write
// would miss it there.
func startStandbyPair(t *testing.T, applyDelay time.Duration) *standbyPair {
	t.Helper()
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "dp-standby-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	pw := filepath.Join(dir, "password")
	p := &standbyPair{}
	if p.primary, err = pgembed.Start(ctx, filepath.Join(dir, "primary"), pw, pgembed.Options{Ephemeral: true}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.primary.Stop() })
	db, err := sql.Open("postgres", p.primary.URL("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(`CREATE DATABASE dp`); err != nil {
		t.Fatal(err)
	}
	basebackup, err := pgembed.Tool("pg_basebackup")
	if err != nil {
		t.Fatal(err)
	}
	sdir := filepath.Join(dir, "standby")
	os.Mkdir(sdir, 0o700)
	cmd := exec.Command(basebackup, "-D", sdir, "-R", "-X", "stream", "-c", "fast", "-d", p.primary.URL("postgres"))
	if os.Geteuid() == 0 { // the cluster's files are the postgres user's
		u, err := user.Lookup("postgres")
		if err != nil {
			t.Fatal(err)
		}
		uid, _ := strconv.Atoi(u.Uid)
		gid, _ := strconv.Atoi(u.Gid)
		os.Chown(sdir, uid, gid)
		cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: uint32(uid), Gid: uint32(gid)}}
	}
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("pg_basebackup: %v\n%s", err, out)
	}
	f, err := os.OpenFile(filepath.Join(sdir, "postgresql.auto.conf"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintf(f, "recovery_min_apply_delay = '%dms'\n", applyDelay.Milliseconds())
	f.Close()
	if p.standby, err = pgembed.Start(ctx, sdir, pw, pgembed.Options{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.standby.Stop() })
	return p
}

// TestReadsFromStandby: a server with DATABASE_READ_URL on a hot standby (its replay held
// 500 ms behind). Record lists and reads and project queries are served by the standby (its
// own statistics count the scans of the dataset's table); a caller's read right after its
// own write sees the write (the standby has not replayed it yet, so that read goes to the
// primary); a standby whose replay is paused is left once it lags past DP_READ_MAX_LAG; with
// the standby stopped, reads go to the primary and nothing fails. A second process on the same
// databases and Redis sees the first one's writes at once too (the write positions are shared
// through Redis); with Redis gone, its reads go to the primary and still see them.
func TestReadsFromStandby(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	p := startStandbyPair(t, 500*time.Millisecond)
	standby, err := sql.Open("postgres", p.standby.URL("dp"))
	if err != nil {
		t.Fatal(err)
	}
	defer standby.Close()
	redis := startRedis(t)
	env := []string{"DATABASE_READ_URL=" + p.standby.URL("dp"), "DP_READ_MAX_LAG=2s", "REDIS_URL=" + redis.url,
		"DP_RATE_LIMITS=records_write=10000-M,records_read=10000-M,queries=10000-M", "DP_DATA_DIR=" + t.TempDir()}
	s := serveOn(t, "s", p.primary.URL("dp"), env...)
	s2 := serveOn(t, "s2", p.primary.URL("dp"), env...)
	tok, org, prj := s.owner(t)
	id, _ := s.upload(t, tok, prj, "notes", "text,n\nfirst,1\nsecond,2\n")
	s.waitActive(t, tok, prj, id)

	// Served by the standby, once it has the table: its scans of the table go up.
	scans := func() int64 {
		var n int64
		standby.QueryRow(`SELECT coalesce(sum(seq_scan + coalesce(idx_scan, 0)), 0) FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = $2`, org, id).Scan(&n)
		return n
	}
	for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		var there bool
		standby.QueryRow(`SELECT to_regclass($1) IS NOT NULL`, `"`+org+`"."`+id+`"`).Scan(&there)
		if there {
			break
		}
		if time.Since(start) > 30*time.Second {
			t.Fatal("the standby never replayed the dataset's table")
		}
	}
	time.Sleep(time.Second) // past the standby's apply delay of the writes so far
	before := scans()
	const reads = 20
	for range reads {
		if c, r := s.call(t, "GET", "/api/v1/datasets/"+id+"/data?limit=10", tok, nil); c != 200 {
			t.Fatalf("list: %d %v", c, r)
		}
		if c, r := s.call(t, "POST", "/api/v1/projects/"+prj+"/queries/execute", tok, map[string]any{"type": "sql", "query": `SELECT count(*) AS n FROM notes`}); c != 200 {
			t.Fatalf("project query: %d %v", c, r)
		}
	}
	for start := time.Now(); scans()-before < reads; time.Sleep(100 * time.Millisecond) { // statistics are flushed within a second or so
		if time.Since(start) > 30*time.Second {
			t.Fatalf("the standby scanned the table %d times for %d lists and %d queries", scans()-before, reads, reads)
		}
	}
	t.Logf("the standby scanned the dataset's table %d times for %d lists and %d queries", scans()-before, reads, reads)

	// Read-your-writes: each read right after its write, with the standby 500 ms behind.
	for i := range 10 {
		text := fmt.Sprint("written-", i)
		c, rec := s.call(t, "POST", "/api/v1/datasets/"+id+"/data", tok, map[string]any{"text": text, "n": 10 + i})
		if c != 201 {
			t.Fatalf("create: %d %v", c, rec)
		}
		if c, got := s.call(t, "GET", "/api/v1/datasets/"+id+"/data/"+fmt.Sprint(rec["id"]), tok, nil); c != 200 || got["text"] != text {
			t.Fatalf("read right after the write: %d %v", c, got)
		}
		if c, got := s.call(t, "PATCH", "/api/v1/datasets/"+id+"/data/"+fmt.Sprint(rec["id"]), tok, map[string]any{"text": text + "!"}); c != 200 {
			t.Fatalf("patch: %d %v", c, got)
		}
		if c, got := s.call(t, "GET", "/api/v1/datasets/"+id+"/data?limit=1&sort=-id", tok, nil); c != 200 || fmt.Sprint(got["data"]) == "[]" ||
			got["data"].([]any)[0].(map[string]any)["text"] != text+"!" {
			t.Fatalf("list right after the update: %d %v", c, got)
		}
	}

	// Across processes: written through s, read through s2 at once; then the same with Redis
	// gone (s2's reads of the caller go to the primary).
	crossRead := func(i int, when string) {
		t.Helper()
		text := fmt.Sprint("across-", when, "-", i)
		c, rec := s.call(t, "POST", "/api/v1/datasets/"+id+"/data", tok, map[string]any{"text": text, "n": 100 + i})
		if c != 201 {
			t.Fatalf("create through s: %d %v", c, rec)
		}
		if c, got := s2.call(t, "GET", "/api/v1/datasets/"+id+"/data/"+fmt.Sprint(rec["id"]), tok, nil); c != 200 || got["text"] != text {
			t.Fatalf("%s: read through s2 right after the write through s: %d %v", when, c, got)
		}
	}
	for i := range 10 {
		crossRead(i, "shared")
	}
	redis.cmd.Process.Kill()
	redis.cmd.Wait()
	for i := range 5 {
		crossRead(i, "redis-down")
	}

	// The standby falls behind (its replay paused) past DP_READ_MAX_LAG: reads go to the
	// primary, and see a row the standby does not have.
	time.Sleep(1500 * time.Millisecond) // the caller's writes replayed: read-your-writes is not what moves the reads
	if _, err := standby.Exec(`SELECT pg_wal_replay_pause()`); err != nil {
		t.Fatal(err)
	}
	primary, err := sql.Open("postgres", p.primary.URL("dp"))
	if err != nil {
		t.Fatal(err)
	}
	defer primary.Close()
	if _, err := primary.Exec(`INSERT INTO "` + org + `"."` + id + `" (text, n) VALUES ('behind the standby', 99)`); err != nil {
		t.Fatal(err)
	}
	paused := time.Now()
	for {
		c, got := s.call(t, "GET", "/api/v1/datasets/"+id+"/data?filter[n]=99", tok, nil)
		if c != 200 {
			t.Fatalf("list with the standby behind: %d %v", c, got)
		}
		if fmt.Sprint(got["data"]) != "[]" {
			t.Logf("reads left the paused standby %s after it stopped replaying (DP_READ_MAX_LAG=2s)", time.Since(paused))
			break
		}
		if time.Since(paused) > 30*time.Second {
			t.Fatal("30 s after the standby stopped replaying, reads still miss a row it lacks")
		}
		time.Sleep(100 * time.Millisecond)
	}
	standby.Exec(`SELECT pg_wal_replay_resume()`)

	// The standby stops: reads go to the primary, and every one is answered.
	p.standby.Stop()
	for i := range reads {
		if c, r := s.call(t, "GET", "/api/v1/datasets/"+id+"/data?limit=10", tok, nil); c != 200 {
			t.Fatalf("list %d with the standby down: %d %v", i, c, r)
		}
		if c, r := s.call(t, "POST", "/api/v1/projects/"+prj+"/queries/execute", tok, map[string]any{"type": "sql", "query": `SELECT count(*) AS n FROM notes`}); c != 200 {
			t.Fatalf("project query %d with the standby down: %d %v", i, c, r)
		}
	}
}
