package store

import (
	"context"

	"github.com/jmoiron/sqlx"
)

// SandboxGaps names what the database still lets every role do that migration 00018 takes
// away from PUBLIC: it fails to when the service does not own the catalogs (a managed
// database where it is not superuser). User SQL then relies on the query guard's allow-list
// alone for these.
func SandboxGaps(ctx context.Context, db sqlx.QueryerContext) ([]string, error) {
	var gaps []string
	err := sqlx.SelectContext(ctx, db, &gaps, `SELECT x FROM (VALUES
		('EXECUTE on ts_stat(text)', has_function_privilege('public', 'pg_catalog.ts_stat(text)', 'EXECUTE')),
		('EXECUTE on query_to_xml', has_function_privilege('public', 'pg_catalog.query_to_xml(text, boolean, boolean, text)', 'EXECUTE')),
		('EXECUTE on pg_describe_object', has_function_privilege('public', 'pg_catalog.pg_describe_object(oid, oid, integer)', 'EXECUTE')),
		('SELECT on pg_user_mappings', has_table_privilege('public', 'pg_catalog.pg_user_mappings', 'SELECT')),
		('SELECT on pg_foreign_server', has_table_privilege('public', 'pg_catalog.pg_foreign_server', 'SELECT')),
		('SELECT on pg_class', has_table_privilege('public', 'pg_catalog.pg_class', 'SELECT'))) g(x, open)
		WHERE open`)
	return gaps, wrap("check sandbox", err)
}
