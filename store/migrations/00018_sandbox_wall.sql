-- +goose Up
-- The wall behind the query guard (issue 15, items 2 and 5).
--
-- 1. Take from PUBLIC (and so from every organization's query role) the functions that run SQL
--    given as text (ts_stat, ts_rewrite, the *_to_xml family), describe or look up database
--    objects (pg_describe_object, pg_identify_object*, pg_get_*def, to_reg*, *_description),
--    or show the server, its settings and other sessions (current_setting, version, pg_stat_*,
--    inet_server_*). The service's own role is the superuser wherever this succeeds, so it
--    keeps them.
-- 2. Take SELECT on the catalogs from PUBLIC: above all the foreign-data ones (servers with
--    their hosts and databases, user mappings, foreign tables), and the rest that list every
--    organization's schemas, tables and columns.
-- Where the platform does not own them (a managed database), it notes it and goes on: the
-- guard's allow-list refuses all of them too, and the server warns at start.
-- +goose StatementBegin
DO $$
DECLARE
    f regprocedure;
    v text;
BEGIN
    FOR f IN SELECT p.oid::regprocedure FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
        WHERE n.nspname = 'pg_catalog' AND (
            p.proname IN ('ts_stat', 'ts_rewrite', 'ts_debug', 'ts_parse', 'ts_token_type', 'ts_lexize',
                'pg_describe_object', 'pg_identify_object', 'pg_identify_object_as_address', 'pg_get_object_address',
                'obj_description', 'col_description', 'shobj_description', 'current_setting', 'version',
                'inet_server_addr', 'inet_server_port', 'inet_client_addr', 'inet_client_port', 'current_query',
                'pg_options_to_table', 'pg_get_keywords', 'pg_get_catalog_foreign_keys', 'pg_filenode_relation',
                'pg_relation_filenode', 'pg_relation_filepath', 'pg_tablespace_location', 'pg_tablespace_databases',
                'pg_backend_pid', 'pg_blocking_pids', 'pg_safe_snapshot_blocking_pids', 'pg_conf_load_time',
                'pg_postmaster_start_time', 'pg_listening_channels', 'pg_notification_queue_usage', 'pg_cursor',
                'pg_prepared_statement', 'pg_lock_status', 'pg_current_logfile', 'pg_partition_tree',
                'pg_partition_ancestors', 'pg_partition_root', 'pg_table_size', 'pg_relation_size',
                'pg_total_relation_size', 'pg_indexes_size', 'pg_database_size', 'pg_tablespace_size',
                'txid_current', 'txid_current_if_assigned', 'txid_current_snapshot', 'txid_status',
                'pg_current_xact_id', 'pg_current_xact_id_if_assigned', 'pg_current_snapshot', 'pg_xact_status',
                'pg_export_snapshot', 'pg_trigger_depth', 'pg_my_temp_schema', 'pg_is_other_temp_schema',
                'pg_get_userbyid', 'pg_get_serial_sequence', 'pg_sequence_last_value', 'pg_sequence_parameters',
                'pg_get_replica_identity_index', 'pg_column_is_updatable', 'pg_relation_is_updatable',
                'currtid2', 'row_security_active', 'lo_get', 'lo_put', 'lo_from_bytea', 'lo_create', 'lo_creat',
                'lo_unlink', 'lo_open')
            OR p.proname LIKE '%\_to\_xml' OR p.proname LIKE '%\_to\_xmlschema' OR p.proname LIKE '%\_to\_xml\_and\_xmlschema'
            OR p.proname LIKE 'pg\_get\_%def%' OR p.proname LIKE 'pg\_get\_function\_%' OR p.proname = 'pg_get_expr'
            OR p.proname LIKE 'pg\_get\_statisticsobjdef%'
            OR p.proname LIKE 'to\_reg%' OR p.proname LIKE 'pg\_stat\_get\_%' OR p.proname LIKE 'pg\_%\_is\_visible'
            OR p.proname LIKE 'pg\_input\_%')
    LOOP
        BEGIN
            EXECUTE format('REVOKE EXECUTE ON FUNCTION %s FROM PUBLIC', f);
        EXCEPTION WHEN insufficient_privilege THEN
            RAISE NOTICE 'cannot revoke EXECUTE on % from PUBLIC: not its owner', f;
        END;
    END LOOP;
    -- Every catalog table and view: the query roles are the only other roles of this database
    -- and need none (the planner reads the catalogs without privilege checks), while pg_class,
    -- pg_namespace, pg_attribute, pg_roles and the pg_stat_* views list every organization's
    -- schemas, dataset ids and columns.
    BEGIN
        EXECUTE 'REVOKE SELECT ON ALL TABLES IN SCHEMA pg_catalog FROM PUBLIC';
        EXECUTE 'REVOKE SELECT ON ALL TABLES IN SCHEMA information_schema FROM PUBLIC';
    EXCEPTION WHEN insufficient_privilege THEN
        RAISE NOTICE 'cannot revoke SELECT on the catalogs from PUBLIC';
    END;
    -- DO blocks: PL/pgSQL for the query roles would be a way around the statement guard.
    BEGIN
        EXECUTE 'REVOKE USAGE ON LANGUAGE plpgsql FROM PUBLIC';
    EXCEPTION WHEN insufficient_privilege THEN
        RAISE NOTICE 'cannot revoke USAGE on plpgsql from PUBLIC';
    END;
    FOREACH v IN ARRAY ARRAY['pg_catalog.pg_user_mappings', 'pg_catalog.pg_foreign_server', 'pg_catalog.pg_foreign_data_wrapper',
        'pg_catalog.pg_foreign_table', 'information_schema.user_mapping_options', 'information_schema.user_mappings',
        'information_schema.foreign_servers', 'information_schema.foreign_server_options', 'information_schema.foreign_tables',
        'information_schema.foreign_table_options', 'information_schema.foreign_data_wrappers',
        'information_schema.foreign_data_wrapper_options', 'information_schema._pg_foreign_servers',
        'information_schema._pg_user_mappings', 'information_schema._pg_foreign_tables',
        'information_schema._pg_foreign_table_columns', 'information_schema._pg_foreign_data_wrappers']
    LOOP
        BEGIN
            EXECUTE format('REVOKE SELECT ON %s FROM PUBLIC', v);
        EXCEPTION WHEN insufficient_privilege OR undefined_table THEN
            RAISE NOTICE 'cannot revoke SELECT on % from PUBLIC', v;
        END;
    END LOOP;
END
$$;
-- +goose StatementEnd

-- Connected datasets made before: their foreign tables move to a private schema (fdw_<id>),
-- a view of each takes its place (owned by this role, whose user mapping postgres_fdw then
-- uses), and the query roles lose their own user mappings, with the passwords, and the
-- servers.
-- +goose StatementBegin
DO $$
DECLARE
    d record;
    t record;
    priv text;
    role text;
BEGIN
    FOR d IN SELECT id, organization_id, source_type, tables FROM platform.datasets WHERE type = 'database' AND jsonb_typeof(tables) = 'array' LOOP
        priv := 'fdw_' || d.id;
        role := 'dp_query_' || d.organization_id;
        IF EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = d.id) THEN
            EXECUTE format('CREATE SCHEMA IF NOT EXISTS %I', priv);
            FOR t IN SELECT e->>'relation' AS rel FROM jsonb_array_elements(d.tables) e
                WHERE (e->>'foreign')::boolean AND e->>'schema' = d.id LOOP
                IF to_regclass(format('%I.%I', d.id, t.rel)) IS NOT NULL THEN
                    EXECUTE format('ALTER FOREIGN TABLE %I.%I SET SCHEMA %I', d.id, t.rel, priv);
                    IF d.source_type = 'mysql' THEN
                        -- mysql_fdw uses the current user's mapping: read through the owner's function.
                        EXECUTE format('CREATE FUNCTION %I.%I() RETURNS SETOF %I.%I LANGUAGE sql STABLE SECURITY DEFINER '
                            'SET search_path = pg_catalog AS %L', priv, t.rel, priv, t.rel, format('SELECT * FROM %I.%I', priv, t.rel));
                        EXECUTE format('REVOKE EXECUTE ON FUNCTION %I.%I() FROM PUBLIC', priv, t.rel);
                        EXECUTE format('CREATE VIEW %I.%I AS SELECT * FROM %I.%I()', d.id, t.rel, priv, t.rel);
                    ELSE
                        EXECUTE format('CREATE VIEW %I.%I AS SELECT * FROM %I.%I', d.id, t.rel, priv, t.rel);
                    END IF;
                END IF;
            END LOOP;
            IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = role) THEN
                EXECUTE format('REVOKE ALL ON ALL TABLES IN SCHEMA %I FROM %I', priv, role);
                EXECUTE format('GRANT SELECT ON ALL TABLES IN SCHEMA %I TO %I', d.id, role);
                EXECUTE format('GRANT EXECUTE ON ALL FUNCTIONS IN SCHEMA %I TO %I', priv, role);
            END IF;
        END IF;
        IF EXISTS (SELECT 1 FROM pg_roles WHERE rolname = role)
            AND EXISTS (SELECT 1 FROM pg_foreign_server WHERE srvname = 'srv_' || d.id) THEN
            EXECUTE format('DROP USER MAPPING IF EXISTS FOR %I SERVER %I', role, 'srv_' || d.id);
            EXECUTE format('REVOKE ALL ON FOREIGN SERVER %I FROM %I', 'srv_' || d.id, role);
        END IF;
        UPDATE platform.datasets SET tables = (
            SELECT jsonb_agg(CASE WHEN (e->>'foreign')::boolean AND e->>'schema' = d.id
                THEN jsonb_set(e, '{schema}', to_jsonb(priv)) ELSE e END ORDER BY i)
            FROM jsonb_array_elements(d.tables) WITH ORDINALITY a(e, i))
        WHERE id = d.id;
    END LOOP;
END
$$;
-- +goose StatementEnd

-- +goose Down
-- The revocations stay (granting them back would reopen the leak); connected datasets keep
-- their views, which the code before this one does not know: restore from a backup instead.
SELECT 1;
