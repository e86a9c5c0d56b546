-- Two recognition options (transcriber/options.py): `vocabulary`, the names and terms the
-- recognizer is to hear (a list of strings), and the task `align` with its `text`, the
-- owner's own text to time word by word. The domain's checks (0018) keep what no
-- recognizer could use out of the table; their bounds of count and length are the
-- intake's (a clear 422 there), here only the shapes.
ALTER DOMAIN recording_options DROP CONSTRAINT options_known;
ALTER DOMAIN recording_options ADD CONSTRAINT options_known CHECK (
    jsonb_typeof(VALUE) = 'object'
    AND coalesce(VALUE ->> 'task', 'transcribe') IN ('transcribe', 'translate', 'align')
    AND (NOT VALUE ? 'prompt' OR jsonb_typeof(VALUE -> 'prompt') = 'string')
    AND (NOT VALUE ? 'temperature'
         OR (jsonb_typeof(VALUE -> 'temperature') = 'number'
             AND (VALUE ->> 'temperature')::float8 BETWEEN 0 AND 1)));
ALTER DOMAIN recording_options ADD CONSTRAINT options_vocabulary CHECK (
    NOT VALUE ? 'vocabulary'
    OR (jsonb_typeof(VALUE -> 'vocabulary') = 'array'
        AND jsonb_array_length(VALUE -> 'vocabulary') <= 50
        AND NOT jsonb_path_exists(VALUE -> 'vocabulary', '$[*] ? (@.type() != "string")')));
ALTER DOMAIN recording_options ADD CONSTRAINT options_align_text CHECK (
    (coalesce(VALUE ->> 'task', 'transcribe') = 'align')
    = (VALUE ? 'text' AND jsonb_typeof(VALUE -> 'text') = 'string'));

-- The owner's card shows the record's task and vocabulary (not the text: it is the
-- transcript once aligned). Columns added at the view's end, so CREATE OR REPLACE keeps
-- the rest as 0018 made it.
CREATE OR REPLACE VIEW recording_rows AS
SELECT r.id, r.owner_id, r.title, r.summary, r.topics, r.filename, r.size_bytes,
       r.created_at, r.milestone, r.milestone_entered_at, r.claim_token, r.lease_expires_at,
       r.attempts, r.retry_at, r.stopped_at, r.stop_reason, r.stop_error, r.progress,
       r.audio_path, r.duration_s,
       coalesce(t.language, r.language) AS language,
       r.options ->> 'speakers' AS speakers_asked,
       t.speaker_count,
       coalesce(r.options ->> 'task', 'transcribe') AS task,
       r.options -> 'vocabulary' AS vocabulary
  FROM recordings r LEFT JOIN transcripts t ON t.recording_id = r.id;
