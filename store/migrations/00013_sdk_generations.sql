-- +goose Up
-- Each SDK generation of a dataset's description: what GET .../sdk/logs shows.
CREATE TABLE platform.sdk_generations (
    id           text PRIMARY KEY,
    dataset_id   text NOT NULL REFERENCES platform.datasets (id) ON DELETE CASCADE,
    language     text NOT NULL,
    version      text NOT NULL,
    status       text NOT NULL,
    duration_ms  bigint NOT NULL,
    size_bytes   bigint,
    warnings     jsonb NOT NULL DEFAULT '[]',
    error        text,
    user_id      text REFERENCES platform.users (id) ON DELETE SET NULL,
    created_at   timestamptz NOT NULL
);
CREATE INDEX sdk_generations_dataset_idx ON platform.sdk_generations (dataset_id, created_at DESC);

-- +goose Down
DROP TABLE platform.sdk_generations;
