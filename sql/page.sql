---------------------------------------------------------------------------------------
-- The owner's web page, through the owner's archive (transcriber/records/page_sessions.py,
-- archive.py, corrections.py): sign-in sessions, the page's list and search, the audio, the
-- owner's corrections. Owner-scoped like api.sql: $1 is the owner, $2 the record (the
-- sessions' queries say their own).
---------------------------------------------------------------------------------------

-- name: page_session_add
-- A new session of owner $1 holding its current token hash, valid for $4 seconds.
-- $2 the session id's hash, $3 the anti-forgery token.
INSERT INTO page_sessions (id_hash, owner_id, token_hash, csrf, expires_at)
SELECT $2, o.id, o.token_hash, $3, now() + make_interval(secs => $4)
  FROM owners o WHERE o.id = $1

-- name: page_session
-- A session that has not expired: its owner, anti-forgery token, and the hash of the
-- token it was signed in with (the caller checks that token with `owner_by_token`).
-- $1 the session id's hash.
-- Only an owner's session: an operator's (kind 'operator', sql/ops.sql) opens no owner page.
SELECT owner_id, csrf, token_hash FROM page_sessions
 WHERE id_hash = $1 AND kind = 'owner' AND expires_at > now()

-- name: page_session_end
-- Owner $1 signs out of their session $2.
DELETE FROM page_sessions WHERE owner_id = $1 AND id_hash = $2

-- name: page_sessions_sweep
-- Sessions that can never be valid again: expired, or signed in with a token their owner
-- (or operator, for the operator's screen) no longer holds.
DELETE FROM page_sessions s
 WHERE s.expires_at <= now()
    OR (s.kind = 'owner' AND NOT EXISTS (
            SELECT 1 FROM owners o WHERE o.id = s.owner_id AND o.token_hash = s.token_hash))
    OR (s.kind = 'operator' AND NOT EXISTS (
            SELECT 1 FROM operators p
             WHERE p.id = s.operator_id AND p.token_hash = s.token_hash))

-- name: page_recordings
-- A page of owner $1's records for the page, newest first after the cursor ($2, $3, as
-- `recordings_of_owner`), at most $4; $5 a state (working, transcribed, stopped) or
-- NULL; $6 a tsquery (the 'simple' configuration) on title, file name, summary, topics,
-- transcript and corrections, or NULL. Each branch of the search names the owner itself, so one
-- owner's search reads only their own transcripts and corrections, however many
-- others' there are.
SELECT v.* FROM recording_rows v
 WHERE v.owner_id = $1
   AND (v.created_at, v.id) < (coalesce($2::timestamptz, 'infinity'),
                               coalesce($3::uuid, 'ffffffff-ffff-ffff-ffff-ffffffffffff'))
   AND CASE $5::text
           WHEN 'working' THEN v.stopped_at IS NULL AND v.milestone <> 'transcribed'
           WHEN 'transcribed' THEN v.milestone = 'transcribed'
           WHEN 'stopped' THEN v.stopped_at IS NOT NULL
           ELSE true
       END
   AND ($6::text IS NULL
        OR v.id IN (
            SELECT r.id FROM recordings r
             WHERE r.owner_id = $1
               AND to_tsvector('simple', coalesce(r.title, '') || ' ' || coalesce(r.filename, ''))
                   @@ to_tsquery('simple', $6)
            UNION
            -- The owner's summary and topics: few records have them, so the owner's own
            -- rows are read without an index of their own (the search's bound holds).
            SELECT r.id FROM recordings r
             WHERE r.owner_id = $1 AND (r.summary IS NOT NULL OR r.topics <> '{}')
               AND to_tsvector('simple', coalesce(r.summary, '') || ' '
                                         || array_to_string(r.topics, ' '))
                   @@ to_tsquery('simple', $6)
            UNION
            SELECT t.recording_id FROM transcripts t JOIN recordings r ON r.id = t.recording_id
             WHERE r.owner_id = $1
               AND to_tsvector('simple', t.text) @@ to_tsquery('simple', $6)
            UNION
            SELECT c.recording_id FROM corrections c JOIN recordings r ON r.id = c.recording_id
             WHERE r.owner_id = $1
               AND to_tsvector('simple', c.text) @@ to_tsquery('simple', $6)))
 ORDER BY v.created_at DESC, v.id DESC
 LIMIT $4

-- name: owner_audio
-- Where the owner's ($1) record $2 keeps its normalized audio (NULL until normalized;
-- no row: not theirs).
SELECT audio_path FROM recordings WHERE owner_id = $1 AND id = $2

-- name: owner_corrections
-- The owner's ($1) corrections of their record $2, by segment and, for a part of one,
-- its first word (-1: the whole segment).
SELECT c.segment, c.word, c.text, c.corrected_at
  FROM corrections c JOIN recordings r ON r.id = c.recording_id
 WHERE r.owner_id = $1 AND c.recording_id = $2
 ORDER BY c.segment, c.word

-- name: correction_set
-- The owner's ($1) text $4 for segment $3 of their record $2, or for its part from word
-- $6 (-1: the whole segment), journaled as `corrected` with origin `human` (detail $5:
-- who and which segment). No row: not theirs.
WITH done AS (
    INSERT INTO corrections (recording_id, segment, word, text)
    SELECT r.id, $3, $6, $4 FROM recordings r WHERE r.owner_id = $1 AND r.id = $2
    ON CONFLICT (recording_id, segment, word)
    DO UPDATE SET text = excluded.text, corrected_at = now()
    RETURNING recording_id
), event AS (
    INSERT INTO journal (recording_id, origin, kind, milestone, detail)
    SELECT r.id, 'human', 'corrected', r.milestone, $5::jsonb
      FROM recordings r JOIN done ON done.recording_id = r.id
    RETURNING id, kind
)
SELECT pg_notify('transcriber_journal', event.id || ' ' || event.kind) IS NULL FROM event

-- name: correction_clear
-- Back to the machine text for segment $3 of the owner's ($1) record $2, or its part
-- from word $5 (-1: the whole segment), journaled like `correction_set` (detail $4).
WITH done AS (
    DELETE FROM corrections c USING recordings r
     WHERE r.id = c.recording_id AND r.owner_id = $1 AND c.recording_id = $2
       AND c.segment = $3 AND c.word = $5
    RETURNING c.recording_id
), event AS (
    INSERT INTO journal (recording_id, origin, kind, milestone, detail)
    SELECT r.id, 'human', 'corrected', r.milestone, $4::jsonb
      FROM recordings r JOIN done ON done.recording_id = r.id
    RETURNING id, kind
)
SELECT pg_notify('transcriber_journal', event.id || ' ' || event.kind) IS NULL FROM event
