-- HTTP hardening: owners can be revoked (their records stay), and an Idempotency-Key
-- remembers the request it was first used with, so a reuse with another one is refused.

-- Set by `transcriber owner revoke`: the token stops working; the owner's records and
-- journal stay as they are for the operator.
ALTER TABLE owners ADD COLUMN revoked_at timestamptz;

-- sha256 of what the first request with this key asked for (its fields, size and the
-- content's sha256); NULL for a record without a key, or made before this migration.
ALTER TABLE recordings ADD COLUMN idempotency_fingerprint bytea;
