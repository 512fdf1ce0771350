package usersql_test

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"dataplatform/store"
	"dataplatform/store/datasets"
	"dataplatform/store/usersql"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"
)

// hostileCalls are expressions the audit and we tried, each dropped into every clause of
// corpusContexts below.
var hostileCalls = []string{
	`ts_rewrite('a'::tsquery, $$SELECT 'a'::tsquery, 'b'::tsquery$$)`,
	`query_to_xml('select * from platform.users', true, true, '')`,
	`pg_describe_object(1259, 16384, 0)`,
	`set_config('role', 'postgres', true)`,
	`current_setting('search_path')`,
	`pg_advisory_lock(1)`,
	`lo_get(1)`,
	`pg_read_file('/etc/passwd')`,
	`txid_current()`,
	`pg_stat_get_backend_activity(1)`,
	`inet_server_addr()`,
	`version()`,
	`(16384)::oid::regclass`,
	`'pg_class'::regclass`,
	`regclass 'pg_class'`,
	`ARRAY['pg_class'::regclass]`,
	`to_regclass('pg_class')`,
	`pg_catalog.pg_get_viewdef('pg_tables')`,
	`"ts_stat"('x')`,
	`public.lower('x')`,
}

// corpusContexts are the places a function can hide: each %s gets a hostile call.
var corpusContexts = []string{
	`SELECT %s`,
	`SELECT 1 WHERE %s IS NOT NULL`,
	`SELECT 1 ORDER BY %s`,
	`SELECT count(*) FROM (SELECT 1 AS a) s GROUP BY %s`,
	`SELECT 1 HAVING %s IS NOT NULL`,
	`SELECT row_number() OVER (PARTITION BY %s)`,
	`SELECT (SELECT (SELECT %s))`,
	`SELECT * FROM (SELECT 1) s, LATERAL (SELECT %s) l`,
	`WITH c AS (SELECT %s) SELECT * FROM c`,
	`SELECT coalesce(NULL, %s::text) /* comment */ -- and another`,
	`SELECT CASE WHEN true THEN %s END`,
	`SELECT 1 UNION ALL SELECT %s`,
	`SELECT count(*) FILTER (WHERE %s IS NOT NULL) FROM (SELECT 1) s`,
	`SELECT 1 FROM (SELECT 1 AS a) s WHERE a IN (SELECT %s)`,
}

// hostileStatements are whole statements: statements other than SELECT, writes, locks,
// catalogs by every spelling, table functions, sampling methods, XML, session state.
var hostileStatements = []string{
	// the audit's password read and its kin
	`SELECT * FROM ts_stat($$SELECT array_to_string(umoptions,' ')::tsvector FROM pg_user_mappings$$)`,
	`SELECT * FROM ts_stat('SELECT to_tsvector(nspname) FROM pg_namespace')`,
	`SELECT * FROM pg_catalog.ts_stat($q$SELECT to_tsvector(attname) FROM pg_attribute$q$)`,
	`SELECT * FROM ts_stat($$SELECT to_tsvector(array_to_string(srvoptions, ' ')) FROM pg_foreign_server$$, 'ab')`,
	`SELECT * FROM ROWS FROM (generate_series(1, 2), ts_stat('select 1'))`,
	`SELECT word FROM ts_stat(E'SELECT to_tsvector(relname::text) FROM pg_class') WITH ORDINALITY`,
	`SELECT ts_rewrite(to_tsquery('a'), 'SELECT keyword, sample FROM aliases')`,
	`SELECT query_to_xml_and_xmlschema('select 1', true, true, '')`,
	`SELECT query_to_xmlschema('select 1', true, true, '')`,
	`SELECT cursor_to_xml('c', 1, true, true, '')`,
	`SELECT table_to_xml('platform.users', true, true, '')`,
	`SELECT schema_to_xml('platform', true, true, '')`,
	`SELECT database_to_xml(true, true, '')`,
	`SELECT pg_identify_object(1259, 16384, 0)`,
	`SELECT pg_identify_object_as_address(1259, 16384, 0)`,
	`SELECT pg_get_object_address('table', '{platform,users}', '{}')`,
	`SELECT x::oid::regclass FROM generate_series(16384, 17000) x`,
	`SELECT CAST(CAST(x AS oid) AS regclass) FROM generate_series(16384, 17000) x`,
	`SELECT x::regnamespace FROM generate_series(16384, 17000) x`,
	`SELECT 'platform.users'::regclass::oid`,
	`SELECT $$pg_class$$::regclass`,
	`SELECT E'pg_\x63lass'::regclass`,
	`SELECT 'pg_class'::text::regclass`,
	`SELECT 'pg_class'::pg_catalog.regclass`,
	`SELECT 'pg_class'::"regclass"`,
	`SELECT '{pg_class}'::regclass[]`,
	`SELECT 'now'::regproc`, `SELECT 'int4'::regtype`, `SELECT 'postgres'::regrole`, `SELECT 'english'::regconfig`,
	`SELECT 'simple'::regdictionary`, `SELECT '"C"'::regcollation`, `SELECT '+(int4,int4)'::regoperator`,
	`SELECT '+'::regoper`, `SELECT 'now()'::regprocedure`,
	`SELECT 1::xid`, `SELECT '(0,1)'::tid`, `SELECT '1'::cid`, `SELECT '0/0'::pg_lsn`, `SELECT pg_typeof(1)::oid`,
	`SELECT * FROM json_populate_record(NULL::regclass, '{}')`,
	`SELECT * FROM json_to_record('{"a": "pg_class"}') AS t(a regclass)`,
	`SELECT 'x'::public.mytype`,
	`SELECT 'x'::platform.some_type`,
	// settings, session state, sequences, locks, sleep, notifications
	`SELECT set_config('search_path', 'platform', false)`,
	`SELECT pg_catalog.set_config('role', 'postgres', false)`,
	`SELECT current_setting('data_directory')`,
	`SELECT setseed(0.5)`, `SELECT nextval('s')`, `SELECT currval('s')`, `SELECT setval('s', 1)`, `SELECT lastval()`,
	`SELECT pg_advisory_xact_lock(1)`, `SELECT pg_try_advisory_lock(1, 2)`, `SELECT pg_advisory_lock_shared(1)`,
	`SELECT pg_advisory_unlock_all()`, `SELECT pg_sleep(10)`, `SELECT pg_sleep_for('1 hour')`, `SELECT pg_notify('c', 'x')`,
	`SELECT pg_terminate_backend(1)`, `SELECT pg_cancel_backend(1)`, `SELECT pg_reload_conf()`, `SELECT pg_backend_pid()`,
	`SELECT pg_export_snapshot()`, `SELECT txid_current_snapshot()`, `SELECT pg_current_xact_id()`,
	// files, large objects, remote connections
	`SELECT pg_read_binary_file('/etc/passwd')`, `SELECT pg_ls_dir('.')`, `SELECT pg_stat_file('postgresql.conf')`,
	`SELECT lo_import('/etc/passwd')`, `SELECT lo_export(1, '/tmp/x')`, `SELECT lo_from_bytea(0, 'x')`, `SELECT loread(lo_open(1, 262144), 10)`,
	`SELECT * FROM dblink('host=10.0.0.1', 'select 1') AS t(a int)`, `SELECT dblink_exec('drop table x')`,
	`SELECT dblink_connect('x')`,
	// server and session facts
	`SELECT inet_server_port()`, `SELECT inet_client_addr()`, `SELECT current_database()`, `SELECT current_schemas(true)`,
	`SELECT current_user`, `SELECT session_user`, `SELECT user`, `SELECT current_catalog`, `SELECT current_schema`,
	`SELECT current_role`, `SELECT version()`, `SELECT pg_postmaster_start_time()`, `SELECT current_query()`,
	`SELECT * FROM pg_stat_get_activity(NULL)`, `SELECT pg_stat_get_numscans(16384)`, `SELECT pg_relation_size('x')`,
	`SELECT has_table_privilege('platform.users', 'select')`, `SELECT obj_description(16384)`,
	`SELECT pg_get_functiondef(1)`, `SELECT pg_get_userbyid(10)`, `SELECT format_type(23, -1)`, `SELECT pg_collation_for('a')`,
	// catalogs and the platform's tables, by every spelling
	`SELECT * FROM pg_catalog.pg_class`, `SELECT * FROM pg_class`, `SELECT * FROM PG_CLASS`, `SELECT * FROM Pg_Catalog.Pg_Namespace`,
	`SELECT * FROM "pg_catalog"."pg_class"`, `SELECT * FROM "pg_class"`, `SELECT * FROM U&"pg\005fclass"`,
	`SELECT * FROM U&"pg_c!006cass" UESCAPE '!'`, `SELECT * FROM pg_catalog/**/./**/pg_attribute`,
	`SELECT * FROM pg_catalog . pg_user_mappings`, `SELECT * FROM pg_user_mappings`, `SELECT * FROM pg_foreign_server`,
	`SELECT * FROM pg_foreign_table`, `SELECT * FROM pg_roles`, `SELECT * FROM pg_authid`, `SELECT * FROM pg_shadow`,
	`SELECT * FROM pg_settings`, `SELECT * FROM pg_stat_activity`, `SELECT * FROM pg_stat_user_tables`, `SELECT * FROM pg_tables`,
	`SELECT * FROM pg_views`, `SELECT * FROM pg_proc`, `SELECT * FROM pg_toast.pg_toast_1259`, `SELECT * FROM pg_temp.x`,
	`SELECT * FROM information_schema.tables`, `SELECT * FROM "information_schema"."columns"`, `SELECT * FROM INFORMATION_SCHEMA.SCHEMATA`,
	`SELECT * FROM information_schema.user_mapping_options`, `SELECT * FROM information_schema.foreign_servers`,
	`SELECT * FROM platform.users`, `SELECT * FROM "platform"."users"`, `SELECT * FROM PLATFORM.USERS`, `SELECT * FROM platform . api_keys`,
	`SELECT * FROM postgres.platform.users`, `SELECT * FROM postgres.pg_catalog.pg_class`,
	`TABLE pg_class`, `TABLE platform.users`, `VALUES ((SELECT count(*) FROM pg_class))`,
	`SELECT (SELECT relname FROM pg_class LIMIT 1)`, `SELECT 1 WHERE EXISTS (SELECT 1 FROM pg_namespace)`,
	`SELECT * FROM (SELECT 1) a JOIN LATERAL (SELECT * FROM pg_class) b ON true`,
	`WITH RECURSIVE r AS (SELECT 1 AS n UNION ALL SELECT n + 1 FROM r, pg_class) SELECT * FROM r`,
	`SELECT * FROM o.t WHERE a IN (SELECT oid FROM pg_namespace)`,
	// statements other than one SELECT
	`COPY o.t TO STDOUT`, `COPY (SELECT 1) TO '/tmp/x'`, `COPY o.t FROM PROGRAM 'id'`,
	`DO $$BEGIN PERFORM pg_sleep(1); END$$`, `SELECT 1; SELECT 2`, `SELECT 1; DELETE FROM o.t`, `EXPLAIN ANALYZE DELETE FROM o.t`,
	`EXPLAIN SELECT 1`, `SET ROLE postgres`, `RESET ROLE`, `SET search_path = platform`, `SET LOCAL statement_timeout = 0`,
	`CALL p()`, `LISTEN c`, `NOTIFY c`, `PREPARE p AS SELECT 1`, `EXECUTE p`, `DECLARE c CURSOR FOR SELECT 1`, `FETCH ALL FROM c`,
	`CREATE FUNCTION f() RETURNS int LANGUAGE sql AS 'select 1'`, `CREATE TABLE x (a int)`, `CREATE TEMP TABLE x AS SELECT 1`,
	`DROP TABLE o.t`, `TRUNCATE o.t`, `VACUUM o.t`, `ANALYZE o.t`, `LOAD 'auto_explain'`, `ALTER SYSTEM SET fsync = off`,
	`GRANT ALL ON o.t TO PUBLIC`, `LOCK TABLE o.t`, `BEGIN`, `COMMIT`, `ROLLBACK`, `DISCARD ALL`, `CHECKPOINT`,
	`INSERT INTO o.t VALUES (1)`, `UPDATE o.t SET a = 1`, `DELETE FROM o.t`, `MERGE INTO o.t USING o.u ON true WHEN MATCHED THEN DELETE`,
	// writes and locks inside a SELECT
	`WITH d AS (DELETE FROM o.t RETURNING *) SELECT * FROM d`,
	`WITH u AS (UPDATE o.t SET a = 1 RETURNING *) SELECT 1`,
	`WITH i AS (INSERT INTO o.t VALUES (1) RETURNING *) SELECT * FROM i`,
	`WITH x AS (SELECT 1), d AS (DELETE FROM o.t) SELECT * FROM x`,
	`SELECT * FROM (SELECT 1) s WHERE EXISTS (WITH d AS (DELETE FROM o.t RETURNING 1) SELECT * FROM d)`,
	`SELECT * INTO newt FROM o.t`, `SELECT * INTO TEMP newt FROM o.t`, `SELECT * INTO UNLOGGED newt FROM o.t`,
	`SELECT * FROM o.t FOR UPDATE`, `SELECT * FROM o.t FOR NO KEY UPDATE`, `SELECT * FROM o.t FOR SHARE`,
	`SELECT * FROM o.t FOR KEY SHARE NOWAIT`, `SELECT * FROM o.t FOR UPDATE SKIP LOCKED`, `SELECT * FROM (SELECT * FROM o.t FOR UPDATE) s`,
	// table functions, sampling methods, collations, operators, XML
	`SELECT * FROM o.t TABLESAMPLE system_rows(10)`, `SELECT * FROM o.t TABLESAMPLE public.evil(10)`,
	`SELECT * FROM o.t TABLESAMPLE pg_catalog.system_time(1000)`,
	`SELECT 'a' COLLATE public."evil"`, `SELECT 'a' COLLATE platform.c`,
	`SELECT 1 OPERATOR(public.+) 1`, `SELECT 1 OPERATOR(platform.===) 1`, `SELECT 1 === 1`, `SELECT 'a' ~<~ 'b'`,
	`SELECT a FROM o.t ORDER BY a USING OPERATOR(public.<)`, `SELECT 1 = ANY (SELECT 1) OR 1 OPERATOR(public.=) ANY ('{1}')`,
	`SELECT xmlparse(document '<!DOCTYPE x [<!ENTITY e SYSTEM "file:///etc/passwd">]><x>&e;</x>')`,
	`SELECT xmlelement(name a, 'x')`, `SELECT xmlserialize(content '<a/>' AS text)`, `SELECT xpath('/a', '<a/>')`,
	`SELECT * FROM xmltable('/a' PASSING '<a/>' COLUMNS x text)`, `SELECT xmlagg(xmlelement(name a))`,
	`SELECT xml_is_well_formed('<a/>')`, `SELECT system_user`,
	// functions that are not on the list, however written
	`SELECT "LOWER"('x')`, `SELECT platform.record_change()`, `SELECT o.f()`, `SELECT pg_catalog.pg_sleep(1)`,
	`SELECT ts_debug('english', 'a')`, `SELECT * FROM ts_parse('default', 'a')`, `SELECT ts_lexize('english_stem', 'a')`,
	`SELECT row_security_active('o.t')`, `SELECT pg_get_expr('x', 0)`, `SELECT to_regnamespace('platform')`,
	`SELECT * FROM generate_series(1, 2) g WHERE to_regrole('postgres') IS NOT NULL`,
	`SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY pg_backend_pid())`,
	`SELECT greatest(1, pg_backend_pid())`, `SELECT (1, 2) OVERLAPS (pg_postmaster_start_time(), now())`,
	`SELECT ROW(1, current_setting('role'))`,
	// attribute notation: (x).f is f(x) when x has no field f
	`SELECT (a).ts_stat FROM (SELECT $$SELECT to_tsvector(relname::text) FROM pg_class$$::text AS a) s`,
	`SELECT (a).current_setting FROM (SELECT 'search_path'::text AS a) s`,
	`SELECT ('role').set_config`, `SELECT ((SELECT 'x')).version`, `SELECT (ARRAY['a'])[1].pg_read_file`, `SELECT array_agg(x ORDER BY pg_sleep(1)) FROM generate_series(1, 2) x`,
}

// corpus is every hostile statement: hostileStatements and each hostile call in each clause.
func corpus() []string {
	out := append([]string{}, hostileStatements...)
	for _, call := range hostileCalls {
		for _, c := range corpusContexts {
			out = append(out, fmt.Sprintf(c, call))
		}
	}
	return out
}

// TestHostileCorpus: the guard refuses every statement of the corpus as forbidden.
func TestHostileCorpus(t *testing.T) {
	all := corpus()
	if len(all) < 200 {
		t.Fatalf("the corpus has %d statements: want at least 200", len(all))
	}
	for _, sql := range all {
		var fe *usersql.ForbiddenError
		if err := usersql.Check(sql); !errors.As(err, &fe) {
			t.Errorf("not refused: %s (%v)", sql, err)
		}
	}
	t.Logf("%d hostile statements refused", len(all))
}

// analytic is ordinary SQL analysts write: it must pass the guard and run as the query role
// (the database's revocations leave it alone). %[1]s is the table.
var analytic = []string{
	`SELECT name, score FROM %[1]s WHERE score > 10 ORDER BY score DESC NULLS LAST LIMIT 3`,
	`SELECT date_trunc('month', joined) AS m, count(*), avg(score), sum(score), min(name), max(name) FROM %[1]s GROUP BY 1 ORDER BY 1`,
	`SELECT extract(year FROM joined), date_part('dow', joined), to_char(joined, 'YYYY-MM'), age(joined::timestamp) FROM %[1]s`,
	`SELECT coalesce(score, 0), nullif(score, 60), greatest(score, 50), least(score, 50) FROM %[1]s`,
	`SELECT string_agg(name, ', ' ORDER BY name), array_agg(DISTINCT score) FILTER (WHERE score IS NOT NULL) FROM %[1]s`,
	`SELECT percentile_cont(0.5) WITHIN GROUP (ORDER BY score), percentile_disc(0.9) WITHIN GROUP (ORDER BY score), mode() WITHIN GROUP (ORDER BY score) FROM %[1]s`,
	`SELECT name, rank() OVER w, dense_rank() OVER w, row_number() OVER w, lag(score) OVER w, lead(score, 1, 0) OVER w,
		first_value(name) OVER w, ntile(2) OVER w, sum(score) OVER (ORDER BY joined ROWS BETWEEN 1 PRECEDING AND CURRENT ROW)
		FROM %[1]s WINDOW w AS (ORDER BY score)`,
	`SELECT round(avg(score)::numeric, 2), round(stddev(score), 3), variance(score), corr(score, id), regr_slope(score, id) FROM %[1]s`,
	`SELECT abs(-score), ceil(score / 7.0), floor(score / 7.0), mod(score, 7), power(score, 2), sqrt(abs(score)), ln(score + 1), log(score + 1), width_bucket(score, 0, 100, 4) FROM %[1]s`,
	`SELECT lower(name), upper(name), initcap(name), length(name), substring(name FROM 1 FOR 2), position('n' IN name), trim(both ' ' FROM name), left(name, 1), right(name, 1), lpad(name, 5, '*'), replace(name, 'A', 'a'), reverse(name), split_part(name || '-x', '-', 2), concat_ws('/', name, score) FROM %[1]s`,
	`SELECT regexp_replace(name, '[aeiou]', '_', 'g'), regexp_match(name, '^(.)'), name ~ '^A', name ~* '^a', name LIKE 'A%%', name ILIKE 'a%%', name SIMILAR TO 'A%%', name NOT LIKE 'B\_%%' ESCAPE '\' FROM %[1]s`,
	`SELECT * FROM regexp_split_to_table('a,b,c', ',') AS x`,
	`SELECT to_jsonb(t) - 'id', jsonb_build_object('n', name, 's', score) -> 'n', row_to_json(t)::jsonb ->> 'name' FROM %[1]s t`,
	`SELECT jsonb_agg(jsonb_build_object('n', name)), json_object_agg(name, score) FROM %[1]s`,
	`SELECT e ->> 'a' FROM jsonb_array_elements('[{"a": 1}, {"a": 2}]'::jsonb) e`,
	`SELECT k, v FROM jsonb_each_text('{"a": "1"}') AS j(k, v)`,
	`SELECT '{"a": {"b": 1}}'::jsonb #>> '{a,b}', '{"a": 1}'::jsonb ? 'a', '{"a": 1}'::jsonb @> '{"a": 1}', jsonb_path_query_first('{"a": 2}', '$.a')`,
	`SELECT * FROM jsonb_to_recordset('[{"a": 1, "b": "x"}]') AS r(a int, b text)`,
	`SELECT d::date, count(t.id) FROM generate_series('2024-01-01'::date, '2024-03-01', '1 month') d LEFT JOIN %[1]s t ON date_trunc('month', t.joined) = d GROUP BY 1 ORDER BY 1`,
	`SELECT unnest(ARRAY[1, 2, 3]), array_length(ARRAY[1, 2], 1), cardinality(ARRAY[1]), array_to_string(ARRAY['a', 'b'], ','), ARRAY[1, 2] && ARRAY[2], 1 = ANY (ARRAY[1, 2])`,
	`SELECT int4range(1, 10) @> 5, daterange('2024-01-01', '2024-12-31') && daterange('2024-06-01', '2025-01-01'), lower(int4range(1, 5)), upper(numrange(1, 2)), isempty(int4range(1, 1))`,
	`SELECT to_tsvector('english', name) @@ plainto_tsquery('english', 'ann'), ts_rank(to_tsvector(name), to_tsquery('ann')), websearch_to_tsquery('ann or bob') FROM %[1]s`,
	`SELECT now(), current_date, current_timestamp, localtimestamp, clock_timestamp() > now() - interval '1 hour', make_date(2024, 1, 1), date_bin('15 minutes', timestamp '2024-01-01 10:07', timestamp '2024-01-01')`,
	`SELECT to_char(1234.5, '9G999D99'), to_number('1,234', '9G999'), to_date('2024-01-05', 'YYYY-MM-DD'), to_timestamp(0) AT TIME ZONE 'UTC', format('%%s has %%s', name, score) FROM %[1]s`,
	`SELECT CASE WHEN score >= 60 THEN 'pass' WHEN score IS NULL THEN 'n/a' ELSE 'fail' END, score IS DISTINCT FROM 60, score BETWEEN 10 AND 60, score IN (10, 60), NOT (score > 5) FROM %[1]s`,
	`SELECT score::text, score::numeric(5, 1), CAST(score AS bigint), joined::timestamptz, '42'::int, '1.5'::float8, 'yes'::boolean, '2024-01-01'::date + 1, interval '1 day' * 2 FROM %[1]s`,
	`WITH top AS (SELECT * FROM %[1]s WHERE score > 20) SELECT t.name, s.c FROM top t CROSS JOIN LATERAL (SELECT count(*) AS c FROM %[1]s x WHERE x.score <= t.score) s`,
	`WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5) SELECT sum(i) FROM n`,
	`SELECT name FROM %[1]s WHERE score > (SELECT avg(score) FROM %[1]s) AND EXISTS (SELECT 1 FROM %[1]s x WHERE x.id <> %[1]s.id)`,
	`SELECT name FROM %[1]s UNION SELECT 'x' INTERSECT SELECT 'x' EXCEPT SELECT 'y'`,
	`SELECT grouping(score), score, count(*) FROM %[1]s GROUP BY ROLLUP (score) HAVING count(*) > 0`,
	`SELECT score, count(*) FROM %[1]s GROUP BY CUBE (score), GROUPING SETS ((), (score))`,
	`SELECT md5(name), sha256(name::bytea), encode(name::bytea, 'hex'), gen_random_uuid() IS NOT NULL, random() < 2 FROM %[1]s`,
	`SELECT DISTINCT ON (score > 50) name FROM %[1]s ORDER BY score > 50, name`,
	`SELECT count(*) FROM %[1]s TABLESAMPLE BERNOULLI (100) REPEATABLE (1)`,
	`SELECT name COLLATE "C" FROM %[1]s ORDER BY name COLLATE "C"`,
	`SELECT pg_typeof(score), pg_column_size(name), pg_size_pretty(1024::bigint) FROM %[1]s`,
	`SELECT bool_and(score > 0), bool_or(score > 80), every(score > 0), count(DISTINCT score) FROM %[1]s`,
	`SELECT x, sum(x) OVER (ORDER BY x RANGE BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) FROM generate_series(1, 5) x`,
	`SELECT a.name, b.name FROM %[1]s a JOIN %[1]s b ON a.score < b.score AND b.joined IS NOT NULL ORDER BY 1, 2 LIMIT 5 OFFSET 1`,
	`SELECT name FROM %[1]s ORDER BY score USING >`,
	`VALUES (1, 'a'), (2, 'b')`,
	`SELECT (ROW(1, 'a')).f1, ROW(score, name) = ROW(60, 'Dee'), (jsonb_each('{"a": 1}')).key FROM %[1]s`,
}

// TestAnalyticCorpus: ordinary SQL passes the guard and runs under the query role.
func TestAnalyticCorpus(t *testing.T) {
	t.Parallel()
	db, org, table := sandbox(t)
	ctx := context.Background()
	for _, q := range analytic {
		sql := strings.ReplaceAll(strings.ReplaceAll(q, "%[1]s", pq.QuoteIdentifier(table)), "%%", "%")
		if err := usersql.Check(sql); err != nil {
			t.Errorf("refused: %s: %v", sql, err)
			continue
		}
		if _, err := usersql.RunQuery(ctx, db, org, sql, nil, usersql.QueryOptions{Timeout: 5 * time.Second, MaxRows: 100}); err != nil {
			t.Errorf("failed as the query role: %s: %v", sql, err)
		}
	}
}

// wall is what the database itself refuses the query role, run without the guard: the
// guard is one wall, these revocations and grants the other. (The reg* casts are the
// guard's alone: PostgreSQL has no privilege on a type's output.)
var wall = []string{
	`SELECT * FROM ts_stat($$SELECT array_to_string(umoptions,' ')::tsvector FROM pg_user_mappings$$)`,
	`SELECT * FROM ts_stat('SELECT to_tsvector(nspname::text) FROM pg_namespace')`,
	`SELECT (a).ts_stat FROM (SELECT 'SELECT to_tsvector(relname::text) FROM pg_class'::text AS a) s`,
	`SELECT (a).current_setting FROM (SELECT 'search_path'::text AS a) s`,
	`SELECT ts_rewrite('a'::tsquery, 'SELECT ''a''::tsquery, ''b''::tsquery')`,
	`SELECT query_to_xml('select 1', true, true, '')`,
	`SELECT query_to_xml_and_xmlschema('select 1', true, true, '')`,
	`SELECT query_to_xmlschema('select 1', true, true, '')`,
	`SELECT table_to_xml('platform.users', true, true, '')`,
	`SELECT schema_to_xml('platform', true, true, '')`,
	`SELECT database_to_xml(true, true, '')`,
	`SELECT cursor_to_xml('c', 1, true, true, '')`,
	`SELECT pg_describe_object(1259, 1259, 0)`,
	`SELECT pg_identify_object(1259, 1259, 0)`,
	`SELECT pg_identify_object_as_address(1259, 1259, 0)`,
	`SELECT pg_get_object_address('table', '{platform,users}', '{}')`,
	`SELECT pg_get_viewdef('pg_tables'::text)`,
	`SELECT pg_get_functiondef(1)`,
	`SELECT to_regclass('platform.users')`,
	`SELECT to_regnamespace('platform')`,
	`SELECT obj_description(1259)`,
	`SELECT current_setting('search_path')`,
	`SELECT set_config('role', 'postgres', true)`,
	`SELECT version()`,
	`SELECT inet_server_addr()`,
	`SELECT txid_current()`,
	`SELECT * FROM pg_stat_get_activity(NULL)`,
	`SELECT pg_relation_size(1259)`,
	`SELECT pg_read_file('/etc/passwd')`,
	`SELECT pg_ls_dir('.')`,
	`SELECT lo_import('/etc/passwd')`,
	`SELECT lo_get(1)`,
	`SELECT pg_advisory_lock(1)`,
	`SELECT pg_sleep(0)`,
	`SELECT * FROM pg_user_mappings`,
	`SELECT srvoptions FROM pg_foreign_server`,
	`SELECT * FROM pg_foreign_table`,
	`SELECT nspname FROM pg_namespace`,
	`SELECT relname FROM pg_class`,
	`SELECT attname FROM pg_attribute`,
	`SELECT rolname FROM pg_roles`,
	`SELECT relname FROM pg_stat_user_tables`,
	`SELECT tablename FROM pg_tables`,
	`SELECT * FROM information_schema.tables`,
	`SELECT * FROM information_schema.columns`,
	`SELECT * FROM information_schema.user_mapping_options`,
	`SELECT * FROM information_schema.foreign_servers`,
	`SELECT * FROM platform.users`,
	`SELECT * FROM other_org.secret`,
	`DO $$BEGIN NULL; END$$`,
	`COPY (SELECT 1) TO '/tmp/dp-copy'`,
}

// TestDatabaseWall runs the wall list as the query role without the guard: PostgreSQL
// refuses each, and organization B's query role learns nothing of organization A (its
// schema, dataset table, column names, connected server's host, database and password).
func TestDatabaseWall(t *testing.T) {
	t.Parallel()
	db, org, table := sandbox(t)
	ctx := context.Background()
	hardened(t, db)
	other := tenant(t, db)
	for _, sql := range wall {
		sql = strings.ReplaceAll(sql, "other_org.secret", datasets.Table(other.org, other.table))
		_, err := usersql.RunQuery(ctx, db, org, sql, nil, usersql.QueryOptions{Timeout: 2 * time.Second, MaxRows: 10})
		var pe *pq.Error
		if !errors.As(err, &pe) {
			t.Errorf("not refused by the database: %s (%v)", sql, err)
		}
	}
	// Writes, SELECT INTO and locks fail in the read-only transaction without any grant.
	for _, sql := range []string{`DELETE FROM %s`, `WITH d AS (DELETE FROM %s RETURNING 1) SELECT * FROM d`,
		`SELECT * INTO copy_of FROM %s`, `SELECT * FROM %s FOR UPDATE`} {
		sql = fmt.Sprintf(sql, pq.QuoteIdentifier(table))
		if _, err := usersql.RunQuery(ctx, db, org, sql, nil, usersql.QueryOptions{Timeout: 2 * time.Second, MaxRows: 10}); err == nil {
			t.Errorf("not refused by the database: %s", sql)
		}
	}
}

// TestTenantLearnsNothing: through the guard and the database, as organization B's query
// role, every probe of the catalogs is refused, and nothing answered names organization A.
func TestTenantLearnsNothing(t *testing.T) {
	t.Parallel()
	db, org, _ := sandbox(t)
	ctx := context.Background()
	a := tenant(t, db)
	var wallUp bool
	db.Get(&wallUp, `SELECT rolsuper FROM pg_roles WHERE rolname = current_user`)
	probes := append(corpus(), wall...)
	probes = append(probes, `SELECT x::oid::regclass::text FROM generate_series(1, 20000) x`,
		`SELECT x::regnamespace::text FROM generate_series(1, 20000) x`,
		`SELECT pg_describe_object(1259, x::oid, 0) FROM generate_series(16384, 20000) x`)
	for _, sql := range probes {
		// As the API runs user SQL: the guard first, then the database.
		if usersql.Check(sql) == nil {
			res, err := usersql.RunQuery(ctx, db, org, sql, nil, usersql.QueryOptions{Timeout: 2 * time.Second, MaxRows: 100000})
			if err == nil {
				a.leaks(t, sql, fmt.Sprint(res.Rows))
			}
		}
		// And without the guard: the database alone, except for the reg* casts (the guard's).
		if !wallUp || regCast.MatchString(sql) {
			continue
		}
		if res, err := usersql.RunQuery(ctx, db, org, sql, nil, usersql.QueryOptions{Timeout: 2 * time.Second, MaxRows: 100000}); err == nil {
			a.leaks(t, sql, fmt.Sprint(res.Rows))
		}
	}
}

var regCast = regexp.MustCompile(`(?i)\breg(class|proc|procedure|oper|operator|type|namespace|role|config|dictionary|collation)\b`)

// hardened skips a test of the database's wall where it cannot be built: a DATABASE_URL whose
// user does not own the catalogs (the server warns about it at start).
func hardened(t *testing.T, db *sqlx.DB) {
	t.Helper()
	var super bool
	if err := db.Get(&super, `SELECT rolsuper FROM pg_roles WHERE rolname = current_user`); err != nil {
		t.Fatal(err)
	}
	if !super {
		t.Skip("the database user is not superuser: the revocations of migration 00018 could not be made")
	}
	if gaps, err := store.SandboxGaps(context.Background(), db); err != nil || len(gaps) > 0 {
		t.Fatalf("still granted to PUBLIC: %v %v", gaps, err)
	}
}

// other is an organization's secrets: its schema and dataset table with telling column
// names, and a connected database's server with host, database and password.
type other struct{ org, table, server string }

func (o other) leaks(t *testing.T, sql, got string) {
	t.Helper()
	for _, s := range []string{o.org, o.table, "ssn", "salary", "secret-host.example", "secretdb", "hunter2", o.server} {
		if strings.Contains(got, s) {
			t.Errorf("%s answered %q, which shows %q", sql, got, s)
		}
	}
}

// tenant makes organization A: a dataset table and a connected database's foreign server,
// user mapping (the service role's, as connected datasets have) and foreign table.
func tenant(t *testing.T, db *sqlx.DB) other {
	t.Helper()
	ctx := context.Background()
	o := other{org: store.NewID("org"), table: store.NewID("ds")}
	o.server = datasets.ServerName(o.table)
	if err := datasets.EnsureSchema(ctx, db, o.org); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		`CREATE TABLE ` + datasets.Table(o.org, o.table) + ` (id bigint, ssn text, salary numeric, deleted_at timestamptz)`,
		`INSERT INTO ` + datasets.Table(o.org, o.table) + ` VALUES (1, '078-05-1120', 250000, NULL)`,
		`CREATE EXTENSION IF NOT EXISTS postgres_fdw`,
		`CREATE SERVER ` + pq.QuoteIdentifier(o.server) + ` FOREIGN DATA WRAPPER postgres_fdw OPTIONS (host 'secret-host.example', dbname 'secretdb')`,
		`CREATE USER MAPPING FOR CURRENT_USER SERVER ` + pq.QuoteIdentifier(o.server) + ` OPTIONS (user 'svc', password 'hunter2')`,
		`CREATE SCHEMA ` + pq.QuoteIdentifier(datasets.ForeignSchema(o.table)),
		`CREATE FOREIGN TABLE ` + datasets.Table(datasets.ForeignSchema(o.table), "payroll") + ` (ssn text) SERVER ` + pq.QuoteIdentifier(o.server),
	} {
		if _, err := db.Exec(q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if err := datasets.EnsureQueryRole(ctx, db, o.org); err != nil {
		t.Fatal(err)
	}
	return o
}
