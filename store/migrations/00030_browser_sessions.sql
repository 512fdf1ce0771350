-- +goose Up
-- Browser sessions: the cookie holds an opaque 256-bit token, stored here as SHA-256 only.
-- A session ends at expires_at (absolute), when idle longer than its organization's
-- session_timeout_minutes (last_seen_at), or when revoked (sign-out, the account's credentials
-- revoked). Revoking notifies the control plane so open change streams end; the sweep deletes
-- only sessions that are over already.
CREATE TABLE platform.browser_sessions (
    id              text PRIMARY KEY,
    token_hash      bytea NOT NULL UNIQUE,
    user_id         text NOT NULL REFERENCES platform.users (id) ON DELETE CASCADE,
    organization_id text,
    created_at      timestamptz NOT NULL,
    last_seen_at    timestamptz NOT NULL,
    expires_at      timestamptz NOT NULL,
    revoked_at      timestamptz,
    ip_address      text,
    user_agent      text
);
CREATE INDEX browser_sessions_user_idx ON platform.browser_sessions (user_id) WHERE revoked_at IS NULL;
CREATE INDEX browser_sessions_expires_idx ON platform.browser_sessions (expires_at);
CREATE TRIGGER browser_sessions_control_plane AFTER UPDATE OF revoked_at ON platform.browser_sessions
    FOR EACH STATEMENT EXECUTE FUNCTION platform.notify_control_plane();

-- +goose Down
DROP TABLE platform.browser_sessions;
