package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jmoiron/sqlx"
)

// Organization is an organization as one member sees it.
type Organization struct {
	ID           string    `db:"id"`
	Name         string    `db:"name"`
	Slug         string    `db:"slug"`
	Description  *string   `db:"description"`
	LogoURL      *string   `db:"logo_url"`
	Website      *string   `db:"website"`
	Industry     *string   `db:"industry"`
	Size         *string   `db:"size"`
	PlanTier     string    `db:"plan_tier"`
	BillingCycle string    `db:"billing_cycle"`
	PlanSince    time.Time `db:"plan_since"` // when the plan or its cycle last changed
	SettingsJSON string    `db:"settings"`   // jsonb: Settings, only what was changed
	CreatedAt    time.Time `db:"created_at"`
	UpdatedAt    time.Time `db:"updated_at"`
	Role         string    `db:"role"`
	UserCount    int       `db:"user_count"`
	ProjectCount int       `db:"project_count"`
}

const orgSelect = `SELECT o.id, o.name, o.slug, o.description, o.logo_url, o.website, o.industry, o.size, o.plan_tier,
	o.billing_cycle, COALESCE((SELECT max(c.changed_at) FROM platform.plan_changes c WHERE c.organization_id = o.id), o.created_at) AS plan_since,
	o.settings, o.created_at, o.updated_at, m.role,
	(SELECT count(*) FROM platform.memberships x WHERE x.organization_id = o.id AND x.status = 'active' AND NOT x.service) AS user_count,
	(SELECT count(*) FROM platform.projects p WHERE p.organization_id = o.id) AS project_count
	FROM platform.organizations o JOIN platform.memberships m ON m.organization_id = o.id AND m.user_id = $1 AND m.status = 'active'`

// ListOrganizations pages through the organizations where userID is an active member;
// orgRole filters by organization role (owner, admin, member).
func ListOrganizations(ctx context.Context, q sqlx.ExtContext, userID, orgRole string, limit, offset int) ([]Organization, int, error) {
	cond := ` WHERE ($2 = '' OR ($2 = 'member' AND m.role NOT IN ('owner', 'admin')) OR m.role = $2)`
	var total int
	if err := sqlx.GetContext(ctx, q, &total, `SELECT count(*) FROM platform.organizations o
		JOIN platform.memberships m ON m.organization_id = o.id AND m.user_id = $1 AND m.status = 'active'`+cond, userID, orgRole); err != nil {
		return nil, 0, fmt.Errorf("list organizations: %w", err)
	}
	var out []Organization
	err := sqlx.SelectContext(ctx, q, &out, orgSelect+cond+` ORDER BY m.joined_at, o.id LIMIT $3 OFFSET $4`, userID, orgRole, limit, offset)
	return out, total, wrap("list organizations", err)
}

// OrganizationForUser is the organization if userID is an active member of it.
func OrganizationForUser(ctx context.Context, q sqlx.QueryerContext, orgID, userID string) (*Organization, error) {
	var o Organization
	err := sqlx.GetContext(ctx, q, &o, orgSelect+` WHERE o.id = $2`, userID, orgID)
	return &o, wrap("read organization", notFound(err))
}

// CreateOrganization inserts o and makes ownerID its owner.
func CreateOrganization(ctx context.Context, q sqlx.ExtContext, o *Organization, ownerID string) error {
	if o.SettingsJSON == "" {
		o.SettingsJSON = `{}`
	}
	_, err := sqlx.NamedExecContext(ctx, q, `INSERT INTO platform.organizations
		(id, name, slug, description, logo_url, website, industry, size, plan_tier, settings, created_at, updated_at)
		VALUES (:id, :name, :slug, :description, :logo_url, :website, :industry, :size, :plan_tier, :settings, :created_at, :updated_at)`, o)
	if err != nil {
		return fmt.Errorf("create organization: %w", err)
	}
	return AddMembership(ctx, q, o.ID, ownerID, "owner", "active", &o.CreatedAt, o.CreatedAt)
}

// SlugTaken reports whether an organization already uses slug.
func SlugTaken(ctx context.Context, q sqlx.QueryerContext, slug string) (bool, error) {
	var n int
	err := sqlx.GetContext(ctx, q, &n, `SELECT count(*) FROM platform.organizations WHERE slug = $1`, slug)
	return n > 0, wrap("check organization slug", err)
}

// UpdateOrganization writes the changeable fields of o.
func UpdateOrganization(ctx context.Context, q sqlx.ExtContext, o *Organization) error {
	_, err := sqlx.NamedExecContext(ctx, q, `UPDATE platform.organizations SET name = :name, description = :description,
		website = :website, logo_url = :logo_url, updated_at = :updated_at WHERE id = :id`, o)
	return wrap("update organization", err)
}

// DeleteOrganization removes an organization with everything that cascades from it (its
// webhook endpoints are retired instead, see package webhooks). With
// transferTo set, its projects (and their datasets) move there first. It returns the number
// of projects moved and deleted.
func DeleteOrganization(ctx context.Context, q sqlx.ExtContext, id, transferTo string, now time.Time) (moved, deleted int, err error) {
	if transferTo != "" {
		// Names are unique per organization: a moved project whose name is taken gets the old
		// organization's slug as a suffix, numbered until it is free.
		var moving []Project
		if err := sqlx.SelectContext(ctx, q, &moving, `SELECT `+projectCols+` FROM platform.projects p WHERE p.organization_id = $1 ORDER BY p.created_at`, id); err != nil {
			return 0, 0, fmt.Errorf("delete organization: %w", err)
		}
		var slug string
		if err := sqlx.GetContext(ctx, q, &slug, `SELECT slug FROM platform.organizations WHERE id = $1`, id); err != nil {
			return 0, 0, fmt.Errorf("delete organization: %w", err)
		}
		for _, p := range moving {
			name := p.Name
			for n := 1; ; n++ {
				var taken bool
				if err := sqlx.GetContext(ctx, q, &taken, `SELECT EXISTS (SELECT 1 FROM platform.projects WHERE organization_id = $1 AND lower(name) = lower($2))`, transferTo, name); err != nil {
					return 0, 0, fmt.Errorf("delete organization: %w", err)
				}
				if !taken {
					break
				}
				name = fmt.Sprintf("%s (%s)", p.Name, slug)
				if n > 1 {
					name = fmt.Sprintf("%s (%s %d)", p.Name, slug, n)
				}
			}
			if _, err := q.ExecContext(ctx, `UPDATE platform.projects SET organization_id = $2, name = $3, updated_at = $4 WHERE id = $1`, p.ID, transferTo, name, now); err != nil {
				return 0, 0, fmt.Errorf("delete organization: %w", err)
			}
		}
		moved = len(moving)
		// The datasets' tables have moved already (datasets.MoveOrganization); rows follow.
		for _, t := range []string{"platform.datasets", "platform.uploads", "platform.views"} {
			if _, err := q.ExecContext(ctx, `UPDATE `+t+` SET organization_id = $2 WHERE organization_id = $1`, id, transferTo); err != nil {
				return 0, 0, fmt.Errorf("delete organization: %w", err)
			}
		}
	}
	if err := sqlx.GetContext(ctx, q, &deleted, `SELECT count(*) FROM platform.projects WHERE organization_id = $1`, id); err != nil {
		return 0, 0, fmt.Errorf("delete organization: %w", err)
	}
	// Its webhook endpoints outlive it until organization.deleted has reached them.
	if _, err := q.ExecContext(ctx, `UPDATE platform.webhooks SET retired_at = $2 WHERE organization_id = $1`, id, now); err != nil {
		return 0, 0, fmt.Errorf("delete organization: %w", err)
	}
	_, err = q.ExecContext(ctx, `DELETE FROM platform.organizations WHERE id = $1`, id)
	return moved, deleted, wrap("delete organization", err)
}

// OwnerCount counts the active owners of an organization.
func OwnerCount(ctx context.Context, q sqlx.QueryerContext, orgID string) (int, error) {
	var n int
	err := sqlx.GetContext(ctx, q, &n, `SELECT count(*) FROM platform.memberships WHERE organization_id = $1 AND role = 'owner' AND status = 'active'`, orgID)
	return n, wrap("count owners", err)
}

// LockOrganization takes a row lock on the organization for the rest of the transaction, so
// that checks such as "the last owner" or plan limits are not raced.
func LockOrganization(ctx context.Context, q sqlx.QueryerContext, orgID string) error {
	var id string
	return notFound(sqlx.GetContext(ctx, q, &id, `SELECT id FROM platform.organizations WHERE id = $1 FOR UPDATE`, orgID))
}

// OrgUser is a member or invited user of an organization.
type OrgUser struct {
	ID               string     `db:"id"`
	Name             string     `db:"name"`
	Email            string     `db:"email"`
	AvatarURL        *string    `db:"avatar_url"`
	Role             string     `db:"role"`
	Status           string     `db:"status"`
	JoinedAt         *time.Time `db:"joined_at"`
	LastActiveAt     *time.Time `db:"last_active_at"`
	TwoFactorEnabled bool       `db:"two_factor_enabled"`
}

const orgUserSelect = `SELECT u.id, u.name, u.email, u.avatar_url, m.role, m.status, m.joined_at, u.last_active_at, u.two_factor_enabled
	FROM platform.memberships m JOIN platform.users u ON u.id = m.user_id WHERE m.organization_id = $1 AND NOT m.service`

// UserFilter narrows ListOrgUsers.
type UserFilter struct {
	Search, Role, Status string
	Team                 string // only this team's members ("" for all)
}

// ListOrgUsers pages through an organization's users ordered by name.
func ListOrgUsers(ctx context.Context, q sqlx.ExtContext, orgID string, f UserFilter, limit, offset int) ([]OrgUser, int, error) {
	cond := ` AND ($2 = '' OR u.name ILIKE '%' || $2 || '%' OR u.email ILIKE '%' || $2 || '%')
		AND ($3 = '' OR m.role = $3) AND ($4 = '' OR m.status = $4)
		AND ($5 = '' OR EXISTS (SELECT 1 FROM platform.team_members tm
			WHERE tm.team_id = $5 AND tm.organization_id = m.organization_id AND tm.user_id = m.user_id))`
	search := escapeLike(f.Search)
	var total int
	if err := sqlx.GetContext(ctx, q, &total, `SELECT count(*) FROM platform.memberships m JOIN platform.users u ON u.id = m.user_id
		WHERE m.organization_id = $1 AND NOT m.service`+cond, orgID, search, f.Role, f.Status, f.Team); err != nil {
		return nil, 0, fmt.Errorf("list organization members: %w", err)
	}
	var out []OrgUser
	err := sqlx.SelectContext(ctx, q, &out, orgUserSelect+cond+` ORDER BY lower(u.name), u.id LIMIT $6 OFFSET $7`,
		orgID, search, f.Role, f.Status, f.Team, limit, offset)
	return out, total, wrap("list organization members", err)
}

// OrgUserByID is one user of an organization (any membership status).
func OrgUserByID(ctx context.Context, q sqlx.QueryerContext, orgID, userID string) (*OrgUser, error) {
	var u OrgUser
	err := sqlx.GetContext(ctx, q, &u, orgUserSelect+` AND m.user_id = $2`, orgID, userID)
	return &u, wrap("read organization member", notFound(err))
}

// SetMemberRole changes a role, and the role of a pending invitation (what accepting it grants).
func SetMemberRole(ctx context.Context, q sqlx.ExecerContext, orgID, userID, role string) error {
	if _, err := q.ExecContext(ctx, `UPDATE platform.memberships SET role = $3 WHERE organization_id = $1 AND user_id = $2`, orgID, userID, role); err != nil {
		return fmt.Errorf("set member role: %w", err)
	}
	_, err := q.ExecContext(ctx, `UPDATE platform.invitations SET role = $3 WHERE organization_id = $1 AND user_id = $2 AND status = 'pending'`, orgID, userID, role)
	return wrap("set member role", err)
}

// RemoveMember deletes a membership, the user's pending invitations to the organization, and
// the user itself when it was only ever an invited placeholder.
func RemoveMember(ctx context.Context, q sqlx.ExecerContext, orgID, userID string) error {
	if _, err := q.ExecContext(ctx, `DELETE FROM platform.memberships WHERE organization_id = $1 AND user_id = $2`, orgID, userID); err != nil {
		return fmt.Errorf("remove member: %w", err)
	}
	if _, err := q.ExecContext(ctx, `UPDATE platform.invitations SET status = 'revoked' WHERE organization_id = $1 AND user_id = $2 AND status = 'pending'`, orgID, userID); err != nil {
		return fmt.Errorf("remove member: %w", err)
	}
	_, err := q.ExecContext(ctx, `DELETE FROM platform.users u WHERE u.id = $1 AND u.status = 'invited'
		AND NOT EXISTS (SELECT 1 FROM platform.memberships m WHERE m.user_id = u.id)`, userID)
	return wrap("remove member", err)
}

// HoldsSeat reports whether the user holds one of the organization's seats at now (see
// CountMembers).
func HoldsSeat(ctx context.Context, q sqlx.QueryerContext, orgID, userID string, now time.Time) (bool, error) {
	var held bool
	err := sqlx.GetContext(ctx, q, &held, `SELECT EXISTS (SELECT 1 FROM platform.memberships m WHERE m.organization_id = $1 AND m.user_id = $2
		AND NOT m.service AND (m.status = 'active' OR m.status = 'invited' AND EXISTS (SELECT 1 FROM platform.invitations i
			WHERE i.organization_id = m.organization_id AND i.user_id = m.user_id AND i.status = 'pending' AND i.expires_at > $3)))`, orgID, userID, now)
	return held, wrap("check seat", err)
}

// CountMembers counts the seats a plan's user limit counts: active members and invitations
// still pending at now (an expired one holds no seat). Organization API keys' service
// accounts are not people and hold none.
func CountMembers(ctx context.Context, q sqlx.QueryerContext, orgID string, now time.Time) (int, error) {
	var n int
	err := sqlx.GetContext(ctx, q, &n, `SELECT count(*) FROM platform.memberships m WHERE m.organization_id = $1 AND NOT m.service
		AND (m.status = 'active' OR m.status = 'invited' AND EXISTS (SELECT 1 FROM platform.invitations i
			WHERE i.organization_id = m.organization_id AND i.user_id = m.user_id AND i.status = 'pending' AND i.expires_at > $2))`, orgID, now)
	return n, wrap("count members", err)
}

func escapeLike(s string) string {
	r := make([]byte, 0, len(s))
	for i := 0; i < len(s); i++ {
		if s[i] == '%' || s[i] == '_' || s[i] == '\\' {
			r = append(r, '\\')
		}
		r = append(r, s[i])
	}
	return string(r)
}
