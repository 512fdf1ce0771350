// Command tenantload measures tenant isolation: C connections send record GETs
// (GET /api/v1/datasets/{id}/data?limit=20), or with -rate R, R GETs a second on schedule,
// spread evenly over the datasets of many tenants for a while, first alone, then while one tenant runs H heavy SQL queries at once through
// POST /api/v1/projects/{id}/queries/execute in a loop; per phase it reports the record GETs'
// p50/p99 over all tenants, the median and the worst of the per-tenant p99s (the heavy tenant
// left out), the error count, and the heavy queries' outcomes (by status).
//
// The tenants file has one "dataset_id project_id" line per tenant; the first line is the
// heavy tenant. scripts/bench-tenants.sh makes the tenants and runs this. By hand:
//
//	go run ./scripts/tenantload -base http://127.0.0.1:18094 -token $TOK -tenants t.txt \
//	    -c 32 -duration 20s -heavy 8 -sql 'SELECT ...'
package main

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

func main() {
	base := flag.String("base", "http://127.0.0.1:18094", "server address")
	token := flag.String("token", "", "bearer token (a member of every tenant)")
	file := flag.String("tenants", "", `file of "dataset_id project_id" lines, the heavy tenant first`)
	conns := flag.Int("c", 32, "connections sending record GETs")
	dur := flag.Duration("duration", 20*time.Second, "length of each phase")
	heavy := flag.Int("heavy", 8, "heavy queries at once in the second phase")
	sql := flag.String("sql", "SELECT sum(length(md5(g::text))) FROM generate_series(1, 3000000) g", "the heavy query")
	rate := flag.Float64("rate", 0, "GETs a second sent on schedule (open loop: latency counts from when a GET was due) instead of by -c connections each sending the next when answered")
	flag.Parse()
	b, err := os.ReadFile(*file)
	if err != nil {
		panic(err)
	}
	var ds, prj []string
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(l)
		if len(f) == 2 {
			ds, prj = append(ds, f[0]), append(prj, f[1])
		}
	}
	tr := &http.Transport{MaxIdleConnsPerHost: *conns + *heavy + 8, MaxConnsPerHost: 0}
	client := &http.Client{Transport: tr, Timeout: 120 * time.Second}
	load := fmt.Sprintf("%d connections of record GETs", *conns)
	if *rate > 0 {
		load = fmt.Sprintf("%.0f record GETs a second (open loop)", *rate)
	}
	fmt.Printf("%d tenants, %s, phases of %s\n", len(ds), load, *dur)
	warm(client, *base, *token, ds, *conns)
	phase("record GETs alone", client, *base, *token, ds, *conns, *rate, *dur, 0, "", "")
	phase(fmt.Sprintf("record GETs while tenant 0 runs %d heavy queries at once", *heavy), client, *base, *token, ds, *conns, *rate, *dur, *heavy, prj[0], *sql)
}

func phase(title string, client *http.Client, base, token string, ds []string, conns int, rate float64, dur time.Duration, heavy int, heavyPrj, sql string) {
	lat := make([][]time.Duration, len(ds))
	var mu sync.Mutex
	var errs, next atomic.Int64
	stop := time.Now().Add(dur)
	var wg sync.WaitGroup
	done := make(chan struct{})
	hwait := heavyLoad(client, base, token, heavyPrj, sql, heavy, done)
	if heavy > 0 {
		time.Sleep(2 * time.Second) // the heavy queries are running before the measurement starts
		stop = time.Now().Add(dur)
	}
	// get sends one GET of tenant i's dataset and records its latency from t.
	get := func(i int, t time.Time) {
		req, _ := http.NewRequest(http.MethodGet, base+"/api/v1/datasets/"+ds[i]+"/data?limit=20", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		res, err := client.Do(req)
		if err != nil {
			errs.Add(1)
			return
		}
		_, _ = io.Copy(io.Discard, res.Body)
		_ = res.Body.Close()
		if res.StatusCode != http.StatusOK {
			if errs.Add(1) <= 3 {
				fmt.Fprintf(os.Stderr, "GET %s: %d\n", ds[i], res.StatusCode)
			}
			return
		}
		d := time.Since(t)
		mu.Lock()
		lat[i] = append(lat[i], d)
		mu.Unlock()
	}
	if rate > 0 {
		// Open loop: a GET every 1/rate s whatever the answers do; its latency counts from
		// when it was due, so a server that falls behind shows it (no coordinated omission).
		every := time.Duration(float64(time.Second) / rate)
		start := time.Now()
		for k := 0; ; k++ {
			due := start.Add(time.Duration(k) * every)
			if !due.Before(stop) {
				break
			}
			time.Sleep(time.Until(due))
			wg.Add(1)
			go func(i int) {
				defer wg.Done()
				get(i, due)
			}(k % len(ds))
		}
	} else {
		for c := 0; c < conns; c++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for time.Now().Before(stop) {
					get(int(next.Add(1))%len(ds), time.Now())
				}
			}()
		}
	}
	wg.Wait()
	close(done)
	hstat, hlat := hwait()
	var all []time.Duration
	var p99s []time.Duration
	for i, l := range lat {
		all = append(all, l...)
		if i == 0 && heavy > 0 {
			continue
		}
		if len(l) > 0 {
			sort.Slice(l, func(a, b int) bool { return l[a] < l[b] })
			p99s = append(p99s, pct(l, 99))
		}
	}
	sort.Slice(all, func(a, b int) bool { return all[a] < all[b] })
	sort.Slice(p99s, func(a, b int) bool { return p99s[a] < p99s[b] })
	fmt.Printf("== %s\n  %d GETs (%.0f/s), %d errors; all tenants p50 %s p99 %s; per-tenant p99: median %s, worst %s (%d tenants, %.0f GETs each)\n",
		title, len(all), float64(len(all))/dur.Seconds(), errs.Load(), pct(all, 50), pct(all, 99), pct(p99s, 50), pct(p99s, 100), len(p99s), float64(len(all))/float64(len(ds)))
	if heavy > 0 {
		sort.Slice(hlat, func(a, b int) bool { return hlat[a] < hlat[b] })
		fmt.Printf("  heavy queries: %d, by status %v (0: no answer), p50 %s\n", len(hlat), hstat, pct(hlat, 50))
	}
}

// heavyLoad runs heavy clients, each sending sql as a project query again and again (after
// a refusal, half a second later) until done; the function it returns waits for them and
// gives the answers' statuses (0: no answer) and latencies.
func heavyLoad(client *http.Client, base, token, prj, sql string, heavy int, done <-chan struct{}) func() (map[int]int, []time.Duration) {
	hstat := map[int]int{}
	var hlat []time.Duration
	var hmu sync.Mutex
	var hwg sync.WaitGroup
	for i := 0; i < heavy; i++ {
		hwg.Add(1)
		go func() {
			defer hwg.Done()
			for {
				select {
				case <-done:
					return
				default:
				}
				t := time.Now()
				req, _ := http.NewRequest(http.MethodPost, base+"/api/v1/projects/"+prj+"/queries/execute",
					strings.NewReader(fmt.Sprintf(`{"type":"sql","query":%q}`, sql)))
				req.Header.Set("Authorization", "Bearer "+token)
				req.Header.Set("Content-Type", "application/json")
				res, err := client.Do(req)
				st := 0
				if err == nil {
					_, _ = io.Copy(io.Discard, res.Body)
					_ = res.Body.Close()
					st = res.StatusCode
				}
				hmu.Lock()
				hstat[st]++
				hlat = append(hlat, time.Since(t))
				hmu.Unlock()
				if st == http.StatusServiceUnavailable || st == http.StatusTooManyRequests {
					time.Sleep(500 * time.Millisecond)
				}
			}
		}()
	}
	return func() (map[int]int, []time.Duration) {
		hwg.Wait()
		return hstat, hlat
	}
}

// warm sends one GET to every tenant's dataset (its description is rendered and cached, as
// on a server that has run a while) and reports those cold GETs.
func warm(client *http.Client, base, token string, ds []string, conns int) {
	var mu sync.Mutex
	var lat []time.Duration
	var next atomic.Int64
	var wg sync.WaitGroup
	t0 := time.Now()
	for c := 0; c < conns; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)) - 1; i < len(ds); i = int(next.Add(1)) - 1 {
				t := time.Now()
				req, _ := http.NewRequest(http.MethodGet, base+"/api/v1/datasets/"+ds[i]+"/data?limit=20", nil)
				req.Header.Set("Authorization", "Bearer "+token)
				if res, err := client.Do(req); err == nil {
					_, _ = io.Copy(io.Discard, res.Body)
					_ = res.Body.Close()
				}
				mu.Lock()
				lat = append(lat, time.Since(t))
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	sort.Slice(lat, func(a, b int) bool { return lat[a] < lat[b] })
	fmt.Printf("== warm-up: the first GET of each tenant's dataset (%d connections): %.1f s in all, p50 %s p99 %s\n",
		conns, time.Since(t0).Seconds(), pct(lat, 50), pct(lat, 99))
}

func pct(d []time.Duration, p int) time.Duration {
	if len(d) == 0 {
		return 0
	}
	return d[(len(d)-1)*p/100].Round(100 * time.Microsecond)
}
