package handlers

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"dataplatform/gen/api"
	"dataplatform/handlers/apierr"
	"dataplatform/handlers/auth"
	"dataplatform/store"
	"dataplatform/store/dashboards"
	"dataplatform/templates/docs"

	"github.com/jmoiron/sqlx"
)

// Dashboards implements the dashboard operations. Errors on these
// routes are rendered in the dashboard shape by the central error handler.
type Dashboards struct{ *Handlers }

// dashboardOut is a dashboard as the API answers it; Spec is passed through as stored.
type dashboardOut struct {
	ID             string     `json:"id"`
	ProjectID      string     `json:"project_id"`
	OrganizationID string     `json:"organization_id"`
	DisplayName    string     `json:"display_name"`
	Source         store.JSON `json:"source"`
	Version        int        `json:"version"`
	Spec           store.JSON `json:"spec,omitempty"`
	CanEdit        *bool      `json:"can_edit,omitempty"`
	GeneratedBy    string     `json:"generated_by"`
	Warnings       []string   `json:"warnings,omitempty"`
	Changes        []string   `json:"changes,omitempty"`
	CreatedBy      *string    `json:"created_by"`
	CreatedAt      time.Time  `json:"created_at"`
	UpdatedAt      time.Time  `json:"updated_at"`
}

func dashboardJSON(d *store.Dashboard, withSpec bool, canEdit *bool) dashboardOut {
	o := dashboardOut{ID: d.ID, ProjectID: d.ProjectID, OrganizationID: d.OrgID, DisplayName: d.DisplayName, Source: d.Source,
		Version: d.Version, CanEdit: canEdit, GeneratedBy: d.GeneratedBy, Warnings: d.Warnings, CreatedBy: d.CreatedBy,
		CreatedAt: d.CreatedAt.UTC(), UpdatedAt: d.UpdatedAt.UTC()}
	if withSpec {
		o.Spec = d.Spec
	}
	return o
}

// dashboardETag fingerprints a dashboard's state: every change of its spec or name records a
// version, so the version number and the time of the change identify what it shows.
func dashboardETag(d *store.Dashboard) string {
	h := sha256.Sum256([]byte(d.ID + "\x00" + strconv.Itoa(d.Version) + "\x00" + d.UpdatedAt.UTC().Format(time.RFC3339Nano)))
	return `"` + hex.EncodeToString(h[:16]) + `"`
}

// dashboardResponse answers a dashboard with its ETag; it is the answer of every operation
// that returns one.
type dashboardResponse struct {
	status int
	d      *store.Dashboard
	body   dashboardOut
}

func (r dashboardResponse) write(w http.ResponseWriter) error {
	w.Header().Set("ETag", dashboardETag(r.d))
	return rawJSON{r.status, r.body}.write(w)
}

func (r dashboardResponse) VisitGetDashboardResponse(w http.ResponseWriter) error { return r.write(w) }
func (r dashboardResponse) VisitUpdateDashboardResponse(w http.ResponseWriter) error {
	return r.write(w)
}
func (r dashboardResponse) VisitRestoreDashboardVersionResponse(w http.ResponseWriter) error {
	return r.write(w)
}
func (r dashboardResponse) VisitGenerateDatasetDashboardResponse(w http.ResponseWriter) error {
	return r.write(w)
}
func (r dashboardResponse) VisitGenerateProjectDashboardResponse(w http.ResponseWriter) error {
	return r.write(w)
}
func (r dashboardResponse) VisitGenerateViewDashboardResponse(w http.ResponseWriter) error {
	return r.write(w)
}

// rawJSON answers any JSON body with a status.
type rawJSON struct {
	status int
	body   any
}

func (r rawJSON) write(w http.ResponseWriter) error {
	var buf bytes.Buffer
	if err := json.NewEncoder(&buf).Encode(r.body); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(r.status)
	_, err := w.Write(buf.Bytes())
	return err
}

func (r rawJSON) VisitListDashboardsResponse(w http.ResponseWriter) error        { return r.write(w) }
func (r rawJSON) VisitListProjectDashboardsResponse(w http.ResponseWriter) error { return r.write(w) }
func (r rawJSON) VisitGetDashboardVersionResponse(w http.ResponseWriter) error   { return r.write(w) }
func (r rawJSON) VisitGetDashboardDataResponse(w http.ResponseWriter) error      { return r.write(w) }
func (r rawJSON) VisitGetDashboardTileDataResponse(w http.ResponseWriter) error  { return r.write(w) }

// dashboard loads a dashboard the caller may see with perm, and whether they may edit it.
func (h *Dashboards) dashboard(ctx context.Context, id, perm string) (*store.Dashboard, bool, error) {
	p, err := auth.Caller(ctx)
	if err != nil {
		return nil, false, err
	}
	d, err := store.DashboardForUser(ctx, h.Store.DB, id, p.UserID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, false, apierr.NotFound("dashboard", id)
	} else if err != nil {
		return nil, false, err
	}
	acc, err := h.Allow(ctx, d.OrgID, d.Reach, perm)
	if err != nil {
		return nil, false, err
	}
	return d, acc.Need("visualizations:create") == nil, nil
}

func (h *Dashboards) GetDashboard(ctx context.Context, req api.GetDashboardRequestObject) (api.GetDashboardResponseObject, error) {
	d, canEdit, err := h.dashboard(ctx, req.DashboardId, "dashboards:view")
	if err != nil {
		return nil, err
	}
	return dashboardResponse{http.StatusOK, d, dashboardJSON(d, true, &canEdit)}, nil
}

func (h *Dashboards) ListDashboards(ctx context.Context, req api.ListDashboardsRequestObject) (api.ListDashboardsResponseObject, error) {
	p, err := auth.Caller(ctx)
	if err != nil {
		return nil, err
	}
	if err := auth.AccessFor(p, "", "viewer").Need("dashboards:view"); err != nil {
		return nil, err
	}
	// Each organization's gate holds here too: a refused organization's dashboards are left
	// out, as GET /api/v1/projects leaves out its projects.
	gated, err := h.gatedOrgs(ctx, p.UserID, "")
	if err != nil {
		return nil, err
	}
	return h.list(ctx, store.DashboardFilter{UserID: p.UserID, Search: deref(req.Params.Query), Excluded: gated}, req.Params.Page, req.Params.Limit)
}

func (h *Dashboards) ListProjectDashboards(ctx context.Context, req api.ListProjectDashboardsRequestObject) (api.ListProjectDashboardsResponseObject, error) {
	prj, err := h.project(ctx, nil, req.ProjectId, "dashboards:view")
	if err != nil {
		return nil, err
	}
	p, _ := auth.Caller(ctx)
	return h.list(ctx, store.DashboardFilter{UserID: p.UserID, ProjectID: prj.ID, Search: deref(req.Params.Query)}, req.Params.Page, req.Params.Limit)
}

func (h *Dashboards) list(ctx context.Context, f store.DashboardFilter, pgp, lim *int) (rawJSON, error) {
	pg, limit, offset := page(pgp, lim)
	f.Limit, f.Offset = limit, offset
	ds, total, err := store.ListDashboards(ctx, h.Store.DB, f)
	if err != nil {
		return rawJSON{}, err
	}
	out := make([]dashboardOut, len(ds))
	for i := range ds {
		out[i] = dashboardJSON(&ds[i], false, nil)
	}
	return rawJSON{http.StatusOK, map[string]any{"dashboards": out, "pagination": paginate(ctx, pg, limit, total)}}, nil
}

// change runs fn on the dashboard, locked in a transaction, after checking the caller may
// edit it and that If-Match (when sent) is its current ETag.
func (h *Dashboards) change(ctx context.Context, id string, ifMatch *string, fn func(tx *sqlx.Tx, d *store.Dashboard) error) (*store.Dashboard, error) {
	d, _, err := h.dashboard(ctx, id, "visualizations:create")
	if err != nil {
		return nil, err
	}
	err = h.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		cur, err := store.LockDashboard(ctx, tx, id)
		if errors.Is(err, store.ErrNotFound) {
			return apierr.NotFound("dashboard", id)
		} else if err != nil {
			return err
		}
		cur.Reach = d.Reach
		if ifMatch != nil && !etagMatches(*ifMatch, dashboardETag(cur)) {
			return apierr.New(http.StatusPreconditionFailed, apierr.CodeDashboardModified,
				"the dashboard changed since that ETag (it is now version "+strconv.Itoa(cur.Version)+"); read it again and retry")
		}
		d = cur
		return fn(tx, cur)
	})
	return d, err
}

// etagMatches reads If-Match: *, or a list of (possibly weak) ETags.
func etagMatches(header, etag string) bool {
	for _, t := range splitList(header) {
		if t == "*" || t == etag || t == "W/"+etag {
			return true
		}
	}
	return false
}

func splitList(s string) []string {
	var out []string
	for _, p := range bytes.Split([]byte(s), []byte(",")) {
		if t := string(bytes.TrimSpace(p)); t != "" {
			out = append(out, t)
		}
	}
	return out
}

// keptVersions is how many unpinned versions a dashboard keeps.
func (h *Handlers) keptVersions() int {
	if n := h.Config.DashboardVersionsKept; n > 0 {
		return n
	}
	return 50
}

// newVersion records spec as the dashboard's new version of kind.
func (h *Dashboards) newVersion(ctx context.Context, tx *sqlx.Tx, d *store.Dashboard, kind, name string, spec store.JSON, message *string, restoredFrom *int) error {
	p, err := auth.Caller(ctx)
	if err != nil {
		return err
	}
	v := &store.DashboardVersion{ID: store.NewID("dshv"), DashboardID: d.ID, Kind: kind, Message: message, DisplayName: name,
		Spec: spec, RestoredFrom: restoredFrom, CreatedBy: &p.UserID, CreatedAt: h.Now()}
	return store.SaveDashboardVersion(ctx, tx, d, v, h.keptVersions())
}

func (h *Dashboards) UpdateDashboard(ctx context.Context, req api.UpdateDashboardRequestObject) (api.UpdateDashboardResponseObject, error) {
	raw, err := json.Marshal(req.Body.Spec)
	if err != nil {
		return nil, err
	}
	var spec dashboards.Spec
	if err := json.Unmarshal(raw, &spec); err != nil {
		return nil, apierr.Field("body.spec", "type", err.Error())
	}
	d, _, err := h.dashboard(ctx, req.DashboardId, "visualizations:create")
	if err != nil {
		return nil, err
	}
	if err := h.checkSpec(ctx, d.ProjectID, &spec, "body.spec."); err != nil {
		return nil, err
	}
	if raw, err = json.Marshal(spec); err != nil {
		return nil, err
	}
	d, err = h.change(ctx, req.DashboardId, req.Params.IfMatch, func(tx *sqlx.Tx, d *store.Dashboard) error {
		name := d.DisplayName
		if req.Body.DisplayName != nil {
			name = *req.Body.DisplayName
		}
		if err := h.newVersion(ctx, tx, d, "edit", name, raw, req.Body.Message, nil); err != nil {
			return err
		}
		return h.audit(ctx, tx, d.OrgID, "dashboard.update", "dashboard", d.ID, d.DisplayName, map[string]any{"version": d.Version})
	})
	if err != nil {
		return nil, err
	}
	yes := true
	return dashboardResponse{http.StatusOK, d, dashboardJSON(d, true, &yes)}, nil
}

// checkSpec holds a spec to what its schema cannot say (dashboards.Spec.Check) and prepares
// every tile's query against the project's datasets and views, without running it.
func (h *Dashboards) checkSpec(ctx context.Context, projectID string, spec *dashboards.Spec, prefix string) error {
	var fes []apierr.FieldError
	for _, p := range spec.Check(prefix) {
		fes = append(fes, apierr.FieldError{Field: p.Field, Code: p.Code, Message: p.Message})
	}
	if len(fes) > 0 {
		return apierr.Validation(fes...)
	}
	prj, err := h.project(ctx, nil, projectID, "visualizations:create")
	if err != nil {
		return err
	}
	ts, err := h.tiles(ctx, prj)
	if err != nil {
		return err
	}
	for _, pt := range spec.Tiles() {
		if _, err := ts.prepare(ctx, pt.Tile.Query.SQL, nil); err != nil {
			msg := err.Error()
			var ae *apierr.Error
			if errors.As(err, &ae) {
				msg = ae.Message
			}
			fes = append(fes, apierr.FieldError{Field: prefix + pt.Path + ".query.sql", Code: "invalid_query", Message: msg})
		}
	}
	if len(fes) > 0 {
		return apierr.Validation(fes...)
	}
	return nil
}

func (h *Dashboards) DeleteDashboard(ctx context.Context, req api.DeleteDashboardRequestObject) (api.DeleteDashboardResponseObject, error) {
	_, err := h.change(ctx, req.DashboardId, req.Params.IfMatch, func(tx *sqlx.Tx, d *store.Dashboard) error {
		if err := store.DeleteDashboard(ctx, tx, d.ID); err != nil {
			return err
		}
		return h.audit(ctx, tx, d.OrgID, "dashboard.delete", "dashboard", d.ID, d.DisplayName, nil)
	})
	if err != nil {
		return nil, err
	}
	return api.DeleteDashboard204Response{}, nil
}

// versionOut is a version as the API answers it.
type versionOut struct {
	ID           string     `json:"id"`
	DashboardID  string     `json:"dashboard_id"`
	Number       int        `json:"number"`
	Kind         string     `json:"kind"`
	Message      *string    `json:"message"`
	DisplayName  string     `json:"display_name"`
	Pinned       bool       `json:"pinned"`
	Current      bool       `json:"current"`
	RestoredFrom *int       `json:"restored_from"`
	CreatedBy    *string    `json:"created_by"`
	CreatedAt    time.Time  `json:"created_at"`
	Spec         store.JSON `json:"spec,omitempty"`
}

func versionJSON(v *store.DashboardVersion, current int) versionOut {
	return versionOut{ID: v.ID, DashboardID: v.DashboardID, Number: v.Number, Kind: v.Kind, Message: v.Message, DisplayName: v.DisplayName,
		Pinned: v.Pinned, Current: v.Number == current, RestoredFrom: v.RestoredFrom, CreatedBy: v.CreatedBy, CreatedAt: v.CreatedAt.UTC(), Spec: v.Spec}
}

func (h *Dashboards) ListDashboardVersions(ctx context.Context, req api.ListDashboardVersionsRequestObject) (api.ListDashboardVersionsResponseObject, error) {
	d, _, err := h.dashboard(ctx, req.DashboardId, "dashboards:view")
	if err != nil {
		return nil, err
	}
	pg, limit, offset := page(req.Params.Page, req.Params.Limit)
	vs, total, err := store.DashboardVersions(ctx, h.Store.DB, d.ID, limit, offset)
	if err != nil {
		return nil, err
	}
	out := make([]versionOut, len(vs))
	for i := range vs {
		out[i] = versionJSON(&vs[i], d.Version)
	}
	return versionList{map[string]any{"versions": out, "pagination": paginate(ctx, pg, limit, total)}}, nil
}

type versionList struct{ body any }

func (r versionList) VisitListDashboardVersionsResponse(w http.ResponseWriter) error {
	return rawJSON{http.StatusOK, r.body}.write(w)
}

func (h *Dashboards) version(ctx context.Context, dashboardID, versionID, perm string) (*store.Dashboard, *store.DashboardVersion, error) {
	d, _, err := h.dashboard(ctx, dashboardID, perm)
	if err != nil {
		return nil, nil, err
	}
	v, err := store.DashboardVersionByID(ctx, h.Store.DB, d.ID, versionID)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil, apierr.NotFound("dashboard version", versionID)
	}
	return d, v, err
}

func (h *Dashboards) GetDashboardVersion(ctx context.Context, req api.GetDashboardVersionRequestObject) (api.GetDashboardVersionResponseObject, error) {
	d, v, err := h.version(ctx, req.DashboardId, req.VersionId, "dashboards:view")
	if err != nil {
		return nil, err
	}
	return rawJSON{http.StatusOK, versionJSON(v, d.Version)}, nil
}

// versionAnswer answers a version without its spec.
type versionAnswer struct{ v versionOut }

func (r versionAnswer) write(w http.ResponseWriter) error {
	return rawJSON{http.StatusOK, r.v}.write(w)
}
func (r versionAnswer) VisitRenameDashboardVersionResponse(w http.ResponseWriter) error {
	return r.write(w)
}
func (r versionAnswer) VisitPinDashboardVersionResponse(w http.ResponseWriter) error {
	return r.write(w)
}
func (r versionAnswer) VisitUnpinDashboardVersionResponse(w http.ResponseWriter) error {
	return r.write(w)
}

// setVersion renames (message) or pins a version.
func (h *Dashboards) setVersion(ctx context.Context, dashboardID, versionID string, message *string, pinned *bool, action string) (versionAnswer, error) {
	d, v, err := h.version(ctx, dashboardID, versionID, "visualizations:create")
	if err != nil {
		return versionAnswer{}, err
	}
	err = h.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		if v, err = store.UpdateDashboardVersion(ctx, tx, d.ID, versionID, message, pinned); errors.Is(err, store.ErrNotFound) {
			return apierr.NotFound("dashboard version", versionID)
		} else if err != nil {
			return err
		}
		return h.audit(ctx, tx, d.OrgID, action, "dashboard", d.ID, d.DisplayName, map[string]any{"version": v.Number})
	})
	if err != nil {
		return versionAnswer{}, err
	}
	return versionAnswer{versionJSON(v, d.Version)}, nil
}

func (h *Dashboards) RenameDashboardVersion(ctx context.Context, req api.RenameDashboardVersionRequestObject) (api.RenameDashboardVersionResponseObject, error) {
	var msg *string
	if m := req.Body.Message; m != nil && *m != "" {
		msg = m
	}
	// A nil message with no pin clears the name (UpdateDashboardVersion).
	return h.setVersion(ctx, req.DashboardId, req.VersionId, msg, nil, "dashboard.version_rename")
}

func (h *Dashboards) PinDashboardVersion(ctx context.Context, req api.PinDashboardVersionRequestObject) (api.PinDashboardVersionResponseObject, error) {
	return h.setVersion(ctx, req.DashboardId, req.VersionId, nil, ptr(true), "dashboard.version_pin")
}

func (h *Dashboards) UnpinDashboardVersion(ctx context.Context, req api.UnpinDashboardVersionRequestObject) (api.UnpinDashboardVersionResponseObject, error) {
	return h.setVersion(ctx, req.DashboardId, req.VersionId, nil, ptr(false), "dashboard.version_unpin")
}

func (h *Dashboards) RestoreDashboardVersion(ctx context.Context, req api.RestoreDashboardVersionRequestObject) (api.RestoreDashboardVersionResponseObject, error) {
	_, v, err := h.version(ctx, req.DashboardId, req.VersionId, "visualizations:create")
	if err != nil {
		return nil, err
	}
	d, err := h.change(ctx, req.DashboardId, req.Params.IfMatch, func(tx *sqlx.Tx, d *store.Dashboard) error {
		if err := h.newVersion(ctx, tx, d, "restore", v.DisplayName, v.Spec, nil, &v.Number); err != nil {
			return err
		}
		return h.audit(ctx, tx, d.OrgID, "dashboard.restore", "dashboard", d.ID, d.DisplayName, map[string]any{"restored": v.Number, "version": d.Version})
	})
	if err != nil {
		return nil, err
	}
	yes := true
	return dashboardResponse{http.StatusOK, d, dashboardJSON(d, true, &yes)}, nil
}

// dashboardPage is the HTML page that draws a dashboard.
type dashboardPage struct{ id, title string }

func (p dashboardPage) VisitGetDashboardPageResponse(w http.ResponseWriter) error {
	return docs.RenderDashboard(w, p.id, p.title)
}

// GetDashboardPage is GET /dashboards/{id}: the page a person opens; a browser without
// credentials was sent to the sign-in page by the authentication middleware.
func (h *Dashboards) GetDashboardPage(ctx context.Context, req api.GetDashboardPageRequestObject) (api.GetDashboardPageResponseObject, error) {
	d, _, err := h.dashboard(ctx, req.DashboardId, "dashboards:view")
	if err != nil {
		return nil, err
	}
	return dashboardPage{d.ID, d.DisplayName}, nil
}
