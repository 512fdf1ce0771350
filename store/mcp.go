package store

import (
	"context"

	"github.com/jmoiron/sqlx"
)

// APIKeyMCPWrites reports whether the API key id may change data through the MCP server.
func APIKeyMCPWrites(ctx context.Context, q sqlx.QueryerContext, id string) (bool, error) {
	var ok bool
	err := sqlx.GetContext(ctx, q, &ok, `SELECT mcp_writes FROM platform.api_keys WHERE id = $1`, id)
	return ok, wrap("read api key mcp writes", notFound(err))
}

// MemberOrgOf is the organization of a project, dataset, dashboard or saved query (kind) when
// userID is an active member of it; ErrNotFound otherwise, so that what the user cannot see
// is never named (an MCP tool call's audit row goes to the organization it touched).
func MemberOrgOf(ctx context.Context, q sqlx.QueryerContext, kind, id, userID string) (string, error) {
	table := map[string]string{"project": "platform.projects", "dataset": "platform.datasets",
		"dashboard": "platform.dashboards", "saved_query": "platform.saved_queries"}[kind]
	if table == "" {
		return "", ErrNotFound
	}
	var org string
	err := sqlx.GetContext(ctx, q, &org, `SELECT r.organization_id FROM `+table+` r
		JOIN platform.memberships m ON m.organization_id = r.organization_id AND m.user_id = $2 AND m.status = 'active'
		WHERE r.id = $1`, id, userID)
	return org, wrap("read member organization", notFound(err))
}
