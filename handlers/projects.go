package handlers

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"strconv"

	"dataplatform/gen/api"
	"dataplatform/handlers/apierr"
	"dataplatform/handlers/auth"
	"dataplatform/store"

	"github.com/jmoiron/sqlx"
)

// Projects implements projects.
type Projects struct{ *Handlers }

func projectOut(p *store.Project) api.Project {
	return api.Project{Id: p.ID, OrganizationId: p.OrgID, Name: p.Name, Description: p.Description, CreatedBy: p.CreatedBy,
		CreatedAt: p.CreatedAt, UpdatedAt: p.UpdatedAt, DatasetCount: p.DatasetCount, Visibility: api.ProjectVisibility(p.Visibility)}
}

// project loads a project the caller can see and checks each of perms in its organization; tx
// is nil outside a transaction.
func (h *Handlers) project(ctx context.Context, tx *sqlx.Tx, id string, perms ...string) (*store.Project, error) {
	p, err := auth.Caller(ctx)
	if err != nil {
		return nil, err
	}
	var prj *store.Project
	if tx != nil {
		prj, err = store.ProjectForUser(ctx, tx, id, p.UserID)
	} else {
		prj, err = h.Store.ProjectForUser(ctx, id, p.UserID)
	}
	if errors.Is(err, store.ErrNotFound) {
		return nil, apierr.NotFound("project", id)
	} else if err != nil {
		return nil, err
	}
	_, err = h.Allow(ctx, prj.OrgID, prj.Reach, perms...)
	return prj, err
}

func (h *Projects) ListProjects(ctx context.Context, req api.ListProjectsRequestObject) (api.ListProjectsResponseObject, error) {
	p, acc, err := h.access(ctx, h.Store.DB, req.OrganizationId)
	if err != nil {
		return nil, err
	}
	if err := acc.Need("datasets:list"); err != nil {
		return nil, err
	}
	pg, limit, offset := page(req.Params.Page, req.Params.Limit)
	ps, total, err := store.ListProjects(ctx, h.Store.DB, req.OrganizationId, p.UserID, deref(req.Params.Search), limit, offset)
	if err != nil {
		return nil, err
	}
	out := api.ListProjects200JSONResponse{Projects: []api.Project{}, Pagination: paginate(ctx, pg, limit, total)}
	for i := range ps {
		out.Projects = append(out.Projects, projectOut(&ps[i]))
	}
	return out, nil
}

// gatedOrgs are the caller's organizations whose gate (IP allowlist, two-factor requirement)
// refuses this request: lists across organizations leave them out. Asking for one of them
// alone (only) is refused as its own list would be.
func (h *Handlers) gatedOrgs(ctx context.Context, userID, only string) ([]string, error) {
	orgs, err := store.UserOrganizations(ctx, h.Store.DB, userID)
	if err != nil {
		return nil, err
	}
	var gated []string
	for _, o := range orgs {
		if err := h.Gate(ctx, o.OrgID); err != nil {
			var ae *apierr.Error
			if !errors.As(err, &ae) || o.OrgID == only {
				return nil, err
			}
			gated = append(gated, o.OrgID)
		}
	}
	return gated, nil
}

// ListMyProjects is GET /api/v1/projects: the caller's projects in every organization.
func (h *Projects) ListMyProjects(ctx context.Context, req api.ListMyProjectsRequestObject) (api.ListMyProjectsResponseObject, error) {
	p, err := auth.Caller(ctx)
	if err != nil {
		return nil, err
	}
	// Every role may list projects; a key may be narrower than its owner.
	if err := auth.AccessFor(p, "", "viewer").Need("datasets:list"); err != nil {
		return nil, err
	}
	gated, err := h.gatedOrgs(ctx, p.UserID, deref(req.Params.OrganizationId))
	if err != nil {
		return nil, err
	}
	pg, limit, offset := page(req.Params.Page, req.Params.Limit)
	ps, total, err := store.ListMemberProjects(ctx, h.Store.DB, p.UserID, deref(req.Params.OrganizationId), deref(req.Params.Search), gated, limit, offset)
	if err != nil {
		return nil, err
	}
	out := api.ListMyProjects200JSONResponse{Projects: []api.MemberProject{}, Pagination: paginate(ctx, pg, limit, total)}
	for i := range ps {
		o := projectOut(&ps[i].Project)
		m := api.MemberProject{Id: o.Id, OrganizationId: o.OrganizationId, Name: o.Name, Description: o.Description, CreatedBy: o.CreatedBy,
			CreatedAt: o.CreatedAt, UpdatedAt: o.UpdatedAt, DatasetCount: o.DatasetCount, Visibility: o.Visibility, Role: api.MemberProjectRole(ps[i].Role)}
		m.Organization.Id, m.Organization.Name, m.Organization.Slug = ps[i].OrgID, ps[i].OrgName, ps[i].OrgSlug
		out.Projects = append(out.Projects, m)
	}
	return out, nil
}

func (h *Projects) CreateProject(ctx context.Context, req api.CreateProjectRequestObject) (api.CreateProjectResponseObject, error) {
	now := h.Now()
	prj := &store.Project{ID: store.NewID("prj"), OrgID: req.OrganizationId, Name: req.Body.Name, CreatedAt: now, UpdatedAt: now}
	if d := deref(req.Body.Description); d != "" {
		prj.Description = &d
	}
	err := h.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		p, acc, err := h.access(ctx, tx, req.OrganizationId)
		if err != nil {
			return err
		}
		// A team's projects.create lets its members create projects, which the team is given.
		var teams []string
		if err := acc.Need("datasets:write"); err != nil {
			if p.KeyID != "" && !slices.Contains(p.KeyPermissions, "datasets:write") {
				return err
			}
			if teams, err = store.UserTeamsWith(ctx, tx, req.OrganizationId, p.UserID, "projects.create"); err != nil || len(teams) == 0 {
				return cmp.Or(err, acc.Need("datasets:write"))
			}
		}
		prj.CreatedBy = &p.UserID
		if err := store.LockOrganization(ctx, tx, req.OrganizationId); err != nil {
			return err
		}
		org, err := store.OrganizationForUser(ctx, tx, req.OrganizationId, p.UserID)
		if err != nil {
			return err
		}
		if req.Body.Visibility != nil {
			prj.Visibility = string(*req.Body.Visibility)
		} else {
			prj.Visibility = h.settings(org).Defaults.ProjectVisibility
		}
		if pl := planOf(org.PlanTier); org.ProjectCount >= pl.Projects {
			return pl.limitExceeded("projects", int64(org.ProjectCount), int64(pl.Projects), "allows "+strconv.Itoa(pl.Projects)+" projects")
		}
		if err := store.CreateProject(ctx, tx, prj); err != nil {
			return conflictOn(err, "name", "a project named "+prj.Name+" already exists in this organization")
		}
		for _, t := range teams {
			if _, _, err := store.GrantTeamProject(ctx, tx, prj.OrgID, t, prj.ID, "developer", now); err != nil {
				return err
			}
		}
		var details map[string]any
		if teams != nil {
			details = map[string]any{"granted_teams": teams}
		}
		return h.audit(ctx, tx, prj.OrgID, "project.create", "project", prj.ID, prj.Name, details)
	})
	if err != nil {
		return nil, err
	}
	return api.CreateProject201JSONResponse{Body: projectOut(prj),
		Headers: api.CreateProject201ResponseHeaders{Location: "/api/v1/projects/" + prj.ID}}, nil
}

func (h *Projects) GetProject(ctx context.Context, req api.GetProjectRequestObject) (api.GetProjectResponseObject, error) {
	prj, err := h.project(ctx, nil, req.ProjectId, "datasets:list")
	if err != nil {
		return nil, err
	}
	return api.GetProject200JSONResponse(projectOut(prj)), nil
}

func (h *Projects) UpdateProject(ctx context.Context, req api.UpdateProjectRequestObject) (api.UpdateProjectResponseObject, error) {
	var prj *store.Project
	err := h.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		var err error
		if prj, err = h.project(ctx, tx, req.ProjectId, "datasets:write", "projects.update"); err != nil {
			return err
		}
		changes := map[string]any{}
		patchText(changes, "name", req.Body.Name, &prj.Name)
		patchText(changes, "description", req.Body.Description, &prj.Description)
		if v := req.Body.Visibility; v != nil && string(*v) != prj.Visibility {
			// Who may see a project is the organization's call, not its editors'.
			if err := (auth.Access{Role: prj.Role}).NeedRole("admin"); err != nil {
				return err
			}
			changes["visibility"], prj.Visibility = *v, string(*v)
		}
		prj.UpdatedAt = h.Now()
		if err := store.UpdateProject(ctx, tx, prj); err != nil {
			return conflictOn(err, "name", "a project named "+prj.Name+" already exists in this organization")
		}
		return h.audit(ctx, tx, prj.OrgID, "project.update", "project", prj.ID, prj.Name, map[string]any{"changes": changes})
	})
	if err != nil {
		return nil, err
	}
	return api.UpdateProject200JSONResponse(projectOut(prj)), nil
}

func (h *Projects) DeleteProject(ctx context.Context, req api.DeleteProjectRequestObject) (api.DeleteProjectResponseObject, error) {
	var files []string
	err := h.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		prj, err := h.project(ctx, tx, req.ProjectId, "datasets:delete", "projects.delete")
		if err != nil {
			return err
		}
		if files, err = h.dropDatasetData(ctx, tx, "project", prj.ID); err != nil {
			return err
		}
		if err := store.DeleteProject(ctx, tx, prj.ID); err != nil {
			return err
		}
		return h.audit(ctx, tx, prj.OrgID, "project.delete", "project", prj.ID, prj.Name, map[string]any{"dataset_count": prj.DatasetCount})
	})
	if err != nil {
		return nil, err
	}
	h.removeFiles(files)
	return api.DeleteProject204Response{}, nil
}
