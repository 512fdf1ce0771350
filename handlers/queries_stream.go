package handlers

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"dataplatform/gen/api"
	"dataplatform/handlers/apierr"
	"dataplatform/store"
	"dataplatform/store/datasets"
	"dataplatform/store/queries"
	"dataplatform/store/usersql"

	"github.com/jmoiron/sqlx"
)

// StreamQuery is POST .../queries/stream: the rows of a query as server-sent events, read
// through a cursor. Everything that can be refused before a row is read (validation, names,
// forbidden statements, the concurrency limit, what the database rejects when the cursor is
// declared) is an ordinary JSON error.
func (h *Queries) StreamQuery(ctx context.Context, req api.StreamQueryRequestObject) (api.StreamQueryResponseObject, error) {
	start := time.Now()
	prj, err := h.project(ctx, nil, req.ProjectId, "queries:execute")
	if err != nil {
		return nil, err
	}
	b := req.Body
	typ := typeOf((*string)(b.Type))
	qr, e, err := h.newQuery(ctx, prj, typ, b.Query)
	if err != nil {
		return nil, err
	}
	s := &queryStream{h: h, ctx: ctx, prj: prj, qr: qr, e: e, start: start, timeout: projectQueryTimeout}
	if o := b.Options; o != nil {
		if o.TimeoutSeconds != nil {
			s.timeout = time.Duration(*o.TimeoutSeconds) * time.Second
		}
		s.limit = deref(o.Limit)
	}
	s.pp, err = h.prepare(ctx, prj, typ, b.Query, b.Datasets, b.Parameters, false)
	if err == nil {
		if err = datasets.EnsureQueryRole(ctx, h.Store.DB, prj.OrgID); err == nil {
			err = h.Store.OnReader(ctx, func(db *sqlx.DB) (err error) {
				s.cur, err = usersql.OpenCursor(ctx, db, prj.OrgID, s.pp.SQL, s.pp.args,
					usersql.QueryOptions{Timeout: s.timeout, MaxRows: s.limit, MaxRowBytes: h.Config.QueryResultBytes, Slot: h.UserSlot(*qr.UserID)})
				return err
			})
			if usersql.NotRun(err) {
				return nil, QueryError(err, nil, 0, 0) // refused, not run: not history
			} else if err != nil {
				err = QueryError(err, &s.pp.SQL, s.timeout, time.Since(start))
			}
		}
	}
	if err != nil {
		if rerr := h.recordQuery(context.WithoutCancel(ctx), qr, e, err, start, false); rerr != nil {
			return nil, rerr
		}
		return nil, err
	}
	e.GeneratedSQL, qr.Args = s.pp.SQL, argsJSON(s.pp.args)
	e.Explanation = &queries.Explanation{Summary: s.pp.describe(), Steps: s.pp.Steps, DatasetsUsed: s.pp.Used}
	e.Warnings = s.pp.warnings
	// Entered as running while its rows stream.
	qr.Status = "running"
	err = h.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		if err := store.InsertQuery(ctx, tx, qr); err != nil {
			return err
		}
		return emitStarted(ctx, tx, qr)
	})
	if err != nil {
		s.cur.Close()
		return nil, err
	}
	return s, nil
}

// queryStream writes the events of a streamed query.
type queryStream struct {
	h       *Queries
	ctx     context.Context
	prj     *store.Project
	qr      *store.Query
	e       *queries.Executed
	pp      *prepared
	cur     *usersql.RowCursor
	start   time.Time
	timeout time.Duration
	limit   int
}

func (s *queryStream) VisitStreamQueryResponse(rw http.ResponseWriter) error {
	_ = http.NewResponseController(rw).SetWriteDeadline(time.Time{}) // as long as the rows last
	rw.Header().Set("Content-Type", "text/event-stream")
	rw.Header().Set("Cache-Control", "no-cache")
	rw.Header().Set("X-Accel-Buffering", "no")
	rw.WriteHeader(http.StatusOK)
	w := bufio.NewWriterSize(rw, 64<<10)
	flush := func() error {
		if err := w.Flush(); err != nil {
			return err
		}
		return http.NewResponseController(rw).Flush()
	}
	event := func(name string, payload any) error {
		b, err := json.Marshal(payload)
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		return err
	}
	if s.e.Type == "natural_language" {
		_ = event("status", map[string]any{"status": "parsing", "message": "read the question: " + s.pp.describe()})
		_ = event("status", map[string]any{"status": "generating", "message": "wrote SQL over " + usedNames(s.pp.Used) + ", checked with PostgreSQL's parser"})
	} else {
		_ = event("status", map[string]any{"status": "parsing", "message": "checked with PostgreSQL's parser: one SELECT over " + usedNames(s.pp.Used)})
	}
	_ = event("sql", map[string]any{"sql": s.pp.SQL})
	_ = event("status", map[string]any{"status": "executing", "message": "reading rows through a cursor, " + fmt.Sprint(usersql.StreamBatch) + " at a time"})
	_ = flush()
	res := &queries.Results{Rows: [][]any{}}
	var stored int64 // what the history keeps stays small, whatever streams
	batch := 0
	defer s.cur.Close()
	n, truncated, err := s.cur.Each(s.ctx,
		func(cols []usersql.QueryColumn) error {
			res.Columns = cols
			if err := event("schema", map[string]any{"columns": cols}); err != nil {
				return err
			}
			return flush()
		},
		func(row []any) error {
			if queries.Keep(len(res.Rows), &stored, usersql.RowBytes(row)) {
				res.Rows = append(res.Rows, row)
			}
			if err := event("row", map[string]any{"values": row}); err != nil {
				return err
			}
			if batch++; batch == usersql.StreamBatch {
				batch = 0
				return flush()
			}
			return nil
		})
	res.RowCount, res.Truncated = n, truncated
	var runErr error
	if err != nil {
		runErr = QueryError(err, &s.pp.SQL, s.timeout, time.Since(s.start))
		f := map[string]any{"code": apierr.CodeInternalError, "message": "the query failed"}
		var ae *apierr.Error
		if errors.As(runErr, &ae) {
			f = map[string]any{"code": ae.Code, "message": ae.Message, "details": ae.Details}
		}
		_ = event("error", f)
	} else {
		s.e.Results = res
		s.e.Metadata = &queries.Metadata{ExecutionTimeMS: time.Since(s.start).Milliseconds()}
		_ = event("complete", map[string]any{"row_count": n, "execution_time_ms": time.Since(s.start).Milliseconds(), "truncated": truncated,
			"query_id": s.qr.ID})
	}
	_ = flush()
	return s.h.recordQuery(context.WithoutCancel(s.ctx), s.qr, s.e, runErr, s.start, true)
}

func usedNames(used []queries.Used) string {
	if len(used) == 0 {
		return "no dataset"
	}
	out := ""
	for i, u := range used {
		if i > 0 {
			out += ", "
		}
		out += u.Name
	}
	return out
}
