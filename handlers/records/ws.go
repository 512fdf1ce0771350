package records

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
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
