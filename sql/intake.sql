---------------------------------------------------------------------------------------
-- Intake: a new record at `received` with its `accepted` event, whichever door it came by
-- (transcriber/intake/: the API, the page, the OpenAI endpoint, the command line, all by
-- `accept_upload`; `accept` is the benchmarks' and the tests' shortcut). Both wake an
-- idle worker on `transcriber_work` (see queue.sql).
---------------------------------------------------------------------------------------

-- name: accept
-- A new record at `received`, and its `accepted` event, in one statement.
-- $1 owner, $2 file name, $3 size in bytes, $4 source ref, $5 language, $6 title,
-- $7 the recognition options (jsonb; NULL for the defaults), see sql/0006.
WITH rec AS (
    INSERT INTO recordings (owner_id, filename, size_bytes, source_path, language, title,
                            options)
    VALUES ($1, $2, $3, $4, $5, $6, coalesce($7::jsonb, '{}'))
    RETURNING id, milestone
), event AS (
    INSERT INTO journal (recording_id, origin, kind, milestone)
    SELECT id, 'pipeline', 'accepted', milestone FROM rec
    RETURNING id, kind
)
SELECT rec.id, pg_notify('transcriber_journal', event.id || ' ' || event.kind) IS NULL AS notified,
       pg_notify('transcriber_work', event.kind) IS NULL AS woke
FROM rec, event

-- name: accept_upload
-- `accept` for a recording through the intake (transcriber/intake/accepting.py), with
-- the owner's optional Idempotency-Key ($7), the recognition options ($8, as `accept`'s
-- $7) and the request's fingerprint ($9; NULL: never folded into another record). A key
-- the owner used before inserts nothing and returns no row: the caller then reads the
-- first record with `recording_by_key`. Without a key, the same fingerprint of the
-- same owner conflicts instead (sql/0008): the caller reads the first record with
-- `recording_by_fingerprint`. Like `accept`, it wakes an idle worker on
-- `transcriber_work`. $10: the door it came in by, journaled as the event's `via`
-- ('api': the API's upload route, 'page': the owner's page, 'openai': the
-- OpenAI-compatible endpoint, 'cli': the command line). $11: which of the options the
-- owner's defaults filled in (sql/0025), for the card.
WITH rec AS (
    INSERT INTO recordings (owner_id, filename, size_bytes, source_path, language, title,
                            idempotency_key, options, idempotency_fingerprint, from_settings)
    VALUES ($1, $2, $3, $4, $5, $6, $7, coalesce($8::jsonb, '{}'), $9, $11)
    -- Either idempotency_once or recordings_same_request_once (ON CONFLICT names one).
    ON CONFLICT DO NOTHING
    RETURNING id, milestone
), event AS (
    INSERT INTO journal (recording_id, origin, kind, milestone, detail)
    SELECT id, 'pipeline', 'accepted', milestone, jsonb_build_object('via', $10::text) FROM rec
    RETURNING id, kind
)
SELECT rec.id, pg_notify('transcriber_journal', event.id || ' ' || event.kind) IS NULL AS notified,
       pg_notify('transcriber_work', event.kind) IS NULL AS woke
FROM rec, event

-- name: recording_by_key
-- $1 owner, $2 Idempotency-Key.
SELECT id, idempotency_fingerprint AS fingerprint
  FROM recordings WHERE owner_id = $1 AND idempotency_key = $2

-- name: recording_by_fingerprint
-- The owner's ($1) record made without a key by the request of fingerprint $2.
SELECT id, idempotency_fingerprint AS fingerprint
  FROM recordings
 WHERE owner_id = $1 AND idempotency_fingerprint = $2 AND idempotency_key IS NULL

-- name: again_source
-- What transcribing the owner's ($1) record $2 again starts from (transcriber/intake/
-- again.py): its file as uploaded, what was said about it, and whether it is finished
-- (transcribed, or stopped). No row: not this owner's record.
SELECT filename, title, source_path, size_bytes, language, options,
       milestone = 'transcribed' OR stopped_at IS NOT NULL AS finished
  FROM recordings WHERE owner_id = $1 AND id = $2

-- name: journal_again
-- The owner's ($1) record $2 was transcribed again as the record $3 ($4: the door,
-- 'page' or 'api'): journaled on $2 with origin `human`, so its page links the new one.
WITH event AS (
    INSERT INTO journal (recording_id, origin, kind, milestone, detail)
    SELECT id, 'human', 'transcribed_again', milestone,
           jsonb_build_object('as', $3::text, 'via', $4::text)
      FROM recordings WHERE owner_id = $1 AND id = $2
    RETURNING id, kind
)
SELECT pg_notify('transcriber_journal', event.id || ' ' || event.kind) IS NULL FROM event
