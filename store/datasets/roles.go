package datasets

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// QueryRole is the role user SQL of an organization runs under: it can read that
// organization's dataset tables (live rows only, by their row-level security) and its
// connected datasets' tables (through views), and nothing of other organizations or of the platform.
func QueryRole(orgID string) string { return "dp_query_" + orgID }

var rolesReady sync.Map // organization id → true once its role is set up in this process

// ensureRole creates the organization's query role in tx if it does not exist yet.
func ensureRole(ctx context.Context, tx *sqlx.Tx, orgID string) error {
	// Serialise with other transactions (and replicas) doing the same.
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext('platform.query_role'), hashtext($1))`, orgID); err != nil {
		return err
	}
	var exists bool
	if err := tx.GetContext(ctx, &exists, `SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)`, QueryRole(orgID)); err != nil {
		return err
	}
	if exists {
		return nil
	}
	role := pq.QuoteIdentifier(QueryRole(orgID))
	for _, q := range []string{`CREATE ROLE ` + role + ` NOLOGIN NOINHERIT NOBYPASSRLS`, `GRANT ` + role + ` TO CURRENT_USER`} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// createSchema makes a schema unless it exists. CREATE SCHEMA IF NOT EXISTS alone fails
// when a concurrent transaction creates the same schema (two uploads at once): the lock
// makes the second wait and then see the first's.
func createSchema(ctx context.Context, tx *sqlx.Tx, name string) error {
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock(hashtext('platform.schema'), hashtext($1))`, name); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `CREATE SCHEMA IF NOT EXISTS `+pq.QuoteIdentifier(name))
	return err
}

// EnsureSchema makes a schema unless it exists, in a short transaction of its own (a long
// one would make other loads wait for the lock).
func EnsureSchema(ctx context.Context, db *sqlx.DB, name string) error {
	tx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("ensure schema: %w", err)
	}
	defer tx.Rollback()
	if err := createSchema(ctx, tx, name); err != nil {
		return fmt.Errorf("ensure schema: %w", err)
	}
	return tx.Commit()
}

// EnsureQueryRole creates the organization's query role (once per process) and grants it
// reading its schema, now and for tables made later; tables made before row-level security
// existed get their policy here.
func EnsureQueryRole(ctx context.Context, db *sqlx.DB, orgID string) error {
	if _, ok := rolesReady.Load(orgID); ok {
		return nil
	}
	role, schema := pq.QuoteIdentifier(QueryRole(orgID)), pq.QuoteIdentifier(orgID)
	tx, err := db.BeginTxx(ctx, nil)
	if err != nil {
		return fmt.Errorf("ensure query role: %w", err)
	}
	defer tx.Rollback()
	if err := ensureRole(ctx, tx, orgID); err != nil {
		return fmt.Errorf("ensure query role: %w", err)
	}
	if err := createSchema(ctx, tx, orgID); err != nil {
		return fmt.Errorf("ensure query role: %w", err)
	}
	for _, q := range []string{`GRANT USAGE ON SCHEMA ` + schema + ` TO ` + role,
		`GRANT SELECT ON ALL TABLES IN SCHEMA ` + schema + ` TO ` + role,
		`ALTER DEFAULT PRIVILEGES IN SCHEMA ` + schema + ` GRANT SELECT ON TABLES TO ` + role} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("ensure query role: %w", err)
		}
	}
	var bare []string
	if err := tx.SelectContext(ctx, &bare, `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relkind = 'r' AND NOT EXISTS (SELECT 1 FROM pg_policy p WHERE p.polrelid = c.oid AND p.polname = 'dp_live')`, orgID); err != nil {
		return fmt.Errorf("ensure query role: %w", err)
	}
	for _, t := range bare {
		for _, q := range RowSecurity(Table(orgID, t)) {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("ensure query role: %w", err)
			}
		}
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("ensure query role: %w", err)
	}
	rolesReady.Store(orgID, true)
	return nil
}

// grantConnected lets the organization's query role read a connected dataset's tables through
// their views (viewOf), and nothing else of it: not the foreign tables, not the server (the
// reading functions of MySQL tables it may only call, through the views).
func grantConnected(ctx context.Context, tx *sqlx.Tx, orgID, datasetID string) error {
	if err := ensureRole(ctx, tx, orgID); err != nil {
		return err
	}
	role, schema := pq.QuoteIdentifier(QueryRole(orgID)), pq.QuoteIdentifier(datasetID)
	for _, q := range []string{`GRANT USAGE ON SCHEMA ` + schema + ` TO ` + role, `GRANT SELECT ON ALL TABLES IN SCHEMA ` + schema + ` TO ` + role,
		`GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA ` + pq.QuoteIdentifier(ForeignSchema(datasetID)) + ` TO ` + role} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return err
		}
	}
	return nil
}

// DropQueryRole removes an organization's query role (its grants in this database first),
// when the organization and its data go.
func DropQueryRole(ctx context.Context, tx *sqlx.Tx, orgID string) error {
	var exists bool
	if err := tx.GetContext(ctx, &exists, `SELECT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = $1)`, QueryRole(orgID)); err != nil || !exists {
		return err
	}
	role := pq.QuoteIdentifier(QueryRole(orgID))
	for _, q := range []string{`DROP OWNED BY ` + role, `DROP ROLE ` + role} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("drop query role: %w", err)
		}
	}
	rolesReady.Delete(orgID)
	return nil
}

// DropOrganization drops an organization's schema, with every dataset table in it, and its
// query role: the organization and its data go.
func DropOrganization(ctx context.Context, tx *sqlx.Tx, orgID string) error {
	if _, err := tx.ExecContext(ctx, `DROP SCHEMA IF EXISTS `+pq.QuoteIdentifier(orgID)+` CASCADE`); err != nil {
		return fmt.Errorf("drop organization tables: %w", err)
	}
	return DropQueryRole(ctx, tx, orgID)
}

// MoveOrganization hands an organization's datasets to the organization to (which takes its
// projects): uploaded datasets' tables move into to's schema, readable by to's query role;
// connected datasets' views are granted to it. Then what was from's goes, schema and query
// role, so that from's role can read none of it any more. Call it before the datasets' rows
// change organization.
func MoveOrganization(ctx context.Context, tx *sqlx.Tx, from, to string, now time.Time) error {
	if err := ensureRole(ctx, tx, to); err != nil {
		return fmt.Errorf("move organization tables: %w", err)
	}
	if err := createSchema(ctx, tx, to); err != nil {
		return fmt.Errorf("move organization tables: %w", err)
	}
	role, schema := pq.QuoteIdentifier(QueryRole(to)), pq.QuoteIdentifier(to)
	for _, q := range []string{`GRANT USAGE ON SCHEMA ` + schema + ` TO ` + role,
		`ALTER DEFAULT PRIVILEGES IN SCHEMA ` + schema + ` GRANT SELECT ON TABLES TO ` + role} {
		if _, err := tx.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("move organization tables: %w", err)
		}
	}
	var ds []struct {
		ID     string `db:"id"`
		Schema string `db:"table_schema"`
		Type   string `db:"type"`
	}
	if err := tx.SelectContext(ctx, &ds, `SELECT id, table_schema, type FROM platform.datasets WHERE organization_id = $1 FOR UPDATE`, from); err != nil {
		return fmt.Errorf("move organization tables: %w", err)
	}
	for _, d := range ds {
		if d.Type == "database" {
			if err := grantConnected(ctx, tx, to, d.ID); err != nil {
				return fmt.Errorf("move organization tables: %w", err)
			}
			continue
		}
		var exists bool
		if err := tx.GetContext(ctx, &exists, `SELECT to_regclass($1) IS NOT NULL`, Table(d.Schema, d.ID)); err != nil {
			return fmt.Errorf("move organization tables: %w", err)
		}
		if exists { // a dataset still processing, or failed, may have no table
			for _, q := range []string{`ALTER TABLE ` + Table(d.Schema, d.ID) + ` SET SCHEMA ` + schema,
				`GRANT SELECT ON ` + Table(to, d.ID) + ` TO ` + role} {
				if _, err := tx.ExecContext(ctx, q); err != nil {
					return fmt.Errorf("move organization tables: %w", err)
				}
			}
		}
		// updated_at: every replica's cached description of the dataset is renewed.
		if _, err := tx.ExecContext(ctx, `UPDATE platform.datasets SET table_schema = $2, updated_at = $3 WHERE id = $1`, d.ID, to, now); err != nil {
			return fmt.Errorf("move organization tables: %w", err)
		}
	}
	// Saved views (store/views) move with the tables they read, which they name by oid.
	var vs []string
	if err := tx.SelectContext(ctx, &vs, `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
		WHERE n.nspname = $1 AND c.relkind = 'v'`, from); err != nil {
		return fmt.Errorf("move organization tables: %w", err)
	}
	for _, v := range vs {
		for _, q := range []string{`ALTER VIEW ` + Table(from, v) + ` SET SCHEMA ` + schema, `GRANT SELECT ON ` + Table(to, v) + ` TO ` + role} {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("move organization tables: %w", err)
			}
		}
	}
	return DropOrganization(ctx, tx, from)
}
