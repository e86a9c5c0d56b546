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

-- name: bench_journal_kinds
-- For benchmarks: events per kind.
SELECT kind, count(*) AS n FROM journal GROUP BY kind ORDER BY kind

-- name: bench_milestone_of
-- $1 id.
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

-- name: claim_function
-- The claim's own statement and settings, to EXPLAIN what the function runs.
SELECT prosrc, proargnames[1:pronargs] AS names, proconfig,
       ARRAY(SELECT format_type(t, NULL)
               FROM unnest(proargtypes::oid[]) WITH ORDINALITY AS a (t, n) ORDER BY n) AS types
  FROM pg_proc
 WHERE proname = 'claim_next'
