-- +goose Up
-- Open change streams re-check their caller's access when the control plane changes: a key
-- revoked or expired early, or a user disabled or deleted, notifies too. Only those columns:
-- a key's last use is written on every request and must not flood the channel.
CREATE TRIGGER api_keys_control_plane AFTER UPDATE OF revoked_at, expires_at, permissions OR DELETE ON platform.api_keys
    FOR EACH STATEMENT EXECUTE FUNCTION platform.notify_control_plane();
CREATE TRIGGER users_control_plane AFTER UPDATE OF status OR DELETE ON platform.users
    FOR EACH STATEMENT EXECUTE FUNCTION platform.notify_control_plane();

-- +goose Down
DROP TRIGGER users_control_plane ON platform.users;
DROP TRIGGER api_keys_control_plane ON platform.api_keys;
