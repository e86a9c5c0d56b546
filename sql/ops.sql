---------------------------------------------------------------------------------------
-- The operator's screen at /ops (transcriber/operators.py, records/page_sessions.py,
-- pipeline/ops_screen.py, pipeline/daemons.py): operators and their tokens (sha256
-- only), their sessions (page_sessions of kind 'operator'), what the screen reads of
-- every owner's records — metadata, states, stop flags, journals, never audio or text —
-- and the daemons' registrations and heartbeats. Resume goes through `resume`
-- (queue.sql), as `transcriber resume` does; the glance's table is `status`
-- (operator.sql), as `transcriber status` and /metrics read it.
---------------------------------------------------------------------------------------

-- name: operator_add
-- $1 name, $2 token hash.
INSERT INTO operators (name, token_hash) VALUES ($1, $2) RETURNING id

-- name: operator_by_token
-- The operator holding a token, by its sha256 (compared again in constant time by the
-- caller). A revoked operator holds no token.
SELECT id, name, token_hash FROM operators WHERE token_hash = $1 AND revoked_at IS NULL

-- name: operator_list
SELECT name, created_at, revoked_at FROM operators ORDER BY name

-- name: operator_revoke
-- The token stops working at once (and every session signed in with it). NULL: none.
UPDATE operators SET revoked_at = coalesce(revoked_at, now()) WHERE name = $1 RETURNING id

-- name: operator_rotate
-- A new token hash; the old one (and its sessions) stop at once; a revoked operator is
-- reinstated. NULL: no such operator.
UPDATE operators SET token_hash = $2, revoked_at = NULL WHERE name = $1 RETURNING id

-- name: ops_session_add
-- A new session of operator $1 holding its current token hash, valid for $4 seconds.
-- $2 the session id's hash, $3 the anti-forgery token.
INSERT INTO page_sessions (id_hash, kind, operator_id, token_hash, csrf, expires_at)
SELECT $2, 'operator', p.id, p.token_hash, $3, now() + make_interval(secs => $4)
  FROM operators p WHERE p.id = $1

-- name: ops_session
-- An operator's session that has not expired, while its operator still holds the token
-- it was signed in with. An owner's session (kind 'owner') has no row here.
-- $1 the session id's hash.
SELECT s.operator_id, p.name, s.csrf
  FROM page_sessions s
  JOIN operators p ON p.id = s.operator_id AND p.token_hash = s.token_hash
                  AND p.revoked_at IS NULL
 WHERE s.id_hash = $1 AND s.kind = 'operator' AND s.expires_at > now()

-- name: ops_session_end
-- Operator $1 signs out of their session $2.
DELETE FROM page_sessions WHERE kind = 'operator' AND operator_id = $1 AND id_hash = $2

-- name: ops_stopped
-- Stopped records for the screen, oldest stop first, at most $6: $1 a stop reason, $2 a
-- milestone, $3 an owner's name, $4 stopped at least this many seconds ago, $5 a search
-- (an owner's name, or part of a file name; $7 the same as a record id, NULL when it is
-- none; $8, $9 the ids beginning as it does, NULL when it is no beginning of one); each
-- NULL for any. Served by recordings_stopped (partial on stopped_at): only
-- stopped records are read.
SELECT r.id, o.name AS owner, r.filename, r.milestone, r.stop_reason, r.stopped_at,
       r.stop_error, r.created_at, r.duration_s
  FROM recordings r JOIN owners o ON o.id = r.owner_id
 WHERE r.stopped_at IS NOT NULL
   AND ($1::text IS NULL OR r.stop_reason = $1)
   AND ($2::text IS NULL OR r.milestone = $2)
   AND ($3::text IS NULL OR o.name = $3)
   AND ($4::float8 IS NULL OR r.stopped_at <= now() - make_interval(secs => $4))
   AND ($5::text IS NULL OR r.id = $7::uuid OR o.name = $5 OR r.id BETWEEN $8::uuid AND $9::uuid
        OR r.filename ILIKE '%' || replace(replace(replace($5, '\', '\\'), '%', '\%'), '_', '\_') || '%')
 ORDER BY r.stopped_at, r.id
 LIMIT $6

-- name: ops_search
-- Records in any state, newest first, at most $2: the record $3 (a record id, or NULL
-- when the text $1 is none), the records whose id begins as $1 does ($4, $5: NULL when
-- $1 is no beginning of an id), else the records of the owner named $1, else those whose
-- file name holds $1 — only for a text of 3 characters or more (ops_screen.SEARCH_MIN):
-- a shorter one has no trigram for recordings_filename_trgm to use, and would read
-- every record. By the key, recordings_by_owner, and recordings_filename_trgm (figures:
-- transcriber/bench/ops_screen_cost.py). A text in nearly every file name still reads
-- every record it matches: the caller bounds the statement (ops_screen.search).
WITH found AS (
    SELECT r.* FROM recordings r WHERE r.id = $3::uuid
    UNION
    -- The beginning of an id, as the screen's tables show it: the ids from $4 to $5
    -- (the prefix filled with 0s, then with fs), by the key.
    (SELECT r.* FROM recordings r
      WHERE $3::uuid IS NULL AND r.id BETWEEN $4::uuid AND $5::uuid
      ORDER BY r.created_at DESC, r.id DESC LIMIT $2)
    UNION
    (SELECT r.* FROM recordings r
      WHERE $3::uuid IS NULL AND r.owner_id = (SELECT id FROM owners WHERE name = $1)
      ORDER BY r.created_at DESC, r.id DESC LIMIT $2)
    UNION
    (SELECT r.* FROM recordings r
      WHERE $3::uuid IS NULL AND length($1) >= 3
        AND NOT EXISTS (SELECT FROM owners WHERE name = $1)
        AND r.filename ILIKE '%' || replace(replace(replace($1, '\', '\\'), '%', '\%'), '_', '\_') || '%'
      ORDER BY r.created_at DESC, r.id DESC LIMIT $2)
)
SELECT f.id, o.name AS owner, f.filename, f.milestone, f.stop_reason, f.stopped_at,
       f.created_at, f.duration_s
  FROM found f JOIN owners o ON o.id = f.owner_id
 ORDER BY f.created_at DESC, f.id DESC
 LIMIT $2

-- name: ops_record
-- One record as the operator sees it: metadata, queue state and stop flag; none of the
-- owner's text (title, summary, topics) and nothing of the transcript. $1 id.
SELECT r.id, o.name AS owner, r.filename, r.size_bytes, r.language, r.created_at,
       r.milestone, r.milestone_entered_at, r.attempts, r.retry_at, r.lease_expires_at,
       r.claim_token IS NOT NULL AS claimed, r.progress, r.duration_s,
       r.stopped_at, r.stop_reason, r.stop_error,
       extract(epoch FROM r.lease_expires_at - now())::float8 AS lease_left_s
  FROM recordings r JOIN owners o ON o.id = r.owner_id
 WHERE r.id = $1

-- name: ops_journal
-- A record's whole journal, oldest first, at most $2 events. $1 id. In the order every
-- reader of the journal reads it (operator.sql's journal_after), every event committed:
-- a page is read whole, not followed.
SELECT id, at, origin, kind, milestone, claim_token, detail
  FROM journal WHERE recording_id = $1 ORDER BY xid, id LIMIT $2

-- name: ops_resumed_batch
-- The records one resume of the screen resumed: its journal events with batch $1 and
-- `by` $2 (the operator), of the last day, in the order they were resumed. Through
-- journal_by_kind_time's `resumed` entries alone: resumes are few.
SELECT recording_id, milestone
  FROM journal
 WHERE kind = 'resumed' AND at > now() - interval '1 day'
   AND detail ->> 'batch' = $1 AND detail ->> 'by' = $2
 ORDER BY id

-- name: ops_reached
-- Milestones reached per bucket of $2 over the last $1, of each milestone in $3: the
-- throughput chart. One count per bucket and milestone, each a range of
-- journal_by_kind_time read from the index alone: no sort of the day's events.
SELECT b.bucket, m.milestone,
       (SELECT count(*) FROM journal j
         WHERE j.kind = 'milestone_reached' AND j.milestone = m.milestone
           AND j.at >= b.bucket AND j.at < b.bucket + $2::interval) AS n
  FROM generate_series(now() - $1::interval, now() - $2::interval, $2::interval) AS b (bucket),
       unnest($3::text[]) AS m (milestone)

-- name: ops_stops
-- Stops per bucket of $2 over the last $1, by reason (from the journal: a stop since
-- resumed still counts).
SELECT date_bin($2::interval, at, now() - $1::interval) AS bucket,
       coalesce(detail ->> 'reason', '?') AS reason, count(*) AS n
  FROM journal
 WHERE kind = 'stopped' AND at > now() - $1::interval
 GROUP BY 1, 2 ORDER BY 1, 2

-- name: ops_audio_waiting
-- Seconds of audio normalized and not yet recognized (stopped ones apart), and of the
-- records among them nobody holds now.
SELECT coalesce(sum(duration_s), 0)::float8 AS audio_s,
       coalesce(sum(duration_s) FILTER (
           WHERE lease_expires_at IS NULL OR lease_expires_at <= now()), 0)::float8 AS unclaimed_s
  FROM recordings
 WHERE milestone = 'normalized' AND stopped_at IS NULL

-- name: daemon_register
-- A daemon starting: $1 id, $2 host, $3 pid, $4 version, $5 workers, $6 model,
-- $7 device, $8 beat interval (s).
INSERT INTO daemons (id, host, pid, version, workers, model, device, beat_every_s)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)

-- name: daemon_beat
-- A daemon still running: its beat time, what its workers hold ($2, jsonb), and its
-- recognition totals ($3 seconds of audio recognized, $4 seconds it took); none once it
-- said it stopped. Touches no record: a heartbeat is not a lease.
UPDATE daemons
   SET beat_at = now(), claims = $2::jsonb,
       recognized_audio_s = $3, recognizing_s = $4
 WHERE id = $1 AND stopped_at IS NULL

-- name: daemon_stopped
-- A daemon that drained and stops. $1 id.
UPDATE daemons SET stopped_at = now(), beat_at = now(), claims = '[]' WHERE id = $1

-- name: daemons_list
-- The daemons that ran in the last $1 (an interval), newest start first, with how long
-- since their last beat. Their claims come apart (`daemon_claims`).
SELECT id, host, pid, version, workers, model, device, started_at, beat_at, beat_every_s,
       stopped_at, recognized_audio_s, recognizing_s,
       extract(epoch FROM now() - beat_at)::float8 AS silent_s
  FROM daemons
 WHERE stopped_at IS NULL OR stopped_at > now() - $1::interval
 ORDER BY started_at DESC, id

-- name: daemon_claims
-- The claims daemons $1 reported at their last beat, as the records show them now: a
-- claim whose token is no longer on its record (committed, released, lost) is left out.
SELECT d.id AS daemon, c.worker, c.since, r.id, r.milestone, r.attempts,
       extract(epoch FROM r.lease_expires_at - now())::float8 AS lease_left_s
  FROM daemons d,
       jsonb_to_recordset(d.claims) AS c (worker text, id uuid, token uuid, since timestamptz)
  JOIN recordings r ON r.id = c.id AND r.claim_token = c.token
 WHERE d.id = ANY($1::uuid[])
 ORDER BY d.id, c.worker

-- name: ops_now
-- The database's clock: the screen's charts are bucketed by it.
SELECT now()
