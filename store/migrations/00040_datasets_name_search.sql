-- +goose Up
-- A project's dataset list searches names with ILIKE '%text%': without a trigram index every
-- dataset of the project was read (14 ms at 10,000 datasets, growing with them).
CREATE INDEX datasets_name_trgm_idx ON platform.datasets USING gin (name gin_trgm_ops);

-- +goose Down
DROP INDEX platform.datasets_name_trgm_idx;
