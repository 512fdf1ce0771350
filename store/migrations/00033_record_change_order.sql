-- +goose Up
-- Change streams read a dataset's changes "after event N". Identity ids are handed out when a
-- change is written, not when it commits, so a change could commit after a later-numbered one
-- had been read, and a stream passed over it for good. Each change now also gets `seq` at its
-- transaction's commit, under a lock per dataset held until the commit is visible: a
-- dataset's seqs become visible in their order. Streams read by seq (the event ids).
ALTER TABLE platform.record_changes ADD COLUMN seq bigint;
UPDATE platform.record_changes SET seq = id;
CREATE SEQUENCE platform.record_change_seq;
SELECT setval('platform.record_change_seq', coalesce((SELECT max(id) FROM platform.record_changes), 0) + 1, false);
CREATE INDEX record_changes_seq_idx ON platform.record_changes (dataset_id, seq);

-- +goose StatementBegin
CREATE FUNCTION platform.record_change_order() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    -- Once per transaction and dataset: the first of its changes numbers them all, in order.
    IF current_setting('dp_ordered.' || NEW.dataset_id, true) = 'yes' THEN
        RETURN NULL;
    END IF;
    PERFORM set_config('dp_ordered.' || NEW.dataset_id, 'yes', true);
    PERFORM pg_advisory_xact_lock(hashtext('platform.record_changes'), hashtext(NEW.dataset_id));
    UPDATE platform.record_changes r SET seq = o.s
    FROM (SELECT x.id, nextval('platform.record_change_seq') AS s FROM (SELECT id FROM platform.record_changes
          WHERE dataset_id = NEW.dataset_id AND seq IS NULL ORDER BY id) x) o
    WHERE r.id = o.id;
    RETURN NULL;
END
$$;
-- +goose StatementEnd
-- At commit (deferred): the lock is then held only from the numbering to the commit.
CREATE CONSTRAINT TRIGGER record_change_order AFTER INSERT ON platform.record_changes
    DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION platform.record_change_order();

-- +goose Down
DROP TRIGGER record_change_order ON platform.record_changes;
DROP FUNCTION platform.record_change_order();
DROP INDEX platform.record_changes_seq_idx;
DROP SEQUENCE platform.record_change_seq;
ALTER TABLE platform.record_changes DROP COLUMN seq;
