-- +goose Up
-- A dataset's rows live in table <table_schema>.<id>, created by the ingest job.
ALTER TABLE platform.datasets
    ADD COLUMN description        text,
    ADD COLUMN type               text NOT NULL DEFAULT 'file' CHECK (type IN ('file', 'database')),
    ADD COLUMN status             text NOT NULL DEFAULT 'processing' CHECK (status IN ('processing', 'active', 'failed')),
    ADD COLUMN error              text,
    ADD COLUMN source_type        text NOT NULL DEFAULT 'csv',
    ADD COLUMN upload_id          text REFERENCES platform.uploads (id) ON DELETE SET NULL,
    ADD COLUMN filename           text,
    ADD COLUMN size_bytes         bigint,
    ADD COLUMN storage_key        text,
    ADD COLUMN table_schema       text NOT NULL DEFAULT '',
    ADD COLUMN columns            jsonb NOT NULL DEFAULT '[]',
    ADD COLUMN row_count          bigint,
    ADD COLUMN job_id             text,
    ADD COLUMN created_by         text REFERENCES platform.users (id) ON DELETE SET NULL,
    ADD COLUMN upload_time        timestamptz,
    ADD COLUMN processing_time_ms bigint,
    ADD COLUMN index_time_ms      bigint,
    ADD COLUMN indexed_at         timestamptz;
CREATE UNIQUE INDEX datasets_project_name_key ON platform.datasets (project_id, lower(name));

-- +goose Down
DROP INDEX platform.datasets_project_name_key;
ALTER TABLE platform.datasets DROP COLUMN description, DROP COLUMN type, DROP COLUMN status, DROP COLUMN error,
    DROP COLUMN source_type, DROP COLUMN upload_id, DROP COLUMN filename, DROP COLUMN size_bytes, DROP COLUMN storage_key,
    DROP COLUMN table_schema, DROP COLUMN columns, DROP COLUMN row_count, DROP COLUMN job_id, DROP COLUMN created_by,
    DROP COLUMN upload_time, DROP COLUMN processing_time_ms, DROP COLUMN index_time_ms, DROP COLUMN indexed_at;
