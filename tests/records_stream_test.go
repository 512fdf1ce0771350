package tests

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"dataplatform/cmd/dataplatform/config"

	"github.com/coder/websocket"
	"github.com/coder/websocket/wsjson"
)

type sseEvent struct {
	id, name string
	data     map[string]any
	raw      string // data as sent
}

// openStream connects to a change stream and delivers its events (and heartbeats, as name
// "heartbeat") on a channel until cancel.
func (e *env) openStream(path string, hs ...header) (<-chan sseEvent, func()) {
	e.t.Helper()
	return e.openStreamAt(e.ts.URL, path, hs...)
}

func (e *env) openStreamAt(base, path string, hs ...header) (<-chan sseEvent, func()) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "GET", base+path, nil)
	for _, h := range hs {
		for k, v := range h {
			req.Header.Set(k, v)
		}
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil || res.StatusCode != 200 || res.Header.Get("Content-Type") != "text/event-stream" {
		e.t.Fatalf("stream: %v %v", err, res)
	}
	ch := make(chan sseEvent, 100)
	go func() {
		defer res.Body.Close()
		defer close(ch)
		sc := bufio.NewScanner(res.Body)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case strings.HasPrefix(line, ": heartbeat"):
				ch <- sseEvent{name: "heartbeat"}
			case strings.HasPrefix(line, "id: "):
				ev.id = line[4:]
			case strings.HasPrefix(line, "event: "):
				ev.name = line[7:]
			case strings.HasPrefix(line, "data: "):
				json.Unmarshal([]byte(line[6:]), &ev.data)
				ev.raw = line[6:]
			case line == "" && ev.name != "":
				ch <- ev
				ev = sseEvent{}
			}
		}
	}()
	return ch, cancel
}

func next(t *testing.T, ch <-chan sseEvent, skipHeartbeats bool) sseEvent {
	t.Helper()
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatal("the stream ended")
			}
			if skipHeartbeats && ev.name == "heartbeat" {
				continue
			}
			return ev
		case <-time.After(10 * time.Second):
			t.Fatal("no event within 10 s")
		}
	}
}

func TestRecordChangeStream(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *config.Config) { c.StreamHeartbeat = 300 * time.Millisecond })
	own := bearer(e.ownerToken)
	_, base := e.customerRecords()
	all, stopAll := e.openStream(base+"/stream", own)
	active, stopActive := e.openStream(base+"/stream?filter[status]=active", own)
	defer stopActive()

	c := e.do("POST", base, map[string]any{"name": "Eve", "email": "eve@example.com"}, own).status(201)
	ev := next(t, all, true)
	if ev.name != "record.created" || ev.data["name"] != "Eve" || ev.data["status"] != "pending" || ev.id == "" {
		t.Fatalf("created: %+v", ev)
	}
	rid := c.num("id")
	e.do("PATCH", base+"/"+jsonNum(rid), map[string]any{"status": "active"}, own).status(200)
	ev = next(t, all, true)
	if ev.name != "record.updated" || ev.data["changes"].(map[string]any)["status"] != "active" || len(ev.data["changes"].(map[string]any)) != 1 {
		t.Fatalf("updated: %+v", ev)
	}
	// The filtered stream saw only the update (Eve became active then).
	if f := next(t, active, true); f.name != "record.updated" || f.data["id"].(float64) != float64(rid) {
		t.Fatalf("filtered: %+v", f)
	}
	if hb := next(t, all, false); hb.name != "heartbeat" {
		t.Fatalf("no heartbeat: %+v", hb)
	}
	// Disconnect, change things, resume with Last-Event-ID: nothing missed.
	stopAll()
	e.do("DELETE", base+"/"+jsonNum(rid), nil, own).status(200)
	e.do("POST", base, map[string]any{"name": "Fay", "email": "fay@example.com"}, own).status(201)
	resumed, stopResumed := e.openStream(base+"/stream", own, header{"Last-Event-ID": ev.id})
	defer stopResumed()
	d := next(t, resumed, true)
	n := next(t, resumed, true)
	if d.name != "record.deleted" || d.data["id"].(float64) != float64(rid) || d.data["deleted_at"] == nil || n.name != "record.created" || n.data["name"] != "Fay" {
		t.Fatalf("resumed: %+v %+v", d, n)
	}
	e.do("GET", base+"/stream?filter[nope]=1", nil, own).apiError(400, "VALIDATION_ERROR")
}

func jsonNum(n int) string { b, _ := json.Marshal(n); return string(b) }

func TestRecordChangeSocket(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	_, base := e.customerRecords()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(e.ts.URL, "http")+base+"/ws",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + e.ownerToken}}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	send := func(v any) {
		if err := wsjson.Write(ctx, conn, v); err != nil {
			t.Fatal(err)
		}
	}
	recv := func() map[string]any {
		var m map[string]any
		if err := wsjson.Read(ctx, conn, &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	send(map[string]any{"action": "subscribe", "filters": map[string]any{"nope": "x"}})
	if m := recv(); m["type"] != "error" {
		t.Fatalf("bad filter: %v", m)
	}
	send(map[string]any{"action": "subscribe", "filters": map[string]any{"status": "pending"}})
	if m := recv(); m["type"] != "subscribed" {
		t.Fatalf("subscribe: %v", m)
	}
	e.do("POST", base, map[string]any{"name": "Act", "email": "act@example.com", "status": "active"}, own).status(201)
	e.do("POST", base, map[string]any{"name": "Pen", "email": "pen@example.com"}, own).status(201)
	m := recv()
	if m["type"] != "record.created" || m["data"].(map[string]any)["name"] != "Pen" || m["id"] == "" {
		t.Fatalf("event: %v", m)
	}
	// Messages of every length (a frame's length takes 1, 2 or 8 bytes), and a subscription
	// again from an event seen: the changes after it again, in order, then the new ones.
	conn.SetReadLimit(1 << 20)
	penID := m["id"]
	long, huge := strings.Repeat("n", 200), strings.Repeat("h", 70000)
	e.do("POST", base, map[string]any{"name": long, "email": "long@example.com"}, own).status(201)
	e.do("POST", base, map[string]any{"name": "Huge", "email": "huge@example.com", "metadata": map[string]any{"blob": huge}}, own).status(201)
	check := func(m map[string]any, name string) {
		t.Helper()
		d, _ := m["data"].(map[string]any)
		if m["type"] != "record.created" || d["name"] != name {
			t.Fatalf("want the creation of %.20q, got %.200v", name, m)
		}
		if name == "Huge" && d["metadata"].(map[string]any)["blob"] != huge {
			t.Fatal("a 70,000-byte message came changed")
		}
	}
	check(recv(), long)
	check(recv(), "Huge")
	send(map[string]any{"action": "subscribe", "last_event_id": "2x"})
	if m := recv(); m["type"] != "error" || m["code"] != "VALIDATION_ERROR" || !strings.Contains(m["message"].(string), "last_event_id") {
		t.Fatalf("a malformed last_event_id: %v", m)
	}
	send(map[string]any{"action": "subscribe", "filters": map[string]any{"status": "pending"}, "last_event_id": penID})
	if m := recv(); m["type"] != "subscribed" || m["last_event_id"] != penID {
		t.Fatalf("subscribe from %v: %v", penID, m)
	}
	check(recv(), long)
	check(recv(), "Huge")
	e.do("POST", base, map[string]any{"name": "After", "email": "after@example.com"}, own).status(201)
	check(recv(), "After")
	send(map[string]any{"action": "ping"})
	if m := recv(); m["type"] != "pong" {
		t.Fatalf("ping: %v", m)
	}
	send(map[string]any{"action": "unsubscribe"})
	if m := recv(); m["type"] != "unsubscribed" {
		t.Fatalf("unsubscribe: %v", m)
	}
	send(map[string]any{"action": "explode"})
	if m := recv(); m["type"] != "error" {
		t.Fatalf("unknown action: %v", m)
	}
	conn.Close(websocket.StatusNormalClosure, "")
	// Without credentials the upgrade is refused.
	if _, res, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(e.ts.URL, "http")+base+"/ws", nil); err == nil || res == nil || res.StatusCode != 401 {
		t.Fatalf("anonymous socket: %v %v", err, res)
	}
}

// A change made through one replica reaches a stream served by another.
func TestRecordChangeStreamAcrossReplicas(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	id := e.uploadAndCreate(e.ownerToken, "Notes", "n.csv", "text\nfirst\n")
	e.waitDataset(e.ownerToken, id)
	other := e.replica()
	events, stop := e.openStreamAt(other, "/api/v1/datasets/"+id+"/data/stream", own)
	defer stop()
	e.do("POST", "/api/v1/datasets/"+id+"/data", map[string]any{"text": "from replica A"}, own).status(201)
	if ev := next(t, events, true); ev.name != "record.created" || ev.data["text"] != "from replica A" {
		t.Fatalf("event at replica B: %+v", ev)
	}
}

// TestStreamsEndWhenAccessEnds: an open stream re-checks its caller when the control plane
// changes: a revoked key's stream ends, and a removed member's SSE and WebSocket
// streams end with an error event instead of delivering the next change.
func TestStreamsEndWhenAccessEnds(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	_, base := e.customerRecords()
	_, analyst := e.member(e.orgID, "developer")
	userID := e.do("GET", "/api/v1/auth/me", nil, bearer(analyst)).status(200).str("id")
	key := e.do("POST", "/api/v1/api-keys", map[string]any{"name": "stream", "permissions": []string{"datasets:read"}}, bearer(analyst)).status(201)

	byKey, stopKey := e.openStream(base+"/stream", apiKey(key.str("key")))
	defer stopKey()
	sse, stopSSE := e.openStream(base+"/stream", bearer(analyst))
	defer stopSSE()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	conn, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(e.ts.URL, "http")+base+"/ws",
		&websocket.DialOptions{HTTPHeader: http.Header{"Authorization": {"Bearer " + analyst}}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.CloseNow()
	var m map[string]any
	if err := wsjson.Write(ctx, conn, map[string]any{"action": "subscribe"}); err != nil {
		t.Fatal(err)
	}
	if err := wsjson.Read(ctx, conn, &m); err != nil || m["type"] != "subscribed" {
		t.Fatalf("subscribe: %v %v", m, err)
	}
	ended := func(ch <-chan sseEvent, code string) {
		t.Helper()
		if ev := next(t, ch, true); ev.name != "error" || ev.data["code"] != code {
			t.Fatalf("want the stream to end with %s, got %+v", code, ev)
		}
		for ev := range ch { // then it closes, having delivered nothing more
			if ev.name != "heartbeat" {
				t.Fatalf("after the end: %+v", ev)
			}
		}
	}

	// The key is revoked: its stream ends; the member's own streams go on.
	e.do("DELETE", "/api/v1/api-keys/"+key.str("id"), nil, bearer(analyst)).status(204)
	e.do("POST", base, map[string]any{"name": "Kay", "email": "kay@example.com"}, own).status(201)
	ended(byKey, "AUTH_REQUIRED")
	if ev := next(t, sse, true); ev.name != "record.created" || ev.data["name"] != "Kay" {
		t.Fatalf("member's stream: %+v", ev)
	}
	if err := wsjson.Read(ctx, conn, &m); err != nil || m["type"] != "record.created" {
		t.Fatalf("member's socket: %v %v", m, err)
	}

	// The member is removed: the next change is not delivered; both streams end.
	e.do("DELETE", "/api/v1/organizations/"+e.orgID+"/users/"+userID, nil, own).status(204)
	e.do("POST", base, map[string]any{"name": "Lou", "email": "lou@example.com"}, own).status(201)
	ended(sse, "NOT_FOUND")
	if err := wsjson.Read(ctx, conn, &m); err != nil || m["type"] != "error" || m["code"] != "NOT_FOUND" {
		t.Fatalf("socket after removal: %v %v", m, err)
	}
	if err := wsjson.Read(ctx, conn, &m); websocket.CloseStatus(err) != websocket.StatusPolicyViolation {
		t.Fatalf("socket not closed as a policy violation: %v %v", m, err)
	}
}

// TestStreamWriteBound: a change-stream client that stops reading (SSE or WebSocket) has its
// stream ended once a write to it has waited the bound, instead of holding the server's
// delivery; what it had been sent is intact. The client's receive buffer is kept small so that
// the server's writes block after a few hundred KB.
func TestStreamWriteBound(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	own := bearer(e.ownerToken)
	_, base := e.customerRecords()
	dialer := &net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		err := c.Control(func(fd uintptr) { serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 4096) })
		return errors.Join(err, serr)
	}}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()

	// SSE, on a raw connection: the request, the response's headers, then no more reading.
	sse, err := dialer.DialContext(ctx, "tcp", strings.TrimPrefix(e.ts.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer sse.Close()
	fmt.Fprintf(sse, "GET %s/stream HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n\r\n", base, e.ownerToken)
	head := make([]byte, 0, 1024)
	for !bytes.Contains(head, []byte("\r\n\r\n")) {
		b := make([]byte, 1)
		if _, err := sse.Read(b); err != nil {
			t.Fatalf("SSE headers: %v (%q)", err, head)
		}
		head = append(head, b[0])
	}
	if !bytes.HasPrefix(head, []byte("HTTP/1.1 200")) {
		t.Fatalf("SSE: %q", head)
	}

	// WebSocket: subscribed, then no more reading.
	ws, _, err := websocket.Dial(ctx, "ws"+strings.TrimPrefix(e.ts.URL, "http")+base+"/ws", &websocket.DialOptions{
		HTTPHeader: http.Header{"Authorization": {"Bearer " + e.ownerToken}},
		HTTPClient: &http.Client{Transport: &http.Transport{DialContext: dialer.DialContext}},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer ws.CloseNow()
	ws.SetReadLimit(1 << 20)
	if err := wsjson.Write(ctx, ws, map[string]any{"action": "subscribe"}); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := wsjson.Read(ctx, ws, &m); err != nil || m["type"] != "subscribed" {
		t.Fatalf("subscribe: %v %v", m, err)
	}

	// 8 MB of changes (within the write rate limit): far more than the sockets' buffers hold.
	blob := strings.Repeat("b", 96<<10)
	const n = 90
	for i := range n {
		e.do("POST", base, map[string]any{"name": fmt.Sprint("Big ", i), "email": fmt.Sprintf("big%d@example.com", i), "metadata": map[string]any{"blob": blob}}, own).status(201)
	}
	time.Sleep(4 * time.Second) // the bound (2 s) and a delivery round past it

	// Reading now gets what was sent, whole, then the end: within seconds, not at the next
	// heartbeat (15 s) or never.
	_ = sse.SetReadDeadline(time.Now().Add(10 * time.Second))
	rest, err := io.ReadAll(sse)
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		t.Fatalf("the SSE stream of a client that stopped reading was not ended (%d bytes read)", len(rest))
	}
	events := bytes.Count(rest, []byte("event: record.created\n"))
	if events == 0 || events == n {
		t.Fatalf("SSE: %d of %d events before the end; want some, not all", events, n)
	}
	rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
	defer rcancel()
	got := 0
	for {
		var m map[string]any
		if err := wsjson.Read(rctx, ws, &m); err != nil {
			if rctx.Err() != nil {
				t.Fatalf("the WebSocket of a client that stopped reading was not ended (%d messages read)", got)
			}
			break
		}
		if d, _ := m["data"].(map[string]any); m["type"] != "record.created" || d["name"] != fmt.Sprint("Big ", got) {
			t.Fatalf("message %d: %.200v", got, m)
		}
		got++
	}
	if got == 0 || got == n {
		t.Fatalf("WebSocket: %d of %d events before the end; want some, not all", got, n)
	}
	// The server still serves streams.
	events2, stop := e.openStream(base+"/stream", own)
	defer stop()
	e.do("POST", base, map[string]any{"name": "After", "email": "after@example.com"}, own).status(201)
	if ev := next(t, events2, true); ev.name != "record.created" || ev.data["name"] != "After" {
		t.Fatalf("after: %+v", ev)
	}
}
