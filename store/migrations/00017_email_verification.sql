-- +goose Up
-- Whether the user's address is proven to be theirs (a mailed code or invitation, the
-- identity provider's email_verified, or the operator's bootstrap owner). Accounts set up
-- through an invitation link their inviter could see are not.
ALTER TABLE platform.users ADD COLUMN email_verified_at timestamptz;
-- Of the accounts that exist, only the operator's first owner came neither from an invitation
-- nor from the identity provider: it keeps counting as verified.
UPDATE platform.users u SET email_verified_at = u.created_at
WHERE NOT EXISTS (SELECT 1 FROM platform.invitations i WHERE i.user_id = u.id)
  AND NOT EXISTS (SELECT 1 FROM platform.identities d WHERE d.user_id = u.id);

-- A mailed invitation's token was never shown to the inviter: accepting it proves the mailbox.
ALTER TABLE platform.invitations ADD COLUMN delivered_by_email boolean NOT NULL DEFAULT false;

-- The pending mailed code of an account (one at a time), stored as SHA-256.
CREATE TABLE platform.email_verifications (
    user_id    text PRIMARY KEY REFERENCES platform.users (id) ON DELETE CASCADE,
    email      text NOT NULL,
    code_hash  bytea NOT NULL,
    attempts   integer NOT NULL DEFAULT 0,
    expires_at timestamptz NOT NULL,
    created_at timestamptz NOT NULL
);

-- Consecutive failed sign-ins per email address (known or not, so that answers reveal nothing),
-- shared by every replica.
CREATE TABLE platform.login_failures (
    email_key     text PRIMARY KEY,
    failures      integer NOT NULL,
    blocked_until timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL
);

-- +goose Down
DROP TABLE platform.login_failures;
DROP TABLE platform.email_verifications;
ALTER TABLE platform.invitations DROP COLUMN delivered_by_email;
ALTER TABLE platform.users DROP COLUMN email_verified_at;
