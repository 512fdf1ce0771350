package records

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"dataplatform/handlers/apierr"
	"dataplatform/handlers/auth"
	"dataplatform/store"
	recsql "dataplatform/store/records"

	"github.com/jmoiron/sqlx"
	"github.com/labstack/echo/v4"
)

// Get is GET /api/v1/datasets/{id}/data/{id}.
func (h *Records) Get(c echo.Context) error {
	rc, t, id, err := h.resolveRecord(c, "datasets:read")
	if err != nil {
		return err
	}
	fields, err := t.Select(c.QueryParam("fields"), "")
	if err != nil {
		return fieldErr(err)
	}
	var rec json.RawMessage
	err = h.Store.OnReader(c.Request().Context(), func(db *sqlx.DB) (err error) {
		rec, err = t.Get(c.Request().Context(), db, id, t.Fields(), false)
		return err
	})
	if errors.Is(err, recsql.ErrNotFound) {
		return recordNotFound(c.Param("id"))
	} else if err != nil {
		return err
	}
	if tag := etag(rc.d, t, rec); c.Request().Header.Get("If-None-Match") == tag {
		c.Response().Header().Set("ETag", tag)
		return c.NoContent(http.StatusNotModified)
	}
	return h.respond(c, rc, http.StatusOK, rec, fields)
}

// maxEmbedded bounds the records of one included collection.
const maxEmbedded = 100

// embed adds the related records named in names (link names) under _embedded.
func (h *Records) embed(ctx context.Context, rc *recordCtx, out json.RawMessage, names string) (json.RawMessage, error) {
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(out))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return nil, err
	}
	emb := map[string]any{}
	for _, name := range strings.Split(names, ",") {
		name = strings.TrimSpace(name)
		i := slices.IndexFunc(rc.desc.Links, func(l recsql.Link) bool { return l.Name == name })
		if i < 0 {
			var known []string
			for _, l := range rc.desc.Links {
				known = append(known, l.Name)
			}
			return nil, apierr.Field("query.include", "unknown_relation", fmt.Sprintf("no relation %q; this dataset's are: %s", name, strings.Join(known, ", ")))
		}
		l := rc.desc.Links[i]
		od, err := store.DatasetForUserAnyProject(ctx, h.Store.DB, l.Dataset, auth.FromContext(ctx).UserID)
		if err != nil {
			continue // not visible to the caller: nothing to embed
		}
		odesc, err := h.Descriptions.Describe(ctx, od, l.Table)
		if err != nil {
			return nil, err
		}
		v := m[l.Column]
		if l.Column == "id" {
			v = m["id"]
		}
		if v == nil {
			if l.Many {
				emb[name] = []any{}
			} else {
				emb[name] = nil
			}
			continue
		}
		ids, err := odesc.Table.Referring(ctx, h.Store.DB, l.Target, fmt.Sprint(v))
		if err != nil {
			return nil, err
		}
		if len(ids) > maxEmbedded {
			ids = ids[:maxEmbedded]
		}
		var recs []any
		for _, id := range ids {
			r, err := odesc.Table.Get(ctx, h.Store.DB, id, odesc.Table.Fields(), false)
			if err != nil {
				continue
			}
			recs = append(recs, json.RawMessage(r))
		}
		switch {
		case l.Many:
			if recs == nil {
				recs = []any{}
			}
			emb[name] = recs
		case len(recs) > 0:
			emb[name] = recs[0]
		default:
			emb[name] = nil
		}
	}
	m["_embedded"] = emb
	return json.Marshal(m)
}
