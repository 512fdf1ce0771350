package records

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	"dataplatform/handlers/apierr"
	"dataplatform/store/changes"
	"dataplatform/store/ingest"
	recsql "dataplatform/store/records"

	"github.com/labstack/echo/v4"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// openStreams counts the change streams open on this server: one that its client left ends
// at once, which this shows.
var openStreams = promauto.NewGaugeVec(prometheus.GaugeOpts{
	Name: "dataplatform_change_streams", Help: "Change streams open on this server, by transport (sse, websocket).",
}, []string{"transport"})

// streamPoll is how often a stream looks at the change log without a notification (a
// missed notification costs at most this long).
const streamPoll = 2 * time.Second

// eventOf is a change as a stream event of table t: its name and payload, and the record
// after it, for filters.
func eventOf(t *recsql.Table, ch changes.Change) (name string, payload any, record map[string]any) {
	if ch.Record != nil {
		record = asRead(t, *ch.Record)
	}
	switch ch.Op {
	case "created":
		return "record.created", record, record
	case "updated":
		var c map[string]any
		if ch.Changes != nil {
			c = asRead(t, *ch.Changes)
		}
		return "record.updated", map[string]any{"id": t.KeyValue(ch.RecordID), "changes": c, "updated_at": record["updated_at"]}, record
	case "imported": // an upsert or replace of a file: one event with its counts, not one per record
		payload := map[string]any{}
		if ch.Changes != nil {
			_ = json.Unmarshal(*ch.Changes, &payload)
		}
		payload["imported_at"] = ch.ChangedAt.UTC().Format(time.RFC3339Nano)
		return "dataset.imported", payload, nil
	}
	return "record.deleted", map[string]any{"id": t.KeyValue(ch.RecordID), "deleted_at": ch.ChangedAt.UTC().Format(time.RFC3339Nano)}, nil
}

// event is a change rendered for streams: its name, its payload as JSON, the record after it
// (for filters; read only, as it is shared), and the whole Server-Sent Event.
type event struct {
	name   string
	data   json.RawMessage
	record map[string]any
	sse    []byte
}

// rendered is the change as an event of table t, made once for all the streams of this
// process that are given the change by the hub (its Memo), not once per subscriber.
func rendered(t *recsql.Table, ch changes.Change) *event {
	return ch.Memo.Get(t, func() any {
		name, payload, record := eventOf(t, ch)
		data, _ := json.Marshal(payload)
		sse := fmt.Appendf(nil, "id: %d\nevent: %s\ndata: %s\n\n", ch.ID, name, data)
		return &event{name: name, data: data, record: record, sse: sse}
	}).(*event)
}

// asRead is a record (or some of its fields) from the change log as a read gives its values:
// numbers as stored (4412.80, large integers whole) and timestamps in UTC with a Z, whatever
// time zone the writing session had.
func asRead(t *recsql.Table, raw json.RawMessage) map[string]any {
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if dec.Decode(&m) != nil {
		return nil
	}
	for k, v := range m {
		if s, ok := v.(string); ok && t.Column(k).Type == ingest.Timestamptz {
			if at, err := time.Parse(time.RFC3339Nano, s); err == nil {
				m[k] = at.UTC().Format(time.RFC3339Nano)
			}
		}
	}
	return m
}

// matches applies a stream's equality filters to a record; deletions (no record) always pass.
func matches(record map[string]any, filters map[string]string) bool {
	if record == nil {
		return true
	}
	for k, v := range filters {
		if n, ok := record[k].(json.Number); ok { // 10.50 is 10.5
			a, aerr := strconv.ParseFloat(string(n), 64)
			b, berr := strconv.ParseFloat(v, 64)
			if aerr == nil && berr == nil && a == b {
				continue
			}
		}
		if fmt.Sprint(record[k]) != v {
			return false
		}
	}
	return true
}

// streamFilters reads filter[field]=value parameters (equality) of known fields.
func streamFilters(rc *recordCtx, q map[string][]string) (map[string]string, error) {
	out := map[string]string{}
	fields := map[string]bool{}
	for _, f := range rc.desc.Table.Fields() {
		fields[f] = true
	}
	for k, vs := range q {
		if !strings.HasPrefix(k, "filter[") {
			continue
		}
		f := strings.TrimSuffix(strings.TrimPrefix(k, "filter["), "]")
		if !fields[f] || strings.ContainsAny(f, "[]") {
			return nil, apierr.Field("query."+k, "unknown_field", "streams filter on fields by equality: filter[field]=value")
		}
		out[f] = vs[0]
	}
	return out, nil
}

// Stream is GET /api/v1/datasets/{id}/data/stream: Server-Sent Events of the dataset's record
// changes, from the change after Last-Event-ID (header, or last_event_id) or from now on,
// with a comment line as heartbeat.
func (h *Records) Stream(c echo.Context) error {
	rc, err := h.resolve(c, "datasets:read")
	if err != nil {
		return err
	}
	if !rc.desc.Table.System() {
		return rc.desc.NotServed("/data/stream", http.MethodGet)
	}
	filters, err := streamFilters(rc, c.QueryParams())
	if err != nil {
		return err
	}
	ctx := c.Request().Context()
	last := int64(-1)
	for _, s := range []string{c.Request().Header.Get("Last-Event-ID"), c.QueryParam("last_event_id")} {
		if s != "" {
			if last, err = strconv.ParseInt(s, 10, 64); err != nil || last < 0 {
				return apierr.Field("header.Last-Event-ID", "type", "an event id is a non-negative integer")
			}
		}
	}
	if last < 0 {
		if last, err = changes.Latest(ctx, h.Store.DB, rc.d.ID); err != nil {
			return err
		}
	}
	access := h.streamAccess(ctx, rc)
	sub := h.Changes.Subscribe(rc.d.ID)
	defer sub.Close()
	openStreams.WithLabelValues("sse").Inc()
	defer openStreams.WithLabelValues("sse").Dec()
	res := c.Response()
	_ = http.NewResponseController(res.Writer).SetWriteDeadline(time.Time{}) // a stream has no end
	res.Header().Set("Content-Type", "text/event-stream")
	res.Header().Set("Cache-Control", "no-cache")
	res.Header().Set("X-Accel-Buffering", "no")
	res.WriteHeader(http.StatusOK)
	w := bufio.NewWriter(res)
	send := func() error {
		if err := w.Flush(); err != nil {
			return err
		}
		res.Flush()
		return nil
	}
	_, _ = fmt.Fprintf(w, "retry: 2000\n: stream of %s from event %d\n\n", rc.d.ID, last)
	if err := send(); err != nil {
		return nil
	}
	heartbeat := time.NewTicker(h.heartbeat())
	defer heartbeat.Stop()
	poll := time.NewTicker(streamPoll)
	defer poll.Stop()
	for {
		if err := access.check(ctx); err != nil {
			if m := ended(err); m != nil {
				data, _ := json.Marshal(m)
				_, _ = fmt.Fprintf(w, "event: error\ndata: %s\n\n", data)
				_ = send()
			}
			return nil
		}
		batch, err := h.Changes.Since(ctx, h.Store.DB, rc.d.ID, last, 500)
		if err != nil {
			return nil // the client went away, or the database did: the client reconnects
		}
		for _, ch := range batch {
			last = ch.ID
			ev := rendered(rc.desc.Table, ch)
			if len(filters) > 0 && !matches(ev.record, filters) {
				continue
			}
			_, _ = w.Write(ev.sse)
		}
		if len(batch) > 0 {
			if err := send(); err != nil {
				return nil
			}
			if len(batch) == 500 {
				continue
			}
		}
		sub.Handled()
		select {
		case <-ctx.Done():
			return nil
		case <-sub.C:
			sub.Woken()
		case <-poll.C:
		case <-heartbeat.C:
			_, _ = fmt.Fprintf(w, ": heartbeat %s\n\n", time.Now().UTC().Format(time.RFC3339))
			if err := send(); err != nil {
				return nil
			}
		}
	}
}

func (h *Records) heartbeat() time.Duration {
	if h.Config.StreamHeartbeat > 0 {
		return h.Config.StreamHeartbeat
	}
	return 15 * time.Second
}
