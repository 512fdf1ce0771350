package handlers

import (
	"context"
	"errors"
	"net/http"
	"slices"

	"dataplatform/gen/api"
	"dataplatform/handlers/apierr"
	"dataplatform/store"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// teamOut is a team as the API shows it; members and projects only in a team's own answers.
func teamOut(t *store.Team, members []store.TeamMember, projects []store.TeamProject) api.Team {
	out := api.Team{Id: t.ID, OrganizationId: t.OrgID, Name: t.Name, Slug: t.Slug, Description: t.Description,
		Permissions: []api.TeamPermission{}, MemberCount: t.MemberCount, ProjectCount: t.ProjectCount,
		CreatedAt: t.CreatedAt, UpdatedAt: t.UpdatedAt}
	for _, p := range t.Permissions {
		out.Permissions = append(out.Permissions, api.TeamPermission(p))
	}
	if members != nil {
		ms := make([]api.TeamMember, len(members))
		for i, m := range members {
			ms[i] = api.TeamMember{Id: m.ID, Name: m.Name, Email: m.Email, Role: api.TeamRole(m.Role), JoinedAt: m.JoinedAt}
		}
		out.Members = &ms
	}
	if projects != nil {
		ps := make([]api.TeamProject, len(projects))
		for i, p := range projects {
			ps[i] = api.TeamProject{Id: p.ID, Name: p.Name, Role: api.TeamProjectRole(p.Role), Visibility: api.ProjectVisibility(p.Visibility)}
		}
		out.Projects = &ps
	}
	return out
}

// teamDetail loads a team with its members and projects.
func teamDetail(ctx context.Context, q sqlx.QueryerContext, orgID, id string) (api.Team, error) {
	t, err := store.TeamByID(ctx, q, orgID, id)
	if errors.Is(err, store.ErrNotFound) {
		return api.Team{}, apierr.NotFound("team", id)
	} else if err != nil {
		return api.Team{}, err
	}
	members, err := store.TeamMembers(ctx, q, id)
	if err != nil {
		return api.Team{}, err
	}
	projects, err := store.TeamProjects(ctx, q, id)
	if err != nil {
		return api.Team{}, err
	}
	return teamOut(t, members, projects), nil
}

// teamReader checks that the caller may see the organization's teams: any member.
func (o *Orgs) teamReader(ctx context.Context, q sqlx.QueryerContext, orgID string) error {
	_, acc, err := o.access(ctx, q, orgID)
	if err != nil {
		return err
	}
	return acc.Need("datasets:list")
}

func (o *Orgs) ListTeams(ctx context.Context, req api.ListTeamsRequestObject) (api.ListTeamsResponseObject, error) {
	if err := o.teamReader(ctx, o.Store.DB, req.OrganizationId); err != nil {
		return nil, err
	}
	pg, limit, offset := page(req.Params.Page, req.Params.Limit)
	teams, total, err := store.ListTeams(ctx, o.Store.DB, req.OrganizationId, deref(req.Params.Search), limit, offset)
	if err != nil {
		return nil, err
	}
	out := api.ListTeams200JSONResponse{Teams: make([]api.Team, len(teams))}
	for i := range teams {
		out.Teams[i] = teamOut(&teams[i], nil, nil)
	}
	out.Pagination = paginate(ctx, pg, limit, total)
	return out, nil
}

func (o *Orgs) GetTeam(ctx context.Context, req api.GetTeamRequestObject) (api.GetTeamResponseObject, error) {
	if err := o.teamReader(ctx, o.Store.DB, req.OrganizationId); err != nil {
		return nil, err
	}
	t, err := teamDetail(ctx, o.Store.DB, req.OrganizationId, req.TeamId)
	if err != nil {
		return nil, err
	}
	return api.GetTeam200JSONResponse(t), nil
}

// teamPermissions are the permissions given, or the default (projects.read) when none are.
func teamPermissions(ps *[]api.TeamPermission) pq.StringArray {
	if ps == nil {
		return pq.StringArray{"projects.read"}
	}
	out := pq.StringArray{}
	for _, p := range *ps {
		out = append(out, string(p))
	}
	return out
}

func (o *Orgs) CreateTeam(ctx context.Context, req api.CreateTeamRequestObject) (api.CreateTeamResponseObject, error) {
	b := req.Body
	now := o.Now()
	t := &store.Team{ID: store.NewID("tm"), OrgID: req.OrganizationId, Name: b.Name, Description: b.Description,
		Permissions: teamPermissions(b.Permissions), CreatedAt: now, UpdatedAt: now}
	err := o.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		p, _, err := o.manager(ctx, tx, req.OrganizationId)
		if err != nil {
			return err
		}
		if p.UserID != "" {
			t.CreatedBy = &p.UserID
		}
		if b.Slug != nil {
			t.Slug = *b.Slug
		} else if t.Slug, err = freeSlug(slugFrom(b.Name, "team"), func(s string) (bool, error) { return store.TeamSlugTaken(ctx, tx, t.OrgID, s) }); err != nil {
			return err
		}
		if err := store.CreateTeam(ctx, tx, t); err != nil {
			return conflictOn(err, "slug", "the organization already has a team with the slug "+t.Slug)
		}
		if err := o.audit(ctx, tx, t.OrgID, "team.create", "team", t.ID, t.Name, map[string]any{"slug": t.Slug, "permissions": []string(t.Permissions)}); err != nil {
			return err
		}
		return store.Emit(ctx, tx, "team.created", t.OrgID, map[string]any{"id": t.ID, "name": t.Name, "slug": t.Slug}, now)
	})
	if err != nil {
		return nil, err
	}
	loc := "/api/v1/organizations/" + t.OrgID + "/teams/" + t.ID
	// A new team has no members and no projects yet.
	return api.CreateTeam201JSONResponse{Body: teamOut(t, []store.TeamMember{}, []store.TeamProject{}), Headers: api.CreateTeam201ResponseHeaders{Location: &loc}}, nil
}

func (o *Orgs) UpdateTeam(ctx context.Context, req api.UpdateTeamRequestObject) (api.UpdateTeamResponseObject, error) {
	b := req.Body
	var out api.Team
	err := o.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		t, err := o.managedTeam(ctx, tx, req.OrganizationId, req.TeamId)
		if err != nil {
			return err
		}
		changed := map[string]any{}
		patchText(changed, "name", b.Name, &t.Name)
		patchText(changed, "slug", b.Slug, &t.Slug)
		patchText(changed, "description", b.Description, &t.Description)
		if b.Permissions != nil {
			t.Permissions = teamPermissions(b.Permissions)
			changed["permissions"] = []string(t.Permissions)
		}
		t.UpdatedAt = o.Now()
		if err := store.UpdateTeam(ctx, tx, t); err != nil {
			return conflictOn(err, "slug", "the organization already has a team with the slug "+t.Slug)
		}
		if err := o.audit(ctx, tx, t.OrgID, "team.update", "team", t.ID, t.Name, changed); err != nil {
			return err
		}
		if err := store.Emit(ctx, tx, "team.updated", t.OrgID, map[string]any{"id": t.ID, "changes": changed}, t.UpdatedAt); err != nil {
			return err
		}
		out, err = teamDetail(ctx, tx, t.OrgID, t.ID)
		return err
	})
	if err != nil {
		return nil, err
	}
	return api.UpdateTeam200JSONResponse(out), nil
}

func (o *Orgs) DeleteTeam(ctx context.Context, req api.DeleteTeamRequestObject) (api.DeleteTeamResponseObject, error) {
	err := o.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		t, err := o.managedTeam(ctx, tx, req.OrganizationId, req.TeamId)
		if err != nil {
			return err
		}
		if err := store.DeleteTeam(ctx, tx, t.OrgID, t.ID); err != nil {
			return err
		}
		if err := o.audit(ctx, tx, t.OrgID, "team.delete", "team", t.ID, t.Name, map[string]any{"members": t.MemberCount}); err != nil {
			return err
		}
		return store.Emit(ctx, tx, "team.deleted", t.OrgID, map[string]any{"id": t.ID, "slug": t.Slug}, o.Now())
	})
	if err != nil {
		return nil, err
	}
	return api.DeleteTeam204Response{}, nil
}

// managedTeam checks that the caller administers the organization's teams, then locks and
// loads the team.
func (o *Orgs) managedTeam(ctx context.Context, tx *sqlx.Tx, orgID, teamID string) (*store.Team, error) {
	if _, _, err := o.manager(ctx, tx, orgID); err != nil {
		return nil, err
	}
	if err := o.lockTeam(ctx, tx, orgID, teamID); err != nil {
		return nil, err
	}
	return store.TeamByID(ctx, tx, orgID, teamID)
}

// lockTeam locks the team's row (its members change one at a time), 404 when the
// organization has no such team.
func (o *Orgs) lockTeam(ctx context.Context, tx *sqlx.Tx, orgID, teamID string) error {
	err := store.LockTeam(ctx, tx, orgID, teamID)
	if errors.Is(err, store.ErrNotFound) {
		return apierr.NotFound("team", teamID)
	}
	return err
}

// teamManager checks that the caller manages the team's members: an organization admin with
// users:manage, or a lead of that very team signed in as themselves. self allows the caller to
// act on their own membership (leaving a team).
func (o *Orgs) teamManager(ctx context.Context, tx *sqlx.Tx, orgID, teamID, target string, self bool) error {
	p, acc, err := o.access(ctx, tx, orgID)
	if err != nil {
		return err
	}
	if err := o.lockTeam(ctx, tx, orgID, teamID); err != nil {
		return err
	}
	admin := managesUsers(acc)
	if admin == nil || self && target == p.UserID {
		return nil
	}
	if p.KeyID != "" { // a lead manages their team signed in as themselves, not with a key
		return admin
	}
	role, err := store.TeamRole(ctx, tx, teamID, p.UserID)
	if err != nil || role == "team_lead" {
		return err
	}
	return admin
}

func (o *Orgs) AddTeamMember(ctx context.Context, req api.AddTeamMemberRequestObject) (api.AddTeamMemberResponseObject, error) {
	role := "member"
	if req.Body.Role != nil {
		role = string(*req.Body.Role)
	}
	var out api.Team
	var added bool
	err := o.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		if err := o.teamManager(ctx, tx, req.OrganizationId, req.TeamId, req.Body.UserId, false); err != nil {
			return err
		}
		before, err := store.TeamRole(ctx, tx, req.TeamId, req.Body.UserId)
		if err != nil {
			return err
		}
		added, err = store.SetTeamMember(ctx, tx, req.OrganizationId, req.TeamId, req.Body.UserId, role, o.Now())
		if errors.Is(err, store.ErrNotFound) {
			return apierr.New(http.StatusNotFound, apierr.CodeNotFound, "the user is not an active member of this organization").
				WithDetails(map[string]any{"field": "user_id", "user_id": req.Body.UserId})
		} else if err != nil {
			return err
		}
		if out, err = teamDetail(ctx, tx, req.OrganizationId, req.TeamId); err != nil {
			return err
		}
		details := map[string]any{"user_id": req.Body.UserId, "role": role}
		action := "team.member_add"
		if !added {
			action, details["from"] = "team.member_role_change", before
		}
		if err := o.audit(ctx, tx, req.OrganizationId, action, "team", out.Id, out.Name, details); err != nil {
			return err
		}
		return store.Emit(ctx, tx, "team.updated", req.OrganizationId, map[string]any{"id": out.Id, "changes": map[string]any{"members": details}}, o.Now())
	})
	if err != nil {
		return nil, err
	}
	if added {
		return api.AddTeamMember201JSONResponse(out), nil
	}
	return api.AddTeamMember200JSONResponse(out), nil
}

func (o *Orgs) RemoveTeamMember(ctx context.Context, req api.RemoveTeamMemberRequestObject) (api.RemoveTeamMemberResponseObject, error) {
	err := o.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		if err := o.teamManager(ctx, tx, req.OrganizationId, req.TeamId, req.UserId, true); err != nil {
			return err
		}
		err := store.RemoveTeamMember(ctx, tx, req.TeamId, req.UserId)
		if errors.Is(err, store.ErrNotFound) {
			return apierr.New(http.StatusNotFound, apierr.CodeNotFound, "the user is not in this team").
				WithDetails(map[string]any{"user_id": req.UserId})
		} else if err != nil {
			return err
		}
		t, err := store.TeamByID(ctx, tx, req.OrganizationId, req.TeamId)
		if err != nil {
			return err
		}
		details := map[string]any{"user_id": req.UserId}
		if err := o.audit(ctx, tx, req.OrganizationId, "team.member_remove", "team", t.ID, t.Name, details); err != nil {
			return err
		}
		return store.Emit(ctx, tx, "team.updated", req.OrganizationId, map[string]any{"id": t.ID, "changes": map[string]any{"members": map[string]any{"removed": req.UserId}}}, o.Now())
	})
	if err != nil {
		return nil, err
	}
	return api.RemoveTeamMember204Response{}, nil
}

// userTeams fills the teams of a page of organization users.
func (o *Orgs) userTeams(ctx context.Context, q sqlx.QueryerContext, orgID string, users []api.OrganizationUser) error {
	ids := make([]string, len(users))
	for i, u := range users {
		ids[i] = u.Id
	}
	teams, err := store.UsersTeams(ctx, q, orgID, ids)
	if err != nil {
		return err
	}
	for _, t := range teams {
		i := slices.IndexFunc(users, func(u api.OrganizationUser) bool { return u.Id == t.UserID })
		users[i].Teams = append(users[i].Teams, api.UserTeam{Id: t.ID, Name: t.Name, Role: api.TeamRole(t.Role)})
	}
	return nil
}

// GrantTeamProject is PUT .../teams/{team_id}/projects/{project_id}.
func (o *Orgs) GrantTeamProject(ctx context.Context, req api.GrantTeamProjectRequestObject) (api.GrantTeamProjectResponseObject, error) {
	role := api.TeamProjectRoleViewer
	if req.Body.Role != nil {
		role = *req.Body.Role
	}
	var out api.Team
	var added bool
	err := o.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		if _, err := o.managedTeam(ctx, tx, req.OrganizationId, req.TeamId); err != nil {
			return err
		}
		var before string
		var err error
		added, before, err = store.GrantTeamProject(ctx, tx, req.OrganizationId, req.TeamId, req.ProjectId, string(role), o.Now())
		if errors.Is(err, store.ErrNotFound) {
			return apierr.NotFound("project", req.ProjectId)
		} else if err != nil {
			return err
		}
		if out, err = teamDetail(ctx, tx, req.OrganizationId, req.TeamId); err != nil {
			return err
		}
		details := map[string]any{"project_id": req.ProjectId, "role": role}
		action := "team.project_grant"
		if !added {
			action, details["from"] = "team.project_role_change", before
		}
		if err := o.audit(ctx, tx, req.OrganizationId, action, "team", out.Id, out.Name, details); err != nil {
			return err
		}
		return store.Emit(ctx, tx, "team.updated", req.OrganizationId, map[string]any{"id": out.Id, "changes": map[string]any{"projects": details}}, o.Now())
	})
	if err != nil {
		return nil, err
	}
	if added {
		return api.GrantTeamProject201JSONResponse(out), nil
	}
	return api.GrantTeamProject200JSONResponse(out), nil
}

// RevokeTeamProject is DELETE .../teams/{team_id}/projects/{project_id}.
func (o *Orgs) RevokeTeamProject(ctx context.Context, req api.RevokeTeamProjectRequestObject) (api.RevokeTeamProjectResponseObject, error) {
	err := o.Store.Tx(ctx, func(tx *sqlx.Tx) error {
		t, err := o.managedTeam(ctx, tx, req.OrganizationId, req.TeamId)
		if err != nil {
			return err
		}
		err = store.RevokeTeamProject(ctx, tx, req.TeamId, req.ProjectId)
		if errors.Is(err, store.ErrNotFound) {
			return apierr.New(http.StatusNotFound, apierr.CodeNotFound, "the team was not given this project").
				WithDetails(map[string]any{"project_id": req.ProjectId})
		} else if err != nil {
			return err
		}
		details := map[string]any{"project_id": req.ProjectId}
		if err := o.audit(ctx, tx, req.OrganizationId, "team.project_revoke", "team", t.ID, t.Name, details); err != nil {
			return err
		}
		return store.Emit(ctx, tx, "team.updated", req.OrganizationId, map[string]any{"id": t.ID, "changes": map[string]any{"projects": details}}, o.Now())
	})
	if err != nil {
		return nil, err
	}
	return api.RevokeTeamProject204Response{}, nil
}
