-- Named queries. Each block starts with `-- name: <name>` and is called by that name
-- through transcriber.db.database. Queue columns are written only by the queue block below.
-- Notifications: every journal event on `transcriber_journal` (payload "<id> <kind>",
-- for `journal --follow`); events that make a record claimable for a worker that does
-- not know of it (accepted, resumed, released) also on `transcriber_work`, which the
-- workers' listener hears: it is not woken by the steady stream of milestones.
-- `$now` parameters are nullable: NULL means the database's now(); tests pass a time.

---------------------------------------------------------------------------------------
-- Migrations
---------------------------------------------------------------------------------------

-- name: migrations_lock
-- Held to the end of the migrating transaction, so two processes starting at once
-- apply each migration once: the second waits, then finds nothing left to do.
SELECT pg_advisory_xact_lock(7318829305417745)

-- name: migrations_table
CREATE TABLE IF NOT EXISTS schema_migrations (
    version    integer PRIMARY KEY,
    name       text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)

-- name: migrations_applied
SELECT version FROM schema_migrations ORDER BY version

-- name: migration_record
INSERT INTO schema_migrations (version, name) VALUES ($1, $2)

---------------------------------------------------------------------------------------
-- Owners
---------------------------------------------------------------------------------------

-- name: owner_add
INSERT INTO owners (name, token_hash) VALUES ($1, $2) RETURNING id

-- name: owner_by_name
SELECT id, name FROM owners WHERE name = $1

-- name: owner_list
-- Every owner with what they keep: for `transcriber owner list`.
SELECT o.id, o.name, o.created_at, o.revoked_at, count(r.id) AS recordings,
       coalesce(sum(r.size_bytes), 0)::bigint AS stored_bytes
  FROM owners o LEFT JOIN recordings r ON r.owner_id = o.id
 GROUP BY o.id
 ORDER BY o.name

-- name: owner_revoke
-- The owner's token stops working at once; their records stay. NULL: no such owner.
UPDATE owners SET revoked_at = coalesce(revoked_at, now()) WHERE name = $1 RETURNING id

-- name: owner_rotate
-- A new token hash in place of the old one (which stops working at once); a revoked
-- owner is reinstated by it. NULL: no such owner.
UPDATE owners SET token_hash = $2, revoked_at = NULL WHERE name = $1 RETURNING id

---------------------------------------------------------------------------------------
-- Intake
---------------------------------------------------------------------------------------

-- name: accept
-- A new record at `received`, and its `accepted` event, in one statement.
-- $7: the recognition options (jsonb; NULL for the defaults), see sql/0006.
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

-- name: accept_many
-- Bulk intake for benchmarks: $2 records, one statement, one `accepted` event each.
WITH rec AS (
    INSERT INTO recordings (owner_id, filename)
    SELECT $1, 'bench-' || g FROM generate_series(1, $2::integer) AS g
    RETURNING id, milestone
), event AS (
    INSERT INTO journal (recording_id, origin, kind, milestone)
    SELECT id, 'pipeline', 'accepted', milestone FROM rec
    RETURNING id
)
SELECT count(*) AS accepted, pg_notify('transcriber_journal', '0 accepted') IS NULL AS notified,
       pg_notify('transcriber_work', 'accepted') IS NULL AS woke
FROM event

---------------------------------------------------------------------------------------
-- The queue: claim, read, commit, fail, stop, progress, resume
---------------------------------------------------------------------------------------

-- name: claim
-- One statement picks and claims (see claim_next in sql/0004_claims_count_attempts.sql):
-- the oldest eligible records, one per token in $5 (one per worker asking at this
-- moment; the caller makes the tokens, fresh for each statement, so that it knows what
-- a statement whose reply it lost may have claimed), each with the lease of its
-- milestone and its attempts counted. Returns the ids and tokens only; the workers read
-- the rest themselves.
-- $1 milestones with a step, $2 their lease base (s), $3 lease per second of audio,
-- $4 now, $5 tokens.
SELECT id, claim_token FROM claim_next($1, $2, $3, $4, $5, '{}')

-- name: read_claimed
-- The ordinary read after a claim, for one or several claims ($1 ids, $2 their tokens):
-- the milestone, this attempt's number (claims since the milestone was reached or the
-- record resumed, this one included), how long the lease and the milestone have left or
-- lasted (measured by the database clock, so hosts may disagree on time), and the
-- step's inputs. A claim whose token is no longer on its record has no row. Oldest
-- first, as claimed.
SELECT r.id, r.claim_token, r.milestone, r.attempts, r.source_path, r.language,
       r.audio_path, r.duration_s, r.options,
       extract(epoch FROM r.lease_expires_at - coalesce($3::timestamptz, now()))::float8
           AS lease_remaining_s,
       extract(epoch FROM coalesce($3::timestamptz, now()) - r.milestone_entered_at)::float8
           AS in_milestone_s
  FROM unnest($1::uuid[], $2::uuid[]) AS c (id, token)
  JOIN recordings r ON r.id = c.id AND r.claim_token = c.token
 ORDER BY r.milestone_entered_at, r.id

-- name: commit
-- Steps' results move their records on, each only while its claim's token is on it:
-- one or several commits ($1 ids, $2 tokens, $3 from milestones, $4 to milestones,
-- $5 details; $6 now) in one statement, each fenced by its own token. A commit whose
-- token is gone writes nothing and journals `lease_lost` instead; its caller drops the
-- result. One `commit` row per commit: its id, token, whether it reached the milestone
-- and whether an earlier run of this same commit did (`again`: a retry after a lost
-- reply, recognised by its token's `milestone_reached` event; it answers as the first
-- try did and journals nothing; a refused commit sent again journals its `lease_lost`
-- once). One notification for the statement, however many
-- events it journals.
-- The same statement claims records for the workers asking for their next, one per
-- token in $10 (`claim` rows: id and token only, as the `claim` query; $7-$9 as its
-- $1-$3). It does not claim the records it commits: a record just moved on waits for
-- the next claim.
WITH c AS (
    SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::jsonb[])
        AS c (id, token, from_milestone, to_milestone, detail)
), done AS (
    UPDATE recordings r
       SET milestone = c.to_milestone, milestone_entered_at = coalesce($6::timestamptz, now()),
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
           coalesce(c.detail, '{}') || jsonb_build_object('write', 'commit')
      FROM c JOIN done ON done.id = c.id AND done.token = c.token
    UNION ALL
    SELECT refused.id, 'pipeline', 'lease_lost', refused.from_milestone, refused.token,
           coalesce(refused.detail, '{}') || jsonb_build_object('write', 'commit')
      FROM refused
     WHERE NOT EXISTS (SELECT FROM journal j
                        WHERE j.recording_id = refused.id AND j.claim_token = refused.token
                          AND (j.kind = 'milestone_reached'
                               OR (j.kind = 'lease_lost' AND j.detail ->> 'write' = 'commit')))
    RETURNING id, recording_id, claim_token, kind
), claimed AS (
    SELECT * FROM claim_next($7, $8, $9, $6, $10, $1)
)
SELECT 'commit' AS row, recording_id AS id, claim_token AS token,
       kind = 'milestone_reached' AS ok, false AS again,
       (SELECT pg_notify('transcriber_journal', max(id) || ' ' || 'commit') FROM event)
           IS NULL AS notified
  FROM event
UNION ALL
SELECT 'commit', id, token, true, true, NULL FROM earlier
UNION ALL
SELECT 'commit', id, token, false, true, NULL FROM refused
 WHERE NOT EXISTS (SELECT FROM earlier WHERE earlier.id = refused.id AND earlier.token = refused.token)
   AND NOT EXISTS (SELECT FROM event WHERE event.recording_id = refused.id
                                        AND event.claim_token = refused.token)
UNION ALL
SELECT 'claim', id, claim_token, NULL, NULL, NULL FROM claimed

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
     WHERE r.claim_token = t.token AND r.stopped_at IS NULL AND r.milestone <> 'transcribed'
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

---------------------------------------------------------------------------------------
-- Step results (run in the commit's transaction, after the guarded commit succeeded)
---------------------------------------------------------------------------------------

-- name: save_normalized
UPDATE recordings SET audio_path = $2, duration_s = $3 WHERE id = $1

-- name: save_transcript
INSERT INTO transcripts (recording_id, text, segments, language, model)
VALUES ($1, $2, $3::jsonb, $4, $5)

---------------------------------------------------------------------------------------
-- Reading: the record, the operator's views, the journal
---------------------------------------------------------------------------------------

-- name: recording
SELECT * FROM recording_rows WHERE id = $1

-- name: edit_owner_fields
-- The owner's ($1) edit of their record $2: owner fields only, journaled as `edited`
-- with origin `human`. No row: not this owner's record.
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

-- name: status
-- Per milestone: waiting (claimable now), in flight (a live lease), pausing before a
-- retry, stopped, and the age of the oldest waiting record.
SELECT milestone,
       count(*) FILTER (WHERE stopped_at IS NULL
                          AND (lease_expires_at IS NULL OR lease_expires_at <= now())
                          AND (retry_at IS NULL OR retry_at <= now())) AS waiting,
       count(*) FILTER (WHERE stopped_at IS NULL AND lease_expires_at > now()) AS in_flight,
       count(*) FILTER (WHERE stopped_at IS NULL AND retry_at > now()
                          AND (lease_expires_at IS NULL OR lease_expires_at <= now())) AS pausing,
       count(*) FILTER (WHERE stopped_at IS NOT NULL) AS stopped,
       extract(epoch FROM now() - min(milestone_entered_at) FILTER (
           WHERE stopped_at IS NULL AND (lease_expires_at IS NULL OR lease_expires_at <= now())
             AND (retry_at IS NULL OR retry_at <= now())))::float8 AS oldest_waiting_s
  FROM recordings
 GROUP BY milestone
 ORDER BY milestone

-- name: stopped
SELECT id, milestone, stop_reason, stopped_at, stop_error
  FROM recordings
 WHERE stopped_at IS NOT NULL AND ($1::text IS NULL OR stop_reason = $1)
 ORDER BY stopped_at, id

-- name: journal_after
-- Events after id $1 (0 for all), of one record ($2) or of every record (NULL).
SELECT id, recording_id, at, origin, kind, milestone, claim_token, detail
  FROM journal
 WHERE id > $1 AND ($2::uuid IS NULL OR recording_id = $2)
 ORDER BY id
 LIMIT $3

-- name: checked_out_connections
-- For tests and health: sessions of this database other than the caller.
SELECT state, count(*) AS n
  FROM pg_stat_activity
 WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'
 GROUP BY state

-- name: transcript
SELECT t.text, t.segments, t.language, t.model FROM transcripts t WHERE t.recording_id = $1

---------------------------------------------------------------------------------------
-- Benchmarks (transcriber/bench/throughput.py only: they bypass the pipeline and its journal)
---------------------------------------------------------------------------------------

-- name: bench_insert_finished
-- For benchmarks only: $2 records of owner $1 written straight at the final milestone,
-- bypassing the pipeline and the journal, as the history a long-running service keeps.
INSERT INTO recordings (owner_id, filename, milestone, milestone_entered_at, created_at)
SELECT $1, 'bench-done-' || g, 'transcribed',
       now() - make_interval(secs => $2::integer - g), now() - make_interval(secs => $2::integer - g)
  FROM generate_series(1, $2::integer) AS g

-- name: bench_milestones
-- For benchmarks: records per milestone, stopped or holding a claim.
SELECT milestone, count(*) AS n,
       count(*) FILTER (WHERE stopped_at IS NOT NULL) AS stopped,
       count(*) FILTER (WHERE claim_token IS NOT NULL) AS claimed
  FROM recordings GROUP BY milestone ORDER BY milestone

-- name: bench_journal_kinds
-- For benchmarks: events per kind.
SELECT kind, count(*) AS n FROM journal GROUP BY kind ORDER BY kind

-- name: bench_milestone_of
SELECT milestone FROM recordings WHERE id = $1

-- name: bench_analyze
-- What autovacuum would do within a minute of a bulk intake (the peers' bench does the same).
ANALYZE

-- name: bench_vacuum_analyze
VACUUM ANALYZE recordings

-- name: bench_autovacuum_off
-- The burst condition must keep the statistics of the empty table: no autoanalyze.
ALTER TABLE recordings SET (autovacuum_enabled = false)

-- name: bench_server_settings
SELECT name, setting FROM pg_settings
 WHERE name IN ('server_version', 'fsync', 'synchronous_commit', 'shared_buffers',
                'max_connections', 'plan_cache_mode')
 ORDER BY name

-- name: owner_ensure
-- The owner of recordings submitted from this machine's command line.
WITH made AS (
    INSERT INTO owners (name, token_hash) VALUES ($1, $2)
    ON CONFLICT (name) DO NOTHING
    RETURNING id
)
SELECT id FROM made UNION ALL SELECT id FROM owners WHERE name = $1 LIMIT 1

---------------------------------------------------------------------------------------
-- HTTP API (transcriber/http/, transcriber/owners.py)
---------------------------------------------------------------------------------------

-- name: owner_by_token
-- The owner holding an API token, by the token's sha256. The caller compares the hash
-- again in constant time; looking up by a hash leaks nothing about the token.
-- A revoked owner holds no token.
SELECT id, token_hash FROM owners WHERE token_hash = $1 AND revoked_at IS NULL

-- name: accept_upload
-- `accept` for an HTTP upload, with the owner's optional Idempotency-Key ($7), the
-- recognition options ($8, as `accept`'s $7) and the request's fingerprint ($9). A key
-- the owner used before inserts nothing and returns no row: the caller then reads the
-- first record with `recording_by_key`. (A NULL key never conflicts.) Like `accept`, it
-- wakes an idle worker on `transcriber_work`. $10: the door it came in by, journaled as
-- the event's `via` ('api': the API's upload route, 'page': the owner's page,
-- 'openai': the OpenAI-compatible endpoint).
WITH rec AS (
    INSERT INTO recordings (owner_id, filename, size_bytes, source_path, language, title,
                            idempotency_key, options, idempotency_fingerprint)
    VALUES ($1, $2, $3, $4, $5, $6, $7, coalesce($8::jsonb, '{}'), $9)
    ON CONFLICT ON CONSTRAINT idempotency_once DO NOTHING
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
SELECT id, idempotency_fingerprint AS fingerprint
  FROM recordings WHERE owner_id = $1 AND idempotency_key = $2

-- Every query an owner's request runs names the owner ($1) in its condition, so a
-- route can only ever reach the caller's own records (tests/integration/
-- test_api_hardening.py checks each query the HTTP code calls).

-- name: owner_recording
-- The owner's ($1) record $2 as its card is made of; no row: not theirs.
SELECT * FROM recording_rows WHERE owner_id = $1 AND id = $2

-- name: owner_transcript
SELECT t.text, t.segments, t.language, t.model
  FROM transcripts t JOIN recordings r ON r.id = t.recording_id
 WHERE r.owner_id = $1 AND t.recording_id = $2

-- name: owner_journal
-- The events of the owner's ($1) record $2 numbered 1, 2, … within the record (the
-- journal's own ids are global: they would tell how busy the service is), after
-- number $3, $4 at most.
SELECT seq, at, origin, kind, milestone, detail
  FROM (SELECT j.at, j.origin, j.kind, j.milestone, j.detail,
               row_number() OVER (ORDER BY j.id) AS seq
          FROM journal j JOIN recordings r ON r.id = j.recording_id
         WHERE r.owner_id = $1 AND j.recording_id = $2) AS numbered
 WHERE seq > $3
 ORDER BY seq
 LIMIT $4

-- name: owner_stored_bytes
-- What the owner's ($1) uploads take in the store, against their quota.
SELECT coalesce(sum(size_bytes), 0)::bigint FROM recordings WHERE owner_id = $1

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

-- name: sources_referenced
-- Which of the given file names of the upload store a record points at (the rest are
-- strays). By name, not path: see sql/0002_intake.sql.
SELECT regexp_replace(source_path, '^.*/', '') AS name
  FROM recordings
 WHERE regexp_replace(source_path, '^.*/', '') = ANY($1::text[])

-- name: health
SELECT 1

-- name: claim_function
-- The claim's own statement and settings, to EXPLAIN what the function runs.
SELECT prosrc, proargnames[1:pronargs] AS names, proconfig,
       ARRAY(SELECT format_type(t, NULL)
               FROM unnest(proargtypes::oid[]) WITH ORDINALITY AS a (t, n) ORDER BY n) AS types
  FROM pg_proc
 WHERE proname = 'claim_next'

-- name: journal_id_before
-- The id just before the first event of the last $1 (an interval): where `journal
-- --since` starts reading.
SELECT coalesce((SELECT min(id) FROM journal WHERE at >= now() - $1::interval) - 1,
                (SELECT max(id) FROM journal), 0)

-- name: metrics_milestones
SELECT milestone, count(*) FILTER (WHERE stopped_at IS NULL) AS active,
       count(*) FILTER (WHERE stopped_at IS NOT NULL) AS stopped
  FROM recordings GROUP BY milestone ORDER BY milestone

-- name: metrics_stop_reasons
SELECT stop_reason, count(*) AS n FROM recordings
 WHERE stopped_at IS NOT NULL GROUP BY stop_reason ORDER BY stop_reason

---------------------------------------------------------------------------------------
-- The owner's web page (transcriber/http/page*.py): sessions, corrections, search
---------------------------------------------------------------------------------------

-- name: page_session_add
-- A new session of owner $1 holding its current token hash, valid for $4 seconds.
INSERT INTO page_sessions (id_hash, owner_id, token_hash, csrf, expires_at)
SELECT $2, o.id, o.token_hash, $3, now() + make_interval(secs => $4)
  FROM owners o WHERE o.id = $1

-- name: page_session
-- A session that has not expired: its owner, anti-forgery token, and the hash of the
-- token it was signed in with (the caller checks that token with `owner_by_token`).
SELECT owner_id, csrf, token_hash FROM page_sessions WHERE id_hash = $1 AND expires_at > now()

-- name: page_session_end
-- Owner $1 signs out of their session $2.
DELETE FROM page_sessions WHERE owner_id = $1 AND id_hash = $2

-- name: page_sessions_sweep
-- Sessions that can never be valid again: expired, or signed in with a token the owner
-- no longer holds.
DELETE FROM page_sessions s
 WHERE s.expires_at <= now()
    OR NOT EXISTS (SELECT 1 FROM owners o WHERE o.id = s.owner_id AND o.token_hash = s.token_hash)

-- name: page_recordings
-- A page of owner $1's records for the page, newest first after the cursor ($2, $3, as
-- `recordings_of_owner`), at most $4; $5 a state (working, transcribed, stopped) or
-- NULL; $6 a tsquery (the 'simple' configuration) on title, file name, transcript and
-- corrections, or NULL.
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
            SELECT t.recording_id FROM transcripts t
             WHERE to_tsvector('simple', t.text) @@ to_tsquery('simple', $6)
            UNION
            SELECT c.recording_id FROM corrections c
             WHERE to_tsvector('simple', c.text) @@ to_tsquery('simple', $6)))
 ORDER BY v.created_at DESC, v.id DESC
 LIMIT $4

-- name: owner_audio
-- Where the owner's ($1) record $2 keeps its normalized audio (NULL until normalized;
-- no row: not theirs).
SELECT audio_path FROM recordings WHERE owner_id = $1 AND id = $2

-- name: owner_corrections
-- The owner's ($1) corrections of their record $2, by segment.
SELECT c.segment, c.text, c.corrected_at
  FROM corrections c JOIN recordings r ON r.id = c.recording_id
 WHERE r.owner_id = $1 AND c.recording_id = $2
 ORDER BY c.segment

-- name: correction_set
-- The owner's ($1) text $4 for segment $3 of their record $2, journaled as `corrected`
-- with origin `human` (detail $5: who and which segment). No row: not theirs.
WITH done AS (
    INSERT INTO corrections (recording_id, segment, text)
    SELECT r.id, $3, $4 FROM recordings r WHERE r.owner_id = $1 AND r.id = $2
    ON CONFLICT (recording_id, segment)
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
-- Back to the machine text for segment $3 of the owner's ($1) record $2, journaled like
-- `correction_set` (detail $4).
WITH done AS (
    DELETE FROM corrections c USING recordings r
     WHERE r.id = c.recording_id AND r.owner_id = $1 AND c.recording_id = $2
       AND c.segment = $3
    RETURNING c.recording_id
), event AS (
    INSERT INTO journal (recording_id, origin, kind, milestone, detail)
    SELECT r.id, 'human', 'corrected', r.milestone, $4::jsonb
      FROM recordings r JOIN done ON done.recording_id = r.id
    RETURNING id, kind
)
SELECT pg_notify('transcriber_journal', event.id || ' ' || event.kind) IS NULL FROM event

-- name: audio_referenced
-- The normalized audio of the given records ($1 ids): the startup sweep removes the audio
-- files and objects of these records that their row does not name (a stale claim's).
SELECT id, audio_path FROM recordings WHERE id = ANY($1::uuid[])

-- name: storage_local_refs
-- `storage migrate`: the records whose upload or audio is still a local file (a path).
SELECT id, source_path, audio_path FROM recordings
 WHERE source_path LIKE '/%' OR audio_path LIKE '/%'
 ORDER BY created_at, id

-- name: storage_switch_source
-- `storage migrate`: the record's upload ref moves from the local file ($2) to its
-- verified copy in the object store ($3), unless it changed meanwhile.
UPDATE recordings SET source_path = $3 WHERE id = $1 AND source_path = $2 RETURNING id

-- name: storage_switch_audio
-- The same for the normalized audio.
UPDATE recordings SET audio_path = $3 WHERE id = $1 AND audio_path = $2 RETURNING id
