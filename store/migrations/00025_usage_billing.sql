-- +goose Up
-- Usage and billing (issue 17). Usage is recorded per organization, day, project and user as
-- it happens: queries executed and the compute time of queries and background jobs. The rows
-- have no foreign keys, so that a closed month stays as it was when a project or a user goes.
CREATE TABLE platform.usage_daily (
    organization_id text NOT NULL,
    day             date NOT NULL,
    project_id      text NOT NULL DEFAULT '',
    user_id         text NOT NULL DEFAULT '',
    queries         bigint NOT NULL DEFAULT 0,
    compute_ms      bigint NOT NULL DEFAULT 0,
    PRIMARY KEY (organization_id, day, project_id, user_id)
);

-- +goose StatementBegin
CREATE FUNCTION platform.record_query_usage() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.finished_at IS NOT NULL AND (TG_OP = 'INSERT' OR OLD.finished_at IS NULL) THEN
        INSERT INTO platform.usage_daily AS u (organization_id, day, project_id, user_id, queries, compute_ms)
        VALUES (NEW.organization_id, (NEW.created_at AT TIME ZONE 'UTC')::date, NEW.project_id, COALESCE(NEW.user_id, ''),
                1, COALESCE(NEW.execution_time_ms, 0))
        ON CONFLICT (organization_id, day, project_id, user_id)
        DO UPDATE SET queries = u.queries + 1, compute_ms = u.compute_ms + EXCLUDED.compute_ms;
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER queries_usage AFTER INSERT OR UPDATE OF finished_at ON platform.queries
    FOR EACH ROW EXECUTE FUNCTION platform.record_query_usage();

-- A job's run time counts for its organization and, for a dataset's job, the dataset's project.
-- +goose StatementBegin
CREATE FUNCTION platform.record_job_usage() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.organization_id IS NOT NULL AND NEW.finished_at IS NOT NULL AND NEW.started_at IS NOT NULL
       AND (TG_OP = 'INSERT' OR OLD.finished_at IS NULL) THEN
        INSERT INTO platform.usage_daily AS u (organization_id, day, project_id, compute_ms)
        VALUES (NEW.organization_id, (NEW.finished_at AT TIME ZONE 'UTC')::date,
                COALESCE((SELECT d.project_id FROM platform.datasets d WHERE d.id = NEW.resource_id), ''),
                GREATEST(0, (extract(epoch FROM NEW.finished_at - NEW.started_at) * 1000)::bigint))
        ON CONFLICT (organization_id, day, project_id, user_id)
        DO UPDATE SET compute_ms = u.compute_ms + EXCLUDED.compute_ms;
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER jobs_usage AFTER INSERT OR UPDATE OF finished_at ON platform.jobs
    FOR EACH ROW EXECUTE FUNCTION platform.record_job_usage();

-- Plans: "team" is now "pro"; the billing cycle; every plan change, which invoices are
-- computed from (kept by triggers, whatever writes the organization).
UPDATE platform.organizations SET plan_tier = 'pro' WHERE plan_tier = 'team';
ALTER TABLE platform.organizations ADD COLUMN billing_cycle text NOT NULL DEFAULT 'monthly'
    CHECK (billing_cycle IN ('monthly', 'yearly'));
CREATE TABLE platform.plan_changes (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    organization_id text NOT NULL REFERENCES platform.organizations (id) ON DELETE CASCADE,
    tier            text NOT NULL,
    billing_cycle   text NOT NULL,
    changed_at      timestamptz NOT NULL
);
CREATE INDEX plan_changes_org_idx ON platform.plan_changes (organization_id, changed_at);
INSERT INTO platform.plan_changes (organization_id, tier, billing_cycle, changed_at)
    SELECT id, plan_tier, billing_cycle, created_at FROM platform.organizations;
-- +goose StatementBegin
CREATE FUNCTION platform.record_plan_change() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' OR NEW.plan_tier IS DISTINCT FROM OLD.plan_tier OR NEW.billing_cycle IS DISTINCT FROM OLD.billing_cycle THEN
        INSERT INTO platform.plan_changes (organization_id, tier, billing_cycle, changed_at)
        VALUES (NEW.id, NEW.plan_tier, NEW.billing_cycle, CASE WHEN TG_OP = 'INSERT' THEN NEW.created_at ELSE NEW.updated_at END);
    END IF;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER organizations_plan_changes AFTER INSERT OR UPDATE OF plan_tier, billing_cycle ON platform.organizations
    FOR EACH ROW EXECUTE FUNCTION platform.record_plan_change();

-- +goose Down
DROP TRIGGER organizations_plan_changes ON platform.organizations;
DROP FUNCTION platform.record_plan_change();
DROP TABLE platform.plan_changes;
ALTER TABLE platform.organizations DROP COLUMN billing_cycle;
UPDATE platform.organizations SET plan_tier = 'team' WHERE plan_tier = 'pro';
DROP TRIGGER jobs_usage ON platform.jobs;
DROP FUNCTION platform.record_job_usage();
DROP TRIGGER queries_usage ON platform.queries;
DROP FUNCTION platform.record_query_usage();
DROP TABLE platform.usage_daily;
