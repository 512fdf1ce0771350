package tests

import (
	"context"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"dataplatform/handlers/mcp"
	"dataplatform/handlers/records"
	"dataplatform/handlers/server"
	"dataplatform/store"
)

// TestRecordRoundTrips counts the database round trips of the record API's reads once warm:
// a record by key is one (its SELECT: dataset, membership, organization security, the
// token's revocation or the API key come from the caches the control-plane notifications
// keep), a list page of a small table two (the exact count and the page); and a revoked key
// stops working on a replica that had it cached. A second server on the same database
// reaches it through a proxy that counts the round trips the PostgreSQL protocol makes (a
// Sync or a simple Query from the client); it runs no background work of its own.
func TestRecordRoundTrips(t *testing.T) {
	e := newEnv(t)
	id := e.uploadAndCreate(e.ownerToken, "Trips", "t.csv", "name,amount\nann,1\nbob,2\ncid,3\n")
	if d := e.waitDataset(e.ownerToken, id); d.str("status") != "active" {
		t.Fatalf("dataset: %s", d.Body)
	}
	// The jobs that follow a load (statistics, search index) update the dataset, which empties
	// the lookup caches: let them finish first.
	for deadline := time.Now().Add(30 * time.Second); ; {
		var n int
		if err := e.st.DB.Get(&n, `SELECT count(*) FROM platform.jobs WHERE status IN ('queued', 'running')`); err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d jobs still running", n)
		}
		time.Sleep(100 * time.Millisecond)
	}
	trips := countTrips(t, e.dbURL)
	st, err := store.Open(context.Background(), trips.url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	st.DB.SetMaxOpenConns(1) // one connection: a statement is prepared once, in the warm-up
	srv, err := server.New(context.Background(), server.Deps{Config: e.cfg.Settings, Store: st, DatabaseURL: e.dbURL,
		Records: records.Routes, Agents: mcp.Agents, Logger: slog.New(slog.DiscardHandler), Clock: e.clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	ctx, stop := context.WithCancel(context.Background())
	t.Cleanup(stop)
	srv.Listen(ctx) // the caches' notifications, on connections of their own (not counted)
	h := srv.Handler()
	send := func(path, header, value string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		req.Header.Set(header, value)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, req)
		return w
	}
	key := e.do("POST", "/api/v1/api-keys", map[string]any{"name": "trips", "permissions": []string{"datasets:read"}}, bearer(e.ownerToken)).status(201)
	base := "/api/v1/datasets/" + id + "/data"
	for _, c := range []struct {
		name, path, header, value string
		want                      int64
	}{
		{"one record", base + "/2", "Authorization", "Bearer " + e.ownerToken, 1},
		{"one record with an API key", base + "/2", "X-API-Key", key.str("key"), 1},
		{"list page", base + "?" + url.Values{"filter[amount][gte]": {"2"}, "sort": {"-amount"}, "limit": {"20"}}.Encode(), "Authorization", "Bearer " + e.ownerToken, 2},
	} {
		t.Run(c.name, func(t *testing.T) {
			get := func() {
				if w := send(c.path, c.header, c.value); w.Code != http.StatusOK {
					t.Fatalf("GET %s: %d %s", c.path, w.Code, w.Body)
				}
			}
			for range 5 { // warm: lookups cached, statements prepared
				get()
			}
			const n = 20
			trips.n.Store(0)
			for range n {
				get()
			}
			if got := trips.n.Load(); got != n*c.want {
				t.Errorf("%d requests made %d round trips to the database, want %d each", n, got, c.want)
			}
		})
	}
	// The key kept by the second server stops working there as soon as the first revokes it
	// (the notification empties the caches of every replica).
	e.do("DELETE", "/api/v1/api-keys/"+key.str("id"), nil, bearer(e.ownerToken)).status(204)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		w := send(base+"/2", "X-API-Key", key.str("key"))
		if w.Code == http.StatusUnauthorized {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a revoked key still answers %d on another replica after 5 s", w.Code)
		}
	}
}

// tripCounter is a TCP proxy to PostgreSQL that counts the round trips its clients make.
type tripCounter struct {
	url string
	n   atomic.Int64
}

func countTrips(t *testing.T, dbURL string) *tripCounter {
	u, err := url.Parse(dbURL)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { ln.Close(); wg.Wait() })
	tc := &tripCounter{}
	target := u.Host
	u.Host = ln.Addr().String()
	tc.url = u.String()
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", target)
			if err != nil {
				c.Close()
				continue
			}
			wg.Add(2)
			go func() { defer wg.Done(); _, _ = io.Copy(c, s); c.Close() }()
			go func() { defer wg.Done(); tc.client(c, s); s.Close() }()
		}
	}()
	return tc
}

// client copies what a client sends, counting its Sync and Query messages: each ends one
// round trip (a simple query, or an extended-protocol batch: parse, bind, execute, sync).
// The startup messages (SSL request, startup packet) carry no type byte.
func (tc *tripCounter) client(c, s net.Conn) {
	defer c.Close()
	head := make([]byte, 5)
	for startup := true; ; {
		if startup {
			if _, err := io.ReadFull(c, head[:4]); err != nil {
				return
			}
			n := int(binary.BigEndian.Uint32(head[:4]))
			body := make([]byte, n-4)
			if _, err := io.ReadFull(c, body); err != nil {
				return
			}
			if _, err := s.Write(append(head[:4:4], body...)); err != nil {
				return
			}
			// An SSL or GSS encryption request (80877103, 80877104) is followed by the startup
			// packet itself; anything else was the startup packet.
			startup = len(body) == 4 && (binary.BigEndian.Uint32(body) == 80877103 || binary.BigEndian.Uint32(body) == 80877104)
			continue
		}
		if _, err := io.ReadFull(c, head); err != nil {
			return
		}
		n := int(binary.BigEndian.Uint32(head[1:]))
		if head[0] == 'S' || head[0] == 'Q' {
			tc.n.Add(1)
		}
		if _, err := s.Write(head); err != nil {
			return
		}
		if _, err := io.CopyN(s, c, int64(n-4)); err != nil {
			return
		}
	}
}
