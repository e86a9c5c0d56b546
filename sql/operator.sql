---------------------------------------------------------------------------------------
-- What the operator and the service itself read, by record id and with no owner
-- condition (never from an owner's request: see api.sql), mostly through
-- transcriber/pipeline/operator.py: a record and its transcript (also the one-shot's), the
-- queue's status and stopped records, the journal (`transcriber journal`), the counts of
-- /metrics (pipeline/prometheus.py), the health and readiness checks.
---------------------------------------------------------------------------------------

-- name: recording
-- $1 id.
SELECT * FROM recording_rows WHERE id = $1

-- name: transcript
-- $1 id.
SELECT t.text, t.segments, t.language, t.model, t.turns, t.speaker_count
  FROM transcripts t WHERE t.recording_id = $1

-- name: status
-- Per milestone: waiting (claimable now), in flight (a live lease), pausing before a
-- retry, stopped, and the age of the oldest waiting record — of the records that may
-- still need work or are stopped, read through the two partial indexes that hold
-- exactly those (recordings_claimable, recordings_stopped), so a long finished history
-- costs nothing (863 ms at 1 M finished records when this read the whole table). A
-- finished record is never waiting, in flight, pausing or stopped; a milestone without
-- such records has no row (the caller fills in its zeros: operator.status). Serves
-- `transcriber status`, the operator's screen's glance and /metrics.
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
  FROM (SELECT milestone, stopped_at, lease_expires_at, retry_at, milestone_entered_at
          FROM recordings WHERE stopped_at IS NULL AND NOT finished
        UNION ALL
        SELECT milestone, stopped_at, lease_expires_at, retry_at, milestone_entered_at
          FROM recordings WHERE stopped_at IS NOT NULL) r
 GROUP BY milestone
 ORDER BY milestone

-- name: stopped
-- Stopped records, oldest stop first; $1 a stop reason, or NULL for every one.
SELECT id, milestone, stop_reason, stopped_at, stop_error
  FROM recordings
 WHERE stopped_at IS NOT NULL AND ($1::text IS NULL OR stop_reason = $1)
 ORDER BY stopped_at, id

-- name: journal_after
-- Events after the cursor ($1 xid, $2 id; 0, 0 for all), of one record ($3) or of every
-- record (NULL), $4 at most, in (xid, id) order: only those of transactions below the
-- oldest one still running (sql/0020_journal_settled.sql), so an event still to come is
-- never behind the cursor. journal_in_order serves every record's, journal_by_recording
-- one record's.
-- (The order names the table's column: the output's `xid`, a number, has no index.)
SELECT j.xid::text::bigint AS xid, j.id, j.recording_id, j.at, j.origin, j.kind,
       j.milestone, j.claim_token, j.detail
  FROM journal j
 WHERE (j.xid, j.id) > ($1::bigint::text::xid8, $2::bigint)
   AND j.xid < (SELECT pg_snapshot_xmin(pg_current_snapshot()))
   AND ($3::uuid IS NULL OR j.recording_id = $3)
 ORDER BY j.xid, j.id
 LIMIT $4

-- name: journal_cursor_since
-- The cursor (xid, id) just before the first event of the last $1 (an interval): where
-- `journal --since` starts reading; with no such event, the oldest transaction still
-- running (what is to come).
SELECT coalesce((SELECT xid FROM journal WHERE at >= now() - $1::interval
                  ORDER BY xid, id LIMIT 1),
                pg_snapshot_xmin(pg_current_snapshot()))::text::bigint AS xid,
       0::bigint AS id

-- name: metrics_stop_reasons
SELECT stop_reason, count(*) AS n FROM recordings
 WHERE stopped_at IS NOT NULL GROUP BY stop_reason ORDER BY stop_reason

-- name: health
SELECT 1
