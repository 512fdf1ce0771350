package main

import (
	"bytes"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"
	"time"

	"dataplatform/store/pgtest"
)

// dataDir is an empty data directory the embedded cluster's postgres user can reach.
func dataDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "dp-data-")
	if err != nil {
		t.Fatal(err)
	}
	os.Chmod(dir, 0o755)
	t.Cleanup(func() { os.RemoveAll(dir) })
	return filepath.Join(dir, "data")
}

// run runs the binary with a subcommand and env, failing the test on an error.
func run(t *testing.T, env []string, args ...string) string {
	t.Helper()
	cmd := exec.Command(binary(t), args...)
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("dataplatform %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestBackupRestore: `dataplatform backup` archives a running installation on its embedded
// database (datasets and their records, description versions, query history, saved queries,
// users, the secret key), and `dataplatform restore` brings it into an empty data directory,
// where a server starts and answers the same, and user SQL and record writes work (the
// organizations' query roles and row-level policies came back).
func TestBackupRestore(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dirA, dirB := dataDir(t), dataDir(t)
	a := serveOn(t, "a", "", "DP_DATA_DIR="+dirA)
	tok, org, prj := a.owner(t)
	id, _ := a.upload(t, tok, prj, "customers", "name,city,credit\nAnn,Berlin,10\nBob,Paris,20\n")
	a.waitActive(t, tok, prj, id)
	if c, r := a.call(t, "POST", "/api/v1/datasets/"+id+"/data", tok, map[string]any{"name": "Cid", "city": "Rome", "credit": 5}); c != 201 {
		t.Fatalf("record: %d %v", c, r)
	}
	if c, r := a.call(t, "PUT", "/api/v1/datasets/"+id+"/schema", tok, map[string]any{"changes": []any{
		map[string]any{"op": "add_column", "column": map[string]any{"name": "note", "type": "text"}}}}); c != 200 {
		t.Fatalf("schema change (a second description version): %d %v", c, r)
	}
	c, q := a.call(t, "POST", "/api/v1/projects/"+prj+"/queries/execute", tok, map[string]any{"type": "sql", "query": "SELECT city, sum(credit) AS credit FROM customers GROUP BY city ORDER BY city"})
	if c != 200 {
		t.Fatalf("query: %d %v", c, q)
	}
	if c, r := a.call(t, "POST", "/api/v1/projects/"+prj+"/queries/"+q["query_id"].(string)+"/save", tok, map[string]any{"name": "Credit by city"}); c != 201 {
		t.Fatalf("save: %d %v", c, r)
	}
	paths := []string{
		"/api/v1/projects/" + prj + "/datasets",
		"/api/v1/datasets/" + id + "/data?sort=id",
		"/api/v1/datasets/" + id + "/versions",
		"/api/v1/datasets/" + id + "/openapi.json",
		"/api/v1/projects/" + prj + "/queries",
		"/api/v1/projects/" + prj + "/saved-queries",
		"/api/v1/organizations/" + org + "/users",
	}
	snapshot := func(p *process, tok string) map[string]any {
		out := map[string]any{}
		for _, path := range paths {
			c, body := p.call(t, "GET", path, tok, nil)
			if c != 200 {
				t.Fatalf("GET %s: %d %v", path, c, body)
			}
			scrub(body) // what differs from one answer to the next anyway
			out[path] = body
		}
		return out
	}
	// Background work (the search index after the schema change) settles first: the same
	// answers for a second and a half, five looks in a row (on a busy machine a job can
	// start more than one look after the last change).
	before := snapshot(a, tok)
	for i, same := 0, 0; same < 5; i++ {
		time.Sleep(300 * time.Millisecond)
		again := snapshot(a, tok)
		if same++; !reflect.DeepEqual(before, again) {
			same = 0
		}
		if i == 100 {
			t.Fatal("the installation never settled")
		}
		before = again
	}

	archive := filepath.Join(filepath.Dir(dirA), "backup.tar.gz")
	out := run(t, []string{"DATABASE_URL=", "DP_DATA_DIR=" + dirA}, "backup", "-o", archive)
	if !strings.Contains(out, "WARNING") || !strings.Contains(out, "files") {
		t.Fatalf("backup said: %s", out)
	}
	// Restoring over an installation is refused; into an empty data directory it works.
	cmd := exec.Command(binary(t), "restore", "-i", archive)
	cmd.Env = append(os.Environ(), "DATABASE_URL=", "DP_DATA_DIR="+dirA)
	if out, err := cmd.CombinedOutput(); err == nil || !strings.Contains(string(out), "already holds a database") {
		t.Fatalf("restore over the running installation: %v %s", err, out)
	}
	run(t, []string{"DATABASE_URL=", "DP_DATA_DIR=" + dirB}, "restore", "-i", archive)
	keyA, _ := os.ReadFile(filepath.Join(dirA, "secret.key"))
	keyB, _ := os.ReadFile(filepath.Join(dirB, "secret.key"))
	if len(keyA) == 0 || !bytes.Equal(keyA, keyB) {
		t.Fatal("the secret key did not come back")
	}

	// And into an empty database of another PostgreSQL (DATABASE_URL), with a data directory
	// of its own.
	u, _ := url.Parse(pgtest.NewDatabase(t))
	admin, err := sql.Open("postgres", u.String())
	if err != nil {
		t.Fatal(err)
	}
	empty := fmt.Sprintf("dp_restore_%d", time.Now().UnixNano())
	if _, err := admin.Exec(`CREATE DATABASE ` + empty); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Exec(`DROP DATABASE ` + empty + ` WITH (FORCE)`); admin.Close() })
	u.Path = "/" + empty
	dirC := dataDir(t)
	run(t, []string{"DATABASE_URL=" + u.String(), "DP_DATA_DIR=" + dirC}, "restore", "-i", archive)

	for _, target := range []struct{ name, db, dir string }{{"b", "", dirB}, {"c", u.String(), dirC}} {
		p := serveOn(t, target.name, target.db, "DP_DATA_DIR="+target.dir)
		tok, _, _ := p.owner(t)
		after := snapshot(p, tok)
		for _, path := range paths {
			if !reflect.DeepEqual(before[path], after[path]) {
				x, _ := json.Marshal(before[path])
				y, _ := json.Marshal(after[path])
				t.Fatalf("%s: GET %s differs after the restore:\nbefore %s\nafter  %s", target.name, path, x, y)
			}
		}
		// The restored installation works: user SQL under the organization's role, record writes.
		if c, q := p.call(t, "POST", "/api/v1/projects/"+prj+"/queries/execute", tok, map[string]any{"type": "sql", "query": "SELECT count(*) AS n FROM customers"}); c != 200 {
			t.Fatalf("%s: query after the restore: %d %v", target.name, c, q)
		}
		if c, r := p.call(t, "POST", "/api/v1/datasets/"+id+"/data", tok, map[string]any{"name": "Dee", "city": "Oslo", "credit": 1, "note": "new"}); c != 201 {
			t.Fatalf("%s: record after the restore: %d %v", target.name, c, r)
		}
		p.cmd.Process.Signal(syscall.SIGTERM)
		p.cmd.Wait()
		// The sandbox's revocations (privileges on PostgreSQL's own functions and catalogs)
		// came back with the dump: the server finds no gap to warn about.
		if log, _ := os.ReadFile(p.log); strings.Contains(string(log), "still_granted") {
			t.Fatalf("%s: the restored database lacks the sandbox's revocations:\n%s", target.name, log)
		}
	}
}

// scrub drops the fields of an answer that change between any two calls: timings, and the
// last activity that signing in on the restored server moves.
func scrub(v any) {
	switch x := v.(type) {
	case map[string]any:
		delete(x, "execution_time_ms")
		delete(x, "last_active_at")
		for _, e := range x {
			scrub(e)
		}
	case []any:
		for _, e := range x {
			scrub(e)
		}
	}
}
