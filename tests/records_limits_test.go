package tests

import (
	"fmt"
	"testing"

	"dataplatform/cmd/dataplatform/config"
)

// TestRecordRateLimitCategories: each category of the generated API counts
// on its own, per caller and dataset, with its own headers; exhausting one dataset's reads
// leaves another dataset's reads and the platform API (default) alone.
func TestRecordRateLimitCategories(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *config.Config) {
		c.RateLimits = "records_read=3-M,records_export=2-M,records_delete=2-M"
	})
	own := bearer(e.ownerToken)
	a := e.uploadAndCreate(e.ownerToken, "Alpha", "a.csv", "name\nx\ny\nz\n")
	b := e.uploadAndCreate(e.ownerToken, "Beta", "b.csv", "name\nx\n")
	e.waitDataset(e.ownerToken, a)
	e.waitDataset(e.ownerToken, b)
	limited := func(r *resp, category string) {
		t.Helper()
		r.apiError(429, "RATE_LIMIT_EXCEEDED")
		if r.get("error.details.category") != category || r.Header.Get("Retry-After") == "" {
			t.Fatalf("429 of %s: %s", category, r.Body)
		}
	}

	// Reads: three on Alpha, the fourth is refused, with the category's own figures.
	for i := 1; i <= 3; i++ {
		r := e.do("GET", "/api/v1/datasets/"+a+"/data", nil, own).status(200)
		if r.Header.Get("X-RateLimit-Limit") != "3" || r.Header.Get("X-RateLimit-Remaining") != fmt.Sprint(3-i) {
			t.Fatalf("read %d: limit %s remaining %s", i, r.Header.Get("X-RateLimit-Limit"), r.Header.Get("X-RateLimit-Remaining"))
		}
	}
	limited(e.do("GET", "/api/v1/datasets/"+a+"/data/1", nil, own), "records_read")
	// Beta's reads and the platform API are counted apart.
	e.do("GET", "/api/v1/datasets/"+b+"/data", nil, own).status(200)
	if me := e.do("GET", "/api/v1/auth/me", nil, own).status(200); me.Header.Get("X-RateLimit-Limit") != "1000" {
		t.Fatalf("the platform API's limit: %s", me.Header.Get("X-RateLimit-Limit"))
	}
	e.do("GET", "/api/v1/organizations", nil, own).status(200)

	// Exports: two, then 429, while writes (their own category) go on.
	for i := 0; i < 2; i++ {
		e.do("GET", "/api/v1/datasets/"+b+"/data/export?format=json", nil, own).status(200)
	}
	limited(e.do("GET", "/api/v1/datasets/"+b+"/data/export?format=json", nil, own), "records_export")
	for i := 0; i < 3; i++ {
		if w := e.do("POST", "/api/v1/datasets/"+b+"/data", map[string]any{"name": "n"}, own).status(201); w.Header.Get("X-RateLimit-Limit") != "100" {
			t.Fatalf("writes' limit: %s", w.Header.Get("X-RateLimit-Limit"))
		}
	}
	// Deletes: two, then 429; the record the refused request named is still there.
	for id := 1; id <= 2; id++ {
		e.do("DELETE", fmt.Sprintf("/api/v1/datasets/%s/data/%d", a, id), nil, own).status(200)
	}
	limited(e.do("DELETE", "/api/v1/datasets/"+a+"/data/3", nil, own), "records_delete")
	var live int
	e.st.DB.Get(&live, fmt.Sprintf(`SELECT count(*) FROM %q.%q WHERE deleted_at IS NULL`, e.orgID, a))
	if live != 1 {
		t.Fatalf("%d live records, want 1", live)
	}
}
