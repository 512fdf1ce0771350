package handlers

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"mime/multipart"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"dataplatform/gen/api"
	"dataplatform/handlers/apierr"
	"dataplatform/handlers/reqmeta"
	"dataplatform/store"
	"dataplatform/store/ingest"

	"github.com/jmoiron/sqlx"
)

// UploadTTL is how long an upload waits for a dataset to claim it.
const UploadTTL = 24 * time.Hour

// Datasets implements project datasets.
type Datasets struct{ *Handlers }

// UploadPath is where an upload's file lives on disk.
func (h *Handlers) UploadPath(storageKey string) string {
	return filepath.Join(h.Config.DataDir, "uploads", filepath.FromSlash(storageKey))
}

func (h *Datasets) UploadDatasetFile(ctx context.Context, req api.UploadDatasetFileRequestObject) (api.UploadDatasetFileResponseObject, error) {
	prj, err := h.project(ctx, nil, req.ProjectId, "datasets:write")
	if err != nil {
		return nil, err
	}
	if err := h.storageAllowance(ctx, h.Store.DB, prj.OrgID, 0); err != nil {
		return nil, err
	}
	if allow := reqmeta.From(ctx).AllowLongBody; allow != nil {
		allow() // only now may the file take longer than the server's read timeout
	}
	now := h.Now()
	up := &store.Upload{ID: store.NewID("upl"), ProjectID: prj.ID, OrgID: prj.OrgID, CreatedAt: now, ExpiresAt: now.Add(UploadTTL)}
	up.StorageKey = prj.OrgID + "/" + up.ID
	path := h.UploadPath(up.StorageKey)
	saved := false
	defer func() {
		if !saved {
			_ = os.Remove(path)
		}
	}()
	gotFile := false
	for {
		part, err := req.Body.NextPart()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, h.multipartError(err)
		}
		switch part.FormName() {
		case "file":
			if gotFile {
				return nil, apierr.Field("body.file", "duplicate", "send one file per upload")
			}
			gotFile = true
			if err := h.saveUpload(part, path, up); err != nil {
				return nil, err
			}
		case "name":
			v, err := formValue(part, 255)
			if err != nil {
				return nil, apierr.Field("body.name", "maxLength", err.Error())
			}
			up.Name = &v
		case "description":
			v, err := formValue(part, 2000)
			if err != nil {
				return nil, apierr.Field("body.description", "maxLength", err.Error())
			}
			up.Description = &v
		default:
			return nil, apierr.Field("body."+part.FormName(), "unknown_field", "unknown form field")
		}
	}
	if !gotFile {
		return nil, apierr.Field("body.file", "required", "the multipart form needs a `file` part")
	}
	if err := h.storageAllowance(ctx, h.Store.DB, prj.OrgID, up.Size); err != nil {
		return nil, err // the file is removed
	}
	err = h.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		if err := store.CreateUpload(ctx, tx, up); err != nil {
			return err
		}
		return h.audit(ctx, tx, prj.OrgID, "dataset.upload", "upload", up.ID, up.Filename,
			map[string]any{"project_id": prj.ID, "size": up.Size, "format": up.Format})
	})
	if err != nil {
		return nil, err
	}
	saved = true
	return api.UploadDatasetFile201JSONResponse(uploadOut(up)), nil
}

// saveUpload streams the file part to path, deciding its format from the first 64 KiB before
// the rest is read, and enforcing the size limit as it goes.
func (h *Datasets) saveUpload(part *multipart.Part, path string, up *store.Upload) error {
	up.Filename = filepath.Base(strings.ReplaceAll(part.FileName(), "\\", "/"))
	if up.Filename == "." || up.Filename == "/" || up.Filename == "" {
		up.Filename = "upload"
	}
	br := bufio.NewReaderSize(part, 64<<10)
	head, err := br.Peek(64 << 10)
	if err != nil && err != io.EOF && !errors.Is(err, bufio.ErrBufferFull) {
		return h.multipartError(err)
	}
	format, err := ingest.Detect(head, up.Filename)
	var fe *ingest.FormatError
	if errors.As(err, &fe) {
		return apierr.New(http.StatusBadRequest, apierr.CodeInvalidFileFormat,
			"the file is "+fe.Provided+"; upload CSV, JSON (an array of objects or NDJSON) or Parquet").
			WithDetails(map[string]any{"provided_format": fe.Provided, "supported_formats": []string{"csv", "json", "parquet"}})
	} else if err != nil {
		return err
	}
	up.Format = string(format)
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return h.storageError(err)
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o640)
	if err != nil {
		return h.storageError(err)
	}
	defer func() { _ = f.Close() }() // synced below; nothing is left to flush at Close
	max := h.Config.MaxUploadBytes
	w := &diskWriter{f: f}
	n, err := io.Copy(w, io.LimitReader(br, max+1))
	if w.err != nil {
		return h.storageError(w.err)
	} else if err != nil {
		return h.multipartError(err)
	}
	if n > max {
		return apierr.FileTooLarge(n, max)
	}
	up.Size = n
	if err := f.Sync(); err != nil {
		return h.storageError(err)
	}
	return nil
}

// diskWriter tells the file's write errors (the disk) from the copy's read errors (the client).
type diskWriter struct {
	f   *os.File
	err error
}

func (w *diskWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	if err != nil {
		w.err = err
	}
	return n, err
}

// storageError is what the client is told when the data directory cannot take a file: 507
// when it is full, 503 when it cannot be written at all. The partial file is removed by the
// caller; the operator reads the cause in the log.
func (h *Handlers) storageError(err error) error {
	if errors.Is(err, syscall.ENOSPC) || errors.Is(err, syscall.EDQUOT) {
		h.Log.Error("the data directory is full", "error", err)
		return apierr.New(http.StatusInsufficientStorage, apierr.CodeStorageFull, "the server has no room for the file; nothing was kept")
	}
	h.Log.Error("the data directory cannot be written", "error", err)
	e := apierr.New(http.StatusServiceUnavailable, apierr.CodeStorageUnavailable, "the server cannot store files at the moment; nothing was kept")
	e.Headers = map[string]string{"Retry-After": "60"}
	return e
}

// multipartError maps errors reading the request: the body limit is FILE_TOO_LARGE, anything
// else a malformed form.
func (h *Datasets) multipartError(err error) error {
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		return apierr.FileTooLarge(mbe.Limit, h.Config.MaxUploadBytes)
	}
	var ae *apierr.Error // the body's own refusal: too slow
	if errors.As(err, &ae) {
		return ae
	}
	return apierr.Field("body", "invalid_multipart", "malformed multipart form: "+err.Error())
}

func formValue(p *multipart.Part, max int) (string, error) {
	b, err := io.ReadAll(io.LimitReader(p, int64(max)*4+1))
	if err != nil {
		return "", err
	}
	if s := string(b); len([]rune(s)) <= max {
		return s, nil
	}
	return "", fmt.Errorf("at most %d characters", max)
}

// SweepUploads deletes unclaimed uploads that have expired, rows and files.
func (h *Handlers) SweepUploads(ctx context.Context) (int, error) {
	ups, err := store.ExpiredUploads(ctx, h.Store.DB, h.Now())
	if err != nil {
		return 0, err
	}
	for _, u := range ups {
		if err := os.Remove(h.UploadPath(u.StorageKey)); err != nil && !os.IsNotExist(err) {
			h.Log.Warn("remove expired upload", "upload_id", u.ID, "error", err)
		}
	}
	orphans, err := h.sweepOrphanUploads(ctx)
	return len(ups) + orphans, err
}

// OrphanAge is how long an upload file without a row must have gone unwritten before it is
// taken for the remains of an interrupted upload (the server died while receiving it): a
// file being received is written to all the time, at DP_UPLOAD_MIN_RATE at least.
const OrphanAge = time.Hour

// sweepOrphanUploads removes upload files that no upload row knows and that nothing has
// written to for OrphanAge: what a server killed in the middle of an upload left.
func (h *Handlers) sweepOrphanUploads(ctx context.Context) (int, error) {
	root := filepath.Join(h.Config.DataDir, "uploads")
	cutoff := time.Now().Add(-OrphanAge) // file times are the machine's, not the service clock's
	old := map[string]string{}           // storage key → path
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil || !d.Type().IsRegular() {
			return err
		}
		if info, err := d.Info(); err == nil && info.ModTime().Before(cutoff) {
			rel, _ := filepath.Rel(root, p)
			old[filepath.ToSlash(rel)] = p
		}
		return nil
	})
	if err != nil || len(old) == 0 {
		return 0, err
	}
	keys := make([]string, 0, len(old))
	for k := range old {
		keys = append(keys, k)
	}
	known, err := store.KnownUploads(ctx, h.Store.DB, keys)
	if err != nil {
		return 0, err
	}
	n := 0
	for k, p := range old {
		if !known[k] && os.Remove(p) == nil {
			h.Log.Info("removed the file of an interrupted upload", "storage_key", k)
			n++
		}
	}
	return n, nil
}

func (h *Datasets) GetDatasetUpload(ctx context.Context, req api.GetDatasetUploadRequestObject) (api.GetDatasetUploadResponseObject, error) {
	prj, err := h.project(ctx, nil, req.ProjectId, "datasets:list")
	if err != nil {
		return nil, err
	}
	up, err := store.UploadByID(ctx, h.Store.DB, prj.ID, req.FileId)
	if errors.Is(err, store.ErrNotFound) || (err == nil && up.ClaimedAt == nil && !h.Now().Before(up.ExpiresAt)) {
		return nil, apierr.NotFound("upload", req.FileId)
	} else if err != nil {
		return nil, err
	}
	return api.GetDatasetUpload200JSONResponse(uploadOut(up)), nil
}

func uploadOut(up *store.Upload) api.Upload {
	return api.Upload{FileId: up.ID, Filename: up.Filename, Size: up.Size, Type: api.UploadType(up.Format),
		UploadUrl: "/api/v1/projects/" + up.ProjectID + "/datasets/uploads/" + up.ID, ExpiresAt: up.ExpiresAt,
		Name: up.Name, Description: up.Description, Claimed: ptr(up.ClaimedAt != nil)}
}
