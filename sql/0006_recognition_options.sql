-- How a recording is to be recognized, chosen when it is accepted: the task
-- ('transcribe', the default, or 'translate': speech in any language to English text),
-- an initial prompt (text) and a sampling temperature (a number). The recognize step
-- reads it as an input. The check keeps what no recognizer could use out of the table,
-- so a bad value is refused at intake, not found at recognition.
ALTER TABLE recordings
    ADD COLUMN options jsonb NOT NULL DEFAULT '{}'
        CONSTRAINT options_known CHECK (
            jsonb_typeof(options) = 'object'
            AND coalesce(options ->> 'task', 'transcribe') IN ('transcribe', 'translate')
            AND (NOT options ? 'prompt' OR jsonb_typeof(options -> 'prompt') = 'string')
            AND (NOT options ? 'temperature'
                 OR (jsonb_typeof(options -> 'temperature') = 'number'
                     AND (options ->> 'temperature')::float8 BETWEEN 0 AND 1)));
