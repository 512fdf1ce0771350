-- +goose Up
-- A run of a private saved query, and the history query a private saved query was made from,
-- are their author's alone: others in the project see neither its text nor its rows.
ALTER TABLE platform.queries ADD COLUMN private boolean NOT NULL DEFAULT false;
UPDATE platform.queries q SET private = true FROM platform.saved_queries s
    WHERE s.source_query_id = q.id AND s.visibility = 'private' AND s.created_by = q.user_id;

-- +goose Down
ALTER TABLE platform.queries DROP COLUMN private;
