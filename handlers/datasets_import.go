package handlers

import (
	"context"
	"errors"
	"net/http"

	"dataplatform/gen/api"
	"dataplatform/handlers/apierr"
	"dataplatform/handlers/auth"
	"dataplatform/store"
	"dataplatform/store/datasets"
	"dataplatform/store/ingest"
	"dataplatform/store/jobs"

	"github.com/jmoiron/sqlx"
)

func (h *Datasets) ImportDataset(ctx context.Context, req api.ImportDatasetRequestObject) (api.ImportDatasetResponseObject, error) {
	b := req.Body
	mode, addColumns := string(b.Mode), deref(b.AddColumns)
	now := h.Now()
	var d *store.Dataset
	var jobID string
	err := h.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		var err error
		if d, err = h.dataset(ctx, tx, req.ProjectId, req.DatasetId, "datasets:write"); err != nil {
			return err
		}
		// The row lock: one import (or schema change, or deletion) at a time.
		if d, err = store.DatasetByID(ctx, tx, d.ID, true); err != nil {
			return err
		}
		if d.Type == "database" {
			return apierr.Conflict("type", "a connected dataset's rows are its database's: load the file into the database, then refresh the dataset")
		}
		if err := active(d, "a file can be imported into it"); err != nil {
			return err
		}
		if err := h.storageAllowance(ctx, tx, d.OrgID, 0); err != nil {
			return err
		}
		up, err := store.UploadByID(ctx, tx, d.ProjectID, b.FileId)
		switch {
		case errors.Is(err, store.ErrNotFound) || err == nil && up.ClaimedAt == nil && !now.Before(up.ExpiresAt):
			return apierr.Field("body.file_id", "not_found", "no unexpired upload "+b.FileId+" in this project")
		case err != nil:
			return err
		case up.ClaimedAt != nil:
			return apierr.Field("body.file_id", "claimed", "upload "+b.FileId+" was already used by a dataset or an import; upload the file again")
		}
		// The header is read now, so that a file that does not fit is told at once.
		if err := importMisfit(datasets.CheckImport(h.UploadPath(up.StorageKey), up.Format, d, mode, addColumns)); err != nil {
			return err
		}
		if _, ok, err := store.ClaimUpload(ctx, tx, d.ProjectID, up.ID, now); err != nil {
			return err
		} else if !ok {
			return apierr.Field("body.file_id", "claimed", "upload "+b.FileId+" was already used by a dataset or an import; upload the file again")
		}
		p := auth.FromContext(ctx)
		if jobID, err = jobs.Enqueue(ctx, tx, jobs.New{Kind: datasets.KindImport, OrgID: d.OrgID, ResourceType: "dataset", ResourceID: d.ID,
			Payload: datasets.ImportPayload{DatasetID: d.ID, UploadID: up.ID, StorageKey: up.StorageKey, Format: up.Format, Mode: mode,
				AddColumns: addColumns, UserID: p.UserID}}, now); err != nil {
			return err
		}
		if err := store.StartImport(ctx, tx, d, mode, jobID, now); err != nil {
			return err
		}
		imp := map[string]any{"mode": mode, "job_id": jobID, "file_id": up.ID, "add_columns": addColumns}
		if err := h.audit(ctx, tx, d.OrgID, "dataset.import", "dataset", d.ID, d.Name, imp); err != nil {
			return err
		}
		return store.Emit(ctx, tx, "dataset.processing", d.OrgID, map[string]any{"dataset_id": d.ID, "project_id": d.ProjectID, "name": d.Name,
			"import": map[string]any{"mode": mode, "job_id": jobID}}, now)
	})
	if err != nil {
		return nil, err
	}
	out, err := h.datasetOut(ctx, d, false)
	if err != nil {
		return nil, err
	}
	return api.ImportDataset202JSONResponse{Body: out, Headers: api.ImportDataset202ResponseHeaders{Location: "/api/v1/jobs/" + jobID}}, nil
}

// importMisfit turns what CheckImport finds into the 400 that names it: one detail per
// column (file.<name in the file>), body.mode for an upsert without a key, body.file_id for
// a file that cannot be read.
func importMisfit(err error) error {
	var ms datasets.Misfits
	var re *ingest.RowError
	var fe *ingest.FormatError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &ms):
		fields := make([]apierr.FieldError, len(ms))
		for i, m := range ms {
			fields[i] = apierr.FieldError{Field: "file." + m.Column, Code: m.Code, Message: m.Message}
			if m.Column == "" {
				fields[i].Field = "body.mode"
				if m.Code == "too_many_columns" {
					fields[i].Field = "body.add_columns"
				}
			}
		}
		return apierr.Validation(fields...)
	case errors.As(err, &re):
		return apierr.Field("body.file_id", "invalid_file", "the file cannot be read: "+re.Error())
	case errors.As(err, &fe):
		return apierr.New(http.StatusBadRequest, apierr.CodeInvalidFileFormat, fe.Error()).
			WithDetails(map[string]any{"provided_format": fe.Provided, "supported_formats": []string{"csv", "json", "parquet"}})
	}
	return err
}
