package tests

import (
	"dataplatform/cmd/dataplatform/config"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
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
