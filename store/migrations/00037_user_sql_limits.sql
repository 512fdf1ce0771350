-- +goose Up
-- User SQL runs with the schema sql_limits first on its search path: its functions hide the
-- built-in functions of the same signatures that make a value or a set of rows as large as
-- an argument asks (repeat, lpad, rpad, array_fill, generate_series), and refuse a size over
-- the limit before anything is allocated. The query guard refuses these names qualified as
-- pg_catalog.name, so that the built-ins cannot be reached around them.
CREATE SCHEMA IF NOT EXISTS sql_limits;
GRANT USAGE ON SCHEMA sql_limits TO PUBLIC;

-- refuse raises program_limit_exceeded with the limit and the asked size as JSON detail;
-- like (any value of the caller's result type) only types the call. STABLE, not IMMUTABLE:
-- an immutable call with constant arguments would be run while planning, even in a CASE
-- branch that is never taken.
-- +goose StatementBegin
CREATE FUNCTION sql_limits.refuse(what text, asked numeric, most bigint, unit text, "like" anyelement)
RETURNS anyelement LANGUAGE plpgsql STABLE PARALLEL SAFE AS $$
BEGIN
    RAISE EXCEPTION USING ERRCODE = 'program_limit_exceeded',
        MESSAGE = format('%s would make %s %s; user SQL may make at most %s', what, asked, unit, most),
        DETAIL = json_build_object('limit', most, 'current', asked, 'unit', unit)::text;
END
$$;
-- +goose StatementEnd

-- Values: 1 MiB of text.
CREATE FUNCTION sql_limits.repeat(s text, n integer) RETURNS text LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN pg_catalog.octet_length(s)::bigint * n > 1048576
        THEN sql_limits.refuse('repeat', pg_catalog.octet_length(s)::numeric * n, 1048576, 'bytes', s)
        ELSE pg_catalog.repeat(s, n) END
$$;
CREATE FUNCTION sql_limits.lpad(s text, n integer) RETURNS text LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN n > 1048576 THEN sql_limits.refuse('lpad', n, 1048576, 'characters', s) ELSE pg_catalog.lpad(s, n) END
$$;
CREATE FUNCTION sql_limits.lpad(s text, n integer, fill text) RETURNS text LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN n > 1048576 THEN sql_limits.refuse('lpad', n, 1048576, 'characters', s) ELSE pg_catalog.lpad(s, n, fill) END
$$;
CREATE FUNCTION sql_limits.rpad(s text, n integer) RETURNS text LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN n > 1048576 THEN sql_limits.refuse('rpad', n, 1048576, 'characters', s) ELSE pg_catalog.rpad(s, n) END
$$;
CREATE FUNCTION sql_limits.rpad(s text, n integer, fill text) RETURNS text LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN n > 1048576 THEN sql_limits.refuse('rpad', n, 1048576, 'characters', s) ELSE pg_catalog.rpad(s, n, fill) END
$$;

-- Arrays: 1,048,576 elements (a product of at most six dimensions).
CREATE FUNCTION sql_limits.elements(dims integer[]) RETURNS numeric LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT pg_catalog.abs(COALESCE(dims[1], 1)::numeric * COALESCE(dims[2], 1) * COALESCE(dims[3], 1) *
        COALESCE(dims[4], 1) * COALESCE(dims[5], 1) * COALESCE(dims[6], 1))
$$;
CREATE FUNCTION sql_limits.array_fill(v anyelement, dims integer[]) RETURNS anyarray LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN sql_limits.elements(dims) > 1048576
        THEN sql_limits.refuse('array_fill', sql_limits.elements(dims), 1048576, 'elements', ARRAY[v])
        ELSE pg_catalog.array_fill(v, dims) END
$$;
CREATE FUNCTION sql_limits.array_fill(v anyelement, dims integer[], lower integer[]) RETURNS anyarray LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN sql_limits.elements(dims) > 1048576
        THEN sql_limits.refuse('array_fill', sql_limits.elements(dims), 1048576, 'elements', ARRAY[v])
        ELSE pg_catalog.array_fill(v, dims, lower) END
$$;

-- Series: 10,000,000 rows. The count is checked on the arguments; the series itself is the
-- built-in one (a zero step is the built-in's own error).
CREATE FUNCTION sql_limits.series(asked numeric) RETURNS numeric LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN pg_catalog.floor(asked) > 10000000
        THEN sql_limits.refuse('generate_series', pg_catalog.floor(asked), 10000000, 'rows', asked) ELSE asked END
$$;
CREATE FUNCTION sql_limits.generate_series(a integer, b integer) RETURNS SETOF integer LANGUAGE sql STABLE PARALLEL SAFE ROWS 1000 AS $$
    SELECT * FROM pg_catalog.generate_series(a, b) WHERE sql_limits.series(b::numeric - a + 1) IS NOT NULL
$$;
CREATE FUNCTION sql_limits.generate_series(a integer, b integer, step integer) RETURNS SETOF integer LANGUAGE sql STABLE PARALLEL SAFE ROWS 1000 AS $$
    SELECT * FROM pg_catalog.generate_series(a, b, step) WHERE sql_limits.series((b::numeric - a) / NULLIF(step, 0) + 1) IS NOT NULL
$$;
CREATE FUNCTION sql_limits.generate_series(a bigint, b bigint) RETURNS SETOF bigint LANGUAGE sql STABLE PARALLEL SAFE ROWS 1000 AS $$
    SELECT * FROM pg_catalog.generate_series(a, b) WHERE sql_limits.series(b::numeric - a + 1) IS NOT NULL
$$;
CREATE FUNCTION sql_limits.generate_series(a bigint, b bigint, step bigint) RETURNS SETOF bigint LANGUAGE sql STABLE PARALLEL SAFE ROWS 1000 AS $$
    SELECT * FROM pg_catalog.generate_series(a, b, step) WHERE sql_limits.series((b::numeric - a) / NULLIF(step, 0) + 1) IS NOT NULL
$$;
CREATE FUNCTION sql_limits.generate_series(a numeric, b numeric) RETURNS SETOF numeric LANGUAGE sql STABLE PARALLEL SAFE ROWS 1000 AS $$
    SELECT * FROM pg_catalog.generate_series(a, b) WHERE sql_limits.series(b - a + 1) IS NOT NULL
$$;
CREATE FUNCTION sql_limits.generate_series(a numeric, b numeric, step numeric) RETURNS SETOF numeric LANGUAGE sql STABLE PARALLEL SAFE ROWS 1000 AS $$
    SELECT * FROM pg_catalog.generate_series(a, b, step) WHERE sql_limits.series((b - a) / NULLIF(step, 0) + 1) IS NOT NULL
$$;
CREATE FUNCTION sql_limits.generate_series(a timestamp, b timestamp, step interval) RETURNS SETOF timestamp LANGUAGE sql STABLE PARALLEL SAFE ROWS 1000 AS $$
    SELECT * FROM pg_catalog.generate_series(a, b, step)
    WHERE sql_limits.series(EXTRACT(epoch FROM b - a) / NULLIF(EXTRACT(epoch FROM step), 0) + 1) IS NOT NULL
$$;
CREATE FUNCTION sql_limits.generate_series(a timestamptz, b timestamptz, step interval) RETURNS SETOF timestamptz LANGUAGE sql STABLE PARALLEL SAFE ROWS 1000 AS $$
    SELECT * FROM pg_catalog.generate_series(a, b, step)
    WHERE sql_limits.series(EXTRACT(epoch FROM b - a) / NULLIF(EXTRACT(epoch FROM step), 0) + 1) IS NOT NULL
$$;

-- +goose Down
DROP SCHEMA sql_limits CASCADE;
