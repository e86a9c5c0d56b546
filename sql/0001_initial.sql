-- The first schema of transcriber: owners, recordings with their queue columns, the journal.

CREATE TABLE owners (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name        text NOT NULL UNIQUE CHECK (name <> ''),
    -- sha256 of the API token; the token itself is shown once and never stored.
    token_hash  bytea NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE recordings (
    id                   uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    -- Every record has an owner, so every outcome is reachable through its card.
    owner_id             bigint NOT NULL REFERENCES owners (id),

    -- Owner fields: written by the owner only, never by the pipeline.
    title                text,
    summary              text,
    topics               text[] NOT NULL DEFAULT '{}',

    -- Intake: what was accepted, written once when the record is created.
    filename             text,
    size_bytes           bigint,
    source_path          text,
    language             text,
    idempotency_key      text,
    created_at           timestamptz NOT NULL DEFAULT now(),

    -- Queue columns: a closed set, written only by the named queries that
    -- transcriber/queue.py calls (claim, commit, fail, stop, resume, progress).
    milestone            text NOT NULL DEFAULT 'received',
    milestone_entered_at timestamptz NOT NULL DEFAULT now(),
    claim_token          uuid,
    lease_expires_at     timestamptz,
    attempts             integer NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    retry_at             timestamptz,
    stopped_at           timestamptz,
    stop_reason          text,
    stop_error           text,
    progress             real CHECK (progress BETWEEN 0 AND 1),

    -- Step results of normalize (received -> normalized).
    audio_path           text,
    duration_s           double precision,

    -- The stop flag is one thing: a time and a reason, together or not at all.
    CONSTRAINT stop_flag_whole CHECK ((stopped_at IS NULL) = (stop_reason IS NULL)),
    CONSTRAINT claim_whole CHECK ((claim_token IS NULL) = (lease_expires_at IS NULL)),
    CONSTRAINT idempotency_once UNIQUE (owner_id, idempotency_key)
);

-- Claims, progress and failures change no indexed column: room on the page lets those
-- updates stay on it (HOT), without new index entries.
ALTER TABLE recordings SET (fillfactor = 70);

-- The claim's index: only records that may still need work. The literal names the
-- final milestone (the only one without a step); tests/integration/test_runtime_pg.py
-- checks it against the step table in transcriber/milestones.py.
CREATE INDEX recordings_claimable ON recordings (milestone_entered_at, id)
    WHERE stopped_at IS NULL AND milestone <> 'transcribed';
CREATE INDEX recordings_by_owner ON recordings (owner_id, created_at DESC, id DESC);
CREATE INDEX recordings_stopped ON recordings (stopped_at) WHERE stopped_at IS NOT NULL;

-- The claim: one statement picks and claims the oldest eligible record (ties broken by
-- the key), a fresh token, and the lease of that record's milestone, written as a time.
-- A function only to carry `SET enable_sort = off`: right after a burst into a table
-- analysed while empty the planner expects one row and would sort every eligible record;
-- walking the partial index in order stops at the first one instead. The literal names
-- the final milestone, as the index does.
CREATE FUNCTION claim_next(p_milestones text[], p_lease_base_s float8[],
                           p_lease_per_audio_s float8[], p_now timestamptz)
RETURNS TABLE (id uuid, claim_token uuid)
LANGUAGE sql VOLATILE
SET enable_sort = off
AS $claim$
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
     ORDER BY r.milestone_entered_at, r.id
     LIMIT 1
       FOR UPDATE OF r SKIP LOCKED
)
UPDATE recordings r
   SET claim_token = gen_random_uuid(),
       lease_expires_at = coalesce(p_now, now()) + make_interval(secs => picked.lease_s),
       progress = NULL
  FROM picked
 WHERE r.id = picked.id
RETURNING r.id, r.claim_token
$claim$;

-- Step results of recognize (normalized -> transcribed).
CREATE TABLE transcripts (
    recording_id uuid PRIMARY KEY REFERENCES recordings (id),
    text         text NOT NULL,
    segments     jsonb NOT NULL DEFAULT '[]',
    language     text,
    model        text,
    created_at   timestamptz NOT NULL DEFAULT now()
);

-- A record as its card is made of: one definition for the card and the owner's list.
CREATE VIEW recording_rows AS
SELECT r.id, r.owner_id, r.title, r.summary, r.topics, r.filename, r.size_bytes,
       r.created_at, r.milestone, r.milestone_entered_at, r.claim_token, r.lease_expires_at,
       r.attempts, r.retry_at, r.stopped_at, r.stop_reason, r.stop_error, r.progress,
       r.audio_path, r.duration_s,
       -- The language found by recognition once there is one, else the hint.
       coalesce(t.language, r.language) AS language
  FROM recordings r LEFT JOIN transcripts t ON t.recording_id = r.id;

-- Append-only history of every record.
CREATE TABLE journal (
    id           bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    recording_id uuid NOT NULL REFERENCES recordings (id),
    at           timestamptz NOT NULL DEFAULT clock_timestamp(),
    origin       text NOT NULL CHECK (origin IN ('pipeline', 'human')),
    kind         text NOT NULL,
    milestone    text,
    claim_token  uuid,
    detail       jsonb NOT NULL DEFAULT '{}'
);
CREATE INDEX journal_by_recording ON journal (recording_id, id);
-- Each (record, milestone) is reached once: the database refuses a second time.
CREATE UNIQUE INDEX journal_milestone_once ON journal (recording_id, milestone)
    WHERE kind = 'milestone_reached';
