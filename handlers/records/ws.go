package records

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"dataplatform/handlers/apierr"
	"dataplatform/store/changes"

	"github.com/coder/websocket"
	"github.com/labstack/echo/v4"
)

// wsMessage is what a WebSocket client sends.
type wsMessage struct {
	Action      string            `json:"action"` // subscribe, unsubscribe, ping
	Filters     map[string]string `json:"filters"`
	LastEventID *eventID          `json:"last_event_id"`
}

// eventID is a last_event_id as a client sends it: a number, or an event's "id" as the
// server sent it (its digits, a string).
type eventID int64

var errEventID = errors.New("last_event_id is an event's id: a non-negative integer, or the digits of an event's \"id\"")

func (e *eventID) UnmarshalJSON(b []byte) error {
	if len(b) > 1 && b[0] == '"' && b[len(b)-1] == '"' {
		b = b[1 : len(b)-1]
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	if err != nil || n < 0 {
		return errEventID
	}
	*e = eventID(n)
	return nil
}

// Socket is GET /api/v1/datasets/{id}/data/ws: the change stream over a WebSocket. The
// client subscribes ({"action":"subscribe","filters":{...},"last_event_id":N}), unsubscribes,
// or pings; the server answers subscribed/unsubscribed/pong, sends events as
// {"type":"record.created","id":"N","data":{...}}, and errors as {"type":"error",...}.
func (h *Records) Socket(c echo.Context) error {
	rc, err := h.resolve(c, "datasets:read")
	if err != nil {
		return err
	}
	if !rc.desc.Table.System() {
		return rc.desc.NotServed("/data/ws", http.MethodGet)
	}
	if err := handshake(c.Request(), h.Config.CORSOrigins); err != nil {
		return err
	}
	hj := &corkingHijacker{ResponseWriter: c.Response()}
	conn, err := websocket.Accept(hj, c.Request(), &websocket.AcceptOptions{OriginPatterns: h.Config.CORSOrigins})
	if err != nil {
		return nil // Accept has answered the client
	}
	defer func() { _ = conn.CloseNow() }()
	openStreams.WithLabelValues("websocket").Inc()
	defer openStreams.WithLabelValues("websocket").Dec()
	ctx, cancel := context.WithCancel(c.Request().Context())
	defer cancel()
	cmds := make(chan wsMessage)
	go readMessages(ctx, cancel, conn, cmds)
	s := &wsSession{h: h, rc: rc, conn: conn, out: hj.conn, ctx: ctx, fields: map[string]bool{}, access: h.streamAccess(ctx, rc)}
	for _, f := range rc.desc.Table.Fields() {
		s.fields[f] = true
	}
	s.sub = h.Changes.Subscribe(rc.d.ID)
	defer s.sub.Close()
	defer s.end() // before the subscription's close: a delivery under way ends first
	heartbeat := time.NewTicker(h.heartbeat())
	defer heartbeat.Stop()
	poll := time.NewTicker(streamPoll)
	defer poll.Stop()
	for {
		if !s.turn() {
			return nil
		}
		s.sub.Handled()
		var polled <-chan time.Time // attached, the feed looks at the change log and the access
		if !s.sub.Attached() {
			polled = poll.C
		}
		select {
		case <-ctx.Done():
			s.end() // no event after the close frame
			_ = conn.Close(websocket.StatusNormalClosure, "")
			return nil
		case m := <-cmds:
			if !s.command(m) {
				return nil
			}
		case <-s.sub.C:
			s.sub.Woken()
		case <-polled:
		case <-heartbeat.C:
			pctx, done := context.WithTimeout(ctx, 10*time.Second)
			err := conn.Ping(pctx)
			done()
			if err != nil {
				return nil
			}
		}
	}
}

// readMessages reads the client's messages into cmds until it goes away, then cancels.
func readMessages(ctx context.Context, cancel context.CancelFunc, conn *websocket.Conn, cmds chan<- wsMessage) {
	defer cancel()
	for {
		_, b, err := conn.Read(ctx)
		if err != nil {
			return
		}
		var m wsMessage
		if err := json.Unmarshal(b, &m); errors.Is(err, errEventID) {
			m = wsMessage{Action: "invalid_event_id"}
		} else if err != nil {
			m = wsMessage{Action: "invalid"}
		}
		select {
		case cmds <- m:
		case <-ctx.Done():
			return
		}
	}
}

// wsSession is the state of one WebSocket client's subscription. While attached to its
// dataset's feed, the feed's goroutines deliver changes to it (Deliver); otherwise its own
// goroutine reads and sends them (turn). mu orders the two, and the replies to commands.
type wsSession struct {
	h      *Records
	rc     *recordCtx
	conn   *websocket.Conn
	out    *corkConn // conn's connection to the client
	ctx    context.Context
	fields map[string]bool // the table's fields, which filters may name
	access *streamAccess
	sub    *changes.Subscription

	mu         sync.Mutex
	subscribed bool
	filters    map[string]string
	last       int64 // the last change event seen
	done       bool  // the handler returned, or a write failed: nothing more is written
}

// write sends v as a JSON text message (mu held).
func (s *wsSession) write(v any) error {
	b, _ := json.Marshal(v)
	return s.conn.Write(s.ctx, websocket.MessageText, b)
}

// command acts on a client's message and answers it; false when the stream ends.
func (s *wsSession) command(m wsMessage) bool {
	if m.Action == "subscribe" || m.Action == "unsubscribe" {
		s.sub.Detach() // what is sent, and from where, changes: turn catches up and attaches again
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	reply, ok := s.answer(s.ctx, m)
	return ok && s.write(reply) == nil
}

// turn is a turn of the session's own loop: it checks access (ending the stream with an
// error message when it is gone) and, unless the feed delivers, sends the changes after the
// last and hands delivery to the feed once caught up; false when the stream ends.
func (s *wsSession) turn() bool {
	s.mu.Lock()
	if err := s.access.check(s.ctx); err != nil {
		s.done = true // no event after the error and the close frame
		m := ended(err)
		if m != nil {
			_ = s.write(m)
		}
		s.mu.Unlock()
		if m != nil { // the closing handshake waits for the client: not with mu held
			_ = s.conn.Close(websocket.StatusPolicyViolation, "access to the dataset ended")
		}
		return false
	}
	defer s.mu.Unlock()
	return !s.subscribed || s.h.catchUp(s.ctx, s.sub, s.rc.d.ID, s, func() int64 { return s.last }, s.send)
}

// Deliver is the feed's delivery of the changes after the session's last (changes.Sink): it
// declines when the stream ended or its access needs re-checking, which the session's
// goroutine then does.
func (s *wsSession) Deliver(batch []changes.Change) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done || !s.access.settled() {
		return false
	}
	if !s.subscribed || !s.sub.Attached() { // a delivery begun before a command detached it
		return true
	}
	return s.send(batch)
}

// send sends the changes of batch after the last one sent that pass the filters, as one
// message each and one write to the connection (mu held); false when the stream ends.
func (s *wsSession) send(batch []changes.Change) bool {
	if s.done {
		return false
	}
	s.out.cork()
	for _, ch := range batch {
		if ch.ID <= s.last {
			continue
		}
		s.last = ch.ID
		if ev := rendered(s.rc.desc.Table, ch); matches(ev.record, s.filters) {
			_, _ = s.out.Write(ev.ws) // corked: gathered
		}
	}
	s.done = s.out.uncork() != nil
	return !s.done
}

// wsFrame is msg as a WebSocket text frame from a server (final, unmasked, uncompressed:
// what the WebSocket library writes for it), made once per change, not per subscriber. The
// library writes every frame of its own (replies, pings, close) with one Write to the
// connection, or under the session's mu, so frames written beside it never interleave.
func wsFrame(msg []byte) []byte {
	n := len(msg)
	h := make([]byte, 0, 10+n)
	switch {
	case n < 126:
		h = append(h, 0x81, byte(n))
	case n <= 0xffff:
		h = append(h, 0x81, 126, byte(n>>8), byte(n))
	default:
		h = binary.BigEndian.AppendUint64(append(h, 0x81, 127), uint64(n))
	}
	return append(h, msg...)
}

// end stops every write, waiting for one under way.
func (s *wsSession) end() {
	s.mu.Lock()
	s.done = true
	s.mu.Unlock()
}

// corkingHijacker hands websocket.Accept the client connection as a corkConn.
type corkingHijacker struct {
	http.ResponseWriter
	conn *corkConn
}

func (w *corkingHijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	c, brw, err := http.NewResponseController(w.ResponseWriter).Hijack()
	if err != nil {
		return nil, nil, err
	}
	w.conn = &corkConn{Conn: c}
	return w.conn, bufio.NewReadWriter(brw.Reader, bufio.NewWriter(w.conn)), nil
}

// corkConn is a WebSocket's connection to its client. The WebSocket library writes each
// message out at once; corked, the connection gathers them, and uncork writes what a
// delivery brought with one system call (a write per message per subscriber cost most of a
// delivery). A write to the client waits at most streamWriteWait.
type corkConn struct {
	net.Conn
	mu       sync.Mutex
	b        *bytes.Buffer // gathered while corked, from streamBufs
	deadline writeDeadline
}

func (c *corkConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.b != nil {
		return c.b.Write(p)
	}
	return c.write(p)
}

// write writes p to the client (mu held).
func (c *corkConn) write(p []byte) (int, error) {
	c.deadline.move(c.Conn.SetWriteDeadline)
	return c.Conn.Write(p)
}

func (c *corkConn) cork() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.b == nil {
		c.b = streamBufs.Get().(*bytes.Buffer)
	}
}

func (c *corkConn) uncork() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	b := c.b
	if b == nil {
		return nil
	}
	c.b = nil
	var err error
	if b.Len() > 0 {
		_, err = c.write(b.Bytes())
	}
	putStreamBuf(b)
	return err
}

// answer acts on a client's message and returns the reply; false when the stream ends.
func (s *wsSession) answer(ctx context.Context, m wsMessage) (any, bool) {
	switch m.Action {
	case "subscribe":
		bad := ""
		for k := range m.Filters {
			if !s.fields[k] {
				bad = k
			}
		}
		if bad != "" {
			return map[string]any{"type": "error", "code": apierr.CodeValidationError, "message": fmt.Sprintf("no field %q to filter on", bad)}, true
		}
		if m.LastEventID != nil {
			s.last = int64(*m.LastEventID)
		} else {
			last, err := changes.Latest(ctx, s.h.Store.DB, s.rc.d.ID)
			if err != nil {
				return nil, false
			}
			s.last = last
		}
		s.subscribed, s.filters = true, m.Filters
		return map[string]any{"type": "subscribed", "dataset_id": s.rc.d.ID, "last_event_id": strconv.FormatInt(s.last, 10), "filters": m.Filters}, true
	case "unsubscribe":
		s.subscribed = false
		return map[string]any{"type": "unsubscribed"}, true
	case "ping":
		return map[string]any{"type": "pong"}, true
	case "invalid_event_id":
		return map[string]any{"type": "error", "code": apierr.CodeValidationError, "message": errEventID.Error()}, true
	default:
		return map[string]any{"type": "error", "code": apierr.CodeInvalidMessage, "message": "send {\"action\": \"subscribe\" | \"unsubscribe\" | \"ping\"}"}, true
	}
}

// handshake checks what websocket.Accept checks, so that a request that is no WebSocket
// handshake is answered in the API's JSON error shape rather than Accept's plain text: 426
// UPGRADE_REQUIRED (with Upgrade: websocket) without the upgrade headers, 400 for a bad
// version or key, 403 for an Origin that is neither this host nor one of origins
// (DP_CORS_ORIGINS; Accept matches them the same way).
func handshake(r *http.Request, origins []string) error {
	if !r.ProtoAtLeast(1, 1) || !hasToken(r.Header, "Connection", "upgrade") || !hasToken(r.Header, "Upgrade", "websocket") {
		e := apierr.New(http.StatusUpgradeRequired, apierr.CodeUpgradeRequired,
			"this is a WebSocket endpoint: open it with a WebSocket client (an HTTP/1.1 GET with Connection: Upgrade and Upgrade: websocket); /data/stream is the same change stream as Server-Sent Events")
		e.Headers = map[string]string{"Upgrade": "websocket", "Connection": "Upgrade"}
		return e
	}
	if v := r.Header.Get("Sec-WebSocket-Version"); v != "13" {
		e := apierr.Field("header.Sec-WebSocket-Version", "enum", "the WebSocket protocol version must be 13")
		e.Headers = map[string]string{"Sec-WebSocket-Version": "13"}
		return e
	}
	keys := r.Header.Values("Sec-WebSocket-Key")
	if len(keys) == 0 {
		return apierr.Field("header.Sec-WebSocket-Key", "required", "a WebSocket handshake needs Sec-WebSocket-Key")
	}
	if b, err := base64.StdEncoding.DecodeString(strings.TrimSpace(keys[0])); len(keys) > 1 || err != nil || len(b) != 16 {
		return apierr.Field("header.Sec-WebSocket-Key", "format", "Sec-WebSocket-Key must be one base64 encoded 16-byte value")
	}
	origin := r.Header.Get("Origin")
	if origin == "" {
		return nil
	}
	u, err := url.Parse(origin)
	if err == nil && strings.EqualFold(r.Host, u.Host) {
		return nil
	}
	for _, p := range origins {
		if err != nil {
			break
		}
		target := u.Host
		if strings.Contains(p, "://") {
			target = u.Scheme + "://" + u.Host
		}
		if ok, _ := path.Match(strings.ToLower(p), strings.ToLower(target)); ok {
			return nil
		}
	}
	return apierr.Forbidden("a WebSocket may be opened only from this service's origin or one of DP_CORS_ORIGINS, not from " + origin)
}

// hasToken reports whether a comma-separated header holds token (case-insensitively).
func hasToken(h http.Header, name, token string) bool {
	for _, v := range h.Values(name) {
		for _, t := range strings.Split(v, ",") {
			if strings.EqualFold(strings.TrimSpace(t), token) {
				return true
			}
		}
	}
	return false
}
