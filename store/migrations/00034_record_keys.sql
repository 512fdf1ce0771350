-- +goose Up
-- Records of an uploaded dataset are keyed by the file's own key column (an integer, text or
-- uuid) when it has one: the change log names a record by that key, as text, and the change
-- trigger is told the key column's name (tables made before take 'id').
ALTER TABLE platform.record_changes ALTER COLUMN record_id TYPE text USING record_id::text;

-- +goose StatementBegin
CREATE OR REPLACE FUNCTION platform.record_change() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    change_id bigint;
    old_rec jsonb;
    new_rec jsonb;
    diff jsonb;
    key_col text := CASE WHEN TG_NARGS > 0 THEN TG_ARGV[0] ELSE 'id' END;
BEGIN
    IF TG_OP = 'INSERT' THEN
        new_rec := to_jsonb(NEW) - 'deleted_at';
        INSERT INTO platform.record_changes (dataset_id, record_id, op, record)
            VALUES (TG_TABLE_NAME, new_rec ->> key_col, 'created', new_rec) RETURNING id INTO change_id;
    ELSIF TG_OP = 'DELETE' THEN
        IF OLD.deleted_at IS NOT NULL THEN
            RETURN NULL; -- already deleted (softly): nothing new for subscribers
        END IF;
        INSERT INTO platform.record_changes (dataset_id, record_id, op)
            VALUES (TG_TABLE_NAME, to_jsonb(OLD) ->> key_col, 'deleted') RETURNING id INTO change_id;
    ELSIF OLD.deleted_at IS NULL AND NEW.deleted_at IS NOT NULL THEN
        INSERT INTO platform.record_changes (dataset_id, record_id, op, changed_at)
            VALUES (TG_TABLE_NAME, to_jsonb(NEW) ->> key_col, 'deleted', NEW.deleted_at) RETURNING id INTO change_id;
    ELSIF NEW.deleted_at IS NULL THEN
        old_rec := to_jsonb(OLD);
        new_rec := to_jsonb(NEW) - 'deleted_at';
        SELECT coalesce(jsonb_object_agg(e.key, e.value), '{}') INTO diff FROM jsonb_each(new_rec) e
            WHERE e.key NOT IN ('updated_at', 'version') AND old_rec -> e.key IS DISTINCT FROM e.value;
        INSERT INTO platform.record_changes (dataset_id, record_id, op, record, changes)
            VALUES (TG_TABLE_NAME, new_rec ->> key_col, 'updated', new_rec, diff) RETURNING id INTO change_id;
    ELSE
        RETURN NULL;
    END IF;
    PERFORM pg_notify('record_changes', TG_TABLE_NAME);
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- A relationship the user removed is kept as 'removed', so that inference does not bring it back.
ALTER TABLE platform.dataset_relationships DROP CONSTRAINT dataset_relationships_origin_check;
ALTER TABLE platform.dataset_relationships ADD CONSTRAINT dataset_relationships_origin_check
    CHECK (origin IN ('declared', 'foreign_key', 'inferred', 'removed'));

-- Datasets loaded before: their generated id becomes the file's key where it holds the file's
-- own ids, and relationships inferred to a generated id go (datasets.rekey, run once).
INSERT INTO platform.jobs (id, kind, payload, status, max_attempts, run_at, created_at)
    SELECT 'job_rekey_00034', 'datasets.rekey', '{}', 'queued', 3, now(), now()
    WHERE EXISTS (SELECT 1 FROM platform.datasets WHERE type = 'file');

-- +goose Down
SELECT 1;
