---------------------------------------------------------------------------------------
-- Who spoke, as the owner says (transcriber/records/speaker_names.py): names for the
-- speakers found and segments moved to another speaker. Owner-scoped like page.sql: $1 is
-- the owner, $2 the record; no row: not theirs. Each write is journaled as `edited` with
-- origin `human` (its detail says what).
---------------------------------------------------------------------------------------

-- name: owner_speaker_names
-- The owner's ($1) names for the speakers of their record $2, by speaker number.
SELECT n.speaker, n.name
  FROM speaker_names n JOIN recordings r ON r.id = n.recording_id
 WHERE r.owner_id = $1 AND n.recording_id = $2
 ORDER BY n.speaker

-- name: owner_speaker_choices
-- The owner's ($1) speakers for segments of their record $2 and parts of them, by
-- segment and first word (-1: the whole segment).
SELECT c.segment, c.word, c.speaker
  FROM speaker_choices c JOIN recordings r ON r.id = c.recording_id
 WHERE r.owner_id = $1 AND c.recording_id = $2
 ORDER BY c.segment, c.word

-- name: speaker_name_set
-- The owner's ($1) name $4 for speaker $3 of their record $2 (NULL: back to the found
-- label), journaled (detail $5). The record's id if it is theirs, else no row.
WITH mine AS (
    SELECT r.id, r.milestone FROM recordings r WHERE r.owner_id = $1 AND r.id = $2
), gone AS (
    DELETE FROM speaker_names n USING mine
     WHERE n.recording_id = mine.id AND n.speaker = $3 AND $4::text IS NULL
), done AS (
    INSERT INTO speaker_names (recording_id, speaker, name)
    SELECT mine.id, $3, $4 FROM mine WHERE $4::text IS NOT NULL
    ON CONFLICT (recording_id, speaker) DO UPDATE SET name = excluded.name, named_at = now()
), event AS (
    INSERT INTO journal (recording_id, origin, kind, milestone, detail)
    SELECT mine.id, 'human', 'edited', mine.milestone, $5::jsonb FROM mine
    RETURNING id, kind
)
SELECT mine.id FROM mine, event
 WHERE pg_notify('transcriber_journal', event.id || ' ' || event.kind) IS NULL

-- name: speaker_choice_set
-- The owner's ($1) speaker $4 for segment $3 of their record $2, or for its part from
-- word $6 (-1: the whole segment, whose parts' choices then go); NULL: back to the one
-- diarization found. Journaled (detail $5). The record's id if it is theirs, else no row.
WITH mine AS (
    SELECT r.id, r.milestone FROM recordings r WHERE r.owner_id = $1 AND r.id = $2
), gone AS (
    DELETE FROM speaker_choices c USING mine
     WHERE c.recording_id = mine.id AND c.segment = $3
       AND ((c.word = $6 AND $4::integer IS NULL) OR ($6 = -1 AND c.word <> -1))
), done AS (
    INSERT INTO speaker_choices (recording_id, segment, word, speaker)
    SELECT mine.id, $3, $6, $4 FROM mine WHERE $4::integer IS NOT NULL
    ON CONFLICT (recording_id, segment, word)
    DO UPDATE SET speaker = excluded.speaker, chosen_at = now()
), event AS (
    INSERT INTO journal (recording_id, origin, kind, milestone, detail)
    SELECT mine.id, 'human', 'edited', mine.milestone, $5::jsonb FROM mine
    RETURNING id, kind
)
SELECT mine.id FROM mine, event
 WHERE pg_notify('transcriber_journal', event.id || ' ' || event.kind) IS NULL
