-- +goose Up
-- A dataset column's index now ends with the records' key, as a list's order does (an index
-- of the column alone made PostgreSQL read and sort every row of a value to give a page of
-- it). Every active uploaded dataset's index job runs once more: it builds those of the
-- column alone again, under their names, writes going on.
INSERT INTO platform.jobs (id, kind, organization_id, resource_type, resource_id, payload, status, max_attempts, run_at, created_at)
SELECT 'job_' || substr(md5(random()::text || d.id), 1, 20), 'dataset.search_index', d.organization_id, 'dataset', d.id,
       jsonb_build_object('dataset_id', d.id), 'queued', 3, now(), now()
FROM platform.datasets d
WHERE d.type = 'file' AND d.status = 'active';

-- +goose Down
-- Nothing to undo: the jobs run or have run, and an index ending with the key serves
-- everything the column's alone did.
SELECT 1;
