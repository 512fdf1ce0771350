-- +goose Up
-- Saved views (the dashboards issue): a named SELECT over a project's datasets and views, kept
-- as a PostgreSQL view (security_invoker) in the organization's schema, named by its id.
-- definition is what was asked (sql or a structured join); sql is PostgreSQL's own text of
-- the view, what it is recreated from after a change to a dataset it reads; dataset_ids are
-- the datasets and views it reads. A view a dataset change broke keeps its row with status
-- broken and the reason in error, and has no PostgreSQL view until its definition is fixed.
CREATE TABLE platform.views (
    id              text PRIMARY KEY,
    project_id      text NOT NULL REFERENCES platform.projects (id) ON DELETE CASCADE,
    organization_id text NOT NULL REFERENCES platform.organizations (id) ON DELETE CASCADE,
    name            text NOT NULL,
    description     text,
    definition      jsonb NOT NULL,
    sql             text NOT NULL,
    columns         jsonb NOT NULL DEFAULT '[]',
    dataset_ids     text[] NOT NULL DEFAULT '{}',
    status          text NOT NULL DEFAULT 'active',
    error           text,
    created_by      text REFERENCES platform.users (id) ON DELETE SET NULL,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL
);
CREATE UNIQUE INDEX views_project_name_key ON platform.views (project_id, lower(name));
CREATE INDEX views_reads_idx ON platform.views USING gin (dataset_ids);

-- +goose Down
DROP TABLE platform.views;
