-- +goose Up
-- Two-factor sign-in with TOTP (issue 17). Secrets are sealed with the service's secret key;
-- a pending secret waits for its confirming code; the last accepted time step makes every
-- code single use. Recovery codes are stored as SHA-256, each used once.
ALTER TABLE platform.users ADD COLUMN totp_secret bytea;
ALTER TABLE platform.users ADD COLUMN totp_pending bytea;
ALTER TABLE platform.users ADD COLUMN totp_last_step bigint;
CREATE TABLE platform.recovery_codes (
    user_id    text NOT NULL REFERENCES platform.users (id) ON DELETE CASCADE,
    code_hash  bytea NOT NULL,
    used_at    timestamptz,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (user_id, code_hash)
);

-- +goose Down
DROP TABLE platform.recovery_codes;
ALTER TABLE platform.users DROP COLUMN totp_last_step;
ALTER TABLE platform.users DROP COLUMN totp_pending;
ALTER TABLE platform.users DROP COLUMN totp_secret;
