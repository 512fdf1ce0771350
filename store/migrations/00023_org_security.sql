-- +goose Up
-- Servers keep organizations' security settings and users' two-factor state in memory to
-- judge every request for an organization's resources (IP allowlist, two-factor
-- requirement); a change of either tells them to forget (see 00014).
CREATE TRIGGER organizations_control_plane AFTER UPDATE OF settings OR DELETE ON platform.organizations
    FOR EACH STATEMENT EXECUTE FUNCTION platform.notify_control_plane();
DROP TRIGGER users_control_plane ON platform.users;
CREATE TRIGGER users_control_plane AFTER UPDATE OF status, two_factor_enabled OR DELETE ON platform.users
    FOR EACH STATEMENT EXECUTE FUNCTION platform.notify_control_plane();

-- +goose Down
DROP TRIGGER users_control_plane ON platform.users;
CREATE TRIGGER users_control_plane AFTER UPDATE OF status OR DELETE ON platform.users
    FOR EACH STATEMENT EXECUTE FUNCTION platform.notify_control_plane();
DROP TRIGGER organizations_control_plane ON platform.organizations;
