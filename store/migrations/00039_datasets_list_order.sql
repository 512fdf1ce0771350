-- +goose Up
-- A project's dataset list reads its page in this order; without the index every dataset of
-- the project was read and sorted for each page.
CREATE INDEX datasets_project_created_idx ON platform.datasets (project_id, created_at DESC, id);

-- +goose Down
DROP INDEX platform.datasets_project_created_idx;
