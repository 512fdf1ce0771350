package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"

	"dataplatform/gen/api"
	"dataplatform/handlers/apierr"
	"dataplatform/handlers/auth"
	"dataplatform/store"
	"dataplatform/store/datasets"
	"dataplatform/store/ingest"
	"dataplatform/store/jobs"
	"dataplatform/store/views"
	"dataplatform/templates/descriptions"

	"github.com/jmoiron/sqlx"
)

func (h *Datasets) datasetOut(ctx context.Context, d *store.Dataset, detail bool) (api.Dataset, error) {
	out := api.Dataset{Id: d.ID, ProjectId: d.ProjectID, Name: d.Name, Description: d.Description,
		Type: api.DatasetType(d.Type), Status: api.DatasetStatus(d.Status), Error: d.Error, JobId: d.JobID,
		CreatedAt: d.CreatedAt, UpdatedAt: d.UpdatedAt, IndexedAt: d.IndexedAt,
		Source: api.DatasetSource{Type: api.DatasetSourceType(d.SourceType), Filename: d.Filename, Size: d.Size,
			RowCount: d.RowCount, FileId: d.UploadID}}
	if d.Type == "file" {
		out.Source.Table = ptr(d.ID)
	}
	out.UnderscoreLinks = datasetLinks(h.Config.BaseURL, d)
	tables, err := datasets.Tables(d)
	if err != nil {
		return out, err
	}
	if d.Serving() {
		out.Schema = &api.DatasetSchema{Tables: []api.DatasetTable{}}
		n := 0
		for _, t := range tables {
			out.Schema.Tables = append(out.Schema.Tables, api.DatasetTable{Name: t.Name, Columns: columnsOut(t.Columns)})
			n += len(t.Columns)
		}
		out.Source.ColumnCount = &n
	}
	if detail && d.Type == "database" {
		c, err := store.ConnectionOf(ctx, h.Store.DB, d.ID)
		if err != nil {
			return out, err
		}
		info := api.ConnectionInfo{Type: api.ConnectionInfoType(c.Type), Host: c.Host, Port: c.Port, Database: c.Database,
			Username: c.Username, SslMode: c.SSLMode}
		var o api.DatabaseOptions
		if json.Unmarshal([]byte(c.Options), &o) == nil {
			info.Options = &o
		}
		out.Source.Connection = &info
	}
	if detail {
		out.Source.S3Key = d.StorageKey
		out.Metadata = &api.DatasetMetadata{UploadTime: d.UploadTime, ProcessingTimeMs: d.ProcessingTimeMS,
			IndexTimeMs: d.IndexTimeMS, VectorCount: &d.VectorCount}
	}
	return out, nil
}

// datasetLinks are the places a dataset's reader goes next (DatasetLinks).
func datasetLinks(base string, d *store.Dataset) *api.DatasetLinks {
	api1 := base + "/api/v1/datasets/" + d.ID
	own := base + "/api/v1/projects/" + d.ProjectID + "/datasets/" + d.ID
	l := &api.DatasetLinks{Self: own, Records: api1 + "/data", OpenapiJson: api1 + "/openapi.json", OpenapiYaml: api1 + "/openapi.yaml",
		Docs: api1 + "/docs", Redoc: api1 + "/redoc", Schema: own + "/schema", JsonSchema: api1 + "/schema", Preview: own + "/preview",
		Changelog: api1 + "/changelog", Versions: api1 + "/versions"}
	l.Sdk.Javascript, l.Sdk.Typescript, l.Sdk.Python, l.Sdk.Go = api1+"/sdk/javascript", api1+"/sdk/typescript", api1+"/sdk/python", api1+"/sdk/go"
	return l
}

// dataset loads a dataset of the project that the caller can see, checking perm.
func (h *Datasets) dataset(ctx context.Context, q sqlx.QueryerContext, projectID, id, perm string) (*store.Dataset, error) {
	p, err := auth.Caller(ctx)
	if err != nil {
		return nil, err
	}
	d, err := store.DatasetForUser(ctx, q, projectID, id, p.UserID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, apierr.New(http.StatusNotFound, apierr.CodeDatasetNotFound, "dataset not found").WithDetails(map[string]any{"dataset_id": id})
	} else if err != nil {
		return nil, err
	}
	_, err = h.Allow(ctx, d.OrgID, d.Reach, perm)
	return d, err
}

func (h *Datasets) ListDatasets(ctx context.Context, req api.ListDatasetsRequestObject) (api.ListDatasetsResponseObject, error) {
	prj, err := h.project(ctx, nil, req.ProjectId, "datasets:list")
	if err != nil {
		return nil, err
	}
	pg, limit, offset := page(req.Params.Page, req.Params.Limit)
	ds, total, err := store.ListDatasets(ctx, h.Store.DB, prj.ID, deref(req.Params.Search), string(deref(req.Params.Type)), limit, offset)
	if err != nil {
		return nil, err
	}
	out := api.ListDatasets200JSONResponse{Datasets: []api.Dataset{}, Pagination: paginate(ctx, pg, limit, total)}
	for i := range ds {
		x, err := h.datasetOut(ctx, &ds[i], false)
		if err != nil {
			return nil, err
		}
		out.Datasets = append(out.Datasets, x)
	}
	return out, nil
}

func (h *Datasets) CreateDataset(ctx context.Context, req api.CreateDatasetRequestObject) (api.CreateDatasetResponseObject, error) {
	b := req.Body
	now := h.Now()
	var d *store.Dataset
	err := h.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		prj, err := h.project(ctx, tx, req.ProjectId, "datasets:write")
		if err != nil {
			return err
		}
		// Ingest turns the upload into a table of about its size.
		if err := h.storageAllowance(ctx, tx, prj.OrgID, 0); err != nil {
			return err
		}
		up, ok, err := store.ClaimUpload(ctx, tx, prj.ID, b.Source.FileId, now)
		if err != nil {
			return err
		}
		if !ok {
			return apierr.Field("body.source.file_id", "not_found", "no unclaimed, unexpired upload "+b.Source.FileId+" in this project")
		}
		if b.Source.Type != nil && string(*b.Source.Type) != up.Format {
			return apierr.Field("body.source.type", "mismatch", fmt.Sprintf("the upload is %s, not %s", up.Format, *b.Source.Type))
		}
		var declared []ingest.Column
		if b.Schema != nil {
			if declared, err = declaredSchema(ctx, h.Store.DB, b.Schema.Columns); err != nil {
				return err
			}
		}
		pk := deref(b.PrimaryKey)
		if pk != "" {
			if err := keyInFile(h.UploadPath(up.StorageKey), up.Format, declared, pk); err != nil {
				return err
			}
		}
		p := auth.FromContext(ctx)
		d = &store.Dataset{ID: store.NewID("ds"), ProjectID: prj.ID, OrgID: prj.OrgID, Name: b.Name, Description: b.Description,
			Type: "file", Status: "processing", SourceType: up.Format, UploadID: &up.ID, Filename: &up.Filename, Size: &up.Size,
			StorageKey: &up.StorageKey, TableSchema: prj.OrgID, Columns: "[]", CreatedBy: &p.UserID, UploadTime: &up.CreatedAt,
			CreatedAt: now, UpdatedAt: now}
		jobID, err := jobs.Enqueue(ctx, tx, jobs.New{Kind: datasets.KindIngest, OrgID: prj.OrgID, ResourceType: "dataset",
			ResourceID: d.ID, Payload: datasets.Payload{DatasetID: d.ID, Schema: declared, PrimaryKey: pk}}, now)
		if err != nil {
			return err
		}
		d.JobID = &jobID
		if err := h.nameFree(ctx, tx, prj.ID, "", d.Name, false); err != nil {
			return err
		}
		if err := store.CreateDataset(ctx, tx, d); err != nil {
			return conflictOn(err, "name", "a dataset named "+d.Name+" already exists in this project")
		}
		return h.created(ctx, tx, d, map[string]any{"project_id": prj.ID, "file_id": up.ID})
	})
	if err != nil {
		return nil, err
	}
	out, err := h.datasetOut(ctx, d, false)
	if err != nil {
		return nil, err
	}
	return api.CreateDataset202JSONResponse{Body: out,
		Headers: api.CreateDataset202ResponseHeaders{Location: "/api/v1/projects/" + d.ProjectID + "/datasets/" + d.ID}}, nil
}

// keyInFile checks that a create request's primary_key names a column of the file (or of
// the declared schema), by its name in the file or its identifier, from the file's first
// record; a file that cannot be read is left for the ingest job to report.
func keyInFile(path, format string, declared []ingest.Column, pk string) error {
	cols := declared
	if len(cols) == 0 {
		s, err := ingest.InferSample(path, ingest.Format(format), 1)
		if err != nil {
			return nil
		}
		cols = s.Columns
	}
	var names []string
	for _, c := range cols {
		if c.Name == pk || c.Original == pk || (c.Name == "src_id" && pk == "id") {
			return nil
		}
		names = append(names, c.Name)
	}
	return apierr.Field("body.primary_key", "not_found", fmt.Sprintf("no column %s in the file; its columns: %s", pk, strings.Join(names, ", ")))
}

// created records a new dataset in tx: its audit entry and the dataset.created and
// dataset.processing events.
func (h *Datasets) created(ctx context.Context, tx *sqlx.Tx, d *store.Dataset, details map[string]any) error {
	if err := h.audit(ctx, tx, d.OrgID, "dataset.create", "dataset", d.ID, d.Name, details); err != nil {
		return err
	}
	ev := map[string]any{"dataset_id": d.ID, "project_id": d.ProjectID, "name": d.Name}
	if err := store.Emit(ctx, tx, "dataset.created", d.OrgID, ev, d.CreatedAt); err != nil {
		return err
	}
	return store.Emit(ctx, tx, "dataset.processing", d.OrgID, ev, d.CreatedAt)
}

// activeTables loads a dataset of the project that serves its rows (active, or importing)
// and that the caller may use with perm, and its tables; what says what waits for it to be
// active.
func (h *Datasets) activeTables(ctx context.Context, projectID, id, perm, what string) (*store.Dataset, []datasets.TableDef, error) {
	d, err := h.dataset(ctx, h.Store.DB, projectID, id, perm)
	if err != nil {
		return nil, nil, err
	}
	if err := serving(d, what); err != nil {
		return nil, nil, err
	}
	tables, err := datasets.Tables(d)
	return d, tables, err
}

func (h *Datasets) GetDataset(ctx context.Context, req api.GetDatasetRequestObject) (api.GetDatasetResponseObject, error) {
	d, err := h.dataset(ctx, h.Store.DB, req.ProjectId, req.DatasetId, "datasets:list")
	if err != nil {
		return nil, err
	}
	out, err := h.datasetOut(ctx, d, true)
	if err != nil {
		return nil, err
	}
	return api.GetDataset200JSONResponse(out), nil
}

func (h *Datasets) UpdateDataset(ctx context.Context, req api.UpdateDatasetRequestObject) (api.UpdateDatasetResponseObject, error) {
	var d *store.Dataset
	err := h.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		var err error
		if d, err = h.dataset(ctx, tx, req.ProjectId, req.DatasetId, "datasets:write"); err != nil {
			return err
		}
		changes := map[string]any{}
		if n := req.Body.Name; n != nil && *n != d.Name {
			if err := h.nameFree(ctx, tx, d.ProjectID, "", *n, false); err != nil {
				return err
			}
		}
		// The row lock orders a rename with a schema change or an import finishing.
		if d, err = store.DatasetByID(ctx, tx, d.ID, true); err != nil {
			return err
		}
		was := descriptions.Rename{Name: descriptions.Texts{Before: d.Name}, Description: descriptions.Texts{Before: deref(d.Description)}}
		patchText(changes, "name", req.Body.Name, &d.Name)
		patchText(changes, "description", req.Body.Description, &d.Description)
		d.UpdatedAt = h.Now()
		if err := store.UpdateDataset(ctx, tx, d); err != nil {
			return conflictOn(err, "name", "a dataset named "+d.Name+" already exists in this project")
		}
		was.Name.After, was.Description.After = d.Name, deref(d.Description)
		if err := recordRename(ctx, tx, d, was); err != nil {
			return err
		}
		return h.audit(ctx, tx, d.OrgID, "dataset.update", "dataset", d.ID, d.Name, map[string]any{"changes": changes})
	})
	if err != nil {
		return nil, err
	}
	out, err := h.datasetOut(ctx, d, true)
	if err != nil {
		return nil, err
	}
	return api.UpdateDataset200JSONResponse(out), nil
}

// recordRename releases a new version of the dataset's description when its name or
// description changed and it has columns (a published API): a schema change whose columns
// stay as they are, recording the texts before and after, so that every earlier version is
// still rendered with the name it had.
func recordRename(ctx context.Context, tx *sqlx.Tx, d *store.Dataset, r descriptions.Rename) error {
	if r.Name.Before == r.Name.After && r.Description.Before == r.Description.After {
		return nil
	}
	cols, tables := d.Columns, d.Tables != nil
	if tables {
		cols = *d.Tables
	}
	var described []json.RawMessage
	if json.Unmarshal([]byte(cols), &described) != nil || len(described) == 0 {
		return nil // not loaded yet: its first version is released with the name it has then
	}
	sc := &store.SchemaChange{ID: store.NewID("sch"), DatasetID: d.ID, SchemaVersion: d.SchemaVersion + 1,
		Changes: descriptions.RenameChanges(r), ColumnsBefore: cols, ColumnsAfter: cols, CreatedAt: d.UpdatedAt}
	if p := auth.FromContext(ctx); p != nil && p.UserID != "" {
		sc.CreatedBy = &p.UserID
	}
	if err := store.RecordSchemaChange(ctx, tx, sc, tables); err != nil {
		return err
	}
	d.SchemaVersion = sc.SchemaVersion
	return nil
}

func (h *Datasets) DeleteDataset(ctx context.Context, req api.DeleteDatasetRequestObject) (api.DeleteDatasetResponseObject, error) {
	now := h.Now()
	var file string
	err := h.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		d, err := h.dataset(ctx, tx, req.ProjectId, req.DatasetId, "datasets:delete")
		if err != nil {
			return err
		}
		// The row lock waits for a load in progress, which then finds the dataset gone.
		if _, err := store.DatasetByID(ctx, tx, d.ID, true); err != nil {
			return err
		}
		// Views reading the dataset become broken ("dataset ... was deleted").
		subject, err := views.DatasetSubject(d)
		if err != nil {
			return err
		}
		err = views.Around(ctx, tx, now, []views.Subject{subject}, func() error {
			if err := datasets.Unlink(ctx, tx, d, now); err != nil {
				return err
			}
			if err := datasets.Drop(ctx, tx, d); err != nil {
				return err
			}
			return store.DeleteDataset(ctx, tx, d.ID)
		})
		if err != nil {
			return err
		}
		if d.UploadID != nil {
			if err := store.DeleteUpload(ctx, tx, *d.UploadID); err != nil {
				return err
			}
		}
		if d.StorageKey != nil {
			file = h.UploadPath(*d.StorageKey)
		}
		if err := h.audit(ctx, tx, d.OrgID, "dataset.delete", "dataset", d.ID, d.Name, map[string]any{"project_id": d.ProjectID}); err != nil {
			return err
		}
		return store.Emit(ctx, tx, "dataset.deleted", d.OrgID, map[string]any{"dataset_id": d.ID, "project_id": d.ProjectID}, now)
	})
	if err != nil {
		return nil, err
	}
	if file != "" {
		h.removeFiles([]string{file})
	}
	return api.DeleteDataset200JSONResponse{Message: "dataset " + req.DatasetId + " deleted", DeletedAt: now}, nil
}

func (h *Datasets) PreviewDataset(ctx context.Context, req api.PreviewDatasetRequestObject) (api.PreviewDatasetResponseObject, error) {
	_, tables, err := h.activeTables(ctx, req.ProjectId, req.DatasetId, "datasets:read", "its rows can be previewed")
	if err != nil {
		return nil, err
	}
	t := tables[0]
	if req.Params.Table != nil {
		i := slices.IndexFunc(tables, func(t datasets.TableDef) bool { return t.Name == *req.Params.Table })
		if i < 0 {
			names := make([]string, len(tables))
			for i, t := range tables {
				names[i] = t.Name
			}
			return nil, apierr.Field("query.table", "not_found", "the dataset's tables are "+strings.Join(names, ", "))
		}
		t = tables[i]
	}
	limit, offset := 100, 0
	if req.Params.Limit != nil {
		limit = *req.Params.Limit
	}
	if req.Params.Offset != nil {
		offset = *req.Params.Offset
	}
	out := api.PreviewDataset200JSONResponse{Table: t.Name}
	if out.Columns, out.Rows, out.TotalRows, err = datasets.Preview(ctx, h.Store.DB, t, limit, offset); err != nil {
		return nil, err
	}
	out.RowCount = len(out.Rows)
	return out, nil
}

func (h *Datasets) GetJob(ctx context.Context, req api.GetJobRequestObject) (api.GetJobResponseObject, error) {
	notFound := apierr.NotFound("job", req.JobId)
	j, err := jobs.Get(ctx, h.Store.DB, req.JobId)
	if errors.Is(err, store.ErrNotFound) || (err == nil && j.OrgID == nil) {
		return nil, notFound
	} else if err != nil {
		return nil, err
	}
	if _, _, err := h.access(ctx, h.Store.DB, *j.OrgID); err != nil {
		return nil, notFound
	}
	out := api.GetJob200JSONResponse{Id: j.ID, Kind: j.Kind, Status: api.JobStatus(j.Status), ResourceType: j.ResourceType,
		ResourceId: j.ResourceID, Attempts: j.Attempts, MaxAttempts: &j.MaxAttempts, Error: j.LastError, CreatedAt: j.CreatedAt,
		StartedAt: j.StartedAt, FinishedAt: j.FinishedAt}
	if j.Progress != nil {
		var p api.JobProgress
		if json.Unmarshal([]byte(*j.Progress), &p) == nil {
			out.Progress = &p
		}
	}
	return out, nil
}

// dropDatasetData drops the tables of a project's or organization's datasets inside tx and
// returns the upload files to remove once tx commits (the rows go by cascade).
func (h *Handlers) dropDatasetData(ctx context.Context, tx *sqlx.Tx, scope, id string) ([]string, error) {
	// The views go with their project or organization; theirs first, which PostgreSQL
	// would not let the tables go before.
	if err := views.DropScope(ctx, tx, scope, id); err != nil {
		return nil, err
	}
	ds, keys, err := store.DatasetFiles(ctx, tx, scope, id)
	if err != nil {
		return nil, err
	}
	now := h.Now()
	for _, d := range ds {
		if err := datasets.Drop(ctx, tx, &d); err != nil {
			return nil, err
		}
		if err := store.Emit(ctx, tx, "dataset.deleted", d.OrgID, map[string]any{"dataset_id": d.ID, "project_id": d.ProjectID}, now); err != nil {
			return nil, err
		}
	}
	files := make([]string, len(keys))
	for i, k := range keys {
		files[i] = h.UploadPath(k)
	}
	return files, nil
}

// removeFiles deletes files of deleted uploads, logging what cannot be removed.
func (h *Handlers) removeFiles(files []string) {
	for _, f := range files {
		if err := os.Remove(f); err != nil && !os.IsNotExist(err) {
			h.Log.Warn("removing a deleted upload's file", "path", f, "error", err)
		}
	}
}
