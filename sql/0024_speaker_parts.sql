-- The owner's say on one part of a segment: where the speakers change inside one of the
-- recognizer's segments, every rendering splits it there (transcriber.audio.speakers
-- `parts`), and the owner moves or corrects a part, not the whole segment. A part is
-- its segment's index and the index of its first word in the segment's words; `word`
-- -1 is the whole segment, as every row before this migration was.
ALTER TABLE speaker_choices
    ADD COLUMN word integer NOT NULL DEFAULT -1 CHECK (word >= -1),
    DROP CONSTRAINT speaker_choices_pkey,
    ADD PRIMARY KEY (recording_id, segment, word);

ALTER TABLE corrections
    ADD COLUMN word integer NOT NULL DEFAULT -1 CHECK (word >= -1),
    DROP CONSTRAINT corrections_pkey,
    ADD PRIMARY KEY (recording_id, segment, word);
