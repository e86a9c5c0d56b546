-- The claim and its read in one round trip, still two statements: `claimed_records` is
-- the ordinary read after a claim (sql/queue.sql `read_claimed` calls it), made a
-- function so that a statement can run it after claim_next. A function's statement
-- takes a snapshot of its own, so it sees what claim_next (an earlier statement of the
-- same transaction) wrote; a plain join in the claiming statement would see the records
-- as they were before the claim. The claim itself still returns only ids and tokens
-- (the workers read the rest with this read, so no column is the claim's to forget).
--
-- For one or several claims (p_ids, their tokens p_tokens): the milestone, this
-- attempt's number (claims since the milestone was reached or the record resumed, this
-- one included), how long the lease and the milestone have left or lasted (measured by
-- the database clock, so hosts may disagree on time), the step's inputs, and when the
-- record entered its milestone (with the id, the claim's order). A claim whose token is
-- no longer on its record has no row. Oldest first, as claimed. For normalization (at
-- `received`) also the seconds of audio the record's owner keeps in their other
-- records, against their audio quota (NULL at the other milestones): the owner's total,
-- which a trigger keeps (0014), less this record's own. The owner's id orders the saves
-- of a trip (transcriber/pipeline/pg_queue.py _save_on). p_now NULL: the database's
-- now().
CREATE FUNCTION claimed_records(p_ids uuid[], p_tokens uuid[], p_now timestamptz)
RETURNS TABLE (id uuid, claim_token uuid, milestone text, attempts integer, source_path text,
               language text, audio_path text, duration_s float8, options jsonb,
               owner_id bigint, owner_audio_s float8, lease_remaining_s float8,
               in_milestone_s float8, milestone_entered_at timestamptz)
LANGUAGE plpgsql VOLATILE
AS $read$
#variable_conflict use_column
BEGIN RETURN QUERY
SELECT r.id, r.claim_token, r.milestone, r.attempts, r.source_path, r.language,
       r.audio_path, r.duration_s, r.options, r.owner_id,
       CASE WHEN r.milestone = 'received' THEN
           (SELECT o.audio_s FROM owners o WHERE o.id = r.owner_id) - coalesce(r.duration_s, 0)
       END,
       extract(epoch FROM r.lease_expires_at - coalesce(p_now, now()))::float8,
       extract(epoch FROM coalesce(p_now, now()) - r.milestone_entered_at)::float8,
       r.milestone_entered_at
  FROM unnest(p_ids, p_tokens) AS c (id, token)
  JOIN recordings r ON r.id = c.id AND r.claim_token = c.token
 ORDER BY r.milestone_entered_at, r.id;
END
$read$;

-- Both functions keep one plan for every call (a generic plan, made once per session)
-- instead of planning their statement again each time: the plan cache compares the
-- generic plan's estimate against the custom plans' and, with the arrays' lengths and
-- the claim's LIMIT unknown to it, kept choosing a custom plan, so planning the claim
-- took more of the server's time than running it (pg_stat_statements, track = all, in
-- `transcriber bench`: 1,012 plans for 1,010 calls, 1.4 ms of planning to 1.0 ms of
-- execution). Not knowing those lengths, the generic plan guesses 200 records claimed
-- and would find them again by hashing a walk of the whole table (a seq scan at every
-- claim, ruinous at a million finished records): only nested loops over the keys'
-- indexes, as the custom plans chose for the few records a statement claims or reads.
-- The claim's walk of its index in order (enable_sort = off) does not depend on the
-- values either.
ALTER FUNCTION claim_next(text[], float8[], float8[], timestamptz, uuid[], uuid[])
    SET plan_cache_mode = force_generic_plan
    SET enable_hashjoin = off
    SET enable_mergejoin = off;
ALTER FUNCTION claimed_records(uuid[], uuid[], timestamptz)
    SET plan_cache_mode = force_generic_plan
    SET enable_hashjoin = off
    SET enable_mergejoin = off;
