-- Who spoke: the diarize step (recognized -> transcribed) stores its turns beside the
-- transcript; the owner's renderings put the speakers on the segments when read
-- (transcriber.audio.speakers.assign), so the stored segments stay the recognizer's and the
-- owner's corrections keep pointing at them. NULL: not diarized (speakers off, or not yet).
ALTER TABLE transcripts
    ADD COLUMN turns jsonb
        CONSTRAINT turns_list CHECK (turns IS NULL OR jsonb_typeof(turns) = 'array'),
    ADD COLUMN speaker_count integer CHECK (speaker_count >= 0),
    ADD COLUMN diarized_at timestamptz;

-- The record's `speakers` option rides in `options` (off, auto, N or A-B; absent: the
-- service's TRANSCRIBER_SPEAKERS), checked as the other options are.
ALTER TABLE recordings
    ADD CONSTRAINT options_speakers CHECK (
        NOT options ? 'speakers'
        OR (jsonb_typeof(options -> 'speakers') = 'string'
            AND options ->> 'speakers' ~ '^(off|auto|[0-9]{1,2}(-[0-9]{1,2})?)$'));

-- The card shows the speakers asked (the record's own option; NULL: the service's) and
-- how many were found. Columns appended to the view of 0001_initial.sql.
CREATE OR REPLACE VIEW recording_rows AS
SELECT r.id, r.owner_id, r.title, r.summary, r.topics, r.filename, r.size_bytes,
       r.created_at, r.milestone, r.milestone_entered_at, r.claim_token, r.lease_expires_at,
       r.attempts, r.retry_at, r.stopped_at, r.stop_reason, r.stop_error, r.progress,
       r.audio_path, r.duration_s,
       coalesce(t.language, r.language) AS language,
       r.options ->> 'speakers' AS speakers_asked,
       t.speaker_count
  FROM recordings r LEFT JOIN transcripts t ON t.recording_id = r.id;
