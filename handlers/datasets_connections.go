package handlers

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"time"

	"dataplatform/gen/api"
	"dataplatform/handlers/apierr"
	"dataplatform/handlers/auth"
	"dataplatform/store"
	"dataplatform/store/datasets"
	"dataplatform/store/extdb"
	"dataplatform/store/jobs"

	"github.com/jmoiron/sqlx"
)

func (h *Datasets) connectionOf(c api.DatabaseConnection, o *api.DatabaseOptions) (extdb.Config, extdb.Options) {
	cfg := extdb.Config{Type: string(c.Type), Host: c.Host, Port: deref(c.Port), Database: c.Database, Username: c.Username,
		Password: deref(c.Password), SSLMode: string(deref(c.SslMode)), Networks: h.Config.ConnectionNetworks}
	cfg.Normalize()
	var opts extdb.Options
	if o != nil {
		opts.Schemas, opts.ExcludeTables = deref(o.Schemas), deref(o.ExcludeTables)
		opts.SampleRows = int64(deref(o.SampleRows))
	}
	if opts.SampleRows == 0 {
		opts.SampleRows = datasets.DefaultSampleRows
	}
	return cfg, opts
}

func (h *Datasets) TestDatabaseConnection(ctx context.Context, req api.TestDatabaseConnectionRequestObject) (api.TestDatabaseConnectionResponseObject, error) {
	if _, err := h.project(ctx, nil, req.ProjectId, "datasets:write"); err != nil {
		return nil, err
	}
	cfg, opts := h.connectionOf(req.Body.Connection, req.Body.Options)
	start := time.Now()
	info, err := extdb.Test(ctx, cfg, opts)
	out := api.TestDatabaseConnection200JSONResponse{}
	out.Details.DurationMs = ptr(time.Since(start).Milliseconds())
	if err != nil {
		out.Message = "could not connect to " + cfg.Type + " at " + cfg.Host + ": " + err.Error()
		return out, nil
	}
	names := make([]string, len(info.Tables))
	for i, t := range info.Tables {
		names[i] = t.Schema + "." + t.Name
	}
	out.Success, out.Message = true, "connected"
	out.Details.Version, out.Details.SchemasFound, out.Details.TableCount, out.Details.AccessibleTables = &info.Version, &info.Schemas, ptr(len(names)), &names
	if len(names) == 0 {
		out.Message = "connected, but the options select no table the user can read"
	}
	return out, nil
}

func (h *Datasets) CreateDatabaseDataset(ctx context.Context, req api.CreateDatabaseDatasetRequestObject) (api.CreateDatabaseDatasetResponseObject, error) {
	b := req.Body
	if _, err := h.project(ctx, nil, req.ProjectId, "datasets:write"); err != nil {
		return nil, err
	}
	cfg, opts := h.connectionOf(b.Connection, b.Options)
	// The database is read before the transaction opens: a slow one holds no locks here.
	info, err := extdb.Introspect(ctx, cfg, opts)
	if err != nil {
		return nil, apierr.New(http.StatusBadRequest, apierr.CodeConnectionFailed, "could not connect to "+cfg.Type+" at "+cfg.Host+": "+err.Error()).
			WithDetails(map[string]any{"type": cfg.Type, "host": cfg.Host, "port": cfg.Port, "reason": err.Error()})
	}
	if len(info.Tables) == 0 {
		return nil, apierr.Field("body.options", "no_tables", "the options select no table the user can read")
	}
	now := h.Now()
	var d *store.Dataset
	err = h.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		prj, err := h.project(ctx, tx, req.ProjectId, "datasets:write")
		if err != nil {
			return err
		}
		p := auth.FromContext(ctx)
		d = &store.Dataset{ID: store.NewID("ds"), ProjectID: prj.ID, OrgID: prj.OrgID, Name: b.Name, Description: b.Description,
			Type: "database", Status: "processing", SourceType: cfg.Type, TableSchema: "", Columns: "[]", CreatedBy: &p.UserID,
			CreatedAt: now, UpdatedAt: now}
		d.TableSchema = d.ID
		jobID, err := jobs.Enqueue(ctx, tx, jobs.New{Kind: datasets.KindIngest, OrgID: prj.OrgID, ResourceType: "dataset",
			ResourceID: d.ID, Payload: datasets.Payload{DatasetID: d.ID}}, now)
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
		tables, err := datasets.Connect(ctx, tx, d, cfg, opts, info, now)
		if errors.Is(err, datasets.ErrWrapperMissing) {
			return apierr.New(http.StatusNotImplemented, apierr.CodeNotSupported, "the platform's database has no foreign data wrapper for "+cfg.Type).
				WithDetails(map[string]any{"type": cfg.Type})
		} else if err != nil {
			return err
		}
		tj, _ := json.Marshal(tables)
		d.Tables = ptr(string(tj))
		if err := store.SetDatasetTables(ctx, tx, d.ID, *d.Tables); err != nil {
			return err
		}
		oj, _ := json.Marshal(opts)
		if err := store.CreateConnection(ctx, tx, &store.Connection{DatasetID: d.ID, Type: cfg.Type, Host: cfg.Host, Port: cfg.Port,
			Database: cfg.Database, Username: cfg.Username, PasswordEnc: h.Secrets.Seal([]byte(cfg.Password)), SSLMode: cfg.SSLMode,
			Options: string(oj), ServerName: datasets.ServerName(d.ID)}); err != nil {
			return err
		}
		return h.created(ctx, tx, d, map[string]any{"project_id": prj.ID,
			"connection": map[string]any{"type": cfg.Type, "host": cfg.Host, "port": cfg.Port, "database": cfg.Database}})
	})
	if err != nil {
		return nil, err
	}
	out, err := h.datasetOut(ctx, d, false)
	if err != nil {
		return nil, err
	}
	return api.CreateDatabaseDataset202JSONResponse{Body: out,
		Headers: api.CreateDatabaseDataset202ResponseHeaders{Location: "/api/v1/projects/" + d.ProjectID + "/datasets/" + d.ID}}, nil
}
