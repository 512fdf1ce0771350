-- +goose Up
-- Files uploaded for datasets: kept on disk under the data directory until a dataset claims
-- them or they expire.
CREATE TABLE platform.uploads (
    id              text PRIMARY KEY,
    project_id      text NOT NULL REFERENCES platform.projects (id) ON DELETE CASCADE,
    organization_id text NOT NULL REFERENCES platform.organizations (id) ON DELETE CASCADE,
    filename        text NOT NULL,
    name            text,
    description     text,
    size_bytes      bigint NOT NULL,
    format          text NOT NULL,
    storage_key     text NOT NULL,
    created_by      text REFERENCES platform.users (id) ON DELETE SET NULL,
    created_at      timestamptz NOT NULL,
    expires_at      timestamptz NOT NULL,
    claimed_at      timestamptz
);
CREATE INDEX uploads_unclaimed_expiry_idx ON platform.uploads (expires_at) WHERE claimed_at IS NULL;

-- +goose Down
DROP TABLE platform.uploads;
