-- +goose Up
-- Webhook endpoints of an organization (issue 18). The signing secret is sealed with the
-- service's secret key; after a rotation the previous one keeps signing until
-- previous_until.
CREATE TABLE platform.webhooks (
    id               text PRIMARY KEY,
    organization_id  text NOT NULL REFERENCES platform.organizations (id) ON DELETE CASCADE,
    url              text NOT NULL,
    description      text,
    events           text[] NOT NULL,
    project_ids      text[] NOT NULL DEFAULT '{}',
    enabled          boolean NOT NULL DEFAULT true,
    disabled_reason  text,
    secret           bytea NOT NULL,
    previous_secret  bytea,
    previous_until   timestamptz,
    created_by       text REFERENCES platform.users (id) ON DELETE SET NULL,
    created_at       timestamptz NOT NULL,
    updated_at       timestamptz NOT NULL
);
CREATE INDEX webhooks_org_idx ON platform.webhooks (organization_id, created_at DESC);

-- +goose Down
DROP TABLE platform.webhooks;
