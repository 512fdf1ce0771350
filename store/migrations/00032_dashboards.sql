-- +goose Up
-- Dashboards (issue 16): a spec of tiles over a project's datasets and views, generated from a
-- dataset, a view or the project, and every generate, edit, refine and restore kept as a
-- version. version is the number of the current one.
CREATE TABLE platform.dashboards (
    id               text PRIMARY KEY,
    organization_id  text NOT NULL REFERENCES platform.organizations (id) ON DELETE CASCADE,
    project_id       text NOT NULL REFERENCES platform.projects (id) ON DELETE CASCADE,
    source_type      text NOT NULL CHECK (source_type IN ('dataset', 'view', 'project')),
    dataset_id       text,
    view_id          text,
    source           jsonb NOT NULL DEFAULT '{}',
    display_name     text NOT NULL,
    spec             jsonb NOT NULL,
    version          int NOT NULL,
    generated_by     text NOT NULL DEFAULT 'deterministic',
    warnings         text[] NOT NULL DEFAULT '{}',
    created_by       text REFERENCES platform.users (id) ON DELETE SET NULL,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL
);
-- A dataset (or view) has one dashboard of its own: generating again returns it, or with
-- force makes a new version of it.
CREATE UNIQUE INDEX dashboards_dataset_key ON platform.dashboards (dataset_id) WHERE source_type = 'dataset';
CREATE UNIQUE INDEX dashboards_view_key ON platform.dashboards (view_id) WHERE source_type = 'view';
CREATE INDEX dashboards_project_idx ON platform.dashboards (project_id, updated_at DESC);

CREATE TABLE platform.dashboard_versions (
    id             text PRIMARY KEY,
    dashboard_id   text NOT NULL REFERENCES platform.dashboards (id) ON DELETE CASCADE,
    number         int NOT NULL,
    kind           text NOT NULL CHECK (kind IN ('generate', 'edit', 'refine', 'restore')),
    message        text,
    display_name   text NOT NULL,
    spec           jsonb NOT NULL,
    pinned         boolean NOT NULL DEFAULT false,
    restored_from  int,
    created_by     text REFERENCES platform.users (id) ON DELETE SET NULL,
    created_at     timestamptz NOT NULL,
    UNIQUE (dashboard_id, number)
);

-- +goose Down
DROP TABLE platform.dashboard_versions;
DROP TABLE platform.dashboards;
