-- +goose Up
-- The audit-log endpoint reads an organization's entries newest first, by actor, action or
-- resource type: one index per way in, each ending in the order of the page.
DROP INDEX platform.audit_log_org_time_idx;
CREATE INDEX audit_log_org_time_idx ON platform.audit_log (organization_id, created_at DESC, id DESC);
CREATE INDEX audit_log_org_actor_idx ON platform.audit_log (organization_id, actor_id, created_at DESC, id DESC);
CREATE INDEX audit_log_org_action_idx ON platform.audit_log (organization_id, action, created_at DESC, id DESC);
CREATE INDEX audit_log_org_resource_idx ON platform.audit_log (organization_id, resource_type, created_at DESC, id DESC);

-- +goose Down
DROP INDEX platform.audit_log_org_resource_idx;
DROP INDEX platform.audit_log_org_action_idx;
DROP INDEX platform.audit_log_org_actor_idx;
DROP INDEX platform.audit_log_org_time_idx;
CREATE INDEX audit_log_org_time_idx ON platform.audit_log (organization_id, created_at DESC);
