package records

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"path"
	"strconv"
	"strings"
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
	LastEventID *int64            `json:"last_event_id"`
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
	conn, err := websocket.Accept(c.Response(), c.Request(), &websocket.AcceptOptions{OriginPatterns: h.Config.CORSOrigins})
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
	s := &wsSession{h: h, rc: rc, conn: conn, fields: map[string]bool{}}
	for _, f := range rc.desc.Table.Fields() {
		s.fields[f] = true
	}
	access := h.streamAccess(ctx, rc)
	sub := h.Changes.Subscribe(rc.d.ID)
	defer sub.Close()
	heartbeat := time.NewTicker(h.heartbeat())
	defer heartbeat.Stop()
	poll := time.NewTicker(streamPoll)
	defer poll.Stop()
	for {
		if err := access.check(ctx); err != nil {
			if m := ended(err); m != nil {
				_ = s.write(ctx, m)
				_ = conn.Close(websocket.StatusPolicyViolation, "access to the dataset ended")
			}
			return nil
		}
		if s.subscribed && !s.sendChanges(ctx) {
			return nil
		}
		sub.Handled()
		select {
		case <-ctx.Done():
			_ = conn.Close(websocket.StatusNormalClosure, "")
			return nil
		case m := <-cmds:
			reply, ok := s.answer(ctx, m)
			if !ok {
				return nil
			}
			if err := s.write(ctx, reply); err != nil {
				return nil
			}
		case <-sub.C:
			sub.Woken()
		case <-poll.C:
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
		if json.Unmarshal(b, &m) != nil {
			m = wsMessage{Action: "invalid"}
		}
		select {
		case cmds <- m:
		case <-ctx.Done():
			return
		}
	}
}

// wsSession is the state of one WebSocket client's subscription.
type wsSession struct {
	h          *Records
	rc         *recordCtx
	conn       *websocket.Conn
	fields     map[string]bool // the table's fields, which filters may name
	subscribed bool
	filters    map[string]string
	last       int64 // the last change event seen
}

// write sends v as a JSON text message.
func (s *wsSession) write(ctx context.Context, v any) error {
	b, _ := json.Marshal(v)
	return s.send(ctx, b)
}

// send sends b, JSON, as a text message.
func (s *wsSession) send(ctx context.Context, b []byte) error {
	wctx, done := context.WithTimeout(ctx, 10*time.Second)
	defer done()
	return s.conn.Write(wctx, websocket.MessageText, b)
}

// sendChanges sends the changes since the last one that match the filters; false when the
// stream ends.
func (s *wsSession) sendChanges(ctx context.Context) bool {
	for {
		batch, err := s.h.Changes.Since(ctx, s.h.Store.DB, s.rc.d.ID, s.last, 500)
		if err != nil {
			return false
		}
		for _, ch := range batch {
			s.last = ch.ID
			ev := rendered(s.rc.desc.Table, ch)
			if matches(ev.record, s.filters) {
				if err := s.send(ctx, ev.ws); err != nil {
					return false
				}
			}
		}
		if len(batch) < 500 {
			return true
		}
	}
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
			s.last = *m.LastEventID
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
