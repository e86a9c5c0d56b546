-- Workers that ask for work at the same moment share one claim statement: claim_next
-- takes how many records to claim (p_limit), and records it must not claim (p_exclude:
-- those the calling statement itself commits, so that no statement writes a record
-- twice). Each record still gets its own fresh token and the lease of its own
-- milestone; the statement is the one of 0001_initial.sql, including `SET enable_sort =
-- off`, which keeps the claim walking the partial index in order and stopping after
-- p_limit records. The function is now PL/pgSQL only to keep the statement's plan from
-- one call to the next: a SQL function planned it on every call (~0.3 ms a claim here).
DROP FUNCTION claim_next(text[], float8[], float8[], timestamptz);

CREATE FUNCTION claim_next(p_milestones text[], p_lease_base_s float8[],
                           p_lease_per_audio_s float8[], p_now timestamptz, p_limit integer,
                           p_exclude uuid[])
RETURNS TABLE (id uuid, claim_token uuid)
LANGUAGE plpgsql VOLATILE
SET enable_sort = off
AS $claim$
#variable_conflict use_column
BEGIN RETURN QUERY
WITH step AS (
    SELECT * FROM unnest(p_milestones, p_lease_base_s, p_lease_per_audio_s)
        AS s (milestone, lease_base_s, lease_per_audio_s)
), picked AS (
    SELECT r.id,
           step.lease_base_s + step.lease_per_audio_s * coalesce(r.duration_s, 0) AS lease_s
      FROM recordings r
      JOIN step USING (milestone)
     WHERE r.stopped_at IS NULL
       AND r.milestone <> 'transcribed'
       AND (r.lease_expires_at IS NULL OR r.lease_expires_at <= coalesce(p_now, now()))
       AND (r.retry_at IS NULL OR r.retry_at <= coalesce(p_now, now()))
       AND r.id <> ALL (p_exclude)
     ORDER BY r.milestone_entered_at, r.id
     LIMIT p_limit
       FOR UPDATE OF r SKIP LOCKED
)
UPDATE recordings r
   SET claim_token = gen_random_uuid(),
       lease_expires_at = coalesce(p_now, now()) + make_interval(secs => picked.lease_s),
       progress = NULL
  FROM picked
 WHERE r.id = picked.id
RETURNING r.id, r.claim_token;
END
$claim$;
