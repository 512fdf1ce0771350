package records

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"dataplatform/handlers/apierr"
	recsql "dataplatform/store/records"

	"github.com/jmoiron/sqlx"
	"github.com/labstack/echo/v4"
)

type bulkOp struct {
	Method string         `json:"method"`
	Data   map[string]any `json:"data"`
	Filter map[string]any `json:"filter"`
	IDs    []any          `json:"ids"`
	Soft   *bool          `json:"soft"`
}

type bulkResult struct {
	Index   int               `json:"index"`
	Success bool              `json:"success"`
	ID      json.RawMessage   `json:"id,omitempty"`
	IDs     []json.RawMessage `json:"ids,omitempty"`
	Count   int               `json:"count"`
	Data    json.RawMessage   `json:"data,omitempty"`
	Error   *bulkError        `json:"error,omitempty"`
}

type bulkError struct {
	Code    apierr.Code `json:"code"`
	Message string      `json:"message"`
	Details any         `json:"details,omitempty"`
}

// Bulk is POST /api/v1/datasets/{id}/data/bulk: create, update and delete operations, in
// one transaction (atomic: any failure writes nothing) or each in its own (stopping at the
// first failure unless continue_on_error).
func (h *Records) Bulk(c echo.Context) error {
	start := time.Now()
	rc, err := h.resolve(c, "datasets:write")
	if err != nil {
		return err
	}
	var req struct {
		Operations []json.RawMessage `json:"operations"`
		Options    struct {
			Atomic          *bool `json:"atomic"`
			ContinueOnError bool  `json:"continue_on_error"`
			ReturnIDs       *bool `json:"return_ids"`
		} `json:"options"`
	}
	dec := json.NewDecoder(c.Request().Body)
	dec.UseNumber()
	if err := dec.Decode(&req); err != nil {
		return apierr.Field("body", "invalid_json", "the body is not a bulk request")
	}
	atomic := req.Options.Atomic == nil || *req.Options.Atomic
	returnIDs := req.Options.ReturnIDs == nil || *req.Options.ReturnIDs
	ops := make([]bulkOp, len(req.Operations))
	for i, raw := range req.Operations {
		d := json.NewDecoder(bytes.NewReader(raw))
		d.UseNumber()
		if err := d.Decode(&ops[i]); err != nil {
			return apierr.Field(fmt.Sprintf("body.operations[%d]", i), "invalid", err.Error())
		}
	}
	ctx := c.Request().Context()
	results := make([]bulkResult, len(ops))
	run := func(tx *sqlx.Tx, i int) error {
		r, err := h.bulkOne(ctx, tx, rc, i, ops[i], returnIDs)
		results[i] = r
		return err
	}
	if atomic {
		failedAt := -1
		err := h.Store.Tx(ctx, func(tx *sqlx.Tx) error {
			for i := range ops {
				if err := run(tx, i); err != nil {
					failedAt = i
					return err
				}
			}
			return h.auditRecord(ctx, tx, rc, "record.bulk", "", map[string]any{"operations": len(ops), "atomic": true})
		})
		if err != nil && failedAt < 0 {
			return err
		}
		if failedAt >= 0 { // nothing was written: every operation failed with the transaction
			for i := range results {
				if i != failedAt {
					results[i] = bulkResult{Index: i, Error: &bulkError{Code: apierr.CodeRolledBack, Message: fmt.Sprintf("not applied: operation %d failed and the request is atomic", failedAt)}}
				}
			}
		}
	} else {
		for i := range ops {
			err := h.Store.Tx(ctx, func(tx *sqlx.Tx) error { return run(tx, i) })
			if err != nil && !req.Options.ContinueOnError {
				for j := i + 1; j < len(ops); j++ {
					results[j] = bulkResult{Index: j, Error: &bulkError{Code: apierr.CodeSkipped, Message: fmt.Sprintf("not run: operation %d failed", i)}}
				}
				break
			}
		}
	}
	ok, failed := 0, 0
	for _, r := range results {
		if r.Success {
			ok++
		} else {
			failed++
		}
	}
	if !atomic && ok > 0 { // each operation had a transaction of its own: one entry for all
		if err := h.Store.Tx(ctx, func(tx *sqlx.Tx) error {
			return h.auditRecord(ctx, tx, rc, "record.bulk", "", map[string]any{"operations": len(ops), "succeeded": ok, "failed": failed})
		}); err != nil {
			return err
		}
	}
	return c.JSON(http.StatusOK, map[string]any{"succeeded": ok, "failed": failed, "results": results, "execution_time_ms": time.Since(start).Milliseconds()})
}

// bulkOne runs one operation in tx; its error fails the operation (and an atomic request).
func (h *Records) bulkOne(ctx context.Context, tx *sqlx.Tx, rc *recordCtx, i int, op bulkOp, returnIDs bool) (bulkResult, error) {
	res := bulkResult{Index: i}
	fail := func(err error) (bulkResult, error) {
		var ae *apierr.Error
		switch {
		case errors.As(err, &ae):
		default:
			if e, ok := writeErr(err, rc.desc.Table).(*apierr.Error); ok {
				ae = e
			} else {
				ae = apierr.New(http.StatusInternalServerError, apierr.CodeInternalError, "the operation failed")
			}
		}
		res.Error = &bulkError{Code: ae.Code, Message: ae.Message, Details: ae.Details}
		return res, err
	}
	t := rc.desc.Table
	var sel recsql.Selector
	for j, v := range op.IDs {
		id, err := t.ParseKey(fmt.Sprint(v))
		if err != nil {
			return fail(apierr.Field(fmt.Sprintf("body.operations[%d].ids[%d]", i, j), "type", err.(*recsql.FieldError).Message))
		}
		sel.IDs = append(sel.IDs, id)
	}
	if len(op.Filter) > 0 {
		v := url.Values{}
		for k, x := range op.Filter {
			if m, ok := x.(map[string]any); ok {
				for o, y := range m {
					v.Add("filter["+k+"]["+o+"]", fmt.Sprint(y))
				}
			} else {
				v.Add("filter["+k+"]", fmt.Sprint(x))
			}
		}
		fs, err := t.ParseFilters(v)
		if err != nil {
			return fail(fieldErr(err))
		}
		sel.Filters = fs
	}
	var ids []json.RawMessage
	var err error
	switch op.Method {
	case "create":
		if err := check(rc.desc, "Create", op.Data); err != nil {
			return fail(err)
		}
		rec, err := t.Insert(ctx, tx, op.Data, t.Fields())
		if err != nil {
			return fail(err)
		}
		var m map[string]json.RawMessage
		_ = json.Unmarshal(rec, &m)
		res.ID, res.Data, ids = m[t.Key()], rec, []json.RawMessage{m[t.Key()]}
	case "update":
		if len(op.Data) == 0 {
			return fail(apierr.Field(fmt.Sprintf("body.operations[%d].data", i), "required", "an update needs data"))
		}
		if err := check(rc.desc, "Patch", op.Data); err != nil {
			return fail(err)
		}
		if ids, err = t.UpdateWhere(ctx, tx, sel, op.Data); err != nil {
			return fail(fieldErr(err))
		}
	case "delete":
		if op.Soft != nil && *op.Soft && !t.System() {
			return fail(apierr.Field(fmt.Sprintf("body.operations[%d].soft", i), "enum", "a connected database's records are deleted for good: soft must be false"))
		}
		soft := (op.Soft == nil || *op.Soft) && t.System()
		if ids, err = t.DeleteWhere(ctx, tx, sel, soft); err != nil {
			return fail(fieldErr(err))
		}
	default:
		return fail(apierr.Field(fmt.Sprintf("body.operations[%d].method", i), "enum", "method is create, update or delete"))
	}
	res.Success, res.Count = true, len(ids)
	if returnIDs {
		res.IDs = ids
		if ids == nil {
			res.IDs = []json.RawMessage{}
		}
	}
	if len(ids) == 1 && res.ID == nil {
		res.ID = ids[0]
	}
	return res, nil
}
