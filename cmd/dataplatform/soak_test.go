package main

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"mime/multipart"
	"net/http"
	"os"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// soakFor is how long TestSoak runs: a few seconds in the suite (so that it keeps working),
// ten minutes by `go tool task soak`, or what -soak says.
var soakFor = flag.Duration("soak", 5*time.Second, "how long TestSoak runs its load")

// processFacts are what must stay flat under steady load.
type processFacts struct {
	rssKB, goroutines, dbConns int
}

func facts(t *testing.T, pid int, pprofAddr string, db *sql.DB) processFacts {
	var f processFacts
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid)); err == nil {
		if m := regexp.MustCompile(`VmRSS:\s+(\d+)`).FindSubmatch(b); m != nil {
			f.rssKB, _ = strconv.Atoi(string(m[1]))
		}
	}
	if r, err := http.Get("http://" + pprofAddr + "/debug/pprof/goroutine?debug=1"); err == nil {
		line, _ := bufio.NewReader(r.Body).ReadString('\n') // "goroutine profile: total N"
		r.Body.Close()
		f.goroutines, _ = strconv.Atoi(strings.TrimSpace(line[strings.LastIndex(line, " ")+1:]))
	}
	db.QueryRow(`SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid()`).Scan(&f.dbConns)
	return f
}

// TestSoak runs a steady mix against one server process on loopback: record reads and
// writes, bulk writes, exports, project queries, uploads, and change-stream subscribers that
// come and go. It reports errors and p50/p99 per kind, and the server's RSS, goroutines and
// database connections at the start and the end; it fails on any error, and when goroutines
// or connections grow.
//
//	go tool task soak                  # ten minutes
//	go test -count=1 -run TestSoak -soak 2m ./cmd/dataplatform/
func TestSoak(t *testing.T) {
	t.Parallel()
	dbURL, db := processDB(t)
	pprofAddr := freeAddr(t)
	s := serveOn(t, "soak", dbURL, "DP_PPROF_ADDR="+pprofAddr, "DP_LOG_REQUESTS=false",
		"DP_RATE_LIMITS=default=1000000-M,records_read=1000000-M,records_write=1000000-M,records_bulk=1000000-M,records_export=1000000-M,queries=1000000-M,uploads=1000000-H,datasets=1000000-H")
	tok, _, prj := s.owner(t)
	var csv strings.Builder
	csv.WriteString("n,city,amount\n")
	for i := 0; i < 5000; i++ {
		fmt.Fprintf(&csv, "%d,city%d,%d.5\n", i, i%20, i%100)
	}
	id, _ := s.upload(t, tok, prj, "soak", csv.String())
	s.waitActive(t, tok, prj, id)

	type sample struct {
		kind string
		took time.Duration
		err  string
	}
	var mu sync.Mutex
	var samples []sample
	record := func(kind string, start time.Time, status int, err error) {
		sm := sample{kind: kind, took: time.Since(start)}
		if err != nil {
			sm.err = err.Error()
		} else if status >= 300 {
			sm.err = fmt.Sprintf("status %d", status)
		}
		mu.Lock()
		samples = append(samples, sm)
		mu.Unlock()
	}
	client := &http.Client{Timeout: 60 * time.Second}
	do := func(kind, method, path, ctype string, body []byte) {
		start := time.Now()
		req, _ := http.NewRequest(method, "http://"+s.addr+path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+tok)
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		r, err := client.Do(req)
		status := 0
		if err == nil {
			io.Copy(io.Discard, r.Body)
			r.Body.Close()
			status = r.StatusCode
		}
		record(kind, start, status, err)
	}
	js := func(v any) []byte { b, _ := json.Marshal(v); return b }
	data := "/api/v1/datasets/" + id + "/data"
	kinds := []struct {
		name  string
		every time.Duration
		run   func(i int)
	}{
		{"read", 50 * time.Millisecond, func(i int) {
			do("read", "GET", data+"?filter%5Bcity%5D=city"+strconv.Itoa(i%20)+"&sort=-amount&limit=20", "", nil)
		}},
		{"write", 100 * time.Millisecond, func(i int) {
			do("write", "POST", data, "application/json", js(map[string]any{"n": 100000 + i, "city": "soak", "amount": i % 7}))
		}},
		{"bulk", time.Second, func(i int) {
			var ops []any
			for j := 0; j < 20; j++ {
				ops = append(ops, map[string]any{"method": "create", "data": map[string]any{"n": -i*100 - j, "city": "bulk", "amount": j}})
			}
			do("bulk", "POST", data+"/bulk", "application/json", js(map[string]any{"operations": ops}))
		}},
		{"export", 2 * time.Second, func(i int) { do("export", "GET", data+"/export?format=csv", "", nil) }},
		{"query", 500 * time.Millisecond, func(i int) {
			do("query", "POST", "/api/v1/projects/"+prj+"/queries/execute", "application/json",
				js(map[string]any{"type": "sql", "query": "SELECT city, sum(amount) FROM soak GROUP BY city ORDER BY 2 DESC LIMIT 5"}))
		}},
		{"upload", 5 * time.Second, func(i int) {
			var form bytes.Buffer
			mw := multipart.NewWriter(&form)
			fw, _ := mw.CreateFormFile("file", "u.csv")
			fmt.Fprintf(fw, "a,b\n%d,x\n", i)
			mw.Close()
			do("upload", "POST", "/api/v1/projects/"+prj+"/datasets/upload", mw.FormDataContentType(), form.Bytes())
		}},
		{"stream", 3 * time.Second, func(i int) { // a subscriber that listens a while and leaves
			start := time.Now()
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+s.addr+data+"/stream", nil)
			req.Header.Set("Authorization", "Bearer "+tok)
			r, err := http.DefaultClient.Do(req)
			if err != nil {
				record("stream", start, 0, err)
				return
			}
			events := 0
			sc := bufio.NewScanner(r.Body)
			for sc.Scan() {
				if strings.HasPrefix(sc.Text(), "event: record.") {
					events++
				}
			}
			r.Body.Close()
			if r.StatusCode != 200 || events == 0 {
				record("stream", start, 599, nil) // a subscriber that heard nothing of the writes is an error
				return
			}
			record("stream", start, 200, nil)
		}},
	}

	warm := facts(t, s.cmd.Process.Pid, pprofAddr, db)
	deadline := time.Now().Add(*soakFor)
	var wg sync.WaitGroup
	for _, k := range kinds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tick := time.NewTicker(k.every)
			defer tick.Stop()
			var inner sync.WaitGroup
			for i := 0; time.Now().Before(deadline); i++ {
				inner.Add(1)
				go func() { defer inner.Done(); k.run(i) }()
				<-tick.C
			}
			inner.Wait()
		}()
	}
	wg.Wait()
	time.Sleep(2 * time.Second) // let what the load left (streams, idle connections) settle
	end := facts(t, s.cmd.Process.Pid, pprofAddr, db)

	byKind := map[string][]sample{}
	for _, sm := range samples {
		byKind[sm.kind] = append(byKind[sm.kind], sm)
	}
	names := make([]string, 0, len(byKind))
	for k := range byKind {
		names = append(names, k)
	}
	sort.Strings(names)
	var report strings.Builder
	fmt.Fprintf(&report, "soak of %s: %d requests\n%-8s %7s %7s %9s %9s\n", *soakFor, len(samples), "kind", "count", "errors", "p50 ms", "p99 ms")
	errs := 0
	for _, k := range names {
		ss := byKind[k]
		ds := make([]time.Duration, len(ss))
		n := 0
		for i, sm := range ss {
			ds[i] = sm.took
			if sm.err != "" {
				n++
				if n <= 3 {
					t.Logf("%s error: %s", k, sm.err)
				}
			}
		}
		errs += n
		slices.Sort(ds)
		q := func(p float64) float64 { return float64(ds[int(p*float64(len(ds)-1))].Microseconds()) / 1000 }
		fmt.Fprintf(&report, "%-8s %7d %7d %9.1f %9.1f\n", k, len(ss), n, q(0.5), q(0.99))
	}
	fmt.Fprintf(&report, "server at start: RSS %d MB, %d goroutines, %d database connections\n", warm.rssKB/1024, warm.goroutines, warm.dbConns)
	fmt.Fprintf(&report, "server at end:   RSS %d MB, %d goroutines, %d database connections\n", end.rssKB/1024, end.goroutines, end.dbConns)
	t.Log("\n" + report.String())
	if errs > 0 {
		t.Fatalf("%d requests failed", errs)
	}
	// Flat: what the load held is given back (a few goroutines of slack for idle keep-alive
	// connections being closed); connections stay within the pool.
	if end.goroutines > warm.goroutines+20 || end.dbConns > warm.dbConns+10 {
		t.Fatalf("not flat: goroutines %d → %d, database connections %d → %d", warm.goroutines, end.goroutines, warm.dbConns, end.dbConns)
	}
}
