-- +goose Up
-- Re-imports into an existing dataset (append, upsert, replace). While one runs the dataset is
-- `processing` with import_mode set: its record API keeps serving the rows as they were
-- (an initial load, import_mode NULL, has no rows to serve yet).
ALTER TABLE platform.datasets ADD COLUMN import_mode text CHECK (import_mode IN ('append', 'upsert', 'replace'));

-- An upsert or replace reaches change-stream subscribers as one `imported` change carrying
-- its counts (record_id '', record NULL, changes: mode, inserted, updated, deleted, ...),
-- instead of one change per row.
ALTER TABLE platform.record_changes DROP CONSTRAINT record_changes_op_check;
ALTER TABLE platform.record_changes ADD CONSTRAINT record_changes_op_check
    CHECK (op IN ('created', 'updated', 'deleted', 'imported'));

-- +goose Down
DELETE FROM platform.record_changes WHERE op = 'imported';
ALTER TABLE platform.record_changes DROP CONSTRAINT record_changes_op_check;
ALTER TABLE platform.record_changes ADD CONSTRAINT record_changes_op_check CHECK (op IN ('created', 'updated', 'deleted'));
ALTER TABLE platform.datasets DROP COLUMN import_mode;
