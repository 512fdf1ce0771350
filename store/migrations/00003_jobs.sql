-- +goose Up
-- Background jobs. A worker claims a job with FOR UPDATE SKIP LOCKED and holds a lease it
-- renews while working; a job whose lease ran out (its process died) is claimed again.
CREATE TABLE platform.jobs (
    id              text PRIMARY KEY,
    kind            text NOT NULL,
    organization_id text,
    resource_type   text,
    resource_id     text,
    payload         jsonb NOT NULL DEFAULT '{}',
    status          text NOT NULL CHECK (status IN ('queued', 'running', 'succeeded', 'failed', 'cancelled')),
    progress        jsonb,
    attempts        int NOT NULL DEFAULT 0,
    max_attempts    int NOT NULL DEFAULT 3,
    run_at          timestamptz NOT NULL,
    lease_owner     text,
    lease_until     timestamptz,
    last_error      text,
    created_at      timestamptz NOT NULL,
    started_at      timestamptz,
    finished_at     timestamptz
);
CREATE INDEX jobs_claim_idx ON platform.jobs (run_at) WHERE status IN ('queued', 'running');
CREATE INDEX jobs_resource_idx ON platform.jobs (resource_id);

-- +goose Down
DROP TABLE platform.jobs;
