---------------------------------------------------------------------------------------
-- Benchmarks only (transcriber/bench/, which loads this file besides the service's; the
-- service never does): bulk intake and seeding that bypass the pipeline and its journal,
-- counts for the bench's checks, and the claim function's text for EXPLAIN.
---------------------------------------------------------------------------------------

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

-- name: bench_any_unfinished
-- For benchmarks: whether a record is not finished yet (none is stopped in a drain), the
-- first one found through the claim's partial index. Polled every 10 ms during a drain,
-- it must cost the server next to nothing: a count of every record by milestone took a
-- tenth of a core, and a count of the unfinished ones still 80-100 µs per transition.
SELECT EXISTS (SELECT FROM recordings WHERE stopped_at IS NULL AND NOT finished)

-- name: bench_journal_kinds
-- For benchmarks: events per kind.
SELECT kind, count(*) AS n FROM journal GROUP BY kind ORDER BY kind

-- name: bench_milestone_of
-- $1 id.
SELECT milestone FROM recordings WHERE id = $1

-- name: bench_analyze
-- What autovacuum would do within a minute of a bulk intake (the peers' bench does the same).
ANALYZE

-- name: bench_checkpoint
-- Before each timed drain (ours and the peers', peers_side.py): the server's timed
-- checkpoint (every 5 minutes) then falls inside no drain, instead of inside one
-- system's and not another's.
CHECKPOINT

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

-- name: claim_function
-- The claim's own statement and settings, to EXPLAIN what the function runs.
SELECT prosrc, proargnames[1:pronargs] AS names, proconfig,
       ARRAY(SELECT format_type(t, NULL)
               FROM unnest(proargtypes::oid[]) WITH ORDINALITY AS a (t, n) ORDER BY n) AS types
  FROM pg_proc
 WHERE proname = 'claim_next'

-- name: bench_ops_history
-- For the operator's screen's cost: $2 records of owner $1 finished over the last
-- $2 * $3 seconds (one every $3 s), each with the journal a real one leaves (accepted,
-- then both milestones reached), and an hour of audio each.
WITH rec AS (
    INSERT INTO recordings (owner_id, filename, milestone, milestone_entered_at, created_at,
                            duration_s)
    SELECT $1, 'bench-done-' || g || '.wav', 'transcribed',
           now() - make_interval(secs => ($2::integer - g) * $3::float8),
           now() - make_interval(secs => ($2::integer - g) * $3::float8), 60
      FROM generate_series(1, $2::integer) AS g
    RETURNING id, created_at
)
INSERT INTO journal (recording_id, origin, kind, milestone, at)
SELECT rec.id, 'pipeline', k.kind, k.milestone, rec.created_at + k.after
  FROM rec,
       (VALUES ('accepted', 'received', interval '0 s'),
               ('milestone_reached', 'normalized', interval '2 s'),
               ('milestone_reached', 'transcribed', interval '20 s')) AS k (kind, milestone, after)

-- name: bench_ops_stopped
-- For the operator's screen's cost: $2 records of owner $1 stopped at `normalized`, one
-- every 30 s back from now, three reasons in turn, each with its `stopped` event.
WITH rec AS (
    INSERT INTO recordings (owner_id, filename, milestone, stopped_at, stop_reason,
                            stop_error, duration_s)
    SELECT $1, 'bench-stopped-' || g || '.wav', 'normalized',
           now() - make_interval(secs => g * 30),
           (ARRAY['attempts_exhausted', 'too_long', 'undecodable_audio'])[1 + g % 3],
           'RuntimeError: bench', 60
      FROM generate_series(1, $2::integer) AS g
    RETURNING id, stopped_at, stop_reason
)
INSERT INTO journal (recording_id, origin, kind, milestone, at, detail)
SELECT id, 'pipeline', 'stopped', 'normalized', stopped_at,
       jsonb_build_object('reason', stop_reason, 'error', 'RuntimeError: bench')
  FROM rec

-- name: bench_vacuum_journal
-- What autovacuum does to an append-only journal soon after a burst of inserts (it marks
-- the pages all-visible, for index-only scans).
VACUUM ANALYZE journal
