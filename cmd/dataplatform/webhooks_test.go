package main

import (
	"bytes"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"dataplatform/store/pgtest"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Main(m)) }

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// binary builds the server once for the package's tests.
func binary(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "dp-bin-")
		if err != nil {
			buildErr = err
			return
		}
		os.Chmod(dir, 0o755)
		binPath = filepath.Join(dir, "dataplatform")
		if out, err := exec.Command("go", "build", "-o", binPath, ".").CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binPath
}

// processDB skips a test that builds and runs the binary under -short, and gives it a
// database of its own, by URL and opened.
func processDB(t *testing.T) (string, *sql.DB) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	url := pgtest.NewDatabase(t)
	db, err := sql.Open("postgres", url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return url, db
}

// freeAddr is a loopback address with a port free a moment ago, for a server the test starts.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().String()
}

// process is a `dataplatform serve` the test started.
type process struct {
	cmd  *exec.Cmd
	addr string
	log  string
}

// serveOn starts a server process on the database at dbURL with env added, and waits until
// it is ready.
func serveOn(t *testing.T, name, dbURL string, env ...string) *process {
	t.Helper()
	addr := freeAddr(t)
	dir := t.TempDir()
	p := &process{addr: addr, log: filepath.Join(dir, name+".log")}
	p.cmd = exec.Command(binary(t), "serve")
	p.cmd.Env = append(os.Environ(), append([]string{"DATABASE_URL=" + dbURL, "DP_DATA_DIR=" + dir, "DP_ADDR=" + addr,
		"DP_ADMIN_EMAIL=admin@example.com", "DP_ADMIN_PASSWORD=admin-password", "DP_BCRYPT_COST=4", "DP_LOG_LEVEL=warn"}, env...)...)
	logf, _ := os.Create(p.log)
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.cmd.Process.Kill(); p.cmd.Wait() })
	for start := time.Now(); time.Since(start) < 60*time.Second; time.Sleep(50 * time.Millisecond) {
		if r, err := http.Get("http://" + addr + "/readyz"); err == nil {
			r.Body.Close()
			if r.StatusCode == 200 {
				return p
			}
		}
	}
	b, _ := os.ReadFile(p.log)
	t.Fatalf("%s: not ready within 60s\n%s", name, b)
	return nil
}

func (p *process) call(t *testing.T, method, path, token string, body any) (int, map[string]any) {
	t.Helper()
	b, _ := json.Marshal(body)
	req, _ := http.NewRequest(method, "http://"+p.addr+path, bytes.NewReader(b))
	req.Header.Set("Content-Type", "application/json")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Body.Close()
	var out map[string]any
	json.NewDecoder(r.Body).Decode(&out)
	return r.StatusCode, out
}

// owner signs the first owner in through p and returns the token, the organization and the
// project the first start made.
func (p *process) owner(t *testing.T) (tok, org, prj string) {
	t.Helper()
	c, login := p.call(t, "POST", "/api/v1/auth/login", "", map[string]any{"email": "admin@example.com", "password": "admin-password"})
	if c != 200 {
		t.Fatalf("login: %d %v", c, login)
	}
	tok = login["access_token"].(string)
	org = login["user"].(map[string]any)["organization_id"].(string)
	_, prjs := p.call(t, "GET", "/api/v1/organizations/"+org+"/projects", tok, nil)
	prj = prjs["projects"].([]any)[0].(map[string]any)["id"].(string)
	return tok, org, prj
}

// TestWebhooksAcrossProcesses: webhook delivery survives kill -9 of the server between claim
// and answer (the delivery is sent again, with the same webhook-id, by the process that takes
// the endpoint over once the lease runs out), and two server processes on one database
// deliver each of many events exactly once.
func TestWebhooksAcrossProcesses(t *testing.T) {
	t.Parallel()
	dbURL, db := processDB(t)
	k := make([]byte, 32)
	rand.Read(k)
	env := []string{"DP_SECRET_KEY=" + base64.StdEncoding.EncodeToString(k), "DP_JOB_LEASE=2s", "DP_WEBHOOK_NETWORKS=127.0.0.1/32"}

	// A receiver that holds the first request until told, and records every request.
	var mu sync.Mutex
	got := map[string]int{} // webhook-id → requests
	var order []string
	release := make(chan struct{})
	inFlight := make(chan struct{}, 1)
	rc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		id := r.Header.Get("webhook-id")
		got[id]++
		order = append(order, id)
		first := len(order) == 1
		mu.Unlock()
		if first {
			inFlight <- struct{}{}
			<-release
		}
	}))
	defer rc.Close()
	defer close(release)
	count := func() (requests, ids int) {
		mu.Lock()
		defer mu.Unlock()
		return len(order), len(got)
	}

	a := serveOn(t, "a", dbURL, env...)
	tok, org, _ := a.owner(t)
	c, wh := a.call(t, "POST", "/api/v1/organizations/"+org+"/webhooks", tok, map[string]any{"url": rc.URL, "events": []string{"team.*"}})
	if c != 201 {
		t.Fatalf("webhook: %d %v", c, wh)
	}
	emit := func(n int) {
		t.Helper()
		// What an operation writes in its transaction: the dispatcher takes it from there.
		if _, err := db.Exec(`INSERT INTO platform.outbox (event_type, organization_id, payload, created_at)
			SELECT 'team.updated', $1, jsonb_build_object('id', 'tm_test', 'n', g), now() FROM generate_series(1, $2) g`, org, n); err != nil {
			t.Fatal(err)
		}
	}

	// kill -9 while the first delivery is on the wire.
	emit(3)
	select {
	case <-inFlight:
	case <-time.After(30 * time.Second):
		b, _ := os.ReadFile(a.log)
		t.Fatalf("no delivery reached the receiver\n%s", b)
	}
	a.cmd.Process.Signal(syscall.SIGKILL)
	a.cmd.Wait()
	release <- struct{}{}
	var status string
	db.QueryRow(`SELECT status FROM platform.webhook_deliveries ORDER BY seq LIMIT 1`).Scan(&status)
	if status != "pending" {
		t.Fatalf("the delivery in flight at the kill is %q", status)
	}

	// Two processes take over: the interrupted delivery is sent again, then everything once.
	b := serveOn(t, "b", dbURL, env...)
	a2 := serveOn(t, "a2", dbURL, env...)
	deadline := time.Now().Add(60 * time.Second)
	for {
		if n, _ := count(); n >= 4 {
			break
		}
		if time.Now().After(deadline) {
			lb, _ := os.ReadFile(b.log)
			t.Fatalf("the interrupted deliveries were not resumed\n%s", lb)
		}
		time.Sleep(50 * time.Millisecond)
	}
	mu.Lock()
	if got[order[0]] != 2 || order[1] != order[0] {
		t.Fatalf("after the kill: %v (the interrupted delivery should come again first, with its id)", order)
	}
	mu.Unlock()

	const many = 600
	emit(many)
	for {
		if _, ids := count(); ids >= 3+many {
			break
		}
		if time.Now().After(deadline.Add(60 * time.Second)) {
			_, ids := count()
			t.Fatalf("%d of %d events arrived", ids, 3+many)
		}
		time.Sleep(50 * time.Millisecond)
	}
	time.Sleep(time.Second) // anything sent twice would arrive by now
	requests, ids := count()
	if ids != 3+many || requests != ids+1 {
		t.Fatalf("%d requests for %d distinct events (want each once, the interrupted one twice)", requests, ids)
	}
	var pending, succeeded int
	db.QueryRow(`SELECT count(*) FILTER (WHERE status = 'pending'), count(*) FILTER (WHERE status = 'succeeded') FROM platform.webhook_deliveries`).Scan(&pending, &succeeded)
	if pending != 0 || succeeded != 3+many {
		t.Fatalf("deliveries: %d pending, %d succeeded", pending, succeeded)
	}
	_ = a2
}
