package tests

import (
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"dataplatform/cmd/dataplatform/config"
)

// BenchmarkDashboard measures the deterministic generator on a 1,000,000-row, 10-column
// dataset and on a project of three related datasets, and the data endpoint of the 15-tile
// dashboard of the large one (cache cold: a new dashboard state each round). Each figure is
// reported per operation; the reference is one COUNT(*) over the large table in the same run.
//
//	go test -run '^$' -bench BenchmarkDashboard -benchtime 3x -timeout 30m ./tests/
func BenchmarkDashboard(b *testing.B) {
	e := newEnv(b, func(c *config.Config) {
		c.RateLimits = "queries=1000000000-M,default=1000000000-M"
		c.MaxUploadBytes = 1 << 30
	})
	own := bearer(e.ownerToken)
	rows := 1_000_000
	var csv strings.Builder
	csv.WriteString("order_id,customer_id,product_id,order_date,amount,quantity,discount,status,channel,region\n")
	start := time.Date(2022, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := 0; i < rows; i++ {
		fmt.Fprintf(&csv, "%d,%d,%d,%s,%d.%02d,%d,%d.%d,%s,%s,%s\n", i+1, 1+i%5000, 1+i%800, start.Add(time.Duration(i)*97*time.Second).Format(time.RFC3339),
			i%900, i%100, 1+i%9, i%4, i%3, dashStatuses[i%4], []string{"web", "store", "phone"}[i%3], dashRegions[i%5])
	}
	big := e.uploadAndCreate(e.ownerToken, "Orders", "orders.csv", csv.String())
	if d := e.waitDataset(e.ownerToken, big); d.str("status") != "active" {
		b.Fatalf("orders: %s", d.Body)
	}
	var cb, pb strings.Builder
	cb.WriteString("id,name,segment,country\n")
	for i := 1; i <= 5000; i++ {
		fmt.Fprintf(&cb, "%d,Customer %d,%s,%s\n", i, i, dashSegments[i%3], []string{"Germany", "France", "Italy", "Spain"}[i%4])
	}
	pb.WriteString("id,title,category,price\n")
	for i := 1; i <= 800; i++ {
		fmt.Fprintf(&pb, "%d,Product %d,%s,%d.99\n", i, i, []string{"books", "games", "music", "tools", "garden"}[i%5], 5+i%70)
	}
	customers := e.uploadAndCreate(e.ownerToken, "Customers", "customers.csv", cb.String())
	products := e.uploadAndCreate(e.ownerToken, "Products", "products.csv", pb.String())
	e.waitDataset(e.ownerToken, customers)
	e.waitDataset(e.ownerToken, products)
	// The relationships are inferred when a dataset is analysed: analyse orders again now that
	// customers and products exist.
	job := e.do("POST", "/api/v1/projects/"+e.projectID+"/datasets/"+big+"/refresh", nil, own).status(202).str("job_id")
	for st, i := "", 0; st != "succeeded"; i++ {
		j := e.do("GET", "/api/v1/jobs/"+job, nil, own).status(200)
		if st = j.str("status"); st == "failed" {
			b.Fatalf("the analysis failed: %s", j.Body)
		} else if st == "queued" && j.num("attempts") > 0 {
			b.Logf("the analysis is retried: %s", j.Body)
			e.clock.Advance(time.Minute) // its retry is due (the test's clock stands still)
		}
		if i == 1200 {
			var jobs, act []string
			e.st.DB.Select(&jobs, `SELECT kind || ' ' || status || ' ' || attempts || ' ' || run_at || ' ' || coalesce(lease_until::text, '') || ' ' || coalesce(error, '') FROM platform.jobs`)
			e.st.DB.Select(&act, `SELECT coalesce(state, '') || ' ' || coalesce(wait_event, '') || ' ' || left(query, 100) FROM pg_stat_activity
				WHERE datname = current_database() AND pid <> pg_backend_pid()`)
			b.Fatalf("the analysis did not end in 2 minutes: jobs %v (now %v); backends %q", jobs, e.clock.Now(), act)
		}
		time.Sleep(100 * time.Millisecond)
	}

	var id string
	b.Run("reference_count", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			e.execute(map[string]any{"query": "SELECT count(*) FROM orders"}, e.ownerToken).status(200)
		}
	})
	b.Run("generate_1M_rows", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			r := e.do("POST", "/api/v1/datasets/"+big+"/dashboard/generate?force=true&use_ai=false", nil, own)
			if r.Code != 200 && r.Code != 201 {
				b.Fatalf("generate: %d %s", r.Code, r.Body)
			}
			id = r.str("id")
			if n := len(tiles(r)); i == 0 {
				b.ReportMetric(float64(n), "tiles")
			}
		}
	})
	round := 0
	b.Run("data_1M_rows", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			// A new time range each round: nothing comes from the cache.
			round++
			d := e.do("GET", fmt.Sprintf("/api/v1/dashboards/%s/data?time_range=2000-01-01..2099-12-%02d", id, round), nil, own).status(200)
			for _, t := range d.get("tiles").([]any) {
				if m := t.(map[string]any); m["error"] != nil || m["cached"] == true {
					b.Fatalf("tile %v", m)
				} else if os.Getenv("DP_BENCH_TILES") != "" {
					b.Logf("%v %v ms", m["tile_id"], m["execution_time_ms"])
				}
			}
		}
	})
	b.Run("generate_project_3_datasets", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			e.do("POST", "/api/v1/projects/"+e.projectID+"/dashboards/generate", map[string]any{"name": fmt.Sprint("Sales ", i),
				"dataset_ids": []string{big, customers, products}, "use_ai": false}, own).status(201)
		}
	})
}
