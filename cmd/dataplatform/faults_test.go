package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime/multipart"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
)

// pgProxy stands between the server and PostgreSQL, so a test can take the database away
// (every connection cut, new ones refused, as when PostgreSQL stops) and bring it back.
type pgProxy struct {
	t      *testing.T
	target string
	addr   string
	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]bool
}

func newPGProxy(t *testing.T, target string) *pgProxy {
	p := &pgProxy{t: t, target: target, conns: map[net.Conn]bool{}}
	p.up()
	t.Cleanup(p.down)
	return p
}

func (p *pgProxy) up() {
	addr := p.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		p.t.Fatal(err)
	}
	p.mu.Lock()
	p.ln, p.addr = ln, ln.Addr().String()
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns[c], p.conns[s] = true, true
			p.mu.Unlock()
			go func() { io.Copy(s, c); s.Close() }()
			go func() { io.Copy(c, s); c.Close() }()
		}
	}()
}

// down refuses new connections and cuts the open ones.
func (p *pgProxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
	p.conns = map[net.Conn]bool{}
}

// TestDatabaseOutage: with PostgreSQL gone, requests answer 503 SERVICE_UNAVAILABLE with
// Retry-After (no hang, no 500, no crash), /readyz says 503 while /healthz says 200; when the
// database is back, the same process serves again without a restart.
func TestDatabaseOutage(t *testing.T) {
	t.Parallel()
	dbURL, _ := processDB(t)
	u, _ := url.Parse(dbURL)
	proxy := newPGProxy(t, u.Host)
	u.Host = proxy.addr
	s := serveOn(t, "s", u.String())
	tok, org, _ := s.owner(t)
	projects := "/api/v1/organizations/" + org + "/projects"
	if c, _ := s.call(t, "GET", projects, tok, nil); c != 200 {
		t.Fatalf("before the outage: %d", c)
	}
	get := func(path string) (int, http.Header) {
		req, _ := http.NewRequest("GET", "http://"+s.addr+path, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		r, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
		if err != nil {
			t.Fatalf("GET %s during the outage: %v", path, err)
		}
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
		return r.StatusCode, r.Header
	}

	proxy.down()
	t0 := time.Now()
	for i := range 20 { // under load: every request answers, 503 with Retry-After
		c, h := get(projects)
		if c != 503 || h.Get("Retry-After") == "" {
			t.Fatalf("request %d during the outage: %d (Retry-After %q)", i, c, h.Get("Retry-After"))
		}
	}
	t.Logf("20 requests during the outage answered in %s", time.Since(t0))
	if c, _ := get("/readyz"); c != 503 {
		t.Fatalf("/readyz during the outage: %d", c)
	}
	if c, _ := get("/healthz"); c != 200 {
		t.Fatalf("/healthz during the outage: %d", c)
	}

	proxy.up()
	for start := time.Now(); ; time.Sleep(100 * time.Millisecond) {
		c, _ := get(projects)
		if c == 200 {
			t.Logf("serving again %s after the database came back", time.Since(start))
			break
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("30 s after the database came back the server still answers %d", c)
		}
	}
	if c, _ := get("/readyz"); c != 200 {
		t.Fatalf("/readyz after the outage: %d", c)
	}
	if s.cmd.ProcessState != nil {
		t.Fatal("the server exited")
	}
}

// TestKillMidWrite: SIGKILL of the server in the middle of an upload and of a bulk write.
// Afterwards no upload row exists for the half-received file, and the file is swept once it
// has gone unwritten long enough; the bulk write left all of itself or nothing.
func TestKillMidWrite(t *testing.T) {
	t.Parallel()
	dbURL, db := processDB(t)
	dir := t.TempDir()
	shared := "DP_DATA_DIR=" + dir
	a := serveOn(t, "a", dbURL, shared, "DP_JOB_LEASE=2s")
	tok, org, prj := a.owner(t)
	var csv strings.Builder
	csv.WriteString("n,label\n")
	for i := 0; i < 200000; i++ {
		fmt.Fprintf(&csv, "%d,row %d\n", i, i)
	}
	id, _ := a.upload(t, tok, prj, "rows", csv.String())
	a.waitActive(t, tok, prj, id)

	// A bulk write in flight: one update of every row and creates, in one transaction.
	ops := []any{map[string]any{"method": "update", "filter": map[string]any{"n": map[string]any{"gte": 0}}, "data": map[string]any{"label": "changed"}}}
	for i := 0; i < 500; i++ {
		ops = append(ops, map[string]any{"method": "create", "data": map[string]any{"n": -i, "label": "new"}})
	}
	body, _ := json.Marshal(map[string]any{"operations": ops})
	bulk, _ := http.NewRequest("POST", "http://"+a.addr+"/api/v1/datasets/"+id+"/data/bulk", bytes.NewReader(body))
	bulk.Header.Set("Authorization", "Bearer "+tok)
	bulk.Header.Set("Content-Type", "application/json")
	go http.DefaultClient.Do(bulk) // answered by nobody: the server dies first
	for start := time.Now(); ; time.Sleep(5 * time.Millisecond) {
		var busy bool
		db.QueryRow(`SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE state = 'active' AND query ILIKE 'UPDATE%' AND query LIKE '%' || $1 || '%')`, id).Scan(&busy)
		if busy {
			break
		}
		if time.Since(start) > 30*time.Second {
			t.Fatal("the bulk update never ran")
		}
	}
	a.cmd.Process.Kill()
	a.cmd.Wait()
	var changed, created int
	table := `"` + org + `"."` + id + `"`
	db.QueryRow(`SELECT count(*) FILTER (WHERE label = 'changed'), count(*) FILTER (WHERE label = 'new') FROM `+table).Scan(&changed, &created)
	if changed != 0 || created != 0 {
		t.Fatalf("a bulk write killed in flight left %d rows changed and %d created", changed, created)
	}

	// An upload in flight: the file is being received when the server dies.
	b := serveOn(t, "b", dbURL, shared)
	pr, pw := io.Pipe()
	mw := multipart.NewWriter(pw)
	req, _ := http.NewRequest("POST", "http://"+b.addr+"/api/v1/projects/"+prj+"/datasets/upload", pr)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	go http.DefaultClient.Do(req)
	fw, _ := mw.CreateFormFile("file", "big.csv")
	fw.Write([]byte(csv.String()[:1<<20]))
	var partial string
	for start := time.Now(); partial == ""; time.Sleep(10 * time.Millisecond) {
		filepath.WalkDir(filepath.Join(dir, "uploads"), func(p string, d fs.DirEntry, err error) error {
			if err == nil && d.Type().IsRegular() && strings.Contains(p, "upl_") {
				if info, _ := d.Info(); info != nil && info.Size() > 0 {
					var known bool
					db.QueryRow(`SELECT EXISTS (SELECT 1 FROM platform.uploads WHERE storage_key = $1)`, org+"/"+filepath.Base(p)).Scan(&known)
					if !known {
						partial = p
					}
				}
			}
			return nil
		})
		if time.Since(start) > 30*time.Second {
			t.Fatal("the upload never reached the disk")
		}
	}
	b.cmd.Process.Kill()
	b.cmd.Wait()
	pw.CloseWithError(io.ErrUnexpectedEOF)
	var rows int
	db.QueryRow(`SELECT count(*) FROM platform.uploads WHERE storage_key = $1`, org+"/"+filepath.Base(partial)).Scan(&rows)
	if rows != 0 {
		t.Fatal("a half-received upload has a row")
	}
	// Recent: kept (it could be another replica's upload in progress). Unwritten for an hour
	// (moved back here): swept by the next server's housekeeping, which runs at its start.
	old := time.Now().Add(-2 * time.Hour)
	os.Chtimes(partial, old, old)
	serveOn(t, "c", dbURL, shared)
	for start := time.Now(); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(partial); errors.Is(err, fs.ErrNotExist) {
			break
		}
		if time.Since(start) > 30*time.Second {
			t.Fatal("the interrupted upload's file was not swept")
		}
	}
}

// TestKillMidSchemaChange: SIGKILL of the server while a schema change rewrites a table leaves
// the table, the dataset's recorded schema and its description as they were before, and the
// change can be made again on the next server.
func TestKillMidSchemaChange(t *testing.T) {
	t.Parallel()
	dbURL, db := processDB(t)
	shared := "DP_DATA_DIR=" + t.TempDir()
	a := serveOn(t, "a", dbURL, shared)
	tok, org, prj := a.owner(t)
	var csv strings.Builder
	csv.WriteString("n,label\n")
	for i := 0; i < 100000; i++ {
		fmt.Fprintf(&csv, "%d,row %d\n", i%1000, i) // not unique: n stays a column (unique integers become the ids)
	}
	id, _ := a.upload(t, tok, prj, "rows", csv.String())
	a.waitActive(t, tok, prj, id)
	columnType := func() string {
		var typ string
		db.QueryRow(`SELECT data_type FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 AND column_name = 'n'`, org, id).Scan(&typ)
		return typ
	}
	before := columnType()
	_, desc := a.call(t, "GET", "/api/v1/datasets/"+id+"/openapi.json", tok, nil)
	change := map[string]any{"changes": []any{map[string]any{"op": "alter_column", "column": "n", "type": "text"}}}
	body, _ := json.Marshal(change)
	req, _ := http.NewRequest("PUT", "http://"+a.addr+"/api/v1/datasets/"+id+"/schema", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	go http.DefaultClient.Do(req) // answered by nobody: the server dies first
	for start := time.Now(); ; time.Sleep(5 * time.Millisecond) {
		var busy bool
		// Its transaction at work: checking the rows against the new type, or rewriting them.
		db.QueryRow(`SELECT EXISTS (SELECT 1 FROM pg_stat_activity WHERE state = 'active' AND query LIKE '%' || $1 || '%'
			AND (query ILIKE 'ALTER TABLE%' OR query ILIKE '%pg_temp.dp_cast%'))`, id).Scan(&busy)
		if busy {
			break
		}
		if time.Since(start) > 30*time.Second {
			t.Fatal("the schema change never ran")
		}
	}
	a.cmd.Process.Kill()
	a.cmd.Wait()
	b := serveOn(t, "b", dbURL, shared)
	_, after := b.call(t, "GET", "/api/v1/datasets/"+id+"/openapi.json", tok, nil)
	if got := columnType(); got != before || !reflect.DeepEqual(desc, after) {
		t.Fatalf("after the kill: column n is %s (was %s); description changed: %v", got, before, !reflect.DeepEqual(desc, after))
	}
	if c, r := b.call(t, "PUT", "/api/v1/datasets/"+id+"/schema", tok, change); c != 200 || columnType() != "text" {
		log, _ := os.ReadFile(b.log)
		t.Fatalf("the change made again: %d %v (column %s)\n%s", c, r, columnType(), log)
	}
}

// TestKillMidQueryExport: SIGKILL of the server while a query export job writes its file.
// Nothing is served as the export meanwhile, and the next server runs the job again to a
// complete file (job succeeded on its second attempt, export completed, every row); the
// killed attempt's partial file is swept once unwritten long enough. An export whose every
// attempt is killed fails, job and export alike, instead of running forever.
func TestKillMidQueryExport(t *testing.T) {
	t.Parallel()
	dbURL, db := processDB(t)
	dir := t.TempDir()
	env := []string{"DP_DATA_DIR=" + dir, "DP_JOB_LEASE=2s"}
	a := serveOn(t, "a", dbURL, env...)
	tok, org, prj := a.owner(t)
	const rows = 3000000
	c, q := a.call(t, "POST", "/api/v1/projects/"+prj+"/queries/execute", tok, map[string]any{"type": "sql",
		"query": fmt.Sprintf(`SELECT g FROM generate_series(1, %d) g`, rows)})
	if c != 200 {
		t.Fatalf("execute: %d %v", c, q)
	}
	base := "/api/v1/projects/" + prj + "/queries/" + q["query_id"].(string)
	orgDir := filepath.Join(dir, "exports", org)
	// export starts an export on p and kills p once its job is writing the file; it returns
	// the export's id and job id and the partial file left behind.
	var partials []string // a killed attempt's file is no sign of the next attempt
	export := func(p *process) (id, job, partial string) {
		t.Helper()
		c, x := p.call(t, "POST", base+"/export", tok, map[string]any{"format": "csv"})
		if c != 202 {
			t.Fatalf("export: %d %v", c, x)
		}
		id, job = x["export_id"].(string), x["job_id"].(string)
		partial = killWhileWriting(t, p, orgDir, partials)
		partials = append(partials, partial)
		return id, job, partial
	}
	state := func(id, job string) (string, string) {
		var ex, jb string
		db.QueryRow(`SELECT x.status, j.status FROM platform.query_exports x JOIN platform.jobs j ON j.id = x.job_id WHERE x.id = $1`, id).Scan(&ex, &jb)
		if x := filepath.Join(orgDir, id+".csv"); ex != "completed" {
			if _, err := os.Stat(x); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("export %s is %s but its file exists", id, ex)
			}
		}
		return ex, jb
	}

	first, job, partial := export(a)
	if ex, jb := state(first, job); ex != "processing" || jb != "running" {
		t.Fatalf("killed mid-export: export %s, job %s", ex, jb)
	}
	// Unwritten for an hour (moved back here): the next server's housekeeping, at its start,
	// removes it. A recent one is kept: it could be another replica's export in progress.
	old := time.Now().Add(-2 * time.Hour)
	os.Chtimes(partial, old, old)
	b := serveOn(t, "b", dbURL, env...)
	x := waitExport(t, b, tok, base, first)
	if x["status"] != "completed" || x["row_count"] != float64(rows) {
		t.Fatalf("the export resumed on the next server: %v", x)
	}
	// The export is marked completed by the job's last step; the job itself ends just after.
	var j map[string]any
	for i := 0; i < 300; i++ {
		if _, j = b.call(t, "GET", "/api/v1/jobs/"+job, tok, nil); j["status"] != "running" {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if j["status"] != "succeeded" || j["attempts"] != float64(2) {
		t.Fatalf("the export's job: %v", j)
	}
	link := x["download_url"].(string)
	r, err := http.Get("http://" + b.addr + link[strings.Index(link, "/api/v1/"):])
	if err != nil {
		t.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, r.Body)
	r.Body.Close()
	if r.StatusCode != 200 || n != int64(x["size_bytes"].(float64)) {
		t.Fatalf("download: %d, %d bytes of %v", r.StatusCode, n, x["size_bytes"])
	}
	if _, err := os.Stat(partial); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the killed attempt's partial file was not swept: %v", err)
	}

	// Killed on each of its two attempts: failed, job and export alike, with nothing to download.
	second, job, _ := export(b)
	c2 := serveOn(t, "c", dbURL, env...)
	killWhileWriting(t, c2, orgDir, partials)
	d := serveOn(t, "d", dbURL, env...)
	x = waitExport(t, d, tok, base, second)
	_, j = d.call(t, "GET", "/api/v1/jobs/"+job, tok, nil)
	if x["status"] != "failed" || j["status"] != "failed" || !strings.Contains(fmt.Sprint(x["error"]), "interrupted") {
		t.Fatalf("an export killed on every attempt: export %v, job %v", x, j)
	}
	if ex, jb := state(second, job); ex != "failed" || jb != "failed" {
		t.Fatalf("in the database: export %s, job %s", ex, jb)
	}
}

// killWhileWriting kills p once a query export's partial file in dir, not one of old, has
// data, and returns it.
func killWhileWriting(t *testing.T, p *process, dir string, old []string) string {
	t.Helper()
	for start := time.Now(); ; time.Sleep(5 * time.Millisecond) {
		if ents, _ := os.ReadDir(dir); len(ents) > 0 {
			for _, e := range ents {
				if info, _ := e.Info(); strings.HasPrefix(e.Name(), ".export-") && !slices.Contains(old, filepath.Join(dir, e.Name())) && info != nil && info.Size() > 0 {
					p.cmd.Process.Kill()
					p.cmd.Wait()
					return filepath.Join(dir, e.Name())
				}
			}
		}
		if time.Since(start) > 60*time.Second {
			log, _ := os.ReadFile(p.log)
			t.Fatalf("no export file was being written\n%s", log)
		}
	}
}

// waitExport polls an export through p until it is no longer processing.
func waitExport(t *testing.T, p *process, tok, query, id string) map[string]any {
	t.Helper()
	for start := time.Now(); time.Since(start) < 120*time.Second; time.Sleep(100 * time.Millisecond) {
		if _, x := p.call(t, "GET", query+"/exports/"+id, tok, nil); x["status"] != "processing" {
			return x
		}
	}
	t.Fatalf("export %s still processing after 120s", id)
	return nil
}

// TestClientGoneMidStream: a client that goes away in the middle of a stream (its connection
// closed, no goodbye) frees what the stream held at once. A change stream (SSE, WebSocket)
// leaves the server's count of open streams; a streamed project query's statement stops on
// its backend and its query slot (an advisory lock of that transaction) is released, long
// before the statement's own timeout would have ended it.
func TestClientGoneMidStream(t *testing.T) {
	t.Parallel()
	dbURL, db := processDB(t)
	metricsAddr := freeAddr(t)
	s := serveOn(t, "s", dbURL, "DP_METRICS_ADDR="+metricsAddr)
	tok, _, prj := s.owner(t)
	id, _ := s.upload(t, tok, prj, "notes", "text\nfirst\n")
	s.waitActive(t, tok, prj, id)
	streams := func() map[string]string {
		r, err := http.Get("http://" + metricsAddr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer r.Body.Close()
		b, _ := io.ReadAll(r.Body)
		out := map[string]string{}
		for _, line := range strings.Split(string(b), "\n") {
			if rest, ok := strings.CutPrefix(line, `dataplatform_change_streams{transport="`); ok {
				name, value, _ := strings.Cut(rest, `"} `)
				out[name] = value
			}
		}
		return out
	}
	// open sends a request on a connection of its own and reads until the body holds want.
	open := func(method, path, body, want string) net.Conn {
		t.Helper()
		c, err := net.Dial("tcp", s.addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(c, "%s %s HTTP/1.1\r\nHost: %s\r\nAuthorization: Bearer %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
			method, path, s.addr, tok, len(body), body)
		c.SetReadDeadline(time.Now().Add(60 * time.Second))
		var got []byte
		buf := make([]byte, 4096)
		for !bytes.Contains(got, []byte(want)) {
			n, err := c.Read(buf)
			if err != nil {
				t.Fatalf("%s %s: %v after %q", method, path, err, got)
			}
			got = append(got, buf[:n]...)
		}
		return c
	}

	sse := open("GET", "/api/v1/datasets/"+id+"/data/stream", "", "retry: 2000")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ws, _, err := websocket.Dial(ctx, "ws://"+s.addr+"/api/v1/datasets/"+id+"/data/ws",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + tok}}})
	if err != nil {
		t.Fatal(err)
	}
	wsjson.Write(ctx, ws, map[string]any{"action": "subscribe"})
	var m map[string]any
	if err := wsjson.Read(ctx, ws, &m); err != nil || m["type"] != "subscribed" {
		t.Fatalf("subscribe: %v %v", m, err)
	}
	if got := streams(); got["sse"] != "1" || got["websocket"] != "1" {
		t.Fatalf("open change streams: %v", got)
	}
	sse.Close()
	ws.CloseNow() // the connection closed without a closing handshake
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		if got := streams(); got["sse"] == "0" && got["websocket"] == "0" {
			t.Logf("both change streams ended %s after their clients left", time.Since(start))
			break
		} else if time.Since(start) > 30*time.Second {
			t.Fatalf("30 s after their clients left: %v change streams open", got)
		}
	}

	// A query that runs for ever (120 s, its longest timeout, per fetch) and holds a slot.
	q := open("POST", "/api/v1/projects/"+prj+"/queries/stream",
		`{"type":"sql","query":"SELECT count(*) FROM generate_series(1, 10000000) a, generate_series(1, 10000000) b","options":{"timeout_seconds":120}}`, `"executing"`)
	// Its statement, told from any other by its database, text, pid and start: the FETCH of its
	// cursor, in a transaction holding an advisory lock (the slot).
	var pid int
	var started time.Time
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) {
		err := db.QueryRow(`SELECT a.pid, a.query_start FROM pg_stat_activity a WHERE a.datname = current_database() AND a.state = 'active'
			AND a.query = 'FETCH FORWARD 1000 FROM dp_stream' AND EXISTS (SELECT 1 FROM pg_locks l WHERE l.pid = a.pid AND l.locktype = 'advisory' AND l.granted)`).Scan(&pid, &started)
		if err == nil {
			break
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("the streamed query's statement never ran: %v", err)
		}
	}
	q.Close()
	left := time.Now()
	still := func() (state string) {
		db.QueryRow(`SELECT a.state || ' ' || coalesce(a.wait_event_type, '') || '/' || coalesce(a.wait_event, '') ||
			CASE WHEN EXISTS (SELECT 1 FROM pg_locks l WHERE l.pid = a.pid AND l.locktype = 'advisory') THEN ', holding its slot' ELSE '' END
			FROM pg_stat_activity a WHERE a.pid = $1 AND (a.query_start = $2 AND a.state <> 'idle' OR EXISTS (
			SELECT 1 FROM pg_locks l WHERE l.pid = a.pid AND l.locktype = 'advisory'))`, pid, started).Scan(&state)
		return state
	}
	for ; still() != ""; time.Sleep(20 * time.Millisecond) {
		if time.Since(left) > 90*time.Second { // its statement timeout would end it at 120 s
			t.Fatalf("the streamed query's backend 90 s after its client left: %s", still())
		}
	}
	t.Logf("the streamed query's statement stopped and its slot was freed %s after its client left", time.Since(left))
	if c, _ := s.call(t, "GET", "/api/v1/datasets/"+id+"/data", tok, nil); c != 200 {
		t.Fatalf("serving on: %d", c)
	}
}
