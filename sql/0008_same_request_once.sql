-- Retries never duplicate: an upload without an Idempotency-Key keeps the fingerprint
-- of its request (the owner's fields, the size and the content's sha256) too, and the
-- same request of the same owner names the first record instead of making another
-- (sql/intake.sql `accept_upload`). A request with a key is decided by its key alone,
-- so its records are outside this index. Records made before this migration have no
-- fingerprint without a key and are never matched.
CREATE UNIQUE INDEX recordings_same_request_once
    ON recordings (owner_id, idempotency_fingerprint)
 WHERE idempotency_key IS NULL AND idempotency_fingerprint IS NOT NULL;
