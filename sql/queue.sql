---------------------------------------------------------------------------------------
-- The queue (transcriber/pipeline/pg_queue.py; the operator's `resume` in
-- transcriber/pipeline/operator.py): claim, read, commit, fail, stop, progress, renew,
-- release, resume, and the steps' results saved in the commit's transaction. Queue columns
-- are written only by these queries.
-- Notifications: every journal event on `transcriber_journal` (payload "<id> <kind>",
-- for `journal --follow` and the requests that wait on a record), in the transaction
-- that journals it; but a commit's, the steady stream of milestones, after its
-- transaction (`announce`). Events that make a record claimable for a worker that does
-- not know of it (accepted, resumed, released) also on `transcriber_work`, which the
-- workers' listener hears: it is not woken by the steady stream of milestones.
-- `$now` parameters are nullable: NULL means the database's now(); tests pass a time.
---------------------------------------------------------------------------------------

-- name: claim
-- One statement picks and claims (see claim_next in sql/0004_claims_count_attempts.sql):
-- the oldest eligible records, one per token in $5 (one per worker asking at this
-- moment; the caller makes the tokens, fresh for each statement, so that it knows what
-- a statement whose reply it lost may have claimed), each with the lease of its
-- milestone and its attempts counted. Returns the ids and tokens only; the workers read
-- the rest themselves (`read_claimed`, or `claim_read` for both in one round trip).
-- $1 milestones with a step, $2 their lease base (s), $3 lease per second of audio,
-- $4 now, $5 tokens.
SELECT id, claim_token FROM claim_next($1, $2, $3, $4, $5, '{}')

-- name: claim_read
-- The claim, then the ordinary read of what it claimed (`read_claimed`), in one round
-- trip: two statements on the server (the read is a function's, with a snapshot of its
-- own that sees the claim's writes; sql/0016_claim_reads.sql). What a worker asking for
-- its next record sends. The parameters are the claim's; the rows are the read's.
-- Committed without waiting for the WAL's flush (synchronous_commit off for this
-- statement's own transaction only; it is never sent inside another): a claim is no
-- result, and on an idle queue that flush was most of an owner's wake-up (an fsync, 2-6
-- ms on the bench's disk). Any later durable commit (the step's, a renewal, anyone's)
-- flushes it too; a server crash before that forgets the claim, and the worker's fenced
-- commit is then refused, as for a lost lease, and the record claimed again.
WITH claimed AS (
    SELECT id, claim_token FROM claim_next($1, $2, $3, $4, $5, '{}')
)
SELECT * FROM claimed_records((SELECT array_agg(id) FROM claimed),
                              (SELECT array_agg(claim_token) FROM claimed), $4)
 WHERE set_config('synchronous_commit', 'off', true) IS NOT NULL

-- name: read_claimed
-- The ordinary read after a claim, for one or several claims ($1 ids, $2 their tokens,
-- $3 now): the milestone, this attempt's number, the lease and milestone times, the
-- step's inputs, and for a record at `received` its owner's audio in their other
-- records (claimed_records in sql/0016_claim_reads.sql says each). A claim whose token
-- is no longer on its record has no row. Oldest first, as claimed.
SELECT * FROM claimed_records($1, $2, $3)

-- name: commit
-- Steps' results move their records on, each only while its claim's token is on it:
-- one or several commits ($1 ids, $2 tokens, $3 from milestones, $4 to milestones;
-- for the journal, $5 steps, $6 attempts and $7 lease renewals, built into each event's
-- detail here rather than as JSON by the caller; $8 now) in one statement, each fenced
-- by its own token. A commit whose token is gone writes nothing and journals
-- `lease_lost` instead; its caller drops the result. One `commit` row per commit: its id, token, whether it reached the milestone
-- and whether an earlier run of this same commit did (`again`: a retry after a lost
-- reply, recognised by its token's `milestone_reached` event; it answers as the first
-- try did and journals nothing; a refused commit sent again journals its `lease_lost`
-- once). It sends no notification: the pipeline announces its commits after their
-- transactions (`announce`).
-- The same statement claims records for the workers asking for their next, one per
-- token in $12 ($9-$11 as the `claim` query's $1-$3), and reads them as `claim_read`
-- does: `claim` rows carry the read's columns (NULL on `commit` rows). It does not claim
-- the records it commits: a record just moved on waits for the next claim.
WITH c AS (
    SELECT id, token, from_milestone, to_milestone,
           jsonb_build_object('step', step, 'attempt', attempt, 'renewals', renewals,
                              'write', 'commit') AS detail
      FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::text[], $6::int[],
                  $7::int[]) AS c (id, token, from_milestone, to_milestone, step, attempt,
                                   renewals)
), done AS (
    UPDATE recordings r
       SET milestone = c.to_milestone, milestone_entered_at = coalesce($8::timestamptz, now()),
           claim_token = NULL, lease_expires_at = NULL, attempts = 0, retry_at = NULL,
           progress = NULL
      FROM c
     WHERE r.id = c.id AND r.claim_token = c.token AND r.milestone = c.from_milestone
    RETURNING r.id, c.token
), refused AS (
    SELECT c.* FROM c LEFT JOIN done ON done.id = c.id AND done.token = c.token
     WHERE done.id IS NULL
), earlier AS (
    SELECT refused.id, refused.token FROM refused
     WHERE EXISTS (SELECT FROM journal j
                    WHERE j.recording_id = refused.id AND j.claim_token = refused.token
                      AND j.kind = 'milestone_reached')
), event AS (
    INSERT INTO journal (recording_id, origin, kind, milestone, claim_token, detail)
    SELECT c.id, 'pipeline', 'milestone_reached', c.to_milestone, c.token,
           c.detail
      FROM c JOIN done ON done.id = c.id AND done.token = c.token
    UNION ALL
    SELECT refused.id, 'pipeline', 'lease_lost', refused.from_milestone, refused.token,
           refused.detail
      FROM refused
     WHERE NOT EXISTS (SELECT FROM journal j
                        WHERE j.recording_id = refused.id AND j.claim_token = refused.token
                          AND (j.kind = 'milestone_reached'
                               OR (j.kind = 'lease_lost' AND j.detail ->> 'write' = 'commit')))
    RETURNING id, recording_id, claim_token, kind
), claimed AS (
    SELECT * FROM claim_next($9, $10, $11, $8, $12, $1)
)
SELECT 'commit' AS row, recording_id AS id, claim_token AS token,
       kind = 'milestone_reached' AS ok, false AS again, NULL::text AS milestone,
       NULL::integer AS attempts, NULL::text AS source_path, NULL::text AS language,
       NULL::text AS audio_path, NULL::float8 AS duration_s, NULL::jsonb AS options,
       NULL::bigint AS owner_id, NULL::float8 AS owner_audio_s,
       NULL::float8 AS lease_remaining_s, NULL::float8 AS in_milestone_s,
       NULL::timestamptz AS milestone_entered_at
  FROM event
UNION ALL
SELECT 'commit', id, token, true, true, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
       NULL, NULL, NULL, NULL
  FROM earlier
UNION ALL
SELECT 'commit', id, token, false, true, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
       NULL, NULL, NULL, NULL
  FROM refused
 WHERE NOT EXISTS (SELECT FROM earlier WHERE earlier.id = refused.id AND earlier.token = refused.token)
   AND NOT EXISTS (SELECT FROM event WHERE event.recording_id = refused.id
                                        AND event.claim_token = refused.token)
UNION ALL
SELECT 'claim', r.id, r.claim_token, NULL, NULL, r.milestone, r.attempts, r.source_path,
       r.language, r.audio_path, r.duration_s, r.options, r.owner_id, r.owner_audio_s,
       r.lease_remaining_s, r.in_milestone_s, r.milestone_entered_at
  FROM claimed_records((SELECT array_agg(id) FROM claimed),
                       (SELECT array_agg(claim_token) FROM claimed), $8) AS r

-- name: announce
-- The journal's notification for commits already made (see `commit`): one for any
-- number of them, payload "<last event id> commit". Its transaction commits without
-- waiting for the WAL's flush: NOTIFY holds a lock of the whole cluster from its
-- commit until that commit is flushed, which, taken in every commit's transaction,
-- made the commits of all the workers and daemons wait for one another's flushes. A
-- notification lost with a crash is one the listeners' poll covers.
SELECT pg_notify('transcriber_journal', (SELECT max(id) FROM journal) || ' commit') IS NULL
 WHERE set_config('synchronous_commit', 'off', true) IS NOT NULL

-- name: fail
-- One failed attempt, only by the claim holder: a retry pause of $4 seconds (the
-- caller's backoff with jitter); the last allowed attempt ($3) stops the record with
-- `attempts_exhausted` instead. The attempt itself was counted by its claim.
-- $5 error text, $6 milestone, $7 now.
-- Returns the outcome ('retry', 'stopped' or 'lease_lost') and the pause. A retry of
-- the same fail after a lost reply finds its own events (by the token: its
-- `attempt_failed`, `stopped`, or the `lease_lost` of a refusal) and answers as the
-- first try did, changing and journaling nothing.
WITH done AS (
    UPDATE recordings
       SET claim_token = CASE WHEN attempts >= $3 THEN claim_token END,
           lease_expires_at = CASE WHEN attempts >= $3 THEN lease_expires_at END,
           retry_at = CASE WHEN attempts >= $3 THEN NULL
                           ELSE coalesce($7::timestamptz, now()) + make_interval(secs => $4) END,
           stopped_at = CASE WHEN attempts >= $3 THEN coalesce($7::timestamptz, now()) END,
           stop_reason = CASE WHEN attempts >= $3 THEN 'attempts_exhausted' END,
           stop_error = CASE WHEN attempts >= $3 THEN $5 END,
           progress = NULL
     WHERE id = $1 AND claim_token = $2 AND stopped_at IS NULL
    RETURNING id, attempts, retry_at, stopped_at IS NOT NULL AS stopped
), earlier AS (
    SELECT j.kind, j.at, j.detail FROM journal j
     WHERE NOT EXISTS (SELECT FROM done)
       AND j.recording_id = $1 AND j.claim_token = $2
       AND (j.kind IN ('attempt_failed', 'stopped')
            OR (j.kind = 'lease_lost' AND j.detail ->> 'write' = 'fail'))
), event AS (
    INSERT INTO journal (recording_id, origin, kind, milestone, claim_token, detail)
    SELECT $1, 'pipeline', 'attempt_failed', $6, $2,
           jsonb_build_object('attempt', attempts, 'error', $5, 'retry_at', retry_at)
      FROM done
    UNION ALL
    SELECT $1, 'pipeline', 'stopped', $6, $2,
           jsonb_build_object('reason', 'attempts_exhausted', 'error', $5)
      FROM done WHERE stopped
    UNION ALL
    SELECT $1, 'pipeline', 'lease_lost', $6, $2, jsonb_build_object('write', 'fail', 'error', $5)
     WHERE NOT EXISTS (SELECT FROM done) AND NOT EXISTS (SELECT FROM earlier)
    RETURNING id, kind
)
SELECT CASE WHEN EXISTS (SELECT FROM done) THEN
                CASE WHEN (SELECT stopped FROM done) THEN 'stopped' ELSE 'retry' END
            WHEN EXISTS (SELECT FROM earlier WHERE kind = 'stopped') THEN 'stopped'
            WHEN EXISTS (SELECT FROM earlier WHERE kind = 'attempt_failed') THEN 'retry'
            ELSE 'lease_lost' END AS outcome,
       extract(epoch FROM coalesce(
           (SELECT retry_at FROM done),
           (SELECT (detail ->> 'retry_at')::timestamptz FROM earlier
             WHERE kind = 'attempt_failed' AND NOT EXISTS (SELECT FROM earlier WHERE kind = 'stopped')))
           - coalesce($7::timestamptz, now()))::float8 AS pause_s,
       (SELECT count(pg_notify('transcriber_journal', id || ' ' || kind)) FROM event) AS notified

-- name: stop
-- The claim holder parks the record: the stop flag with time, reason and error text.
-- Only the flag: the milestone, the token, failures and pause stay as they were until
-- a person resumes the record (which clears them all). A retry of the same stop after
-- a lost reply finds its own `stopped` (or refusal's `lease_lost`) event and answers as
-- the first try did, journaling nothing.
-- $1 id, $2 token, $3 reason, $4 error, $5 milestone, $6 now.
WITH done AS (
    UPDATE recordings
       SET stopped_at = coalesce($6::timestamptz, now()), stop_reason = $3, stop_error = $4,
           progress = NULL
     WHERE id = $1 AND claim_token = $2 AND stopped_at IS NULL
    RETURNING id
), earlier AS (
    SELECT j.kind FROM journal j
     WHERE NOT EXISTS (SELECT FROM done)
       AND j.recording_id = $1 AND j.claim_token = $2
       AND (j.kind = 'stopped' OR (j.kind = 'lease_lost' AND j.detail ->> 'write' = 'stop'))
), event AS (
    INSERT INTO journal (recording_id, origin, kind, milestone, claim_token, detail)
    SELECT $1, 'pipeline',
           CASE WHEN EXISTS (SELECT FROM done) THEN 'stopped' ELSE 'lease_lost' END,
           $5, $2,
           CASE WHEN EXISTS (SELECT FROM done)
                THEN jsonb_build_object('reason', $3, 'error', $4)
                ELSE jsonb_build_object('write', 'stop', 'reason', $3) END
     WHERE NOT EXISTS (SELECT FROM earlier)
    RETURNING id, kind
)
SELECT EXISTS (SELECT FROM done) OR EXISTS (SELECT FROM earlier WHERE kind = 'stopped') AS ok,
       (SELECT count(pg_notify('transcriber_journal', id || ' ' || kind)) FROM event) AS notified

-- name: progress
-- Fraction of the step done, only by the claim holder. Zero rows: the lease is gone,
-- the caller cancels its step at once.
-- $1 id, $2 token, $3 fraction, $4 milestone.
WITH done AS (
    UPDATE recordings SET progress = $3
     WHERE id = $1 AND claim_token = $2
    RETURNING id
), event AS (
    INSERT INTO journal (recording_id, origin, kind, milestone, claim_token, detail)
    SELECT $1, 'pipeline', 'lease_lost', $4, $2, jsonb_build_object('write', 'progress')
     WHERE NOT EXISTS (SELECT FROM done)
    RETURNING id, kind
)
SELECT EXISTS (SELECT FROM done) AS ok,
       (SELECT count(pg_notify('transcriber_journal', id || ' ' || kind)) FROM event) AS notified

-- name: renew
-- The live holder's heartbeat: the lease runs $3 seconds from now again, only while
-- the claim's token is on the record. Zero rows: the lease is gone, the caller cancels
-- its step at once (journaled `lease_lost`, as a refused progress write). A repeat is
-- harmless: it sets the same kind of expiry again.
-- $1 id, $2 token, $3 lease seconds, $4 milestone, $5 now.
WITH done AS (
    UPDATE recordings
       SET lease_expires_at = coalesce($5::timestamptz, now()) + make_interval(secs => $3)
     WHERE id = $1 AND claim_token = $2 AND stopped_at IS NULL
    RETURNING id
), event AS (
    INSERT INTO journal (recording_id, origin, kind, milestone, claim_token, detail)
    SELECT $1, 'pipeline', 'lease_lost', $4, $2, jsonb_build_object('write', 'renew')
     WHERE NOT EXISTS (SELECT FROM done)
    RETURNING id, kind
)
SELECT EXISTS (SELECT FROM done) AS ok,
       (SELECT count(pg_notify('transcriber_journal', id || ' ' || kind)) FROM event) AS notified

-- name: release
-- The claim holder gives the record back unfinished (a graceful stop cut its step):
-- another worker may take it at once instead of after the lease. Not a failed attempt:
-- the attempt its claim counted is given back. A retry after a lost reply finds its own
-- `released` (or refusal's `lease_lost`) event and answers as the first try did,
-- journaling nothing.
-- $1 id, $2 token, $3 milestone, $4 why.
WITH done AS (
    UPDATE recordings
       SET claim_token = NULL, lease_expires_at = NULL, progress = NULL,
           attempts = greatest(attempts - 1, 0)
     WHERE id = $1 AND claim_token = $2 AND stopped_at IS NULL
    RETURNING id
), earlier AS (
    SELECT j.kind FROM journal j
     WHERE NOT EXISTS (SELECT FROM done)
       AND j.recording_id = $1 AND j.claim_token = $2
       AND (j.kind = 'released' OR (j.kind = 'lease_lost' AND j.detail ->> 'write' = 'release'))
), event AS (
    INSERT INTO journal (recording_id, origin, kind, milestone, claim_token, detail)
    SELECT $1, 'pipeline',
           CASE WHEN EXISTS (SELECT FROM done) THEN 'released' ELSE 'lease_lost' END,
           $3, $2, jsonb_build_object('write', 'release', 'why', $4::text)
     WHERE NOT EXISTS (SELECT FROM earlier)
    RETURNING id, kind
)
SELECT EXISTS (SELECT FROM done) OR EXISTS (SELECT FROM earlier WHERE kind = 'released') AS ok,
       (SELECT count(pg_notify('transcriber_journal', id || ' ' || kind)) FROM event) AS notified,
       (SELECT count(pg_notify('transcriber_work', kind)) FROM event WHERE kind = 'released')
           AS woke

-- name: release_claims
-- Claims a cut trip may have made and handed to nobody (its leader was cancelled, or
-- its reply was lost, after the statement ran): released at once by their tokens ($1),
-- each journaled `released`, their attempts given back. Tokens that claimed nothing
-- match nothing. Rare, so a walk of the claimable records is fine (no index on tokens:
-- claims would lose their HOT updates).
-- $1 tokens, $2 why.
WITH done AS (
    UPDATE recordings r
       SET claim_token = NULL, lease_expires_at = NULL, progress = NULL,
           attempts = greatest(r.attempts - 1, 0)
      FROM unnest($1::uuid[]) AS t (token)
     WHERE r.claim_token = t.token AND r.stopped_at IS NULL AND NOT r.finished
    RETURNING r.id, r.milestone, t.token
), event AS (
    INSERT INTO journal (recording_id, origin, kind, milestone, claim_token, detail)
    SELECT id, 'pipeline', 'released', milestone, token,
           jsonb_build_object('write', 'release', 'why', $2::text)
      FROM done
    RETURNING id, kind
)
SELECT count(*) AS released,
       count(pg_notify('transcriber_journal', id || ' ' || kind)) AS notified,
       CASE WHEN count(*) > 0 THEN pg_notify('transcriber_work', 'released') IS NULL END AS woke
  FROM event

-- name: resume
-- The one way back to work: clears, in one statement, everything the previous run held
-- the record by (stop flag, claim token and lease, failures, retry pause, milestone
-- entry time) and journals it with origin `human`. Only a stopped record resumes.
-- The detail ($2) carries the caller's request id: a retry of the same resume after a
-- lost reply finds its own `resumed` event and answers as the first try did.
-- $1 id, $2 detail, $3 now.
WITH done AS (
    UPDATE recordings
       SET stopped_at = NULL, stop_reason = NULL, stop_error = NULL,
           claim_token = NULL, lease_expires_at = NULL,
           attempts = 0, retry_at = NULL,
           milestone_entered_at = coalesce($3::timestamptz, now()),
           progress = NULL
     WHERE id = $1 AND stopped_at IS NOT NULL
    RETURNING id, milestone
), event AS (
    INSERT INTO journal (recording_id, origin, kind, milestone, detail)
    SELECT id, 'human', 'resumed', milestone, coalesce($2::jsonb, '{}') FROM done
    RETURNING id, kind
), earlier AS (
    SELECT j.recording_id AS id, j.milestone FROM journal j
     WHERE NOT EXISTS (SELECT FROM done)
       AND j.recording_id = $1 AND j.kind = 'resumed'
       AND j.detail ->> 'request' = $2::jsonb ->> 'request'
     LIMIT 1
)
SELECT done.id, done.milestone,
       pg_notify('transcriber_journal', event.id || ' ' || event.kind) IS NULL AS notified,
       pg_notify('transcriber_work', event.kind) IS NULL AS woke
  FROM done, event
UNION ALL
SELECT id, milestone, NULL, NULL FROM earlier

-- Step results: a step returns Saved(<name>, args); the queue runs the query with the
-- record's id as $1 and the args as $2…, in the commit's transaction, only once the
-- fenced commit succeeded.

-- name: save_normalized
-- $1 id, $2 audio ref, $3 duration (s).
UPDATE recordings SET audio_path = $2, duration_s = $3 WHERE id = $1

-- name: save_transcript
-- $1 id, $2 text, $3 segments (jsonb), $4 language, $5 model.
INSERT INTO transcripts (recording_id, text, segments, language, model)
VALUES ($1, $2, $3::jsonb, $4, $5)
