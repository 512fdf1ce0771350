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
		// Prepared: the statement of a record by key is the same for every record of the
		// table, and PostgreSQL would otherwise parse and plan it on each request.
		rec, err = t.Get(c.Request().Context(), h.Store.Preparing(db), id, t.AllFields(), false)
		return err
	})
	if errors.Is(err, recsql.ErrNotFound) {
		return recordNotFound(c.Param("id"))
	} else if err != nil {
		return err
	}
	o, err := parseObject(rec)
	if err != nil {
		return err
	}
	tag := objectETag(rc.d, t, o, rec)
	if c.Request().Header.Get("If-None-Match") == tag {
		c.Response().Header().Set("ETag", tag)
		return c.NoContent(http.StatusNotModified)
	}
	out, err := h.shapeObject(c.Request().Context(), rc, o, fields, embedParam(c))
	if err != nil {
		return err
	}
	c.Response().Header().Set("ETag", tag)
	return c.JSONBlob(http.StatusOK, out)
}

// maxEmbedded bounds the records of one included collection.
const maxEmbedded = 100

// embed adds the related records named in names (link names) under _embedded, in that order.
func (h *Records) embed(ctx context.Context, rc *recordCtx, o *object, names string) error {
	var embNames []string
	var embVals [][]byte
	for _, name := range strings.Split(names, ",") {
		name = strings.TrimSpace(name)
		i := slices.IndexFunc(rc.desc.Links, func(l recsql.Link) bool { return l.Name == name })
		if i < 0 {
			var known []string
			for _, l := range rc.desc.Links {
				known = append(known, l.Name)
			}
			return apierr.Field("query.include", "unknown_relation", fmt.Sprintf("no relation %q; this dataset's are: %s", name, strings.Join(known, ", ")))
		}
		l := rc.desc.Links[i]
		od, err := store.DatasetForUserAnyProject(ctx, h.Store.DB, l.Dataset, auth.FromContext(ctx).UserID)
		if err != nil {
			continue // not visible to the caller: nothing to embed
		}
		odesc, err := h.Descriptions.Describe(ctx, od, l.Table)
		if err != nil {
			return err
		}
		col := l.Column
		if raw, ok := o.get(col); !ok || string(raw) == "null" {
			none := []byte("null")
			if l.Many {
				none = []byte("[]")
			}
			embNames, embVals = append(embNames, name), append(embVals, none)
			continue
		}
		ids, err := odesc.Table.Referring(ctx, h.Store.DB, l.Target, o.text(col))
		if err != nil {
			return err
		}
		if len(ids) > maxEmbedded {
			ids = ids[:maxEmbedded]
		}
		var recs [][]byte
		for _, id := range ids {
			r, err := odesc.Table.Get(ctx, h.Store.DB, id, odesc.Table.Fields(), false)
			if err != nil {
				continue
			}
			recs = append(recs, r)
		}
		v := []byte("null")
		switch {
		case l.Many:
			v = append(append([]byte{'['}, bytes.Join(recs, []byte{','})...), ']')
		case len(recs) > 0:
			v = recs[0]
		}
		embNames, embVals = append(embNames, name), append(embVals, v)
	}
	o.set("_embedded", members(embNames, embVals))
	return nil
}
