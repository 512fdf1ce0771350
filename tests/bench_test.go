package tests

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"dataplatform/cmd/dataplatform/config"
	"dataplatform/store"
	"dataplatform/templates/descriptions"
)

// BenchmarkGetProject runs an authenticated GET /api/v1/projects/{id} through the whole
// middleware chain and the database, in process (no network): the server-side cost of the
// request the HTTP load test sends.
func BenchmarkGetProject(b *testing.B) {
	e := newEnv(b, func(c *config.Config) { c.RateLimits = "default=1000000000-M" })
	benchGET(b, e, "/api/v1/projects/"+e.projectID)
}

// BenchmarkGetRecord reads one record through the record API in process: description lookup,
// validation against it, the query and the links.
func BenchmarkGetRecord(b *testing.B) {
	e := newEnv(b, func(c *config.Config) { c.RateLimits = "records_read=1000000000-M" })
	id := e.uploadAndCreate(e.ownerToken, "Bench", "b.csv", "name,amount\nann,1\nbob,2\n")
	e.waitDataset(e.ownerToken, id)
	benchGET(b, e, "/api/v1/datasets/"+id+"/data/1")
}

// BenchmarkListRecords reads a filtered, sorted page of a 50,000-row dataset in process.
func BenchmarkListRecords(b *testing.B) {
	e := newEnv(b, func(c *config.Config) { c.RateLimits = "records_read=1000000000-M" })
	var csv strings.Builder
	csv.WriteString("city,amount,note\n")
	for i := 0; i < 50000; i++ {
		fmt.Fprintf(&csv, "city%d,%d.%02d,note %d\n", i%50, i%1000, i%100, i)
	}
	id := e.uploadAndCreate(e.ownerToken, "Bench", "b.csv", csv.String())
	e.waitDataset(e.ownerToken, id)
	benchGET(b, e, "/api/v1/datasets/"+id+"/data?filter%5Bcity%5D=city7&filter%5Bamount%5D%5Bgte%5D=500&sort=-amount&limit=20")
}

// benchGET sends authenticated GETs of path through the whole handler in parallel.
func benchGET(b *testing.B, e *env, path string) {
	h := e.srv.Handler()
	auth := "Bearer " + e.ownerToken
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			req := httptest.NewRequest(http.MethodGet, path, nil)
			req.Header.Set("Authorization", auth)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != 200 {
				b.Fatalf("status %d: %s", w.Code, w.Body)
			}
		}
	})
}

// BenchmarkAuditLogList lists an organization's audit log of 1,000,000 entries (beside
// 200,000 of another organization) through the whole handler, with each filter and with
// filters combined, and reports the median and 95th percentile of a page.
func BenchmarkAuditLogList(b *testing.B) {
	e := newEnv(b, func(c *config.Config) { c.RateLimits = "default=1000000000-M" })
	other := e.do("POST", "/api/v1/organizations", map[string]any{"name": "Other"}, bearer(e.ownerToken)).status(201).str("id")
	actor := e.userIDOf(adminEmail)
	for _, load := range []struct {
		org string
		n   int
	}{{e.orgID, 1_000_000}, {other, 200_000}} {
		if _, err := e.st.DB.Exec(`INSERT INTO platform.audit_log (organization_id, actor_id, actor_name, action, resource_type, resource_id,
			details, ip_address, user_agent, created_at)
			SELECT $1, CASE WHEN g % 10 = 0 THEN $3 ELSE 'usr_' || (g % 500) END, 'someone',
				(ARRAY['record.create', 'record.update', 'dataset.create', 'team.member_add', 'user.invite', 'project.update'])[1 + g % 6],
				(ARRAY['record', 'dataset', 'team', 'user', 'project'])[1 + g % 5], 'res_' || g, '{"k": 1}', '10.0.0.1', 'bench',
				now() - make_interval(secs => g * 3) FROM generate_series(1, $2) g`, load.org, load.n, actor); err != nil {
			b.Fatal(err)
		}
	}
	if _, err := e.st.DB.Exec(`ANALYZE platform.audit_log`); err != nil {
		b.Fatal(err)
	}
	base := "/api/v1/organizations/" + e.orgID + "/audit-logs"
	week := time.Now().AddDate(0, 0, -7).UTC().Format(time.DateOnly)
	for _, c := range []struct{ name, query string }{
		{"all", ""},
		{"page50", "?page=50&limit=20"},
		{"actor", "?actor_id=" + actor},
		{"action", "?action=user.invite"},
		{"family", "?action=team.*"},
		{"resource", "?resource_type=dataset"},
		{"dates", "?start_date=" + week + "&end_date=" + time.Now().UTC().Format(time.DateOnly)},
		{"combined", "?actor_id=" + actor + "&action=record.create&start_date=" + week},
	} {
		b.Run(c.name, func(b *testing.B) {
			h := e.srv.Handler()
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				req := httptest.NewRequest(http.MethodGet, base+c.query, nil)
				req.Header.Set("Authorization", "Bearer "+e.ownerToken)
				w := httptest.NewRecorder()
				start := time.Now()
				h.ServeHTTP(w, req)
				lat = append(lat, time.Since(start))
				if w.Code != 200 {
					b.Fatalf("status %d: %s", w.Code, w.Body)
				}
			}
			b.StopTimer()
			slices.Sort(lat)
			b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(lat[len(lat)*95/100].Microseconds())/1000, "p95-ms")
		})
	}
}

// BenchmarkExport exports every record of a 100,000-row dataset of mixed columns (the
// columns of scripts/bench-records.sh: integers, a numeric, a boolean, a date, a timestamp,
// a uuid, texts, NULLs) through the whole handler in process, in each format: the cost of the
// export's SELECT (values formatted by PostgreSQL; csv, json and ndjson of this size are
// PostgreSQL's COPY output, store/copyto.go) and of the writer.
func BenchmarkExport(b *testing.B) {
	e := newEnv(b, func(c *config.Config) { c.RateLimits = "records_export=1000000000-M" })
	var csv strings.Builder
	csv.WriteString("id_num,big,amount,flag,day,seen_at,ref,city,note,maybe\n")
	base := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < 100_000; i++ {
		at := base.Add(time.Duration(i*997) * time.Second)
		maybe := ""
		if i%7 != 0 {
			maybe = fmt.Sprint(i % 100)
		}
		fmt.Fprintf(&csv, "%d,%d,%d.%02d,%t,%s,%s,6f1c2a9e-8e4b-4c1a-9d5e-%012d,city%d,\"note, %d with text\",%s\n",
			i, i*100000, i%1000, i%100, i%2 == 1, at.Format(time.DateOnly), at.Format(time.RFC3339), i, i%50, i, maybe)
	}
	id := e.uploadAndCreate(e.ownerToken, "Bench", "b.csv", csv.String())
	if d := e.waitDataset(e.ownerToken, id); d.str("status") != "active" {
		b.Fatalf("dataset: %s", d.Body)
	}
	h := e.srv.Handler()
	for _, format := range []string{"csv", "json", "ndjson", "parquet"} {
		b.Run(format, func(b *testing.B) {
			var n int
			for i := 0; i < b.N; i++ {
				req := httptest.NewRequest(http.MethodGet, "/api/v1/datasets/"+id+"/data/export?format="+format, nil)
				req.Header.Set("Authorization", "Bearer "+e.ownerToken)
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				if w.Code != 200 {
					b.Fatalf("status %d: %s", w.Code, w.Body)
				}
				n = w.Body.Len()
			}
			b.SetBytes(int64(n))
		})
	}
}

// BenchmarkDescribeCold renders a 10-column dataset's description as its first request
// after a restart does (or after it left the cache): the store lookups, the versions and
// the document.
func BenchmarkDescribeCold(b *testing.B) {
	e := newEnv(b)
	var csv strings.Builder
	csv.WriteString("order_id,customer,amount,placed_on,shipped,region,qty,note,score,code\n")
	for i := 0; i < 200; i++ {
		fmt.Fprintf(&csv, "%d,c%d,%d.5,2024-01-%02d,%v,r%d,%d,n%d,%d.25,k%d\n", i+1, i%7, i, i%28+1, i%2 == 0, i%5, i%9, i, i%3, i)
	}
	id := e.uploadAndCreate(e.ownerToken, "Orders", "o.csv", csv.String())
	e.waitDataset(e.ownerToken, id)
	ctx := context.Background()
	d, err := store.DatasetByID(ctx, e.st.DB, id, false)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c := descriptions.New(e.st, descriptions.URLs{Production: baseURL}, time.Now, int(config.Defaults().DescriptionCacheBytes))
		if _, err := c.Describe(ctx, d, ""); err != nil {
			b.Fatal(err)
		}
	}
}
