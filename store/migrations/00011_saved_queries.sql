-- +goose Up
-- Saved queries: a history query's text under a name, with typed parameters.
CREATE TABLE platform.saved_queries (
    id              text PRIMARY KEY,
    project_id      text NOT NULL REFERENCES platform.projects (id) ON DELETE CASCADE,
    organization_id text NOT NULL REFERENCES platform.organizations (id) ON DELETE CASCADE,
    source_query_id text REFERENCES platform.queries (id) ON DELETE SET NULL,
    name            text NOT NULL,
    description     text,
    type            text NOT NULL,
    query           text NOT NULL,
    tags            text[] NOT NULL DEFAULT '{}',
    visibility      text NOT NULL,
    parameters      jsonb NOT NULL DEFAULT '[]',
    usage_count     int NOT NULL DEFAULT 0,
    last_used_at    timestamptz,
    created_by      text REFERENCES platform.users (id) ON DELETE SET NULL,
    created_at      timestamptz NOT NULL,
    UNIQUE (project_id, name)
);

-- +goose Down
DROP TABLE platform.saved_queries;
