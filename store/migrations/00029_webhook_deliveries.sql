-- +goose Up
-- Webhook delivery (issue 18). The dispatcher turns outbox events into one delivery per
-- matching endpoint and sends each endpoint's deliveries in order, one worker per endpoint
-- at a time under a lease (the job queue's claim-and-lease, on the endpoint's row).

-- An organization's deletion retires its endpoints instead of removing them, so that
-- organization.deleted still reaches them; housekeeping removes them once it has.
ALTER TABLE platform.webhooks DROP CONSTRAINT webhooks_organization_id_fkey;
ALTER TABLE platform.webhooks
    ADD COLUMN retired_at      timestamptz,
    -- the last event before the endpoint existed: it receives only later ones
    ADD COLUMN since_event     bigint NOT NULL DEFAULT 0,
    ADD COLUMN failing_since   timestamptz, -- first failure of the current streak
    ADD COLUMN failures_in_row integer NOT NULL DEFAULT 0, -- deliveries given up in a row
    ADD COLUMN held_until      timestamptz, -- failing: new deliveries wait for the next retry too
    ADD COLUMN lease_owner     text,
    ADD COLUMN lease_until     timestamptz;

CREATE TABLE platform.webhook_deliveries (
    id               text PRIMARY KEY, -- msg_...: the webhook-id header, the same on every attempt
    seq              bigint GENERATED ALWAYS AS IDENTITY, -- the endpoint's sending order
    webhook_id       text NOT NULL REFERENCES platform.webhooks (id) ON DELETE CASCADE,
    organization_id  text NOT NULL,
    event_id         bigint, -- the outbox event; null for a test ping
    event_type       text NOT NULL,
    body             text NOT NULL, -- the exact bytes signed and sent
    status           text NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
    attempts         integer NOT NULL DEFAULT 0,
    schedule_from    integer NOT NULL DEFAULT 0, -- attempts before the last redelivery
    next_attempt_at  timestamptz,
    last_attempt_at  timestamptz,
    last_status_code integer,
    last_response    text,
    last_error       text,
    last_duration_ms integer,
    created_at       timestamptz NOT NULL,
    finished_at      timestamptz,
    UNIQUE (webhook_id, event_id)
);
CREATE INDEX webhook_deliveries_list_idx ON platform.webhook_deliveries (webhook_id, seq DESC);
CREATE INDEX webhook_deliveries_due_idx ON platform.webhook_deliveries (webhook_id, next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_age_idx ON platform.webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX webhook_deliveries_finished_idx ON platform.webhook_deliveries (finished_at) WHERE status <> 'pending';

CREATE TABLE platform.webhook_attempts (
    delivery_id text NOT NULL REFERENCES platform.webhook_deliveries (id) ON DELETE CASCADE,
    attempt     integer NOT NULL,
    started_at  timestamptz NOT NULL,
    status_code integer,
    response    text,
    error       text,
    duration_ms integer NOT NULL,
    PRIMARY KEY (delivery_id, attempt)
);

-- Dispatchers sleep on this channel; new events wake them at once.
-- +goose StatementBegin
CREATE FUNCTION platform.outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('platform_webhooks', 'outbox');
    RETURN NULL;
END $$;
-- +goose StatementEnd
CREATE TRIGGER outbox_notify AFTER INSERT ON platform.outbox FOR EACH STATEMENT EXECUTE FUNCTION platform.outbox_notify();

-- +goose Down
DROP TRIGGER outbox_notify ON platform.outbox;
DROP FUNCTION platform.outbox_notify();
DROP TABLE platform.webhook_attempts;
DROP TABLE platform.webhook_deliveries;
ALTER TABLE platform.webhooks DROP COLUMN retired_at, DROP COLUMN since_event, DROP COLUMN failing_since, DROP COLUMN failures_in_row, DROP COLUMN held_until,
    DROP COLUMN lease_owner, DROP COLUMN lease_until;
DELETE FROM platform.webhooks w WHERE NOT EXISTS (SELECT 1 FROM platform.organizations o WHERE o.id = w.organization_id);
ALTER TABLE platform.webhooks ADD CONSTRAINT webhooks_organization_id_fkey FOREIGN KEY (organization_id)
    REFERENCES platform.organizations (id) ON DELETE CASCADE;
