-- A commit that moves a record on to a milestone with a step is a HOT update: no new
-- entry in any of the table's ten indexes, two of them GIN (words and trigrams of the
-- file name, computed again for every new entry).
--
-- Before, the claim's index was ordered by the time a record entered its milestone and
-- limited by the milestone itself, so every commit changed an indexed column and wrote a
-- new entry into every index (17.6 WAL records per transition in `transcriber bench`,
-- the commit statement most of the server's time). Now the claim's order is the order
-- records were accepted in (created_at, written once; ties broken by the key), and the
-- index is limited by `finished`, a stored column the database derives from the
-- milestone: it changes only when a record reaches the final milestone, so only that
-- last commit writes index entries. Claims, progress, renewals and failures remained
-- HOT, as before. The oldest accepted record is worked on first at every milestone: a
-- record is not overtaken by newer ones at each step, and a resumed record takes its
-- place by age again. The literal names the final milestone (the only one without a
-- step); tests/integration/test_runtime_pg.py checks it against the step table.
ALTER TABLE recordings
    ADD COLUMN finished boolean GENERATED ALWAYS AS (milestone = 'transcribed') STORED;

DROP INDEX recordings_claimable;
CREATE INDEX recordings_claimable ON recordings (created_at, id)
    WHERE stopped_at IS NULL AND NOT finished;

-- The statement of 0004_claims_count_attempts.sql, in the new order and through the new
-- index; its settings (0004, 0016) given again, as a replaced function keeps none.
CREATE OR REPLACE FUNCTION claim_next(p_milestones text[], p_lease_base_s float8[],
                                      p_lease_per_audio_s float8[], p_now timestamptz,
                                      p_tokens uuid[], p_exclude uuid[])
RETURNS TABLE (id uuid, claim_token uuid)
LANGUAGE plpgsql VOLATILE
SET enable_sort = off
SET plan_cache_mode = force_generic_plan
SET enable_hashjoin = off
SET enable_mergejoin = off
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
       AND NOT r.finished
       AND (r.lease_expires_at IS NULL OR r.lease_expires_at <= coalesce(p_now, now()))
       AND (r.retry_at IS NULL OR r.retry_at <= coalesce(p_now, now()))
       AND r.id <> ALL (p_exclude)
     ORDER BY r.created_at, r.id
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

-- The read after a claim (0016_claim_reads.sql), oldest first in the claim's new order;
-- `options` cast to the declared jsonb, as the column becomes a domain over it (0018).
CREATE OR REPLACE FUNCTION claimed_records(p_ids uuid[], p_tokens uuid[], p_now timestamptz)
RETURNS TABLE (id uuid, claim_token uuid, milestone text, attempts integer, source_path text,
               language text, audio_path text, duration_s float8, options jsonb,
               owner_id bigint, owner_audio_s float8, lease_remaining_s float8,
               in_milestone_s float8, milestone_entered_at timestamptz)
LANGUAGE plpgsql VOLATILE
SET plan_cache_mode = force_generic_plan
SET enable_hashjoin = off
SET enable_mergejoin = off
AS $read$
#variable_conflict use_column
BEGIN RETURN QUERY
SELECT r.id, r.claim_token, r.milestone, r.attempts, r.source_path, r.language,
       r.audio_path, r.duration_s, r.options::jsonb, r.owner_id,
       CASE WHEN r.milestone = 'received' THEN
           (SELECT o.audio_s FROM owners o WHERE o.id = r.owner_id) - coalesce(r.duration_s, 0)
       END,
       extract(epoch FROM r.lease_expires_at - coalesce(p_now, now()))::float8,
       extract(epoch FROM coalesce(p_now, now()) - r.milestone_entered_at)::float8,
       r.milestone_entered_at
  FROM unnest(p_ids, p_tokens) AS c (id, token)
  JOIN recordings r ON r.id = c.id AND r.claim_token = c.token
 ORDER BY r.created_at, r.id;
END
$read$;
