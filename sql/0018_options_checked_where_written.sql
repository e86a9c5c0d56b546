-- A record's recognition options are checked where they are written, not at every update
-- of the record. A table's CHECK constraint runs on every update of a row, whatever the
-- update changes, and each statement reads the constraint's text again and plans it: the
-- two checks on `options` (jsonb tests and a regular expression), on a column written
-- once, at intake, were 7-15 % of the server's CPU per transition in `transcriber bench`
-- (claims, commits, renewals and saves all update the record). A domain's check runs
-- where a value is made of the domain's type: an insert, or an update that sets the
-- column. Same rules as 0006_recognition_options.sql and 0012_speakers.sql, same names.
CREATE DOMAIN recording_options AS jsonb
    CONSTRAINT options_known CHECK (
        jsonb_typeof(VALUE) = 'object'
        AND coalesce(VALUE ->> 'task', 'transcribe') IN ('transcribe', 'translate')
        AND (NOT VALUE ? 'prompt' OR jsonb_typeof(VALUE -> 'prompt') = 'string')
        AND (NOT VALUE ? 'temperature'
             OR (jsonb_typeof(VALUE -> 'temperature') = 'number'
                 AND (VALUE ->> 'temperature')::float8 BETWEEN 0 AND 1)))
    CONSTRAINT options_speakers CHECK (
        NOT VALUE ? 'speakers'
        OR (jsonb_typeof(VALUE -> 'speakers') = 'string'
            AND VALUE ->> 'speakers' ~ '^(off|auto|[0-9]{1,2}(-[0-9]{1,2})?)$'));

-- The view reads the column, so it is made again around the change (as in 0012).
DROP VIEW recording_rows;
ALTER TABLE recordings
    DROP CONSTRAINT options_known,
    DROP CONSTRAINT options_speakers,
    ALTER COLUMN options TYPE recording_options;
CREATE VIEW recording_rows AS
SELECT r.id, r.owner_id, r.title, r.summary, r.topics, r.filename, r.size_bytes,
       r.created_at, r.milestone, r.milestone_entered_at, r.claim_token, r.lease_expires_at,
       r.attempts, r.retry_at, r.stopped_at, r.stop_reason, r.stop_error, r.progress,
       r.audio_path, r.duration_s,
       coalesce(t.language, r.language) AS language,
       r.options ->> 'speakers' AS speakers_asked,
       t.speaker_count
  FROM recordings r LEFT JOIN transcripts t ON t.recording_id = r.id;
