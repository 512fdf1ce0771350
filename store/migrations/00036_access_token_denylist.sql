-- +goose Up
-- Access tokens ended before their expiry (signing out, a reused refresh token): their `jti`
-- is refused until `expires_at`, when the housekeeping deletes the row. Each refresh token
-- remembers the access token issued with it, so that ending its family finds them all.
CREATE TABLE platform.revoked_access_tokens (
    jti        text PRIMARY KEY,
    expires_at timestamptz NOT NULL
);
CREATE INDEX revoked_access_tokens_expires_idx ON platform.revoked_access_tokens (expires_at);
ALTER TABLE platform.refresh_tokens ADD COLUMN access_token_id text, ADD COLUMN access_expires_at timestamptz;

-- Every server keeps the deny-list in memory: each revocation is announced (`<jti> <exp, Unix seconds>`), and open
-- change streams re-check their caller (control_plane).
-- +goose StatementBegin
CREATE FUNCTION platform.notify_access_revoked() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('access_revoked', NEW.jti || ' ' || floor(extract(epoch FROM NEW.expires_at))::bigint);
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER revoked_access_tokens_notify AFTER INSERT ON platform.revoked_access_tokens
    FOR EACH ROW EXECUTE FUNCTION platform.notify_access_revoked();
CREATE TRIGGER revoked_access_tokens_control_plane AFTER INSERT ON platform.revoked_access_tokens
    FOR EACH STATEMENT EXECUTE FUNCTION platform.notify_control_plane();

-- +goose Down
DROP TRIGGER revoked_access_tokens_control_plane ON platform.revoked_access_tokens;
DROP TRIGGER revoked_access_tokens_notify ON platform.revoked_access_tokens;
DROP FUNCTION platform.notify_access_revoked();
ALTER TABLE platform.refresh_tokens DROP COLUMN access_expires_at, DROP COLUMN access_token_id;
DROP TABLE platform.revoked_access_tokens;
