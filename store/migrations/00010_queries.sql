-- +goose Up
-- Project queries: every execution, failures included. body is the executed query as
-- answered (results cut to the first 1,000 rows). A streamed query is entered as running
-- when it starts.
CREATE TABLE platform.queries (
    id                text PRIMARY KEY,
    seq               bigint GENERATED ALWAYS AS IDENTITY, -- orders queries of the same instant
    project_id        text NOT NULL REFERENCES platform.projects (id) ON DELETE CASCADE,
    organization_id   text NOT NULL REFERENCES platform.organizations (id) ON DELETE CASCADE,
    user_id           text REFERENCES platform.users (id) ON DELETE SET NULL,
    type              text NOT NULL,
    query             text NOT NULL,
    args              jsonb NOT NULL DEFAULT '[]', -- the values bound to the generated SQL's $n (exports run it again)
    status            text NOT NULL,
    dataset_ids       text[] NOT NULL DEFAULT '{}',
    row_count         int,
    execution_time_ms bigint,
    error_code        text,
    body              jsonb,
    created_at        timestamptz NOT NULL,
    finished_at       timestamptz
);
CREATE INDEX queries_project_idx ON platform.queries (project_id, created_at DESC, seq DESC);

-- +goose Down
DROP TABLE platform.queries;
