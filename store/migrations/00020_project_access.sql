-- +goose Up
-- Private projects and team grants (issue 17). A private project is reached by the
-- organization's owners and admins, its creator, and the members of teams granted it; a grant
-- gives the team's members a permission role on the project, within the team's permissions.
ALTER TABLE platform.projects ADD COLUMN visibility text NOT NULL DEFAULT 'organization'
    CHECK (visibility IN ('organization', 'private'));
ALTER TABLE platform.team_projects ADD CONSTRAINT team_projects_role_check
    CHECK (role IN ('viewer', 'analyst', 'developer'));

-- What a user may reach changes with projects, teams and grants too: servers forget their
-- cached dataset lookups (see 00014).
CREATE TRIGGER projects_control_plane AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON platform.projects
    FOR EACH STATEMENT EXECUTE FUNCTION platform.notify_control_plane();
CREATE TRIGGER teams_control_plane AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON platform.teams
    FOR EACH STATEMENT EXECUTE FUNCTION platform.notify_control_plane();
CREATE TRIGGER team_members_control_plane AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON platform.team_members
    FOR EACH STATEMENT EXECUTE FUNCTION platform.notify_control_plane();
CREATE TRIGGER team_projects_control_plane AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON platform.team_projects
    FOR EACH STATEMENT EXECUTE FUNCTION platform.notify_control_plane();

-- +goose Down
DROP TRIGGER team_projects_control_plane ON platform.team_projects;
DROP TRIGGER team_members_control_plane ON platform.team_members;
DROP TRIGGER teams_control_plane ON platform.teams;
DROP TRIGGER projects_control_plane ON platform.projects;
ALTER TABLE platform.team_projects DROP CONSTRAINT team_projects_role_check;
ALTER TABLE platform.projects DROP COLUMN visibility;
