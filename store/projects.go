package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// Project groups datasets inside an organization.
type Project struct {
	ID           string    `db:"id"`
	OrgID        string    `db:"organization_id"`
	Name         string    `db:"name"`
	Description  *string   `db:"description"`
	CreatedBy    *string   `db:"created_by"`
	CreatedAt    time.Time `db:"created_at"`
	UpdatedAt    time.Time `db:"updated_at"`
	DatasetCount int       `db:"dataset_count"`
	// Visibility is organization (every member) or private (see Reach).
	Visibility string `db:"visibility"`
	// Reach is how the caller reaches the project (filled by ProjectForUser).
	Reach
}

// Reach is how a user reaches a project: the role of their organization membership, whether
// that role applies to the project (Base: the project is visible to the organization, or they
// are an owner or admin, or they created it), and the grants of their teams on it.
type Reach struct {
	Role string `db:"role"`
	Base bool   `db:"base_access"`
	// Grants holds one "role|permission,permission" entry per team of the user granted the
	// project: the grant's role and the team's permissions.
	Grants pq.StringArray `db:"grants"`
}

// reachJoin joins, for the project p and the user bound as parameter user, the membership m
// and the user's team grants g; reachCols reads them as Reach; reachable keeps only the
// projects the user may see.
func reachJoin(user string) string {
	return ` JOIN platform.memberships m ON m.organization_id = p.organization_id AND m.user_id = ` + user + ` AND m.status = 'active'
	CROSS JOIN LATERAL (SELECT array_agg(tp.role || '|' || array_to_string(t.permissions, ',') ORDER BY tp.team_id) AS grants
		FROM platform.team_projects tp
		JOIN platform.team_members tm ON tm.team_id = tp.team_id AND tm.user_id = ` + user + `
		JOIN platform.teams t ON t.id = tp.team_id
		WHERE tp.project_id = p.id) g`
}

// reachBase: the organization role applies to organization-visible projects; to private ones
// for owners, admins, organization API keys (m.service) and the project's creator.
func reachBase(user string) string {
	return `(p.visibility = 'organization' OR m.role IN ('owner', 'admin') OR m.service OR p.created_by = ` + user + `)`
}

func reachCols(user string) string {
	return `m.role, ` + reachBase(user) + ` AS base_access, g.grants`
}

func reachable(user string) string {
	return `(` + reachBase(user) + ` OR g.grants IS NOT NULL)`
}

const projectCols = `p.id, p.organization_id, p.name, p.description, p.created_by, p.created_at, p.updated_at, p.visibility,
	(SELECT count(*) FROM platform.datasets d WHERE d.project_id = p.id) AS dataset_count`

var projectForUser = `SELECT ` + projectCols + `, ` + reachCols("$2") + ` FROM platform.projects p` + reachJoin("$2") +
	` WHERE p.id = $1 AND ` + reachable("$2")

// ProjectForUser returns the project with how the user reaches it, in one query; ErrNotFound
// when it does not exist, the user is not an active member there, or the project is private
// and out of their reach.
func ProjectForUser(ctx context.Context, q sqlx.QueryerContext, projectID, userID string) (*Project, error) {
	var p Project
	err := sqlx.GetContext(ctx, q, &p, projectForUser, projectID, userID)
	return &p, wrap("read project", notFound(err))
}

// ProjectForUser is the package function outside a transaction, on a prepared statement (it
// runs on nearly every project-scoped request).
func (s *Store) ProjectForUser(ctx context.Context, projectID, userID string) (*Project, error) {
	st, err := s.prepared(ctx, projectForUser)
	if err != nil {
		return nil, fmt.Errorf("read project: %w", err)
	}
	var p Project
	err = st.GetContext(ctx, &p, projectID, userID)
	return &p, wrap("read project", notFound(err))
}

// ReachableProjects are the projects of an organization that userID may see, with how they
// reach each (Reach), for the caller to check its permissions on each.
func ReachableProjects(ctx context.Context, q sqlx.QueryerContext, orgID, userID string) ([]Project, error) {
	var out []Project
	err := sqlx.SelectContext(ctx, q, &out, `SELECT p.id, p.organization_id, p.name, p.visibility, `+reachCols("$2")+
		` FROM platform.projects p`+reachJoin("$2")+` WHERE p.organization_id = $1 AND `+reachable("$2")+` ORDER BY p.id`, orgID, userID)
	return out, wrap("list reachable projects", err)
}

// ListProjects pages through the projects of an organization that userID may see, newest
// first.
func ListProjects(ctx context.Context, q sqlx.ExtContext, orgID, userID, search string, limit, offset int) ([]Project, int, error) {
	from := ` FROM platform.projects p` + reachJoin("$2") + `
		WHERE p.organization_id = $1 AND ` + reachable("$2") + ` AND ($3 = '' OR p.name ILIKE '%' || $3 || '%')`
	search = escapeLike(search)
	var total int
	if err := sqlx.GetContext(ctx, q, &total, `SELECT count(*)`+from, orgID, userID, search); err != nil {
		return nil, 0, fmt.Errorf("list projects: %w", err)
	}
	var out []Project
	err := sqlx.SelectContext(ctx, q, &out, `SELECT `+projectCols+`, `+reachCols("$2")+from+
		` ORDER BY p.created_at DESC, p.id LIMIT $4 OFFSET $5`, orgID, userID, search, limit, offset)
	return out, total, wrap("list projects", err)
}

// MemberProject is a project with its organization, as one of its members sees it.
type MemberProject struct {
	Project
	OrgName string `db:"organization_name"`
	OrgSlug string `db:"organization_slug"`
}

// ListMemberProjects pages through the projects of every organization userID is an active
// member of (orgID, when given, narrows to one) and may see, newest first, with the user's role.
func ListMemberProjects(ctx context.Context, q sqlx.ExtContext, userID, orgID, search string, excluded []string, limit, offset int) ([]MemberProject, int, error) {
	from := ` FROM platform.projects p` + reachJoin("$1") + `
		JOIN platform.organizations o ON o.id = p.organization_id
		WHERE ($2 = '' OR p.organization_id = $2) AND ` + reachable("$1") + ` AND ($3 = '' OR p.name ILIKE '%' || $3 || '%')
		AND p.organization_id <> ALL($4)` // excluded: never nil, which pq would send as NULL
	search = escapeLike(search)
	var total int
	if err := sqlx.GetContext(ctx, q, &total, `SELECT count(*)`+from, userID, orgID, search, pq.StringArray(append([]string{}, excluded...))); err != nil {
		return nil, 0, fmt.Errorf("list member projects: %w", err)
	}
	var out []MemberProject
	err := sqlx.SelectContext(ctx, q, &out, `SELECT `+projectCols+`, `+reachCols("$1")+`, o.name AS organization_name, o.slug AS organization_slug`+from+
		` ORDER BY p.created_at DESC, p.id LIMIT $5 OFFSET $6`, userID, orgID, search, pq.StringArray(append([]string{}, excluded...)), limit, offset)
	return out, total, wrap("list member projects", err)
}

// CreateProject inserts p (visible to the organization unless it says otherwise).
func CreateProject(ctx context.Context, q sqlx.ExtContext, p *Project) error {
	if p.Visibility == "" {
		p.Visibility = "organization"
	}
	_, err := sqlx.NamedExecContext(ctx, q, `INSERT INTO platform.projects (id, organization_id, name, description, visibility, created_by, created_at, updated_at)
		VALUES (:id, :organization_id, :name, :description, :visibility, :created_by, :created_at, :updated_at)`, p)
	return wrap("create project", err)
}

// UpdateProject writes name, description and visibility.
func UpdateProject(ctx context.Context, q sqlx.ExtContext, p *Project) error {
	_, err := sqlx.NamedExecContext(ctx, q, `UPDATE platform.projects SET name = :name, description = :description, visibility = :visibility,
		updated_at = :updated_at WHERE id = :id`, p)
	return wrap("update project", err)
}

// DeleteProject removes a project and what cascades from it.
func DeleteProject(ctx context.Context, q sqlx.ExecerContext, id string) error {
	_, err := q.ExecContext(ctx, `DELETE FROM platform.projects WHERE id = $1`, id)
	return wrap("delete project", err)
}
