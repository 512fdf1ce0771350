-- +goose Up
-- Exports of query results: written by a job to a file under the data directory, served
-- through a signed link until expires_at, then swept.
CREATE TABLE platform.query_exports (
    id              text PRIMARY KEY,
    query_id        text NOT NULL REFERENCES platform.queries (id) ON DELETE CASCADE,
    project_id      text NOT NULL REFERENCES platform.projects (id) ON DELETE CASCADE,
    organization_id text NOT NULL REFERENCES platform.organizations (id) ON DELETE CASCADE,
    user_id         text REFERENCES platform.users (id) ON DELETE SET NULL,
    format          text NOT NULL,
    options         jsonb NOT NULL DEFAULT '{}',
    status          text NOT NULL,
    error           text,
    size_bytes      bigint,
    row_count       bigint,
    storage_key     text,
    job_id          text NOT NULL,
    created_at      timestamptz NOT NULL,
    completed_at    timestamptz,
    expires_at      timestamptz NOT NULL
);
CREATE INDEX query_exports_expires_idx ON platform.query_exports (expires_at) WHERE status IN ('completed', 'processing', 'failed');

-- +goose Down
DROP TABLE platform.query_exports;
