package handlers

import (
	"context"
	"crypto/hmac"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strconv"

	"dataplatform/gen/api"
	"dataplatform/handlers/apierr"
	"dataplatform/store"
	"dataplatform/store/jobs"
	"dataplatform/store/queries"

	"github.com/jmoiron/sqlx"
)

// ExportDir is where query export files live.
func (h *Handlers) ExportDir() string { return filepath.Join(h.Config.DataDir, "exports") }

// exportSignature signs an export's download link until expires.
func (h *Handlers) exportSignature(id string, expires int64) string {
	return base64.RawURLEncoding.EncodeToString(h.Secrets.Sign("query-export\x00" + id + "\x00" + strconv.FormatInt(expires, 10)))
}

func (h *Handlers) exportOut(x *store.QueryExport) api.QueryExport {
	out := api.QueryExport{ExportId: x.ID, QueryId: x.QueryID, Format: api.QueryExportFormat(x.Format), Status: api.QueryExportStatus(x.Status),
		Error: x.Error, ExpiresAt: x.ExpiresAt, JobId: &x.JobID, CreatedAt: x.CreatedAt, CompletedAt: x.CompletedAt}
	if x.SizeBytes != nil {
		out.SizeBytes = ptr(int(*x.SizeBytes))
	}
	if x.RowCount != nil {
		out.RowCount = ptr(int(*x.RowCount))
	}
	if x.Status == "completed" {
		exp := x.ExpiresAt.Unix()
		u := h.Config.BaseURL + "/api/v1/exports/" + x.ID + "/download?" +
			url.Values{"expires": {strconv.FormatInt(exp, 10)}, "signature": {h.exportSignature(x.ID, exp)}}.Encode()
		out.DownloadUrl = &u
	}
	return out
}

func (h *Queries) ExportQuery(ctx context.Context, req api.ExportQueryRequestObject) (api.ExportQueryResponseObject, error) {
	prj, p, err := h.projectFor(ctx, req.ProjectId, "queries:execute")
	if err != nil {
		return nil, err
	}
	q, err := h.historyQuery(ctx, prj, req.QueryId)
	if err != nil {
		return nil, err
	}
	if q.Status != "completed" {
		return nil, apierr.Conflict("query_id", "only a completed query can be exported; this one is "+q.Status)
	}
	b := req.Body
	// Excel is read by people in a spreadsheet: formulas escaped unless asked not to; csv is
	// often read by programs: exact unless asked.
	o := queries.ExportOptions{IncludeHeaders: true, Delimiter: ",", QuoteChar: `"`, EscapeFormulas: b.Format == api.ExportQueryJSONBodyFormatExcel}
	if b.Options != nil {
		if e := b.Options.EscapeFormulas; e != nil {
			o.EscapeFormulas = *e
		}
		if b.Options.IncludeHeaders != nil {
			o.IncludeHeaders = *b.Options.IncludeHeaders
		}
		if d := b.Options.Delimiter; d != nil {
			o.Delimiter = string(*d)
			if o.Delimiter == "tab" {
				o.Delimiter = "\t"
			}
		}
		if c := b.Options.QuoteChar; c != nil {
			o.QuoteChar = string(*c)
		}
	}
	oj, _ := json.Marshal(o)
	now := h.Now()
	x := &store.QueryExport{ID: store.NewID("exp"), QueryID: q.ID, ProjectID: prj.ID, OrgID: prj.OrgID, UserID: &p.UserID, Format: string(b.Format),
		Options: string(oj), Status: "processing", CreatedAt: now, ExpiresAt: now.Add(queries.ExportTTL)}
	err = h.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		var err error
		if x.JobID, err = jobs.Enqueue(ctx, tx, jobs.New{Kind: queries.KindExport, OrgID: prj.OrgID, ResourceType: "query_export", ResourceID: x.ID,
			Payload: map[string]string{"export_id": x.ID}, MaxAttempts: 2}, now); err != nil {
			return err
		}
		if err := store.CreateQueryExport(ctx, tx, x); err != nil {
			return err
		}
		return h.audit(ctx, tx, prj.OrgID, "query.export", "query_export", x.ID, q.ID, map[string]any{"query_id": q.ID, "format": x.Format})
	})
	if err != nil {
		return nil, err
	}
	return api.ExportQuery202JSONResponse(h.exportOut(x)), nil
}

func (h *Queries) GetQueryExport(ctx context.Context, req api.GetQueryExportRequestObject) (api.GetQueryExportResponseObject, error) {
	prj, err := h.project(ctx, nil, req.ProjectId, "queries:read", "datasets:read") // its URL gives the rows
	if err != nil {
		return nil, err
	}
	if _, err := h.historyQuery(ctx, prj, req.QueryId); err != nil { // a private query's exports are its author's
		return nil, err
	}
	x, err := store.QueryExportByID(ctx, h.Store.DB, prj.ID, req.ExportId)
	if errors.Is(err, store.ErrNotFound) || err == nil && x.QueryID != req.QueryId {
		return nil, apierr.NotFound("export", req.ExportId)
	} else if err != nil {
		return nil, err
	}
	return api.GetQueryExport200JSONResponse(h.exportOut(x)), nil
}

// exportFile serves an export's file.
type exportFile struct {
	f    *os.File
	name string
	typ  string
}

func (e exportFile) VisitDownloadQueryExportResponse(w http.ResponseWriter) error {
	defer func() { _ = e.f.Close() }()
	st, err := e.f.Stat()
	if err != nil {
		return err
	}
	w.Header().Set("Content-Type", e.typ)
	w.Header().Set("Content-Disposition", `attachment; filename="`+e.name+`"`)
	w.Header().Set("Content-Length", strconv.FormatInt(st.Size(), 10))
	w.Header().Set("Cache-Control", "private, no-store")
	w.WriteHeader(http.StatusOK)
	_, err = io.Copy(w, e.f)
	return err
}

func (h *Queries) DownloadQueryExport(ctx context.Context, req api.DownloadQueryExportRequestObject) (api.DownloadQueryExportResponseObject, error) {
	want := h.exportSignature(req.ExportId, int64(req.Params.Expires))
	if !hmac.Equal([]byte(want), []byte(req.Params.Signature)) {
		return nil, apierr.Forbidden("the link's signature does not match")
	}
	if h.Now().Unix() > int64(req.Params.Expires) {
		return nil, apierr.Forbidden("the link expired")
	}
	x, err := store.QueryExportByID(ctx, h.Store.DB, "", req.ExportId)
	if errors.Is(err, store.ErrNotFound) || err == nil && (x.Status != "completed" || x.StorageKey == nil) {
		return nil, apierr.NotFound("export", req.ExportId)
	} else if err != nil {
		return nil, err
	}
	f, err := os.Open(filepath.Join(h.ExportDir(), filepath.FromSlash(*x.StorageKey)))
	if errors.Is(err, os.ErrNotExist) {
		return nil, apierr.NotFound("export", req.ExportId)
	} else if err != nil {
		return nil, err
	}
	return exportFile{f: f, name: "query-" + x.QueryID + queries.Extensions[x.Format], typ: queries.ContentTypes[x.Format]}, nil
}
