package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// latencies is a receiver's record of event-to-receipt times.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
	n  atomic.Int64
}

func (l *latencies) server(b *testing.B) *httptest.Server {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		now := time.Now()
		var m struct {
			Timestamp time.Time `json:"timestamp"`
		}
		json.Unmarshal(body, &m)
		l.mu.Lock()
		l.d = append(l.d, now.Sub(m.Timestamp))
		l.mu.Unlock()
		l.n.Add(1)
	}))
	b.Cleanup(s.Close)
	return s
}

func (l *latencies) quantile(q float64) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	s := slices.Clone(l.d)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[int(q*float64(len(s)-1))]
}

// BenchmarkWebhookDelivery: 10,000 events fanned out to 5 local receivers, each event
// committed to the outbox as an operation would; deliveries per second and the latency from
// commit to receipt (p50, p99). "burst" commits all events in one transaction (the rate is
// the drain rate; latency is mostly queueing); "steady" commits 200 events a second (1,000
// deliveries a second, the aim); "reference" is the same 50,000 POSTs sent straight from the
// benchmark, no database: the ceiling of this machine's loopback and receivers.
//
//	go test -run '^$' -bench BenchmarkWebhookDelivery -benchtime 1x ./tests/
func BenchmarkWebhookDelivery(b *testing.B) {
	const events, receivers = 10000, 5
	run := func(b *testing.B, emit func(e *env, org string)) {
		e := newEnv(b, webhookNetworks)
		var l latencies
		for range receivers {
			e.createWebhook(e.orgID, l.server(b).URL, []string{"team.*"}, nil)
		}
		start := time.Now()
		emit(e, e.orgID)
		for l.n.Load() < events*receivers {
			time.Sleep(5 * time.Millisecond)
		}
		took := time.Since(start)
		b.ReportMetric(float64(events*receivers)/took.Seconds(), "deliveries/s")
		b.ReportMetric(float64(l.quantile(0.5).Microseconds())/1000, "p50-ms")
		b.ReportMetric(float64(l.quantile(0.99).Microseconds())/1000, "p99-ms")
	}
	insert := func(e *env, org string, n int) {
		if _, err := e.st.DB.Exec(`INSERT INTO platform.outbox (event_type, organization_id, payload, created_at)
			SELECT 'team.updated', $1, jsonb_build_object('id', 'tm_bench', 'n', g), clock_timestamp() FROM generate_series(1, $2) g`, org, n); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("burst", func(b *testing.B) {
		for range b.N {
			run(b, func(e *env, org string) { insert(e, org, events) })
		}
	})
	b.Run("steady", func(b *testing.B) {
		for range b.N {
			run(b, func(e *env, org string) {
				t := time.NewTicker(20 * time.Millisecond) // 4 events each: 200 a second
				defer t.Stop()
				for i := 0; i < events; i += 4 {
					<-t.C
					insert(e, org, 4)
				}
			})
		}
	})
	b.Run("reference", func(b *testing.B) {
		for range b.N {
			var l latencies
			var wg sync.WaitGroup
			start := time.Now()
			for range receivers {
				url := l.server(b).URL
				wg.Add(1)
				go func() {
					defer wg.Done()
					for i := range events {
						body := fmt.Sprintf(`{"type":"team.updated","timestamp":%q,"data":{"n":%d}}`, time.Now().Format(time.RFC3339Nano), i)
						res, err := http.Post(url, "application/json", bytes.NewReader([]byte(body)))
						if err != nil {
							b.Error(err)
							return
						}
						io.Copy(io.Discard, res.Body)
						res.Body.Close()
					}
				}()
			}
			wg.Wait()
			b.ReportMetric(float64(events*receivers)/time.Since(start).Seconds(), "deliveries/s")
			b.ReportMetric(float64(l.quantile(0.99).Microseconds())/1000, "p99-ms")
		}
	})
}
