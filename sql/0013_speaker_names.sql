-- Who spoke, as the owner says: names for the speakers the diarize step found ("Speaker 2"
-- -> "Anna") and segments the owner moved to another speaker. Owner fields, as corrections
-- are: only the owner writes them (page or API), the pipeline never does, so a re-run of
-- diarization (a resume) keeps them. Keyed by the speaker's number (0-based, the turns'
-- `speaker`: "Speaker 1" is 0) and by the segment's index in the stored segments, the index
-- corrections use. Deleting a record deletes them (ON DELETE CASCADE).
CREATE TABLE speaker_names (
    recording_id uuid NOT NULL REFERENCES recordings (id) ON DELETE CASCADE,
    speaker      integer NOT NULL CHECK (speaker >= 0 AND speaker < 20),
    name         text NOT NULL CHECK (length(name) BETWEEN 1 AND 80),
    named_at     timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (recording_id, speaker)
);

CREATE TABLE speaker_choices (
    recording_id uuid NOT NULL REFERENCES recordings (id) ON DELETE CASCADE,
    segment      integer NOT NULL CHECK (segment >= 0),
    speaker      integer NOT NULL CHECK (speaker >= 0 AND speaker < 20),
    chosen_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (recording_id, segment)
);
