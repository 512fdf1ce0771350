package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"mime/multipart"
	"net"
	"net/http"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
)

// upload makes a dataset of a CSV file through p and returns its id and job id.
func (p *process) upload(t *testing.T, tok, project, name, csv string) (id, job string) {
	t.Helper()
	var form bytes.Buffer
	mw := multipart.NewWriter(&form)
	fw, _ := mw.CreateFormFile("file", name+".csv")
	fw.Write([]byte(csv))
	mw.Close()
	req, _ := http.NewRequest("POST", "http://"+p.addr+"/api/v1/projects/"+project+"/datasets/upload", &form)
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", mw.FormDataContentType())
	r, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var up map[string]any
	json.NewDecoder(r.Body).Decode(&up)
	r.Body.Close()
	if r.StatusCode != 201 {
		t.Fatalf("upload: %d %v", r.StatusCode, up)
	}
	c, ds := p.call(t, "POST", "/api/v1/projects/"+project+"/datasets", tok, map[string]any{"name": name, "source": map[string]any{"file_id": up["file_id"]}})
	if c != 202 {
		t.Fatalf("create dataset: %d %v", c, ds)
	}
	return ds["id"].(string), ds["job_id"].(string)
}

// waitStatus polls a dataset through p until it is active (or fails the test).
func (p *process) waitActive(t *testing.T, tok, project, id string) {
	t.Helper()
	for start := time.Now(); time.Since(start) < 60*time.Second; time.Sleep(50 * time.Millisecond) {
		_, d := p.call(t, "GET", "/api/v1/projects/"+project+"/datasets/"+id, tok, nil)
		switch d["status"] {
		case "active":
			return
		case "failed":
			t.Fatalf("dataset %s failed: %v", id, d["error"])
		}
	}
	t.Fatalf("dataset %s not active within 60s", id)
}

// sse reads a change stream's events (name and id) until ctx ends.
func sse(t *testing.T, ctx context.Context, url, tok, lastID string) <-chan [2]string {
	t.Helper()
	req, _ := http.NewRequestWithContext(ctx, "GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+tok)
	if lastID != "" {
		req.Header.Set("Last-Event-ID", lastID)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != 200 {
		t.Fatalf("stream: %v %v", err, res)
	}
	ch := make(chan [2]string, 100)
	go func() {
		defer res.Body.Close()
		defer close(ch)
		sc := bufio.NewScanner(res.Body)
		var id, name string
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, "id: "):
				id = line[4:]
			case strings.HasPrefix(line, "event: "):
				name = line[7:]
			case strings.HasPrefix(line, "data: ") && name == "record.created":
				var m map[string]any
				json.Unmarshal([]byte(line[6:]), &m)
				ch <- [2]string{id, fmt.Sprint(m["text"])}
			case line == "":
				id, name = "", ""
			}
		}
	}()
	return ch
}

func take(t *testing.T, ch <-chan [2]string, n int) [][2]string {
	t.Helper()
	var out [][2]string
	for len(out) < n {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("the stream ended after %v", out)
			}
			out = append(out, ev)
		case <-time.After(15 * time.Second):
			t.Fatalf("got %v, waited in vain for %d events", out, n)
		}
	}
	return out
}

// TestReplicas: two `dataplatform serve` processes on one database and one data directory,
// as replicas behind a load balancer run. A write on A reaches SSE and WebSocket subscribers
// on B, in order, and an SSE subscriber that reconnects to B with Last-Event-ID misses
// nothing; a schema change and a membership removal made on A hold on B at once; a dataset
// created on A is loaded once; killing A in the middle of a load hands the job to B, which
// completes it. A rate limit counted in Redis holds across both; with Redis gone, each counts
// on its own and nothing fails.
func TestReplicas(t *testing.T) {
	t.Parallel()
	dbURL, db := processDB(t)
	shared := "DP_DATA_DIR=" + t.TempDir()
	redis := startRedis(t)
	env := []string{shared, "DP_JOB_LEASE=2s", "REDIS_URL=" + redis.url, "DP_RATE_LIMITS=schema_refresh=3-H"}
	a := serveOn(t, "a", dbURL, env...)
	b := serveOn(t, "b", dbURL, env...)
	tok, org, prj := a.owner(t)

	// Loaded once, whichever replica's runner took it.
	id, job := a.upload(t, tok, prj, "notes", "text\nfirst\n")
	b.waitActive(t, tok, prj, id)
	for start := time.Now(); ; time.Sleep(20 * time.Millisecond) { // the job ends just after the dataset's commit
		_, j := b.call(t, "GET", "/api/v1/jobs/"+job, tok, nil)
		if j["status"] == "succeeded" && j["attempts"] == float64(1) {
			break
		}
		if j["status"] != "running" || time.Since(start) > 30*time.Second {
			t.Fatalf("job: %v", j)
		}
	}

	// Rate limits counted in Redis hold across both: 3 refreshes an hour per project.
	refresh := func(p *process) int {
		c, _ := p.call(t, "POST", "/api/v1/projects/"+prj+"/datasets/"+id+"/refresh", tok, nil)
		return c
	}
	if codes := []int{refresh(a), refresh(b), refresh(a), refresh(b)}; codes[0] != 202 || codes[1] != 202 || codes[2] != 202 || codes[3] != 429 {
		t.Fatalf("refreshes across A and B with Redis: %v", codes)
	}
	// Redis goes away: each process counts on its own (fail open per process), nothing 5xx.
	redis.cmd.Process.Kill()
	redis.cmd.Wait()
	var codes []int
	for range 4 {
		codes = append(codes, refresh(a))
	}
	if codes[0] != 202 || codes[1] != 202 || codes[2] != 202 || codes[3] != 429 {
		t.Fatalf("refreshes on A with Redis down: %v (want its own count of 3)", codes)
	}
	if c := refresh(b); c != 202 {
		t.Fatalf("a refresh on B with Redis down: %d (want B's own count)", c)
	}

	// Change streams: writes on A, subscribers on B.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	streamURL := "http://" + b.addr + "/api/v1/datasets/" + id + "/data/stream"
	sctx, stopSSE := context.WithCancel(ctx)
	events := sse(t, sctx, streamURL, tok, "")
	ws, _, err := websocket.Dial(ctx, "ws://"+b.addr+"/api/v1/datasets/"+id+"/data/ws",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + tok}}})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	wsjson.Write(ctx, ws, map[string]any{"action": "subscribe"})
	var m map[string]any
	if err := wsjson.Read(ctx, ws, &m); err != nil || m["type"] != "subscribed" {
		t.Fatalf("subscribe: %v %v", m, err)
	}
	write := func(text string) {
		t.Helper()
		if c, r := a.call(t, "POST", "/api/v1/datasets/"+id+"/data", tok, map[string]any{"text": text}); c != 201 {
			t.Fatalf("write on A: %d %v", c, r)
		}
	}
	for _, s := range []string{"one", "two", "three"} {
		write(s)
	}
	got := take(t, events, 3)
	if got[0][1] != "one" || got[1][1] != "two" || got[2][1] != "three" {
		t.Fatalf("SSE on B: %v", got)
	}
	for _, want := range []string{"one", "two", "three"} {
		if err := wsjson.Read(ctx, ws, &m); err != nil || m["type"] != "record.created" || m["data"].(map[string]any)["text"] != want {
			t.Fatalf("WebSocket on B: %v %v, want %s", m, err, want)
		}
	}
	// The SSE subscriber goes away; writes go on; it comes back to B with Last-Event-ID.
	stopSSE()
	for _, s := range []string{"four", "five"} {
		write(s)
	}
	resumed := take(t, sse(t, ctx, streamURL, tok, got[2][0]), 2)
	if resumed[0][1] != "four" || resumed[1][1] != "five" {
		t.Fatalf("after reconnecting with Last-Event-ID: %v", resumed)
	}

	// A schema change on A: B validates against the new schema at once.
	if c, r := a.call(t, "PUT", "/api/v1/datasets/"+id+"/schema", tok, map[string]any{"changes": []any{
		map[string]any{"op": "add_column", "column": map[string]any{"name": "mood", "type": "text"}}}}); c != 200 {
		t.Fatalf("schema change on A: %d %v", c, r)
	}
	// B hears of it through PostgreSQL's NOTIFY, a moment after A's commit: allow that moment.
	changed := time.Now()
	for {
		c, r := b.call(t, "POST", "/api/v1/datasets/"+id+"/data", tok, map[string]any{"text": "six", "mood": "fine"})
		if c == 201 {
			break
		}
		if time.Since(changed) > time.Second {
			t.Fatalf("a write with the new column on B, a second after the change on A: %d %v", c, r)
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("the schema change reached B in %s", time.Since(changed))
	// A membership removal on A: the member's token stops working on B at once.
	c, inv := a.call(t, "POST", "/api/v1/organizations/"+org+"/invitations", tok, map[string]any{"email": "reader@example.com", "role": "analyst"})
	if c != 201 {
		t.Fatalf("invite: %d %v", c, inv)
	}
	u := inv["invitation_url"].(string)
	c, acc := b.call(t, "POST", "/api/v1/invitations/"+u[strings.LastIndex(u, "/")+1:]+"/accept", "", map[string]any{"name": "Reader", "password": "reader-password"})
	if c != 200 {
		t.Fatalf("accept: %d %v", c, acc)
	}
	reader := acc["access_token"].(string)
	if c, _ := b.call(t, "GET", "/api/v1/datasets/"+id+"/data", reader, nil); c != 200 {
		t.Fatalf("the member reads on B: %d", c)
	}
	uid := acc["user"].(map[string]any)["id"].(string)
	if c, r := a.call(t, "DELETE", "/api/v1/organizations/"+org+"/users/"+uid, tok, nil); c != 204 {
		t.Fatalf("remove on A: %d %v", c, r)
	}
	removed := time.Now()
	for {
		c, _ := b.call(t, "GET", "/api/v1/datasets/"+id+"/data", reader, nil)
		if c != 200 {
			break
		}
		if time.Since(removed) > time.Second {
			t.Fatal("a removed member still reads on B a second later")
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Logf("the removal reached B in %s", time.Since(removed))

	// kill -9 of A in the middle of a load: B takes the job over once the lease runs out.
	var csv strings.Builder
	csv.WriteString("n,label,amount\n")
	for i := 0; i < 300000; i++ {
		fmt.Fprintf(&csv, "%d,row %d,%d.5\n", i, i, i%1000)
	}
	b.cmd.Process.Kill() // so that A's runner takes the job
	b.cmd.Wait()
	big, bigJob := a.upload(t, tok, prj, "big", csv.String())
	for start := time.Now(); ; time.Sleep(10 * time.Millisecond) {
		if _, j := a.call(t, "GET", "/api/v1/jobs/"+bigJob, tok, nil); j["status"] == "running" {
			break
		} else if time.Since(start) > 30*time.Second {
			t.Fatalf("the load never ran: %v", j)
		}
	}
	a.cmd.Process.Kill()
	a.cmd.Wait()
	b2 := serveOn(t, "b2", dbURL, shared, "DP_JOB_LEASE=2s")
	b2.waitActive(t, tok, prj, big)
	_, j := b2.call(t, "GET", "/api/v1/jobs/"+bigJob, tok, nil)
	var rows int
	if err := db.QueryRow(`SELECT count(*) FROM "` + org + `"."` + big + `"`).Scan(&rows); err != nil || j["attempts"] != float64(2) || rows != 300000 {
		t.Fatalf("after the takeover: job %v, %d rows (%v)", j, rows, err)
	}
}

// redisServer is a redis-server the test started.
type redisServer struct {
	cmd *exec.Cmd
	url string
}

func startRedis(t *testing.T) *redisServer {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatal("redis-server is not installed: run scripts/ensure-redis.sh (go tool task test does)")
	}
	addr := freeAddr(t)
	_, port, _ := net.SplitHostPort(addr)
	r := &redisServer{cmd: exec.Command(bin, "--port", port, "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--dir", t.TempDir()), url: "redis://" + addr + "/0"}
	if err := r.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.cmd.Process.Kill(); r.cmd.Wait() })
	for start := time.Now(); time.Since(start) < 10*time.Second; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return r
		}
	}
	t.Fatal("redis-server did not start")
	return nil
}
