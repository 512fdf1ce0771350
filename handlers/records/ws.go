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
	defer conn.CloseNow()
	openStreams.WithLabelValues("websocket").Inc()
	defer openStreams.WithLabelValues("websocket").Dec()
	ctx, cancel := context.WithCancel(c.Request().Context())
	defer cancel()
	cmds := make(chan wsMessage)
	go func() { // reads the client's messages until it goes away
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
	}()
	write := func(v any) error {
		b, _ := json.Marshal(v)
		wctx, done := context.WithTimeout(ctx, 10*time.Second)
		defer done()
		return conn.Write(wctx, websocket.MessageText, b)
	}
	fields := map[string]bool{}
	for _, f := range rc.desc.Table.Fields() {
		fields[f] = true
	}
	access := h.streamAccess(ctx, rc)
	wake, unsubscribe := h.Changes.Subscribe(rc.d.ID)
	defer unsubscribe()
	subscribed := false
	var filters map[string]string
	last := int64(0)
	heartbeat := time.NewTicker(h.heartbeat())
	defer heartbeat.Stop()
	poll := time.NewTicker(streamPoll)
	defer poll.Stop()
	for {
		if err := access.check(ctx); err != nil {
			if m := ended(err); m != nil {
				_ = write(m)
				conn.Close(websocket.StatusPolicyViolation, "access to the dataset ended")
			}
			return nil
		}
		if subscribed {
			for {
				batch, err := changes.Since(ctx, h.Store.DB, rc.d.ID, last, 500)
				if err != nil {
					return nil
				}
				for _, ch := range batch {
					last = ch.ID
					name, payload, record := eventOf(rc.desc.Table, ch)
					if matches(record, filters) {
						if err := write(map[string]any{"type": name, "id": strconv.FormatInt(ch.ID, 10), "data": payload}); err != nil {
							return nil
						}
					}
				}
				if len(batch) < 500 {
					break
				}
			}
		}
		select {
		case <-ctx.Done():
			conn.Close(websocket.StatusNormalClosure, "")
			return nil
		case m := <-cmds:
			var reply any
			switch m.Action {
			case "subscribe":
				bad := ""
				for k := range m.Filters {
					if !fields[k] {
						bad = k
					}
				}
				if bad != "" {
					reply = map[string]any{"type": "error", "code": apierr.CodeValidationError, "message": fmt.Sprintf("no field %q to filter on", bad)}
					break
				}
				if m.LastEventID != nil {
					last = *m.LastEventID
				} else if last, err = changes.Latest(ctx, h.Store.DB, rc.d.ID); err != nil {
					return nil
				}
				subscribed, filters = true, m.Filters
				reply = map[string]any{"type": "subscribed", "dataset_id": rc.d.ID, "last_event_id": strconv.FormatInt(last, 10), "filters": m.Filters}
			case "unsubscribe":
				subscribed = false
				reply = map[string]any{"type": "unsubscribed"}
			case "ping":
				reply = map[string]any{"type": "pong"}
			default:
				reply = map[string]any{"type": "error", "code": apierr.CodeInvalidMessage, "message": "send {\"action\": \"subscribe\" | \"unsubscribe\" | \"ping\"}"}
			}
			if err := write(reply); err != nil {
				return nil
			}
		case <-wake:
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
