package tests

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"dataplatform/handlers/mcp"
	"dataplatform/handlers/records"
	"dataplatform/handlers/server"
	"dataplatform/store"
)

// ownReplica starts another server on the same database with a store of its own, as another
// process would have (e.replica shares this process's store, and with it its in-memory state).
func (e *env) ownReplica() string {
	e.t.Helper()
	st, err := store.Open(context.Background(), e.dbURL)
	if err != nil {
		e.t.Fatal(err)
	}
	srv, err := server.New(context.Background(), server.Deps{Config: e.cfg.Settings, Store: st, DatabaseURL: e.dbURL, Records: records.Routes, Agents: mcp.Agents,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), Clock: e.clock.Now})
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	srv.Listen(ctx)
	ts := httptest.NewServer(srv.Handler())
	e.t.Cleanup(func() { ts.Close(); stop(); srv.Close(); st.Close() })
	return ts.URL
}

// statusAt is the status of GET path at another replica's base URL with header h.
func statusAt(t *testing.T, base, path string, h header) int {
	t.Helper()
	req, _ := http.NewRequest("GET", base+path, nil)
	for k, v := range h {
		req.Header.Set(k, v)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	return res.StatusCode
}

// TestLogoutRevokesAccessTokens: signing out ends the access tokens of the sign-in (every one
// issued along its refresh-token family) at once, on every replica, even when a replica had
// already verified and cached the token; other sign-ins go on.
func TestLogoutRevokesAccessTokens(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	other := e.ownReplica()
	in := e.login(adminEmail, adminPassword, "")
	first, refresh := in.str("access_token"), in.str("refresh_token")
	r := e.do("POST", "/api/v1/auth/refresh", map[string]any{"refresh_token": refresh}).status(200)
	second, refresh := r.str("access_token"), r.str("refresh_token")
	for _, tok := range []string{first, second} { // verified and cached by both replicas
		e.do("GET", "/api/v1/auth/me", nil, bearer(tok)).status(200)
		if s := statusAt(t, other, "/api/v1/auth/me", bearer(tok)); s != 200 {
			t.Fatalf("replica B before sign-out: %d", s)
		}
	}

	e.do("POST", "/api/v1/auth/logout", map[string]any{"refresh_token": refresh}).status(204)
	for _, tok := range []string{first, second} {
		e.do("GET", "/api/v1/auth/me", nil, bearer(tok)).authError(401, "AUTH_REQUIRED")
		deadline := time.Now().Add(2 * time.Second) // another replica hears it from the database
		for statusAt(t, other, "/api/v1/auth/me", bearer(tok)) != 401 {
			if time.Now().After(deadline) {
				t.Fatal("replica B still accepts the access token after sign-out")
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	// Another sign-in of the same user is not affected.
	e.do("GET", "/api/v1/auth/me", nil, bearer(e.ownerToken)).status(200)
	if s := statusAt(t, other, "/api/v1/auth/me", bearer(e.ownerToken)); s != 200 {
		t.Fatalf("replica B, another sign-in: %d", s)
	}
	// A reused refresh token revokes its family's access tokens too.
	in = e.login(adminEmail, adminPassword, "")
	third, spent := in.str("access_token"), in.str("refresh_token")
	e.do("POST", "/api/v1/auth/refresh", map[string]any{"refresh_token": spent}).status(200)
	e.do("POST", "/api/v1/auth/refresh", map[string]any{"refresh_token": spent}).authError(401, "AUTH_REQUIRED")
	e.do("GET", "/api/v1/auth/me", nil, bearer(third)).authError(401, "AUTH_REQUIRED")
}

// TestStreamsEndWithTheirToken: a change stream opened with an access token ends when the
// token is revoked by signing out, and when it expires.
func TestStreamsEndWithTheirToken(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.customers()
	base := "/api/v1/datasets/" + id + "/data"
	in := e.login(adminEmail, adminPassword, "")
	revoked, stop := e.openStream(base+"/stream", bearer(in.str("access_token")))
	defer stop()
	expiring, stop2 := e.openStream(base+"/stream", bearer(e.ownerToken))
	defer stop2()

	e.do("POST", "/api/v1/auth/logout", map[string]any{"refresh_token": in.str("refresh_token")}).status(204)
	if ev := next(t, revoked, true); ev.name != "error" || ev.data["code"] != "AUTH_REQUIRED" {
		t.Fatalf("want the stream to end with AUTH_REQUIRED at sign-out, got %+v", ev)
	}
	e.clock.Advance(time.Hour + time.Second) // past the owner token's exp
	if ev := next(t, expiring, true); ev.name != "error" || ev.data["code"] != "TOKEN_EXPIRED" {
		t.Fatalf("want the stream to end with TOKEN_EXPIRED, got %+v", ev)
	}
}
