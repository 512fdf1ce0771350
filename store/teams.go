package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// Team is a group of an organization's members.
type Team struct {
	ID           string         `db:"id"`
	OrgID        string         `db:"organization_id"`
	Name         string         `db:"name"`
	Slug         string         `db:"slug"`
	Description  *string        `db:"description"`
	Permissions  pq.StringArray `db:"permissions"`
	CreatedBy    *string        `db:"created_by"`
	CreatedAt    time.Time      `db:"created_at"`
	UpdatedAt    time.Time      `db:"updated_at"`
	MemberCount  int            `db:"member_count"`
	ProjectCount int            `db:"project_count"`
}

// TeamMember is a user in a team.
type TeamMember struct {
	ID       string    `db:"id"`
	Name     string    `db:"name"`
	Email    string    `db:"email"`
	Role     string    `db:"role"`
	JoinedAt time.Time `db:"joined_at"`
}

// TeamProject is a project a team is given.
type TeamProject struct {
	ID         string `db:"id"`
	Name       string `db:"name"`
	Role       string `db:"role"`
	Visibility string `db:"visibility"`
}

// UserTeam is a team a user is in, with their role there.
type UserTeam struct {
	UserID string `db:"user_id"`
	ID     string `db:"id"`
	Name   string `db:"name"`
	Role   string `db:"role"`
}

const teamSelect = `SELECT t.id, t.organization_id, t.name, t.slug, t.description, t.permissions, t.created_by, t.created_at, t.updated_at,
	(SELECT count(*) FROM platform.team_members m WHERE m.team_id = t.id) AS member_count,
	(SELECT count(*) FROM platform.team_projects p WHERE p.team_id = t.id) AS project_count
	FROM platform.teams t`

// ListTeams pages through an organization's teams ordered by name; search matches name or slug.
func ListTeams(ctx context.Context, q sqlx.ExtContext, orgID, search string, limit, offset int) ([]Team, int, error) {
	cond := ` WHERE t.organization_id = $1 AND ($2 = '' OR t.name ILIKE '%' || $2 || '%' OR t.slug ILIKE '%' || $2 || '%')`
	search = escapeLike(search)
	var total int
	if err := sqlx.GetContext(ctx, q, &total, `SELECT count(*) FROM platform.teams t`+cond, orgID, search); err != nil {
		return nil, 0, fmt.Errorf("list teams: %w", err)
	}
	out := []Team{}
	err := sqlx.SelectContext(ctx, q, &out, teamSelect+cond+` ORDER BY lower(t.name), t.id LIMIT $3 OFFSET $4`, orgID, search, limit, offset)
	return out, total, wrap("list teams", err)
}

// TeamByID is one team of an organization (ErrNotFound for another organization's).
func TeamByID(ctx context.Context, q sqlx.QueryerContext, orgID, id string) (*Team, error) {
	var t Team
	err := sqlx.GetContext(ctx, q, &t, teamSelect+` WHERE t.organization_id = $1 AND t.id = $2`, orgID, id)
	return &t, wrap("read team", notFound(err))
}

// LockTeam takes a team's row lock for a change of its members (ErrNotFound when absent).
func LockTeam(ctx context.Context, q sqlx.QueryerContext, orgID, id string) error {
	var got string
	err := sqlx.GetContext(ctx, q, &got, `SELECT id FROM platform.teams WHERE organization_id = $1 AND id = $2 FOR UPDATE`, orgID, id)
	return wrap("lock team", notFound(err))
}

// TeamSlugTaken reports whether another team of the organization has the slug.
func TeamSlugTaken(ctx context.Context, q sqlx.QueryerContext, orgID, slug string) (bool, error) {
	var n int
	err := sqlx.GetContext(ctx, q, &n, `SELECT count(*) FROM platform.teams WHERE organization_id = $1 AND slug = $2`, orgID, slug)
	return n > 0, wrap("check team slug", err)
}

// CreateTeam inserts a team (a taken slug is a unique violation).
func CreateTeam(ctx context.Context, q sqlx.ExecerContext, t *Team) error {
	_, err := q.ExecContext(ctx, `INSERT INTO platform.teams (id, organization_id, name, slug, description, permissions, created_by, created_at, updated_at)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)`, t.ID, t.OrgID, t.Name, t.Slug, t.Description, t.Permissions, t.CreatedBy, t.CreatedAt, t.UpdatedAt)
	return wrap("create team", err)
}

// UpdateTeam writes a team's name, slug, description and permissions.
func UpdateTeam(ctx context.Context, q sqlx.ExecerContext, t *Team) error {
	_, err := q.ExecContext(ctx, `UPDATE platform.teams SET name = $3, slug = $4, description = $5, permissions = $6, updated_at = $7
		WHERE organization_id = $1 AND id = $2`, t.OrgID, t.ID, t.Name, t.Slug, t.Description, t.Permissions, t.UpdatedAt)
	return wrap("update team", err)
}

// DeleteTeam deletes a team and its memberships and project grants.
func DeleteTeam(ctx context.Context, q sqlx.ExecerContext, orgID, id string) error {
	_, err := q.ExecContext(ctx, `DELETE FROM platform.teams WHERE organization_id = $1 AND id = $2`, orgID, id)
	return wrap("delete team", err)
}

// TeamMembers are a team's members, leads first, then by name.
func TeamMembers(ctx context.Context, q sqlx.QueryerContext, teamID string) ([]TeamMember, error) {
	out := []TeamMember{}
	err := sqlx.SelectContext(ctx, q, &out, `SELECT u.id, u.name, u.email, m.role, m.joined_at
		FROM platform.team_members m JOIN platform.users u ON u.id = m.user_id
		WHERE m.team_id = $1 ORDER BY m.role = 'team_lead' DESC, lower(u.name), u.id`, teamID)
	return out, wrap("list team members", err)
}

// TeamProjects are the projects a team is given, by name.
func TeamProjects(ctx context.Context, q sqlx.QueryerContext, teamID string) ([]TeamProject, error) {
	out := []TeamProject{}
	err := sqlx.SelectContext(ctx, q, &out, `SELECT p.id, p.name, tp.role, p.visibility FROM platform.team_projects tp
		JOIN platform.projects p ON p.id = tp.project_id WHERE tp.team_id = $1 ORDER BY lower(p.name), p.id`, teamID)
	return out, wrap("list team projects", err)
}

// GrantTeamProject gives a team a project of its organization with role, or changes the
// role; added says which, before is the former role. ErrNotFound when the organization has no
// such project.
func GrantTeamProject(ctx context.Context, q sqlx.QueryerContext, orgID, teamID, projectID, role string, now time.Time) (added bool, before string, err error) {
	var rows []struct {
		Added  bool    `db:"added"`
		Before *string `db:"before"`
	}
	err = sqlx.SelectContext(ctx, q, &rows, `WITH old AS (SELECT role FROM platform.team_projects WHERE team_id = $2 AND project_id = $3)
		INSERT INTO platform.team_projects (team_id, project_id, role, created_at)
		SELECT $2, p.id, $4, $5 FROM platform.projects p WHERE p.organization_id = $1 AND p.id = $3
		ON CONFLICT (team_id, project_id) DO UPDATE SET role = EXCLUDED.role
		RETURNING xmax = 0 AS added, (SELECT role FROM old) AS before`, orgID, teamID, projectID, role, now)
	if err != nil {
		return false, "", fmt.Errorf("grant team project: %w", err)
	}
	if len(rows) == 0 {
		return false, "", ErrNotFound
	}
	if rows[0].Before != nil {
		before = *rows[0].Before
	}
	return rows[0].Added, before, nil
}

// RevokeTeamProject takes a project away from a team (ErrNotFound when it was not given).
func RevokeTeamProject(ctx context.Context, q sqlx.ExecerContext, teamID, projectID string) error {
	res, err := q.ExecContext(ctx, `DELETE FROM platform.team_projects WHERE team_id = $1 AND project_id = $2`, teamID, projectID)
	if err != nil {
		return fmt.Errorf("revoke team project: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

// TeamRole is the user's role in the team ("" when not in it).
func TeamRole(ctx context.Context, q sqlx.QueryerContext, teamID, userID string) (string, error) {
	var roles []string
	err := sqlx.SelectContext(ctx, q, &roles, `SELECT role FROM platform.team_members WHERE team_id = $1 AND user_id = $2`, teamID, userID)
	if err != nil || len(roles) == 0 {
		return "", wrap("read team role", err)
	}
	return roles[0], nil
}

// SetTeamMember puts an active member of the team's organization in the team with role, or
// changes their role; added says which. ErrNotFound when the user is no active member.
func SetTeamMember(ctx context.Context, q sqlx.QueryerContext, orgID, teamID, userID, role string, now time.Time) (added bool, err error) {
	var inserted []bool
	err = sqlx.SelectContext(ctx, q, &inserted, `INSERT INTO platform.team_members (team_id, organization_id, user_id, role, joined_at)
		SELECT $2, m.organization_id, m.user_id, $4, $5 FROM platform.memberships m
		WHERE m.organization_id = $1 AND m.user_id = $3 AND m.status = 'active' AND NOT m.service
		ON CONFLICT (team_id, user_id) DO UPDATE SET role = EXCLUDED.role
		RETURNING xmax = 0`, orgID, teamID, userID, role, now)
	if err != nil {
		return false, fmt.Errorf("set team member: %w", err)
	}
	if len(inserted) == 0 {
		return false, ErrNotFound
	}
	return inserted[0], nil
}

// RemoveTeamMember takes a user out of a team (ErrNotFound when not in it).
func RemoveTeamMember(ctx context.Context, q sqlx.ExecerContext, teamID, userID string) error {
	res, err := q.ExecContext(ctx, `DELETE FROM platform.team_members WHERE team_id = $1 AND user_id = $2`, teamID, userID)
	if err != nil {
		return fmt.Errorf("remove team member: %w", err)
	}
	if n, _ := res.RowsAffected(); n == 0 {
		return ErrNotFound
	}
	return nil
}

// UsersTeams are the teams of the given users in an organization, by team name.
func UsersTeams(ctx context.Context, q sqlx.QueryerContext, orgID string, userIDs []string) ([]UserTeam, error) {
	out := []UserTeam{}
	if len(userIDs) == 0 {
		return out, nil
	}
	err := sqlx.SelectContext(ctx, q, &out, `SELECT m.user_id, t.id, t.name, m.role FROM platform.team_members m
		JOIN platform.teams t ON t.id = m.team_id
		WHERE m.organization_id = $1 AND m.user_id = ANY($2) ORDER BY lower(t.name), t.id`, orgID, pq.StringArray(userIDs))
	return out, wrap("list users' teams", err)
}

// JoinTeams puts an active member in those of the teams that still exist in the organization
// (as member; a team they are in already keeps their role).
func JoinTeams(ctx context.Context, q sqlx.ExecerContext, orgID, userID string, teamIDs []string, now time.Time) error {
	if len(teamIDs) == 0 {
		return nil
	}
	_, err := q.ExecContext(ctx, `INSERT INTO platform.team_members (team_id, organization_id, user_id, role, joined_at)
		SELECT t.id, m.organization_id, m.user_id, 'member', $4 FROM platform.teams t
		JOIN platform.memberships m ON m.organization_id = t.organization_id AND m.user_id = $2 AND m.status = 'active'
		WHERE t.organization_id = $1 AND t.id = ANY($3)
		ON CONFLICT (team_id, user_id) DO NOTHING`, orgID, userID, pq.StringArray(teamIDs), now)
	return wrap("join teams", err)
}

// MissingTeams are those of ids that are no team of the organization.
func MissingTeams(ctx context.Context, q sqlx.QueryerContext, orgID string, ids []string) ([]string, error) {
	out := []string{}
	if len(ids) == 0 {
		return out, nil
	}
	err := sqlx.SelectContext(ctx, q, &out, `SELECT x FROM unnest($2::text[]) x
		WHERE NOT EXISTS (SELECT 1 FROM platform.teams t WHERE t.organization_id = $1 AND t.id = x) ORDER BY x`, orgID, pq.StringArray(ids))
	return out, wrap("check teams", err)
}

// UserTeamsWith are the user's teams in the organization that have permission perm.
func UserTeamsWith(ctx context.Context, q sqlx.QueryerContext, orgID, userID, perm string) ([]string, error) {
	var out []string
	err := sqlx.SelectContext(ctx, q, &out, `SELECT t.id FROM platform.team_members m JOIN platform.teams t ON t.id = m.team_id
		WHERE m.organization_id = $1 AND m.user_id = $2 AND $3 = ANY(t.permissions) ORDER BY t.id`, orgID, userID, perm)
	return out, wrap("list user teams", err)
}
