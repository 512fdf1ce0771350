-- +goose Up
-- The change log of dataset records: a trigger on each dataset table appends every create,
-- update and delete and notifies the servers, whose change streams read from here (a client
-- that reconnects with Last-Event-ID misses nothing, and every replica sees every change).
CREATE TABLE platform.record_changes (
    id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    dataset_id text NOT NULL,
    record_id  bigint NOT NULL,
    op         text NOT NULL CHECK (op IN ('created', 'updated', 'deleted')),
    record     jsonb,          -- the record after the change (for filters); NULL once deleted
    changes    jsonb,          -- the fields an update changed, with their new values
    changed_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX record_changes_dataset_idx ON platform.record_changes (dataset_id, id);
CREATE INDEX record_changes_at_idx ON platform.record_changes (changed_at);

-- +goose StatementBegin
CREATE FUNCTION platform.record_change() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    change_id bigint;
    old_rec jsonb;
    new_rec jsonb;
    diff jsonb;
BEGIN
    IF TG_OP = 'INSERT' THEN
        new_rec := to_jsonb(NEW) - 'deleted_at';
        INSERT INTO platform.record_changes (dataset_id, record_id, op, record)
            VALUES (TG_TABLE_NAME, NEW.id, 'created', new_rec) RETURNING id INTO change_id;
    ELSIF TG_OP = 'DELETE' THEN
        IF OLD.deleted_at IS NOT NULL THEN
            RETURN NULL; -- already deleted (softly): nothing new for subscribers
        END IF;
        INSERT INTO platform.record_changes (dataset_id, record_id, op)
            VALUES (TG_TABLE_NAME, OLD.id, 'deleted') RETURNING id INTO change_id;
    ELSIF OLD.deleted_at IS NULL AND NEW.deleted_at IS NOT NULL THEN
        INSERT INTO platform.record_changes (dataset_id, record_id, op, changed_at)
            VALUES (TG_TABLE_NAME, NEW.id, 'deleted', NEW.deleted_at) RETURNING id INTO change_id;
    ELSIF NEW.deleted_at IS NULL THEN
        old_rec := to_jsonb(OLD);
        new_rec := to_jsonb(NEW) - 'deleted_at';
        SELECT coalesce(jsonb_object_agg(key, value), '{}') INTO diff FROM jsonb_each(new_rec)
            WHERE key NOT IN ('updated_at', 'version') AND old_rec -> key IS DISTINCT FROM value;
        INSERT INTO platform.record_changes (dataset_id, record_id, op, record, changes)
            VALUES (TG_TABLE_NAME, NEW.id, 'updated', new_rec, diff) RETURNING id INTO change_id;
    ELSE
        RETURN NULL;
    END IF;
    PERFORM pg_notify('record_changes', TG_TABLE_NAME);
    RETURN NULL;
END
$$;
-- +goose StatementEnd

-- +goose Down
DROP FUNCTION platform.record_change();
DROP TABLE platform.record_changes;
