---------------------------------------------------------------------------------------
-- Live sessions (transcriber/live/, sql/0022_live_sessions.sql): a record at `live`
-- from the session's first second, its lease held by the daemon whose socket serves
-- it, moved on to `received` when the session ends, by that daemon or, once the lease
-- ran out, by whichever daemon's sweep took the lease over. Every write after the start
-- is fenced by the session's token, as a claim's by its own: a daemon whose lease was
-- taken writes nothing more.
---------------------------------------------------------------------------------------

-- name: live_start
-- The record of a new session at `live`, its session row with the lease, and its
-- `accepted` event (`via: live`), in one statement. $1 the record's id, $2 owner, $3 the
-- file name, $4 the source ref (the live audio being written), $5 language, $6 the
-- recognition options (jsonb; NULL for the defaults), $7 the lease's token, $8 the
-- lease (s), $9 the audio's sample rate, $10 now (NULL: the database's clock).
WITH rec AS (
    INSERT INTO recordings (id, owner_id, filename, size_bytes, source_path, language,
                            options, milestone)
    VALUES ($1, $2, $3, 0, $4, $5, coalesce($6::jsonb, '{}'), 'live')
    RETURNING id, milestone
), session AS (
    INSERT INTO live_sessions (recording_id, token, lease_expires_at, rate, audio_ref)
    SELECT id, $7, coalesce($10, now()) + make_interval(secs => $8), $9, $4 FROM rec
), event AS (
    INSERT INTO journal (recording_id, origin, kind, milestone, detail)
    SELECT id, 'pipeline', 'accepted', milestone, '{"via": "live"}'::jsonb FROM rec
    RETURNING id, kind
)
SELECT rec.id, pg_notify('transcriber_journal', event.id || ' ' || event.kind) IS NULL AS notified
  FROM rec, event

-- name: live_renew
-- The lease of session $1 held with token $2 renewed for $3 s from $5 (NULL: now), and
-- the audio durable so far ($4 bytes of samples) on the session and the record's size.
-- No row: the lease is gone (taken over by another daemon, the session ended, or the
-- record deleted).
WITH session AS (
    UPDATE live_sessions
       SET lease_expires_at = coalesce($5, now()) + make_interval(secs => $3),
           audio_bytes = greatest(audio_bytes, $4)
     WHERE recording_id = $1 AND token = $2 AND ended_at IS NULL
    RETURNING recording_id, audio_bytes
)
UPDATE recordings r SET size_bytes = session.audio_bytes
  FROM session
 WHERE r.id = session.recording_id AND r.milestone = 'live'
RETURNING r.id

-- name: live_text
-- A completed turn's text $3 added to the draft of session $1 held with token $2, up
-- to $4 characters in all (a draft is bounded as a session is). No row: the lease is
-- gone.
UPDATE live_sessions
   SET text = left(CASE WHEN text = '' THEN $3 ELSE text || ' ' || $3 END, $4)
 WHERE recording_id = $1 AND token = $2 AND ended_at IS NULL
RETURNING recording_id

-- name: live_configure
-- The language hint $3 and recognition options $4 (jsonb; NULL: the defaults) a client
-- set on session $1 held with token $2, on its record at once, so a daemon that takes
-- the session over ends it with them. No row: the lease is gone.
UPDATE recordings r SET language = $3, options = coalesce($4::jsonb, '{}')
  FROM live_sessions s
 WHERE r.id = $1 AND s.recording_id = r.id AND s.token = $2 AND s.ended_at IS NULL
   AND r.milestone = 'live'
RETURNING r.id

-- name: live_record_exists
-- Whether record $1 is still there (a session that lost its lease: taken over, or
-- deleted by its owner).
SELECT true FROM recordings WHERE id = $1

-- name: live_chunks_left
-- Ended sessions whose chunk objects are still there, ended before $1 (NULL: a minute
-- ago; the daemon that ended one removes its chunks at once), $2 at most.
SELECT recording_id, audio_ref FROM live_sessions
 WHERE chunks_left AND ended_at < coalesce($1, now() - interval '1 minute')
 ORDER BY ended_at
 LIMIT $2

-- name: live_chunks_removed
-- Session $1's chunk objects are gone.
UPDATE live_sessions SET chunks_left = false WHERE recording_id = $1

-- name: live_take_expired
-- The sweep: up to $3 running sessions whose lease ran out before $2 (NULL: now), each
-- taken over with a fresh token and a lease of $1 s, so one daemon finishes each. The
-- old holder's fenced writes are refused from now on.
UPDATE live_sessions s
   SET token = gen_random_uuid(),
       lease_expires_at = coalesce($2, now()) + make_interval(secs => $1)
  FROM (SELECT recording_id FROM live_sessions
         WHERE ended_at IS NULL AND lease_expires_at <= coalesce($2, now())
         ORDER BY lease_expires_at
         LIMIT $3
           FOR UPDATE SKIP LOCKED) expired
 WHERE s.recording_id = expired.recording_id
RETURNING s.recording_id, s.token, s.audio_ref, s.rate, s.audio_bytes

-- name: live_end
-- Session $1 held with token $2 ended: the record moves on to `received` with its
-- completed audio ($3 the ref, $4 its size in bytes) and enters the pipeline like an
-- upload; journaled `live_ended` with $5 (the detail: why it ended, the audio's
-- seconds, whether another daemon finished it), and an idle worker woken. $6 and $7:
-- the language hint and the recognition options (jsonb) the session ended with (NULL:
-- as the record has them). No row: the lease is gone.
WITH session AS (
    UPDATE live_sessions SET ended_at = now(), end_reason = $5::jsonb ->> 'reason',
                             chunks_left = audio_ref LIKE '%/'
     WHERE recording_id = $1 AND token = $2 AND ended_at IS NULL
    RETURNING recording_id
), rec AS (
    UPDATE recordings r
       SET milestone = 'received', milestone_entered_at = now(), source_path = $3,
           size_bytes = $4, language = coalesce($6, r.language),
           options = coalesce($7::jsonb, r.options::jsonb)
      FROM session
     WHERE r.id = session.recording_id AND r.milestone = 'live'
    RETURNING r.id, r.milestone
), event AS (
    INSERT INTO journal (recording_id, origin, kind, milestone, detail)
    SELECT id, 'pipeline', 'live_ended', milestone, $5::jsonb FROM rec
    RETURNING id, kind
)
SELECT rec.id, pg_notify('transcriber_journal', event.id || ' ' || event.kind) IS NULL AS notified,
       pg_notify('transcriber_work', event.kind) IS NULL AS woke
  FROM rec, event

-- name: live_empty
-- Session $1 held with token $2 ended without a second of audio: its record goes, as a
-- deletion does (journaled `deleted` with detail $3, its bytes named in `removals`), so
-- a session that sent nothing leaves nothing to transcribe. No row: the lease is gone.
WITH held AS (
    SELECT recording_id FROM live_sessions
     WHERE recording_id = $1 AND token = $2 AND ended_at IS NULL
       FOR UPDATE
), gone AS (
    DELETE FROM recordings r USING held
     WHERE r.id = held.recording_id AND r.milestone = 'live'
    RETURNING r.id, r.owner_id, r.milestone, r.size_bytes, r.created_at, r.source_path,
              r.audio_path
), event AS (
    INSERT INTO journal (recording_id, origin, kind, milestone, detail)
    SELECT id, 'pipeline', 'deleted', milestone,
           $3::jsonb || jsonb_build_object('owner_id', owner_id, 'size_bytes', size_bytes,
                                           'created_at', created_at)
      FROM gone
    RETURNING id, kind
), todo AS (
    INSERT INTO removals (recording_id, refs)
    SELECT id, array_remove(ARRAY[source_path, audio_path], NULL) FROM gone
)
SELECT gone.id, gone.source_path, gone.audio_path, gone.size_bytes,
       (SELECT count(pg_notify('transcriber_journal', id || ' ' || kind)) FROM event) AS notified
  FROM gone

-- name: live_owner_room
-- What owner $1's records other than session $2's hold against their quota: the bytes
-- kept and the seconds of normalized audio (sql/api.sql's owner_stored_bytes and
-- owner_audio_seconds, the session's own record left out: its bytes are the session's).
SELECT coalesce(sum(size_bytes) FILTER (WHERE id <> $2), 0)::bigint AS stored_bytes,
       coalesce(sum(duration_s) FILTER (WHERE id <> $2), 0)::float8 AS audio_s
  FROM recordings
 WHERE owner_id = $1
