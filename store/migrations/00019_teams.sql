-- +goose Up
-- Teams of an organization's members (issue 17). A team membership hangs off the organization
-- membership, so leaving the organization leaves its teams too.
CREATE TABLE platform.teams (
    id              text PRIMARY KEY,
    organization_id text NOT NULL REFERENCES platform.organizations (id) ON DELETE CASCADE,
    name            text NOT NULL,
    slug            text NOT NULL,
    description     text,
    permissions     text[] NOT NULL DEFAULT '{projects.read}',
    created_by      text REFERENCES platform.users (id) ON DELETE SET NULL,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    UNIQUE (organization_id, slug)
);

CREATE TABLE platform.team_members (
    team_id         text NOT NULL REFERENCES platform.teams (id) ON DELETE CASCADE,
    organization_id text NOT NULL,
    user_id         text NOT NULL,
    role            text NOT NULL CHECK (role IN ('team_lead', 'member')),
    joined_at       timestamptz NOT NULL,
    PRIMARY KEY (team_id, user_id),
    FOREIGN KEY (organization_id, user_id) REFERENCES platform.memberships (organization_id, user_id) ON DELETE CASCADE
);
CREATE INDEX team_members_user_idx ON platform.team_members (organization_id, user_id);

-- Projects a team is given, with the team's role on each.
CREATE TABLE platform.team_projects (
    team_id    text NOT NULL REFERENCES platform.teams (id) ON DELETE CASCADE,
    project_id text NOT NULL REFERENCES platform.projects (id) ON DELETE CASCADE,
    role       text NOT NULL,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (team_id, project_id)
);
CREATE INDEX team_projects_project_idx ON platform.team_projects (project_id);

-- The teams an invitation puts the person in when they accept (as member).
ALTER TABLE platform.invitations ADD COLUMN team_ids text[] NOT NULL DEFAULT '{}';

-- +goose Down
ALTER TABLE platform.invitations DROP COLUMN team_ids;
DROP TABLE platform.team_projects;
DROP TABLE platform.team_members;
DROP TABLE platform.teams;
