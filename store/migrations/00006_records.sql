-- +goose Up
-- X-Idempotency-Key of record creation: the first answer for a key is kept (24 hours) and
-- given again for the same request; the same key with another body is refused.
CREATE TABLE platform.idempotency_keys (
    principal    text NOT NULL,
    dataset_id   text NOT NULL REFERENCES platform.datasets (id) ON DELETE CASCADE,
    key          text NOT NULL,
    request_hash text NOT NULL,
    status       int,
    location     text,
    body         text,
    created_at   timestamptz NOT NULL,
    PRIMARY KEY (principal, dataset_id, key)
);
CREATE INDEX idempotency_keys_created_idx ON platform.idempotency_keys (created_at);

-- +goose Down
DROP TABLE platform.idempotency_keys;
