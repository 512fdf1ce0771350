-- +goose Up
-- User SQL runs under per-organization roles that only inherit PUBLIC's rights. Take from
-- PUBLIC the functions that would let it escape: set_config (it can undo SET LOCAL ROLE and
-- rewrite the settings row-level security reads), advisory locks (they outlive the
-- rolled-back transaction and poison pooled connections), sleeping, files, server control.
-- Where the platform does not own the functions (a managed database), it notes it and goes
-- on: the query parser refuses them too.
-- +goose StatementBegin
DO $$
DECLARE
    f regprocedure;
BEGIN
    FOR f IN SELECT p.oid::regprocedure FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE n.nspname = 'pg_catalog' AND (p.proname LIKE 'pg\_advisory%' OR p.proname LIKE 'pg\_try\_advisory%'
            OR p.proname IN ('set_config', 'pg_sleep', 'pg_sleep_for', 'pg_sleep_until', 'pg_read_file', 'pg_read_binary_file',
                'pg_ls_dir', 'pg_stat_file', 'pg_terminate_backend', 'pg_cancel_backend', 'pg_reload_conf', 'pg_notify',
                'lo_import', 'lo_export', 'query_to_xml', 'query_to_xml_and_xmlschema', 'query_to_xmlschema'))
    LOOP
        BEGIN
            EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', f);
        EXCEPTION WHEN insufficient_privilege THEN
            RAISE NOTICE 'cannot revoke EXECUTE on % from PUBLIC: not its owner', f;
        END;
    END LOOP;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- +goose StatementBegin
DO $$
DECLARE
    f regprocedure;
BEGIN
    FOR f IN SELECT p.oid::regprocedure FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE n.nspname = 'pg_catalog' AND (p.proname LIKE 'pg\_advisory%' OR p.proname LIKE 'pg\_try\_advisory%'
            OR p.proname IN ('set_config', 'pg_sleep', 'pg_sleep_for', 'pg_sleep_until', 'pg_read_file', 'pg_read_binary_file',
                'pg_ls_dir', 'pg_stat_file', 'pg_terminate_backend', 'pg_cancel_backend', 'pg_reload_conf', 'pg_notify',
                'lo_import', 'lo_export', 'query_to_xml', 'query_to_xml_and_xmlschema', 'query_to_xmlschema'))
    LOOP
        BEGIN
            EXECUTE format('GRANT EXECUTE ON FUNCTION %s TO PUBLIC', f);
        EXCEPTION WHEN insufficient_privilege THEN
            NULL;
        END;
    END LOOP;
END
$$;
-- +goose StatementEnd
