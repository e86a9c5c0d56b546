---------------------------------------------------------------------------------------
-- The owner's records as the HTTP API reads and edits them, through the owner's archive
-- (transcriber/records/archive.py, cards.py).
-- Every query an owner's request runs names the owner ($1) in its condition, so a
-- route can only ever reach the caller's own records (tests/integration/
-- test_api_hardening.py checks each query the HTTP code calls). $2 is the record's id
-- where a query reads one record.
---------------------------------------------------------------------------------------

-- name: owner_recording
-- The owner's ($1) record $2 as its card is made of, with a live session's draft
-- (`live_text`, sql/0022; the owner's card only); no row: not theirs.
SELECT rr.*, l.text AS live_text
  FROM recording_rows rr LEFT JOIN live_sessions l ON l.recording_id = rr.id
 WHERE rr.owner_id = $1 AND rr.id = $2

-- name: owner_transcript
-- $1 owner, $2 record.
SELECT t.text, t.segments, t.language, t.model, t.turns, t.speaker_count
  FROM transcripts t JOIN recordings r ON r.id = t.recording_id
 WHERE r.owner_id = $1 AND t.recording_id = $2

-- name: owner_journal
-- The events of the owner's ($1) record $2 numbered 1, 2, … within the record (the
-- journal's own ids are global: they would tell how busy the service is), after
-- number $3, $4 at most. Only the events of transactions below the oldest one still
-- running, in (xid, id) order (sql/0020_journal_settled.sql): no event can come later
-- among them, so each keeps its number and a client paging by `after` gets each once.
SELECT seq, at, origin, kind, milestone, detail
  FROM (SELECT j.at, j.origin, j.kind, j.milestone, j.detail,
               row_number() OVER (ORDER BY j.xid, j.id) AS seq
          FROM journal j JOIN recordings r ON r.id = j.recording_id
         WHERE r.owner_id = $1 AND j.recording_id = $2
           AND j.xid < (SELECT pg_snapshot_xmin(pg_current_snapshot()))) AS numbered
 WHERE seq > $3
 ORDER BY seq
 LIMIT $4

-- name: owner_stored_bytes
-- What the owner's ($1) uploads take in the store, against their quota.
SELECT coalesce(sum(size_bytes), 0)::bigint FROM recordings WHERE owner_id = $1

-- name: owner_audio_seconds
-- Seconds of normalized audio the owner's ($1) records hold, against their audio quota
-- (TRANSCRIBER_OWNER_MAX_AUDIO_HOURS); a record not normalized yet counts nothing.
SELECT coalesce(sum(duration_s), 0)::float8 FROM recordings WHERE owner_id = $1

-- name: recordings_of_owner
-- A page of one owner's records, newest first, after the cursor ($2 created_at, $3 id;
-- NULL for the first page), $4 at most. The cursor defaults keep the condition a
-- plain row comparison, so recordings_by_owner serves it.
SELECT * FROM recording_rows
 WHERE owner_id = $1
   AND (created_at, id) < (coalesce($2::timestamptz, 'infinity'),
                           coalesce($3::uuid, 'ffffffff-ffff-ffff-ffff-ffffffffffff'))
 ORDER BY created_at DESC, id DESC
 LIMIT $4

-- name: edit_owner_fields
-- The owner's ($1) edit of their record $2: owner fields only, journaled as `edited`
-- with origin `human`. No row: not this owner's record.
-- $3 title, $4 summary, $5 topics (NULL: unchanged), $6 detail (jsonb).
WITH done AS (
    UPDATE recordings
       SET title = coalesce($3, title), summary = coalesce($4, summary),
           topics = coalesce($5, topics)
     WHERE owner_id = $1 AND id = $2
    RETURNING id, milestone
), event AS (
    INSERT INTO journal (recording_id, origin, kind, milestone, detail)
    SELECT id, 'human', 'edited', milestone, $6::jsonb FROM done
    RETURNING id, kind
)
SELECT done.id, pg_notify('transcriber_journal', event.id || ' ' || event.kind) IS NULL
  FROM done, event

-- name: queue_ahead
-- For each of the owner's ($1) records in $2 (ids): how many records a worker would
-- claim before it. The claim's own order and eligibility (claim_next in
-- sql/0017_hot_commits.sql): not stopped, not finished, no lease holding, no retry
-- pause running, oldest (created_at, id) first, whoever's they are. A count only: no
-- other owner's record is named.
SELECT me.id,
       (SELECT count(*) FROM recordings r
         WHERE r.stopped_at IS NULL AND NOT r.finished
           AND (r.lease_expires_at IS NULL OR r.lease_expires_at <= now())
           AND (r.retry_at IS NULL OR r.retry_at <= now())
           AND (r.created_at, r.id) < (me.created_at, me.id))::integer AS ahead
  FROM recordings me
 WHERE me.owner_id = $1 AND me.id = ANY($2::uuid[])
