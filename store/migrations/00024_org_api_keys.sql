-- +goose Up
-- Organization API keys (issue 17) act as the organization, not a person: each key has a
-- service account (a user of the organization that no one signs in as) whose membership
-- carries the role the key's permissions need. Service accounts are not people: member
-- lists, counts and seat limits leave them out, and they go with their organization.
ALTER TABLE platform.users ADD COLUMN service_org text REFERENCES platform.organizations (id) ON DELETE CASCADE;
ALTER TABLE platform.memberships ADD COLUMN service boolean NOT NULL DEFAULT false;
ALTER TABLE platform.api_keys ADD COLUMN organization_id text REFERENCES platform.organizations (id) ON DELETE CASCADE;
ALTER TABLE platform.api_keys ADD COLUMN created_by text REFERENCES platform.users (id) ON DELETE SET NULL;
CREATE INDEX api_keys_org_idx ON platform.api_keys (organization_id, created_at DESC) WHERE organization_id IS NOT NULL;

-- +goose Down
DROP INDEX platform.api_keys_org_idx;
ALTER TABLE platform.api_keys DROP COLUMN created_by;
ALTER TABLE platform.api_keys DROP COLUMN organization_id;
ALTER TABLE platform.memberships DROP COLUMN service;
ALTER TABLE platform.users DROP COLUMN service_org;
