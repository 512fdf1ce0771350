package main

import (
	"io"
	"net"
	"net/http"
	"net/url"
	"sync"
	"testing"
	"time"

	"dataplatform/store/pgtest"
)

// pgProxy stands between the server and PostgreSQL, so a test can take the database away
// (every connection cut, new ones refused, as when PostgreSQL stops) and bring it back.
type pgProxy struct {
	t      *testing.T
	target string
	addr   string
	mu     sync.Mutex
	ln     net.Listener
	conns  map[net.Conn]bool
}

func newPGProxy(t *testing.T, target string) *pgProxy {
	p := &pgProxy{t: t, target: target, conns: map[net.Conn]bool{}}
	p.up()
	t.Cleanup(p.down)
	return p
}

func (p *pgProxy) up() {
	addr := p.addr
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		p.t.Fatal(err)
	}
	p.mu.Lock()
	p.ln, p.addr = ln, ln.Addr().String()
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s, err := net.Dial("tcp", p.target)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns[c], p.conns[s] = true, true
			p.mu.Unlock()
			go func() { io.Copy(s, c); s.Close() }()
			go func() { io.Copy(c, s); c.Close() }()
		}
	}()
}

// down refuses new connections and cuts the open ones.
func (p *pgProxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
	p.conns = map[net.Conn]bool{}
}

// TestDatabaseOutage: with PostgreSQL gone, requests answer 503 SERVICE_UNAVAILABLE with
// Retry-After (no hang, no 500, no crash), /readyz says 503 while /healthz says 200; when the
// database is back, the same process serves again without a restart.
func TestDatabaseOutage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	dbURL := pgtest.NewDatabase(t)
	u, _ := url.Parse(dbURL)
	proxy := newPGProxy(t, u.Host)
	u.Host = proxy.addr
	s := serveOn(t, "s", u.String())
	c, login := s.call(t, "POST", "/api/v1/auth/login", "", map[string]any{"email": "admin@example.com", "password": "admin-password"})
	if c != 200 {
		t.Fatalf("login: %d %v", c, login)
	}
	tok := login["access_token"].(string)
	org := login["user"].(map[string]any)["organization_id"].(string)
	projects := "/api/v1/organizations/" + org + "/projects"
	if c, _ := s.call(t, "GET", projects, tok, nil); c != 200 {
		t.Fatalf("before the outage: %d", c)
	}
	get := func(path string) (int, http.Header) {
		req, _ := http.NewRequest("GET", "http://"+s.addr+path, nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		r, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
		if err != nil {
			t.Fatalf("GET %s during the outage: %v", path, err)
		}
		io.Copy(io.Discard, r.Body)
		r.Body.Close()
		return r.StatusCode, r.Header
	}

	proxy.down()
	t0 := time.Now()
	for i := range 20 { // under load: every request answers, 503 with Retry-After
		c, h := get(projects)
		if c != 503 || h.Get("Retry-After") == "" {
			t.Fatalf("request %d during the outage: %d (Retry-After %q)", i, c, h.Get("Retry-After"))
		}
	}
	t.Logf("20 requests during the outage answered in %s", time.Since(t0))
	if c, _ := get("/readyz"); c != 503 {
		t.Fatalf("/readyz during the outage: %d", c)
	}
	if c, _ := get("/healthz"); c != 200 {
		t.Fatalf("/healthz during the outage: %d", c)
	}

	proxy.up()
	for start := time.Now(); ; time.Sleep(100 * time.Millisecond) {
		c, _ := get(projects)
		if c == 200 {
			t.Logf("serving again %s after the database came back", time.Since(start))
			break
		}
		if time.Since(start) > 30*time.Second {
			t.Fatalf("30 s after the database came back the server still answers %d", c)
		}
	}
	if c, _ := get("/readyz"); c != 200 {
		t.Fatalf("/readyz after the outage: %d", c)
	}
	if s.cmd.ProcessState != nil {
		t.Fatal("the server exited")
	}
}
