package tests

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"dataplatform/cmd/dataplatform/config"
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
