-- Voices named once (transcriber/records/voices.py): an owner's library of voices, each a
-- name and a CAM++ vector (unit length, the mean of the windows it was taken from, and how
-- many seconds of speech that mean stands for, to add another recording to it). A voice is
-- biometric data: an owner field, never in the journal, never read by an operator's or a
-- link holder's query, gone with the owner (ON DELETE CASCADE); deleting a voice deletes
-- its vector and every name it gave.
CREATE TABLE voices (
    id         uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    owner_id   bigint NOT NULL REFERENCES owners (id) ON DELETE CASCADE,
    name       text NOT NULL CHECK (length(name) BETWEEN 1 AND 80),
    vector     real[] NOT NULL CHECK (cardinality(vector) BETWEEN 1 AND 1024),
    seconds    float8 NOT NULL CHECK (seconds > 0),
    recordings integer NOT NULL DEFAULT 1 CHECK (recordings > 0),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (owner_id, name)
);

-- Each found speaker's voice of a diarized record (the mean of their windows), kept only
-- while the record's owner remembers voices: what "remember this voice" takes. Written by
-- the diarize step's save (`name_found_voices`), gone with the record.
CREATE TABLE record_voices (
    recording_id uuid NOT NULL REFERENCES recordings (id) ON DELETE CASCADE,
    speaker      integer NOT NULL CHECK (speaker >= 0 AND speaker < 20),
    vector       real[] NOT NULL CHECK (cardinality(vector) BETWEEN 1 AND 1024),
    seconds      float8 NOT NULL CHECK (seconds >= 0),
    PRIMARY KEY (recording_id, speaker)
);

-- A found speaker named by the library voice it matched: read as a name the owner gave
-- (the owner's own name in speaker_names wins). One voice to one speaker of a record.
-- Renaming the voice renames it here; deleting it (or the record) deletes the match.
CREATE TABLE voice_matches (
    recording_id uuid NOT NULL REFERENCES recordings (id) ON DELETE CASCADE,
    speaker      integer NOT NULL CHECK (speaker >= 0 AND speaker < 20),
    voice_id     uuid NOT NULL REFERENCES voices (id) ON DELETE CASCADE,
    cosine       real NOT NULL,
    PRIMARY KEY (recording_id, speaker),
    UNIQUE (recording_id, voice_id)
);
CREATE INDEX voice_matches_voice ON voice_matches (voice_id);

-- The found voices of record `rec` (`heard`: [[speaker, [vector], seconds], ...]) kept
-- and matched against its owner's library, when the owner remembers voices: the most
-- alike pair first, each speaker and each voice once, at `threshold` or more (cosine of
-- unit vectors). A diarization run again replaces what the last one kept. Without the
-- owner's opt-in nothing is kept. Returns the matches made.
CREATE FUNCTION name_found_voices(rec uuid, heard jsonb, threshold float8) RETURNS integer
LANGUAGE plpgsql AS $$
DECLARE
    who bigint;
    pair record;
    speakers_taken integer[] := '{}';
    voices_taken uuid[] := '{}';
    made integer := 0;
BEGIN
    DELETE FROM voice_matches WHERE recording_id = rec;
    DELETE FROM record_voices WHERE recording_id = rec;
    SELECT r.owner_id INTO who
      FROM recordings r JOIN owner_settings s ON s.owner_id = r.owner_id
     WHERE r.id = rec AND s.remember_voices;
    IF who IS NULL OR heard IS NULL OR jsonb_typeof(heard) <> 'array' THEN
        RETURN 0;
    END IF;
    INSERT INTO record_voices (recording_id, speaker, vector, seconds)
    SELECT rec, (f ->> 0)::integer,
           ARRAY(SELECT x::real FROM jsonb_array_elements_text(f -> 1) AS x),
           (f ->> 2)::float8
      FROM jsonb_array_elements(heard) AS f;
    FOR pair IN
        SELECT rv.speaker, v.id,
               (SELECT sum(a * b) FROM unnest(rv.vector, v.vector) AS u (a, b)) AS cosine
          FROM record_voices rv, voices v
         WHERE rv.recording_id = rec AND v.owner_id = who
         ORDER BY 3 DESC NULLS LAST, rv.speaker
    LOOP
        EXIT WHEN pair.cosine IS NULL OR pair.cosine < threshold;
        CONTINUE WHEN pair.speaker = ANY (speakers_taken) OR pair.id = ANY (voices_taken);
        INSERT INTO voice_matches (recording_id, speaker, voice_id, cosine)
        VALUES (rec, pair.speaker, pair.id, pair.cosine);
        speakers_taken := speakers_taken || pair.speaker;
        voices_taken := voices_taken || pair.id;
        made := made + 1;
    END LOOP;
    RETURN made;
END
$$;
