-- +goose Up
-- Servers keep the record API's dataset-and-membership lookups in memory; every change of
-- datasets or memberships (any replica, a job, SQL run by hand; cascades included) tells
-- them to forget. One notification per statement: NOTIFY folds equal ones of a transaction.
-- +goose StatementBegin
CREATE FUNCTION platform.notify_control_plane() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('control_plane', TG_TABLE_NAME);
    RETURN NULL;
END
$$;
-- +goose StatementEnd
CREATE TRIGGER datasets_control_plane AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON platform.datasets
    FOR EACH STATEMENT EXECUTE FUNCTION platform.notify_control_plane();
CREATE TRIGGER memberships_control_plane AFTER INSERT OR UPDATE OR DELETE OR TRUNCATE ON platform.memberships
    FOR EACH STATEMENT EXECUTE FUNCTION platform.notify_control_plane();

-- +goose Down
DROP TRIGGER memberships_control_plane ON platform.memberships;
DROP TRIGGER datasets_control_plane ON platform.datasets;
DROP FUNCTION platform.notify_control_plane();
