// Package changes reads the record change log (platform.record_changes, written by a trigger
// on each dataset table) and wakes change-stream subscribers when PostgreSQL notifies a new
// change. The table is the truth: a notification only says "look again", so a subscriber on
// any replica, or one that reconnects with the last id it saw, misses nothing.
package changes

import (
	"context"
	"encoding/json"
	"log/slog"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// Change is one logged change of a record.
type Change struct {
	ID        int64            `db:"id"`
	RecordID  string           `db:"record_id"` // the record's key, as text
	Op        string           `db:"op"`
	Record    *json.RawMessage `db:"record"`
	Changes   *json.RawMessage `db:"changes"`
	ChangedAt time.Time        `db:"changed_at"`
}

// Since reads up to limit changes of a dataset after event afterID, oldest first. An event's
// id is its change's seq, given at commit in commit order per dataset (migration 00033): a
// change numbered below one already read has committed before it, so none is passed over.
func Since(ctx context.Context, q sqlx.QueryerContext, datasetID string, afterID int64, limit int) ([]Change, error) {
	var out []Change
	err := sqlx.SelectContext(ctx, q, &out, `SELECT seq AS id, record_id, op, record, changes, changed_at FROM platform.record_changes
		WHERE dataset_id = $1 AND seq > $2 ORDER BY seq LIMIT $3`, datasetID, afterID, limit)
	return out, err
}

// Latest is the id of a dataset's newest change (a new subscriber starts after it).
func Latest(ctx context.Context, q sqlx.QueryerContext, datasetID string) (int64, error) {
	var id int64
	err := sqlx.GetContext(ctx, q, &id, `SELECT coalesce(max(seq), 0) FROM platform.record_changes WHERE dataset_id = $1`, datasetID)
	return id, err
}

// Hub wakes the subscribers of a dataset when a change of it is notified.
type Hub struct {
	url  string
	log  *slog.Logger
	mu   sync.Mutex
	subs map[string]map[chan struct{}]struct{}
}

// NewHub makes a hub listening on the database at url ("" : no notifications; subscribers
// then rely on their polling).
func NewHub(url string, log *slog.Logger) *Hub {
	return &Hub{url: url, log: log, subs: map[string]map[chan struct{}]struct{}{}}
}

// Start listens until ctx ends.
func (h *Hub) Start(ctx context.Context) {
	if h.url == "" {
		return
	}
	l := pq.NewListener(h.url, time.Second, time.Minute, nil)
	if err := l.Listen("record_changes"); err != nil {
		h.log.Warn("record change notifications unavailable; streams poll", "error", err)
		l.Close()
		return
	}
	go func() {
		defer l.Close()
		for {
			select {
			case <-ctx.Done():
				return
			case n := <-l.Notify:
				if n == nil { // reconnected: anything may have been missed
					h.wakeAll()
				} else {
					h.wake(n.Extra)
				}
			}
		}
	}()
}

// Subscribe returns a channel that receives (at most one pending) wake-up per notified change
// of the dataset, and a function to unsubscribe.
func (h *Hub) Subscribe(datasetID string) (<-chan struct{}, func()) {
	ch := make(chan struct{}, 1)
	h.mu.Lock()
	if h.subs[datasetID] == nil {
		h.subs[datasetID] = map[chan struct{}]struct{}{}
	}
	h.subs[datasetID][ch] = struct{}{}
	h.mu.Unlock()
	return ch, func() {
		h.mu.Lock()
		delete(h.subs[datasetID], ch)
		if len(h.subs[datasetID]) == 0 {
			delete(h.subs, datasetID)
		}
		h.mu.Unlock()
	}
}

func (h *Hub) wake(datasetID string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ch := range h.subs[datasetID] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

func (h *Hub) wakeAll() {
	h.mu.Lock()
	ids := make([]string, 0, len(h.subs))
	for id := range h.subs {
		ids = append(ids, id)
	}
	h.mu.Unlock()
	for _, id := range ids {
		h.wake(id)
	}
}
