package tests

import (
	"dataplatform/config"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkGetProject runs an authenticated GET /api/v1/projects/{id} through the whole
// middleware chain and the database, in process (no network): the server-side cost of the
// request the HTTP load test sends.
func BenchmarkGetProject(b *testing.B) {
	e := newEnv(b, func(c *config.Config) { c.RateLimits = "default=1000000000-M" })
	h := e.srv.Handler()
	path := "/api/v1/projects/" + e.projectID
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

// BenchmarkGetRecord reads one record through the record API in process: description lookup,
// validation against it, the query and the links.
func BenchmarkGetRecord(b *testing.B) {
	e := newEnv(b, func(c *config.Config) { c.RateLimits = "records_read=1000000000-M" })
	id := e.uploadAndCreate(e.ownerToken, "Bench", "b.csv", "name,amount\nann,1\nbob,2\n")
	e.waitDataset(e.ownerToken, id)
	h := e.srv.Handler()
	path := "/api/v1/datasets/" + id + "/data/1"
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
