-- Claims count attempts, and the caller names the tokens it claims with.
--
-- An attempt is counted when a record is claimed (as River does), not when a surviving
-- worker reports a failure: a record whose holders keep dying (a recording that kills
-- its worker) uses up its attempts like any other, and its next claimer finds it over
-- the step's limit and stops it (`worker_lost`). `fail` no longer adds one of its own;
-- `release` (a claim handed back unworked) gives its attempt back.
--
-- The tokens come from the caller (p_tokens, one fresh UUID per record wanted, as
-- unique as gen_random_uuid()): a caller whose statement ran but whose reply was lost
-- (a cut connection, a cancelled trip) still knows what it may have claimed, and
-- releases exactly that at once instead of leaving it claimed by nobody until the lease
-- ends. Everything else is the statement of 0003_claim_many.sql.
DROP FUNCTION claim_next(text[], float8[], float8[], timestamptz, integer, uuid[]);

CREATE FUNCTION claim_next(p_milestones text[], p_lease_base_s float8[],
                           p_lease_per_audio_s float8[], p_now timestamptz, p_tokens uuid[],
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
     LIMIT cardinality(p_tokens)
       FOR UPDATE OF r SKIP LOCKED
), numbered AS (
    SELECT picked.id, picked.lease_s, row_number() OVER () AS n FROM picked
)
UPDATE recordings r
   SET claim_token = (p_tokens)[numbered.n],
       lease_expires_at = coalesce(p_now, now()) + make_interval(secs => numbered.lease_s),
       attempts = r.attempts + 1,
       progress = NULL
  FROM numbered
 WHERE r.id = numbered.id
RETURNING r.id, r.claim_token;
END
$claim$;
