-- The owner's defaults (transcriber/records/settings.py): what an upload that does not
-- say uses — its language, its speakers, its vocabulary — the subtitle profile of an SRT
-- or VTT download that names none, and whether the owner's voices are remembered
-- (opt-in: off until the owner turns it on). Owner fields: only the owner writes them
-- (the API, the page); the pipeline and the operator never read them but through the
-- intake's defaults. No row: nothing set. Gone with the owner (ON DELETE CASCADE).
CREATE TABLE owner_settings (
    owner_id         bigint PRIMARY KEY REFERENCES owners (id) ON DELETE CASCADE,
    language         text CHECK (language ~ '^[a-z]{2,3}$'),
    speakers         text CHECK (speakers ~ '^(off|auto|[0-9]{1,2}(-[0-9]{1,2})?)$'),
    -- Words and names the recognizer should expect (checked in settings.py: at most 100,
    -- each one line of at most 60 characters).
    vocabulary       text[] NOT NULL DEFAULT '{}' CHECK (cardinality(vocabulary) <= 100),
    subtitle_profile text CHECK (length(subtitle_profile) BETWEEN 1 AND 40),
    remember_voices  boolean NOT NULL DEFAULT false,
    updated_at       timestamptz NOT NULL DEFAULT now()
);

-- Which of a record's options came from its owner's defaults ('language', 'speakers',
-- 'vocabulary'), for the card; NULL or empty: none (the request said, or nothing was set).
ALTER TABLE recordings ADD COLUMN from_settings text[];

-- The view of 0023, the column appended.
CREATE OR REPLACE VIEW recording_rows AS
SELECT r.id, r.owner_id, r.title, r.summary, r.topics, r.filename, r.size_bytes,
       r.created_at, r.milestone, r.milestone_entered_at, r.claim_token, r.lease_expires_at,
       r.attempts, r.retry_at, r.stopped_at, r.stop_reason, r.stop_error, r.progress,
       r.audio_path, r.duration_s,
       coalesce(t.language, r.language) AS language,
       r.options ->> 'speakers' AS speakers_asked,
       t.speaker_count,
       coalesce(r.options ->> 'task', 'transcribe') AS task,
       r.options -> 'vocabulary' AS vocabulary,
       r.from_settings
  FROM recordings r LEFT JOIN transcripts t ON t.recording_id = r.id;
