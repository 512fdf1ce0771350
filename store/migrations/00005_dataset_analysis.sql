-- +goose Up
-- What the analysis of a dataset finds: per-column statistics and sample values (statistics),
-- links to other datasets (dataset_relationships), and the search index entries the query
-- engine uses to pick datasets and match words to values (dataset_search).
CREATE EXTENSION IF NOT EXISTS pg_trgm;
ALTER TABLE platform.datasets
    ADD COLUMN statistics       jsonb NOT NULL DEFAULT '{}',
    ADD COLUMN analyzed_at      timestamptz,
    ADD COLUMN analysis_version int NOT NULL DEFAULT 0,
    ADD COLUMN vector_count     bigint NOT NULL DEFAULT 0,
    ADD COLUMN schema_version   int NOT NULL DEFAULT 1,
    -- Database-connected datasets: their foreign tables (file datasets have one table, of columns).
    ADD COLUMN tables           jsonb;

-- How a database-connected dataset reaches its database. The password is encrypted with the
-- server's secret key (AES-256-GCM) and never returned.
CREATE TABLE platform.dataset_connections (
    dataset_id   text PRIMARY KEY REFERENCES platform.datasets (id) ON DELETE CASCADE,
    type         text NOT NULL CHECK (type IN ('postgresql', 'mysql')),
    host         text NOT NULL,
    port         int NOT NULL,
    database     text NOT NULL,
    username     text NOT NULL,
    password_enc bytea NOT NULL,
    ssl_mode     text NOT NULL,
    options      jsonb NOT NULL DEFAULT '{}',
    server_name  text NOT NULL
);

-- A link from a column of one dataset to a column of another of the same project: declared in
-- a schema, read from a connected database's foreign keys, or inferred by analysis (a column
-- named after the other dataset whose every value is found there).
CREATE TABLE platform.dataset_relationships (
    from_dataset text NOT NULL REFERENCES platform.datasets (id) ON DELETE CASCADE,
    from_table   text NOT NULL,
    from_column  text NOT NULL,
    to_dataset   text NOT NULL REFERENCES platform.datasets (id) ON DELETE CASCADE,
    to_table     text NOT NULL,
    to_column    text NOT NULL,
    origin       text NOT NULL CHECK (origin IN ('declared', 'foreign_key', 'inferred')),
    created_at   timestamptz NOT NULL,
    PRIMARY KEY (from_dataset, from_table, from_column, to_dataset, to_table)
);
CREATE INDEX dataset_relationships_to_idx ON platform.dataset_relationships (to_dataset);

CREATE TABLE platform.dataset_search (
    dataset_id  text NOT NULL REFERENCES platform.datasets (id) ON DELETE CASCADE,
    project_id  text NOT NULL,
    kind        text NOT NULL CHECK (kind IN ('dataset', 'column', 'value')),
    column_name text,
    content     text NOT NULL,
    frequency   bigint,
    tsv         tsvector GENERATED ALWAYS AS (to_tsvector('simple', content)) STORED
);
CREATE INDEX dataset_search_dataset_idx ON platform.dataset_search (dataset_id);
CREATE INDEX dataset_search_tsv_idx ON platform.dataset_search USING gin (tsv);
CREATE INDEX dataset_search_trgm_idx ON platform.dataset_search USING gin (content gin_trgm_ops);

-- Accepted schema changes of a dataset, in order: the per-dataset description turns them into
-- versions.
CREATE TABLE platform.dataset_schema_changes (
    id             text PRIMARY KEY,
    dataset_id     text NOT NULL REFERENCES platform.datasets (id) ON DELETE CASCADE,
    schema_version int NOT NULL,
    changes        jsonb NOT NULL,
    columns_before jsonb NOT NULL,
    columns_after  jsonb NOT NULL,
    created_by     text REFERENCES platform.users (id) ON DELETE SET NULL,
    created_at     timestamptz NOT NULL,
    UNIQUE (dataset_id, schema_version)
);

-- +goose Down
DROP TABLE platform.dataset_schema_changes;
DROP TABLE platform.dataset_connections;
DROP TABLE platform.dataset_search;
DROP TABLE platform.dataset_relationships;
ALTER TABLE platform.datasets DROP COLUMN statistics, DROP COLUMN analyzed_at, DROP COLUMN analysis_version,
    DROP COLUMN vector_count, DROP COLUMN schema_version, DROP COLUMN tables;
