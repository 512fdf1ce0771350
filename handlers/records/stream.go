package records

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
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
// (for filters; read only, as it is shared), the whole Server-Sent Event and the WebSocket
// message as a frame.
type event struct {
	name   string
	data   json.RawMessage
	record map[string]any
	sse    []byte
	ws     []byte // the WebSocket message's frame (wsFrame)
}

// rendered is the change as an event of table t, made once for all the streams of this
// process that are given the change by the hub (its Memo), not once per subscriber.
func rendered(t *recsql.Table, ch changes.Change) *event {
	return ch.Memo.Get(t, func() any {
		name, payload, record := eventOf(t, ch)
		data, _ := json.Marshal(payload)
		sse := fmt.Appendf(nil, "id: %d\nevent: %s\ndata: %s\n\n", ch.ID, name, data)
		ws, _ := json.Marshal(map[string]any{"type": name, "id": strconv.FormatInt(ch.ID, 10), "data": json.RawMessage(data)})
		return &event{name: name, data: data, record: record, sse: sse, ws: wsFrame(ws)}
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
	sub := h.Changes.Subscribe(rc.d.ID)
	defer sub.Close()
	openStreams.WithLabelValues("sse").Inc()
	defer openStreams.WithLabelValues("sse").Dec()
	res := c.Response()
	res.Header().Set("Content-Type", "text/event-stream")
	res.Header().Set("Cache-Control", "no-cache")
	res.Header().Set("X-Accel-Buffering", "no")
	// Not chunked: the stream ends with its connection, so the body needs no framing, and
	// what a delivery brings goes out in one write to the socket (chunked, a batch larger than
	// the server's 4 KiB buffer took several, each a system call).
	res.Header().Set("Transfer-Encoding", "identity")
	res.WriteHeader(http.StatusOK)
	s := &sseStream{res: res, rc: http.NewResponseController(res.Writer), ds: rc.d.ID, t: rc.desc.Table, filters: filters,
		access: h.streamAccess(ctx, rc), last: last}
	s.mu.Lock()
	_, _ = fmt.Fprintf(s, "retry: 2000\n: stream of %s from event %d\n\n", rc.d.ID, last)
	err = s.flush()
	s.mu.Unlock()
	if err != nil {
		return nil
	}
	defer s.end() // before the subscription's close: a delivery under way ends first
	heartbeat := time.NewTicker(h.heartbeat())
	defer heartbeat.Stop()
	poll := time.NewTicker(streamPoll)
	defer poll.Stop()
	for {
		if !s.turn(ctx, h, sub) {
			return nil
		}
		sub.Handled()
		// Attached, the feed looks at the change log for the stream, and at its access (Deliver
		// of nothing new): thousands of idle streams waking every poll cost as much as their
		// deliveries.
		var polled <-chan time.Time
		if !sub.Attached() {
			polled = poll.C
		}
		select {
		case <-ctx.Done():
			return nil
		case <-sub.C:
			sub.Woken()
		case <-polled:
		case <-heartbeat.C:
			s.mu.Lock()
			_, _ = fmt.Fprintf(s, ": heartbeat %s\n\n", time.Now().UTC().Format(time.RFC3339))
			err := s.flush()
			s.mu.Unlock()
			if err != nil {
				return nil
			}
		}
	}
}

// sseStream is one Server-Sent Events stream: where it is in the change log, what it may
// send, and the bytes it is gathering. While attached to its dataset's feed, the feed's
// goroutines deliver changes to it (Deliver); otherwise its own goroutine reads and writes
// them (turn). mu orders the two.
type sseStream struct {
	mu       sync.Mutex
	res      *echo.Response
	rc       *http.ResponseController
	ds       string
	t        *recsql.Table
	filters  map[string]string
	access   *streamAccess
	last     int64         // the last change event gathered
	b        *bytes.Buffer // what is gathered, from streamBufs: a buffer per stream at work, not per open stream
	done     bool          // the handler returned, or a write failed: nothing more is written
	deadline writeDeadline
}

// errStreamEnded refuses a write to a stream that has ended.
var errStreamEnded = errors.New("the stream has ended")

// streamBufs hold what a stream gathers for one write to its client.
var streamBufs = sync.Pool{New: func() any { return new(bytes.Buffer) }}

// putStreamBuf gives b back to streamBufs, unless it grew large.
func putStreamBuf(b *bytes.Buffer) {
	b.Reset()
	if b.Cap() <= 1<<20 {
		streamBufs.Put(b)
	}
}

// streamWriteWait bounds one write to a stream's client (it may have up to half of it
// again). A write waits only when the client has left megabytes unread; such a stream ends,
// and its client resumes from the last event it had (Last-Event-ID, last_event_id).
const streamWriteWait = 2 * time.Second

// Write gathers p (mu held).
func (s *sseStream) Write(p []byte) (int, error) {
	if s.b == nil {
		s.b = streamBufs.Get().(*bytes.Buffer)
	}
	return s.b.Write(p)
}

// add gathers the changes of batch that pass the stream's filters (mu held).
func (s *sseStream) add(batch []changes.Change) {
	for _, ch := range batch {
		s.last = ch.ID
		ev := rendered(s.t, ch)
		if len(s.filters) > 0 && !matches(ev.record, s.filters) {
			continue
		}
		_, _ = s.Write(ev.sse)
	}
}

// flush writes what was gathered to the client at once (mu held).
func (s *sseStream) flush() error {
	if s.b == nil {
		return nil
	}
	if s.done {
		return errStreamEnded
	}
	s.deadline.move(s.rc.SetWriteDeadline)
	_, err := s.res.Write(s.b.Bytes())
	if err == nil {
		err = s.rc.Flush()
	}
	putStreamBuf(s.b)
	s.b = nil
	if err != nil {
		s.done = true
	}
	return err
}

// end stops every write, waiting for one under way.
func (s *sseStream) end() {
	s.mu.Lock()
	s.done = true
	s.mu.Unlock()
}

// Deliver is the feed's delivery of the changes after the stream's last (changes.Sink): it
// declines when the stream ended or its access needs re-checking (the database asked, or an
// error event sent), which the stream's goroutine then does.
func (s *sseStream) Deliver(batch []changes.Change) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.done || !s.access.settled() {
		return false
	}
	s.add(batch)
	return s.flush() == nil
}

// turn is a turn of the stream's own loop: it checks access (ending the stream with an error
// event when it is gone) and, unless the feed delivers, writes the changes after the last
// and hands delivery to the feed once caught up; false when the stream ends.
func (s *sseStream) turn(ctx context.Context, h *Records, sub *changes.Subscription) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.access.check(ctx); err != nil {
		if m := ended(err); m != nil {
			data, _ := json.Marshal(m)
			_, _ = fmt.Fprintf(s, "event: error\ndata: %s\n\n", data)
			_ = s.flush()
		}
		return false
	}
	return h.catchUp(ctx, sub, s.ds, s, func() int64 { return s.last }, func(batch []changes.Change) bool {
		s.add(batch)
		return s.flush() == nil
	})
}

// catchUp is a stream's own reading while the feed does not deliver to it: it sends the
// changes of dataset ds after last() until the change log has no more, then hands delivery to the feed
// (sink); false when a read or a send failed (the client went away, or the database did:
// the client reconnects). The stream's lock is held.
func (h *Records) catchUp(ctx context.Context, sub *changes.Subscription, ds string, sink changes.Sink,
	last func() int64, send func([]changes.Change) bool) bool {
	for !sub.Attached() {
		batch, err := h.Changes.Since(ctx, h.Store.DB, ds, last(), catchUpBatch)
		if err != nil || !send(batch) {
			return false
		}
		if len(batch) < catchUpBatch {
			sub.Attach(sink, last())
			break
		}
	}
	return true
}

// catchUpBatch is how many changes a stream reads from the change log at a time.
const catchUpBatch = 500

// writeDeadline is a client connection's write deadline, moved streamWriteWait ahead when
// half of it has passed rather than at every write: setting it is a tenth of a delivery's
// work.
type writeDeadline time.Time

func (d *writeDeadline) move(set func(time.Time) error) {
	if now := time.Now(); time.Time(*d).Sub(now) < streamWriteWait/2 {
		*d = writeDeadline(now.Add(streamWriteWait))
		_ = set(time.Time(*d))
	}
}

func (h *Records) heartbeat() time.Duration {
	if h.Config.StreamHeartbeat > 0 {
		return h.Config.StreamHeartbeat
	}
	return 15 * time.Second
}
