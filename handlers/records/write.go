package records

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/big"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"time"

	"dataplatform/handlers/apierr"
	"dataplatform/handlers/auth"
	"dataplatform/handlers/server/validation"
	"dataplatform/store"
	recsql "dataplatform/store/records"
	"dataplatform/templates/descriptions"

	jsonpatch "github.com/evanphx/json-patch/v5"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/jmoiron/sqlx"
	"github.com/labstack/echo/v4"
)

// Create is POST /api/v1/datasets/{id}/data. With X-Idempotency-Key, the first answer is kept
// a day and given again to the same request; the same key with another body is refused.
func (h *Records) Create(c echo.Context) error {
	rc, err := h.resolve(c, "datasets:write")
	if err != nil {
		return err
	}
	raw, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return err
	}
	b, err := decodeObject(raw)
	if err != nil {
		return err
	}
	t := rc.desc.Table
	fields, err := returnFields(c, t, "")
	if err != nil {
		return fieldErr(err)
	}
	ctx := c.Request().Context()
	key := c.Request().Header.Get("X-Idempotency-Key")
	principal := auth.FromContext(ctx).Subject()
	hash := sha256.Sum256(append([]byte(t.Name+"\n"+c.Request().Header.Get("X-Return-Fields")+"\n"), raw...))
	var rec json.RawMessage
	var replay *store.Idempotent
	var location string
	var out json.RawMessage
	err = h.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		if key != "" {
			if replay, err = store.ClaimIdempotencyKey(ctx, tx, principal, rc.d.ID, key, hex.EncodeToString(hash[:]), h.Now()); err != nil {
				return err
			}
			if replay != nil {
				if replay.RequestHash != hex.EncodeToString(hash[:]) {
					return apierr.New(http.StatusUnprocessableEntity, apierr.CodeIdempotencyKeyReused,
						"this X-Idempotency-Key was used with another request; use a new key for a new record").
						WithDetails(map[string]any{"key": key})
				}
				return nil
			}
		}
		if rec, err = t.Insert(ctx, tx, b, t.Fields()); err != nil {
			return err
		}
		var m map[string]any
		dec := json.NewDecoder(bytes.NewReader(rec))
		dec.UseNumber()
		_ = dec.Decode(&m)
		location = rc.desc.SelfURL(rc.d.ID, fmt.Sprint(m[t.Key()]))
		if out, err = h.shape(ctx, rc, rec, fields, ""); err != nil {
			return err
		}
		if err := h.auditRecord(ctx, tx, rc, "record.create", fmt.Sprint(m[t.Key()]), nil); err != nil {
			return err
		}
		if key != "" {
			return store.StoreIdempotentAnswer(ctx, tx, principal, rc.d.ID, key, http.StatusCreated, location, string(out))
		}
		return nil
	})
	if err != nil {
		var ae *apierr.Error
		if errors.As(err, &ae) {
			return err
		}
		return writeErr(err, rc.desc.Table)
	}
	if replay != nil && replay.Body != nil {
		loc := ""
		if replay.Location != nil {
			loc = *replay.Location
		}
		c.Response().Header().Set("Location", loc)
		c.Response().Header().Set("Idempotent-Replayed", "true")
		if t.System() { // a connected table's tag covers fields the stored answer may lack
			c.Response().Header().Set("ETag", etag(rc.d, t, json.RawMessage(*replay.Body)))
		}
		return c.JSONBlob(*replay.Status, []byte(*replay.Body))
	}
	c.Response().Header().Set("Location", location)
	c.Response().Header().Set("ETag", etag(rc.d, t, rec))
	return c.JSONBlob(http.StatusCreated, out)
}

// Replace is PUT; Patch is PATCH: both need the current version, from If-Match or the body.
func (h *Records) Replace(c echo.Context) error { return h.update(c, true) }

// Patch is PATCH /api/v1/datasets/{id}/data/{id}: given fields replace the stored ones;
// objects merge into the stored object.
func (h *Records) Patch(c echo.Context) error { return h.update(c, false) }

func (h *Records) update(c echo.Context, replace bool) error {
	rc, t, id, err := h.resolveRecord(c, "datasets:write")
	if err != nil {
		return err
	}
	ct, _, _ := mime.ParseMediaType(c.Request().Header.Get("Content-Type"))
	jsonPatch := !replace && ct == "application/json-patch+json"
	raw, err := io.ReadAll(c.Request().Body)
	if err != nil {
		return err
	}
	var b map[string]any
	if !jsonPatch {
		if b, err = decodeObject(raw); err != nil {
			return err
		}
	}
	fields, err := returnFields(c, t, "")
	if err != nil {
		return fieldErr(err)
	}
	ctx := c.Request().Context()
	var rec json.RawMessage
	err = h.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		cur, now, err := locked(ctx, tx, t, id, c.Param("id"))
		if err != nil {
			return err
		}
		current, _ := strconv.Atoi(fmt.Sprint(now["version"]))
		want := current
		if v, ok := b["version"]; ok {
			want, _ = strconv.Atoi(fmt.Sprint(v))
			delete(b, "version")
		}
		if m := c.Request().Header.Get("If-Match"); m != "" && m != "*" && m != etag(rc.d, t, cur) {
			want = -1
		}
		if want != current {
			details := map[string]any{"id": detailID(now[t.Key()])}
			if t.System() {
				details["current_version"] = current
			} else {
				details["current_etag"] = etag(rc.d, t, cur)
			}
			return apierr.New(http.StatusConflict, apierr.CodeOptimisticLockError, "the record changed since the version sent; read it again").
				WithDetails(details)
		}
		switch {
		case jsonPatch:
			if b, err = applyJSONPatch(rc, now, raw); err != nil {
				return err
			}
		case !replace:
			if b, err = applyOperators(rc, now, b); err != nil {
				return err
			}
		}
		var ok bool
		if rec, ok, err = t.Update(ctx, tx, id, current, b, replace, t.Fields()); err != nil {
			return err
		} else if !ok {
			return apierr.New(http.StatusConflict, apierr.CodeOptimisticLockError, "the record changed meanwhile; read it again").
				WithDetails(map[string]any{"id": detailID(now[t.Key()])})
		}
		method := "patch"
		if replace {
			method = "replace"
		}
		return h.auditRecord(ctx, tx, rc, "record.update", fmt.Sprint(now[t.Key()]), map[string]any{"method": method, "version": current + 1})
	})
	if err != nil {
		var ae *apierr.Error
		if errors.As(err, &ae) {
			return err
		}
		return writeErr(err, t)
	}
	return h.respond(c, rc, http.StatusOK, rec, fields)
}

// writable is the record's column values (no system fields, no links), nulls included: a
// field whose value is null is a member of the document a JSON Patch applies to (RFC 6902),
// which replace and remove find and test compares with.
func writable(t *recsql.Table, rec map[string]any) map[string]any {
	out := map[string]any{}
	for _, col := range t.Columns {
		if v, ok := rec[col.Name]; ok && !col.Computed {
			out[col.Name] = v
		}
	}
	return out
}

// guardTests puts before each test operation a move of its target onto itself: nothing when
// the target exists, an error when it does not. json-patch v5.9.11 reads a missing object
// member as null, so a test of null against a location the record does not have would hold,
// and a test of a value against one would be a failed test (409); RFC 6902 (4.6, 5) makes
// both an error. A move onto itself changes nothing but, with negative array indexes (which
// count from the end, and the array is one shorter in between), the order, so those are left
// to the test itself (an array index past the end already fails it).
func guardTests(patch jsonpatch.Patch) (jsonpatch.Patch, error) {
	var out jsonpatch.Patch
	for _, op := range patch {
		if op.Kind() == "test" {
			path, err := op.Path()
			if err != nil {
				return nil, err
			}
			last := path[strings.LastIndexByte(path, '/')+1:]
			if n, err := strconv.Atoi(last); path != "" && (err != nil || n >= 0) {
				q, _ := json.Marshal(path)
				guard, err := jsonpatch.DecodePatch([]byte(`[{"op":"move","from":` + string(q) + `,"path":` + string(q) + `}]`))
				if err != nil {
					return nil, err
				}
				out = append(out, guard[0])
			}
		}
		out = append(out, op)
	}
	return out, nil
}

// maxPatchGrowth bounds what the copy operations of one JSON Patch may add, in bytes: each
// copy can double a value, so a 1 KB patch of 22 copies made an 88 MB record in 7 s (and 30
// of them 22 GB) before the bound (seen writing FuzzJSONPatch). It is the default body limit: a
// record a patch makes is no larger than one a body could send.
const maxPatchGrowth = 1 << 20

// applyJSONPatch applies an RFC 6902 patch to the record's fields and returns every column's
// new value (NULL for a removed one), checked against the description's update schema.
func applyJSONPatch(rc *recordCtx, now map[string]any, raw []byte) (map[string]any, error) {
	t := rc.desc.Table
	patch, err := jsonpatch.DecodePatch(raw)
	if err != nil {
		return nil, apierr.Field("body", "invalid_patch", err.Error())
	}
	for i, op := range patch {
		// json-patch v5.9.11 panics on a test of the whole document without a value
		// (FuzzJSONPatch: [{"op":"test","path":""}]); every operation that compares or puts a
		// value needs one (RFC 6902, 4.1, 4.3, 4.6).
		switch op.Kind() {
		case "add", "replace", "test":
			if _, ok := op["value"]; !ok { // present as null is a value (a nil entry)
				return nil, apierr.Field("body", "invalid_patch", fmt.Sprintf("operation %d (%s) has no value", i, op.Kind()))
			}
		}
	}
	if patch, err = guardTests(patch); err != nil {
		return nil, apierr.Field("body", "invalid_patch", err.Error())
	}
	doc, _ := json.Marshal(writable(t, now))
	// Every location the patch names must exist, except where add creates it (RFC 6902):
	// no option makes json-patch create paths or forgive a missing one on remove.
	out, err := patch.ApplyWithOptions(doc, &jsonpatch.ApplyOptions{SupportNegativeIndices: true, EnsurePathExistsOnAdd: false,
		AllowMissingPathOnRemove: false, AccumulatedCopySizeLimit: maxPatchGrowth})
	if err != nil {
		if errors.Is(err, jsonpatch.ErrTestFailed) {
			return nil, apierr.New(http.StatusConflict, apierr.CodePatchTestFailed, "a test operation of the patch failed; nothing was changed").
				WithDetails(map[string]any{"reason": err.Error()})
		}
		if errors.Is(err, jsonpatch.ErrMissing) {
			return nil, apierr.Field("body", "invalid_patch", "the patch names a location the record does not have ("+err.Error()+
				"); fields that are null are there, and add creates a member")
		}
		return nil, apierr.Field("body", "invalid_patch", err.Error())
	}
	var next map[string]any
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	if err := dec.Decode(&next); err != nil {
		return nil, apierr.Field("body", "invalid_patch", "the patch does not leave an object")
	}
	if err := check(rc.desc, "Update", next); err != nil {
		return nil, err
	}
	// The patched document is the record's writable fields; anything else it leaves (the
	// update schema's version, which a patch does not set, or a computed column) would be
	// dropped without a word.
	writableField := map[string]bool{}
	for _, col := range t.Columns {
		writableField[col.Name] = !col.Computed
	}
	for k := range next {
		if !writableField[k] {
			return nil, apierr.Field("body", "invalid_patch", "the patch leaves "+strconv.Quote(k)+
				", which is not a field a patch changes (optimistic locking takes If-Match)")
		}
	}
	for _, col := range t.Columns {
		if _, ok := next[col.Name]; !ok {
			next[col.Name] = nil
		}
	}
	return next, nil
}

// applyOperators turns a JSON patch body into the new values of the fields it changes:
// objects merge into the stored ones, and the $ operators compute from the stored values.
func applyOperators(rc *recordCtx, now map[string]any, b map[string]any) (map[string]any, error) {
	out := map[string]any{}
	for k, v := range b {
		if strings.HasPrefix(k, "$") {
			continue
		}
		if obj, ok := v.(map[string]any); ok {
			if old, ok := now[k].(map[string]any); ok {
				v = merge(old, obj)
			}
		}
		out[k] = v
	}
	value := func(k string) any {
		if v, ok := out[k]; ok {
			return v
		}
		return now[k]
	}
	if inc, ok := b["$inc"].(map[string]any); ok {
		for k, d := range inc {
			base, _ := new(big.Float).SetString(fmt.Sprint(orZero(value(k))))
			add, _ := new(big.Float).SetString(fmt.Sprint(d))
			if base == nil || add == nil {
				return nil, apierr.Field("body.$inc."+k, "type", "not a number")
			}
			out[k] = json.Number(new(big.Float).Add(base, add).Text('f', -1))
		}
	}
	if push, ok := b["$push"].(map[string]any); ok {
		for k, x := range push {
			arr, _ := value(k).([]any)
			out[k] = append(append([]any{}, arr...), x)
		}
	}
	if pull, ok := b["$pull"].(map[string]any); ok {
		for k, x := range pull {
			arr, _ := value(k).([]any)
			kept := []any{}
			for _, y := range arr {
				if fmt.Sprint(y) != fmt.Sprint(x) {
					kept = append(kept, y)
				}
			}
			out[k] = kept
		}
	}
	if set, ok := b["$setOnInsert"].(map[string]any); ok {
		for k, x := range set {
			if value(k) == nil {
				out[k] = x
			}
		}
	}
	// The operators' results must still fit the description (an $inc past the maximum).
	probe := map[string]any{}
	for k, v := range out {
		if v != nil {
			probe[k] = v
		}
	}
	if len(probe) > 0 {
		if err := check(rc.desc, "Patch", probe); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func orZero(v any) any {
	if v == nil {
		return "0"
	}
	return v
}

// check validates a value against one of the description's record schemas (<Singular><kind>).
func check(d *descriptions.Description, kind string, v map[string]any) error {
	ref := d.Doc.Components.Schemas[d.Singular+kind]
	if ref == nil {
		return nil
	}
	// Through JSON, so that numbers are float64 as the validator expects.
	b, _ := json.Marshal(v)
	var x any
	_ = json.Unmarshal(b, &x)
	if err := ref.Value.VisitJSON(x, openapi3.MultiErrors()); err != nil {
		return apierr.Validation(validation.FieldErrors(err, "body")...)
	}
	return nil
}

// merge is a deep merge of patch into base (JSON merge patch, RFC 7386: null removes a key).
func merge(base, patch map[string]any) map[string]any {
	out := make(map[string]any, len(base))
	for k, v := range base {
		out[k] = v
	}
	for k, v := range patch {
		switch x := v.(type) {
		case nil:
			delete(out, k)
		case map[string]any:
			if old, ok := out[k].(map[string]any); ok {
				out[k] = merge(old, x)
			} else {
				out[k] = x
			}
		default:
			out[k] = v
		}
	}
	return out
}

// Delete is DELETE /api/v1/datasets/{id}/data/{id}: soft unless soft=false. A record other
// records refer to (a relationship) is refused with 409 unless cascade=true, which deletes
// them too, the same way.
func (h *Records) Delete(c echo.Context) error {
	rc, t, id, err := h.resolveRecord(c, "datasets:delete")
	if err != nil {
		return err
	}
	// A connected table has no soft deletion (its description allows only soft=false).
	soft := c.QueryParam("soft") != "false" && t.System()
	cascade := c.QueryParam("cascade") == "true"
	ctx := c.Request().Context()
	var at time.Time
	var key any
	cascaded := map[string]int64{}
	err = h.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		_, rec, err := locked(ctx, tx, t, id, c.Param("id"))
		if err != nil {
			return err
		}
		key = rec[t.Key()]
		if err := h.referrers(ctx, tx, rc, rec, soft, cascade, cascaded, 0); err != nil {
			return err
		}
		if at, err = t.Delete(ctx, tx, id, soft); err != nil {
			return err
		}
		return h.auditRecord(ctx, tx, rc, "record.delete", fmt.Sprint(key), map[string]any{"soft": soft, "cascaded": cascaded})
	})
	if err != nil {
		var ae *apierr.Error
		if errors.As(err, &ae) {
			return err
		}
		return writeErr(err, t)
	}
	out := map[string]any{"deleted": true, "id": key, "message": fmt.Sprintf("record %s deleted", id)}
	if soft {
		out["deleted_at"] = at.Format(time.RFC3339Nano)
		out["message"] = fmt.Sprintf("record %s deleted (soft: kept with deleted_at; soft=false removes it)", id)
	}
	if len(cascaded) > 0 {
		out["cascaded"] = cascaded
	}
	return c.JSON(http.StatusOK, out)
}

// maxCascadeDepth bounds how far a cascade follows relationships (they may form cycles).
const maxCascadeDepth = 5

// referrers finds the live records of other datasets that refer to rec through a
// relationship: with cascade they are deleted (and theirs, recursively), without it their
// existence is a 409.
func (h *Records) referrers(ctx context.Context, tx *sqlx.Tx, rc *recordCtx, rec map[string]any, soft, cascade bool, done map[string]int64, depth int) error {
	if !rc.desc.Table.System() {
		return nil // a connected database's foreign keys answer for its records
	}
	for _, l := range rc.desc.Links {
		if !l.Many {
			continue
		}
		v := rec[l.Column]
		if v == nil {
			continue
		}
		od, err := store.DatasetByID(ctx, tx, l.Dataset, false)
		if errors.Is(err, store.ErrNotFound) {
			continue
		} else if err != nil {
			return err
		}
		odesc, err := h.Descriptions.Describe(ctx, od, "")
		if err != nil {
			return err
		}
		ids, err := odesc.Table.Referring(ctx, tx, l.Target, fmt.Sprint(v))
		if err != nil {
			return err
		}
		if len(ids) == 0 {
			continue
		}
		if !cascade {
			return apierr.New(http.StatusConflict, apierr.CodeConflict, fmt.Sprintf("%d records of %s refer to this record; delete them first or use cascade=true", len(ids), od.Name)).
				WithDetails(map[string]any{"field": l.Column, "referenced_by": od.ID, "dataset_name": od.Name, "count": len(ids)})
		}
		if depth >= maxCascadeDepth {
			return apierr.Conflict("cascade", "the cascade is deeper than 5 relationships")
		}
		orc := &recordCtx{d: od, desc: odesc}
		for _, rid := range ids {
			cur, err := odesc.Table.Get(ctx, tx, rid, odesc.Table.Fields(), true)
			if errors.Is(err, recsql.ErrNotFound) {
				continue // reached twice through a cycle
			} else if err != nil {
				return err
			}
			var r map[string]any
			dec := json.NewDecoder(bytes.NewReader(cur))
			dec.UseNumber()
			if err := dec.Decode(&r); err != nil {
				return err
			}
			if err := h.referrers(ctx, tx, orc, r, soft, cascade, done, depth+1); err != nil {
				return err
			}
			if _, err := odesc.Table.Delete(ctx, tx, rid, soft); err != nil && !errors.Is(err, recsql.ErrNotFound) {
				return err
			}
			done[od.ID]++
		}
	}
	return nil
}

// locked reads record id for update (locked until tx ends), as PostgreSQL wrote it and decoded
// with its numbers kept as written; asked is the id as the path gave it, for the 404.
func locked(ctx context.Context, tx *sqlx.Tx, t *recsql.Table, id, asked string) (json.RawMessage, map[string]any, error) {
	cur, err := t.Get(ctx, tx, id, t.Fields(), true)
	if errors.Is(err, recsql.ErrNotFound) {
		return nil, nil, recordNotFound(asked)
	} else if err != nil {
		return nil, nil, err
	}
	var rec map[string]any
	dec := json.NewDecoder(bytes.NewReader(cur))
	dec.UseNumber()
	return cur, rec, dec.Decode(&rec)
}

// auditRecord writes the audit entry of a record write in its transaction: the record by its
// key, named by its dataset.
func (h *Records) auditRecord(ctx context.Context, tx *sqlx.Tx, rc *recordCtx, action, key string, details map[string]any) error {
	if details == nil {
		details = map[string]any{}
	}
	details["dataset_id"] = rc.d.ID
	if rc.desc.Table.Name != rc.d.ID {
		details["table"] = rc.desc.Table.Name
	}
	return h.Audit(ctx, tx, rc.d.OrgID, action, "record", key, rc.d.Name, details)
}
