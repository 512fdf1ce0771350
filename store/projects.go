package store

import (
	"context"
	"time"

	"github.com/jmoiron/sqlx"
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
	// Role is the caller's role in the project's organization (filled by ProjectForUser).
	Role string `db:"role"`
}

const projectCols = `p.id, p.organization_id, p.name, p.description, p.created_by, p.created_at, p.updated_at,
	(SELECT count(*) FROM platform.datasets d WHERE d.project_id = p.id) AS dataset_count`

const projectForUser = `SELECT ` + projectCols + `, m.role FROM platform.projects p
	JOIN platform.memberships m ON m.organization_id = p.organization_id AND m.user_id = $2 AND m.status = 'active'
	WHERE p.id = $1`

// ProjectForUser returns the project with the user's role in its organization, in one query;
// ErrNotFound when it does not exist or the user is not an active member there.
func ProjectForUser(ctx context.Context, q sqlx.QueryerContext, projectID, userID string) (*Project, error) {
	var p Project
	err := sqlx.GetContext(ctx, q, &p, projectForUser, projectID, userID)
	return &p, notFound(err)
}

// ProjectForUser is the package function outside a transaction, on a prepared statement (it
// runs on nearly every project-scoped request).
func (s *Store) ProjectForUser(ctx context.Context, projectID, userID string) (*Project, error) {
	st, err := s.prepared(ctx, projectForUser)
	if err != nil {
		return nil, err
	}
	var p Project
	err = st.GetContext(ctx, &p, projectID, userID)
	return &p, notFound(err)
}

// ListProjects pages through an organization's projects, newest first.
func ListProjects(ctx context.Context, q sqlx.ExtContext, orgID, search string, limit, offset int) ([]Project, int, error) {
	cond := ` WHERE p.organization_id = $1 AND ($2 = '' OR p.name ILIKE '%' || $2 || '%')`
	search = escapeLike(search)
	var total int
	if err := sqlx.GetContext(ctx, q, &total, `SELECT count(*) FROM platform.projects p`+cond, orgID, search); err != nil {
		return nil, 0, err
	}
	var out []Project
	err := sqlx.SelectContext(ctx, q, &out, `SELECT `+projectCols+` FROM platform.projects p`+cond+
		` ORDER BY p.created_at DESC, p.id LIMIT $3 OFFSET $4`, orgID, search, limit, offset)
	return out, total, err
}

// MemberProject is a project with its organization, as one of its members sees it.
type MemberProject struct {
	Project
	OrgName string `db:"organization_name"`
	OrgSlug string `db:"organization_slug"`
}

// ListMemberProjects pages through the projects of every organization userID is an active
// member of (orgID, when given, narrows to one), newest first, with the user's role.
func ListMemberProjects(ctx context.Context, q sqlx.ExtContext, userID, orgID, search string, limit, offset int) ([]MemberProject, int, error) {
	from := ` FROM platform.projects p
		JOIN platform.memberships m ON m.organization_id = p.organization_id AND m.user_id = $1 AND m.status = 'active'
		JOIN platform.organizations o ON o.id = p.organization_id
		WHERE ($2 = '' OR p.organization_id = $2) AND ($3 = '' OR p.name ILIKE '%' || $3 || '%')`
	search = escapeLike(search)
	var total int
	if err := sqlx.GetContext(ctx, q, &total, `SELECT count(*)`+from, userID, orgID, search); err != nil {
		return nil, 0, err
	}
	var out []MemberProject
	err := sqlx.SelectContext(ctx, q, &out, `SELECT `+projectCols+`, m.role, o.name AS organization_name, o.slug AS organization_slug`+from+
		` ORDER BY p.created_at DESC, p.id LIMIT $4 OFFSET $5`, userID, orgID, search, limit, offset)
	return out, total, err
}

// CreateProject inserts p.
func CreateProject(ctx context.Context, q sqlx.ExtContext, p *Project) error {
	_, err := sqlx.NamedExecContext(ctx, q, `INSERT INTO platform.projects (id, organization_id, name, description, created_by, created_at, updated_at)
		VALUES (:id, :organization_id, :name, :description, :created_by, :created_at, :updated_at)`, p)
	return err
}

// UpdateProject writes name and description.
func UpdateProject(ctx context.Context, q sqlx.ExtContext, p *Project) error {
	_, err := sqlx.NamedExecContext(ctx, q, `UPDATE platform.projects SET name = :name, description = :description, updated_at = :updated_at WHERE id = :id`, p)
	return err
}

// DeleteProject removes a project and what cascades from it.
func DeleteProject(ctx context.Context, q sqlx.ExecerContext, id string) error {
	_, err := q.ExecContext(ctx, `DELETE FROM platform.projects WHERE id = $1`, id)
	return err
}
