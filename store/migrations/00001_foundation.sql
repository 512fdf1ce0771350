-- +goose Up
CREATE SCHEMA IF NOT EXISTS platform;

CREATE TABLE platform.users (
    id                 text PRIMARY KEY,
    email              text NOT NULL,
    name               text NOT NULL,
    password_hash      text,
    status             text NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'invited', 'disabled')),
    avatar_url         text,
    two_factor_enabled boolean NOT NULL DEFAULT false,
    last_active_at     timestamptz,
    created_at         timestamptz NOT NULL,
    updated_at         timestamptz NOT NULL
);
CREATE UNIQUE INDEX users_email_key ON platform.users (lower(email));

CREATE TABLE platform.organizations (
    id          text PRIMARY KEY,
    name        text NOT NULL,
    slug        text NOT NULL UNIQUE,
    description text,
    logo_url    text,
    website     text,
    industry    text,
    size        text,
    plan_tier   text NOT NULL DEFAULT 'free',
    settings    jsonb NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL
);

CREATE TABLE platform.memberships (
    organization_id text NOT NULL REFERENCES platform.organizations (id) ON DELETE CASCADE,
    user_id         text NOT NULL REFERENCES platform.users (id) ON DELETE CASCADE,
    role            text NOT NULL CHECK (role IN ('owner', 'admin', 'developer', 'analyst', 'viewer')),
    status          text NOT NULL CHECK (status IN ('active', 'invited', 'disabled')),
    joined_at       timestamptz,
    created_at      timestamptz NOT NULL,
    PRIMARY KEY (organization_id, user_id)
);
CREATE INDEX memberships_user_idx ON platform.memberships (user_id);

CREATE TABLE platform.projects (
    id              text PRIMARY KEY,
    organization_id text NOT NULL REFERENCES platform.organizations (id) ON DELETE CASCADE,
    name            text NOT NULL,
    description     text,
    created_by      text REFERENCES platform.users (id) ON DELETE SET NULL,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL
);
CREATE UNIQUE INDEX projects_org_name_key ON platform.projects (organization_id, lower(name));
CREATE INDEX projects_org_created_idx ON platform.projects (organization_id, created_at DESC);

-- Datasets belong to projects; the datasets work extends this table.
CREATE TABLE platform.datasets (
    id              text PRIMARY KEY,
    project_id      text NOT NULL REFERENCES platform.projects (id) ON DELETE CASCADE,
    organization_id text NOT NULL REFERENCES platform.organizations (id) ON DELETE CASCADE,
    name            text NOT NULL,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL
);
CREATE INDEX datasets_project_idx ON platform.datasets (project_id);

-- RS256 keys that sign access tokens. A retired key keeps verifying until tokens it signed expire.
CREATE TABLE platform.signing_keys (
    kid         text PRIMARY KEY,
    private_pem text NOT NULL,
    created_at  timestamptz NOT NULL,
    retired_at  timestamptz
);

-- Opaque refresh tokens, stored as SHA-256. A family is every token descended from one sign-in.
CREATE TABLE platform.refresh_tokens (
    id              text PRIMARY KEY,
    token_hash      bytea NOT NULL UNIQUE,
    family_id       text NOT NULL,
    user_id         text NOT NULL REFERENCES platform.users (id) ON DELETE CASCADE,
    organization_id text,
    expires_at      timestamptz NOT NULL,
    used_at         timestamptz,
    revoked_at      timestamptz,
    created_at      timestamptz NOT NULL
);
CREATE INDEX refresh_tokens_family_idx ON platform.refresh_tokens (family_id);
CREATE INDEX refresh_tokens_user_idx ON platform.refresh_tokens (user_id);

CREATE TABLE platform.api_keys (
    id           text PRIMARY KEY,
    user_id      text NOT NULL REFERENCES platform.users (id) ON DELETE CASCADE,
    name         text NOT NULL,
    description  text,
    key_hash     bytea NOT NULL UNIQUE,
    key_preview  text NOT NULL,
    permissions  text[] NOT NULL,
    expires_at   timestamptz,
    revoked_at   timestamptz,
    rotated_to   text,
    last_used_at timestamptz,
    created_at   timestamptz NOT NULL
);
CREATE INDEX api_keys_user_idx ON platform.api_keys (user_id, created_at DESC);

CREATE TABLE platform.invitations (
    id              text PRIMARY KEY,
    organization_id text NOT NULL REFERENCES platform.organizations (id) ON DELETE CASCADE,
    user_id         text NOT NULL REFERENCES platform.users (id) ON DELETE CASCADE,
    email           text NOT NULL,
    name            text,
    role            text NOT NULL,
    message         text,
    token_hash      bytea NOT NULL UNIQUE,
    invited_by      text REFERENCES platform.users (id) ON DELETE SET NULL,
    status          text NOT NULL CHECK (status IN ('pending', 'accepted', 'revoked')),
    expires_at      timestamptz NOT NULL,
    accepted_at     timestamptz,
    created_at      timestamptz NOT NULL
);
CREATE INDEX invitations_org_user_idx ON platform.invitations (organization_id, user_id);

-- Identities at the external OpenID Connect provider linked to users.
CREATE TABLE platform.identities (
    issuer     text NOT NULL,
    subject    text NOT NULL,
    user_id    text NOT NULL REFERENCES platform.users (id) ON DELETE CASCADE,
    email      text,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (issuer, subject)
);

-- Pending authorization-code flows: state, nonce and PKCE verifier, single use.
CREATE TABLE platform.oauth_states (
    state_hash    bytea PRIMARY KEY,
    code_verifier text NOT NULL,
    nonce         text NOT NULL,
    expires_at    timestamptz NOT NULL,
    created_at    timestamptz NOT NULL
);

-- No foreign keys: entries outlive what they describe (a deleted organization stays audited).
CREATE TABLE platform.audit_log (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    organization_id text,
    actor_id        text,
    actor_name      text,
    actor_email     text,
    action          text NOT NULL,
    resource_type   text NOT NULL,
    resource_id     text,
    resource_name   text,
    details         jsonb NOT NULL DEFAULT '{}',
    ip_address      text,
    user_agent      text,
    created_at      timestamptz NOT NULL
);
CREATE INDEX audit_log_org_time_idx ON platform.audit_log (organization_id, created_at DESC);

-- Events written in the same transaction as the change; a publisher delivers them later.
CREATE TABLE platform.outbox (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    event_type      text NOT NULL,
    organization_id text,
    payload         jsonb NOT NULL,
    created_at      timestamptz NOT NULL,
    published_at    timestamptz
);
CREATE INDEX outbox_unpublished_idx ON platform.outbox (id) WHERE published_at IS NULL;

-- +goose Down
DROP SCHEMA platform CASCADE;
