---------------------------------------------------------------------------------------
-- Voices named once (transcriber/records/voices.py): the owner's library of voices and
-- the names its matches give. Owner-scoped: $1 is always the owner; another owner's voice
-- or record matches nothing. Never journaled: a voice is biometric data.
---------------------------------------------------------------------------------------

-- name: voices_of_owner
-- The owner's ($1) voices, by name; vectors are not read.
SELECT v.id, v.name, v.seconds, v.recordings, v.created_at, v.updated_at,
       (SELECT count(*) FROM voice_matches m WHERE m.voice_id = v.id) AS named
  FROM voices v WHERE v.owner_id = $1
 ORDER BY v.name, v.id

-- name: voice_of_owner
-- The owner's ($1) voice $2 with its vector; no row: not theirs.
SELECT id, name, vector, seconds, recordings, created_at, updated_at
  FROM voices WHERE owner_id = $1 AND id = $2

-- name: voice_named
-- The owner's ($1) voice called $2, with its vector; no row: none.
SELECT id, name, vector, seconds, recordings, created_at, updated_at
  FROM voices WHERE owner_id = $1 AND name = $2

-- name: voice_add
-- A new voice $2 of the owner ($1): vector $3, seconds $4, while they have fewer than
-- $5. No row: the name is taken, or they have $5.
INSERT INTO voices (owner_id, name, vector, seconds)
SELECT $1, $2, $3, $4
 WHERE (SELECT count(*) FROM voices WHERE owner_id = $1) < $5
ON CONFLICT (owner_id, name) DO NOTHING
RETURNING id

-- name: voice_update
-- The owner's ($1) voice $2 given the vector $3 (the new mean) and seconds $4, one
-- recording more, while its vector is still $5 (another request did not change it
-- meanwhile). No row: not theirs, or changed meanwhile.
UPDATE voices SET vector = $3, seconds = $4, recordings = recordings + 1, updated_at = now()
 WHERE owner_id = $1 AND id = $2 AND vector = $5
RETURNING id

-- name: voice_rename
-- The owner's ($1) voice $2 called $3. No row: not theirs; a unique violation: taken.
UPDATE voices SET name = $3, updated_at = now() WHERE owner_id = $1 AND id = $2
RETURNING id

-- name: voice_delete
-- The owner's ($1) voice $2 and its vector, and every name it gave (cascade).
DELETE FROM voices WHERE owner_id = $1 AND id = $2 RETURNING id

-- name: record_voice
-- The kept voice of speaker $3 of the owner's ($1) record $2 (its vector and seconds);
-- no row: not theirs, or not kept (diarized while voices were not remembered).
SELECT k.vector, k.seconds
  FROM record_voices k JOIN recordings r ON r.id = k.recording_id
 WHERE r.owner_id = $1 AND k.recording_id = $2 AND k.speaker = $3

-- name: voice_names
-- The names the owner's ($1) voices give the speakers of their record $2, by speaker.
SELECT m.speaker, v.name
  FROM voice_matches m JOIN voices v ON v.id = m.voice_id
  JOIN recordings r ON r.id = m.recording_id
 WHERE r.owner_id = $1 AND v.owner_id = $1 AND m.recording_id = $2
 ORDER BY m.speaker

-- name: save_speakers_voices
-- The diarize step's save: $1 id, $2 turns (jsonb: [start, end, speaker] each, speaker
-- 0-based), $3 speakers found, $4 the found voices ([[speaker, [vector], seconds], ...]),
-- $5 the match's threshold, $6 its margin over outsiders, $7 the cohort of outsiders
-- (jsonb: [[vector], ...]), $8 how many of them each side is measured against
-- (transcriber.records.voices.MATCH). The voices are kept and named only when the
-- record's owner remembers voices (name_found_voices, sql/0031); in the commit's
-- transaction.
WITH saved AS (
    UPDATE transcripts SET turns = $2::jsonb, speaker_count = $3, diarized_at = now()
     WHERE recording_id = $1
    RETURNING recording_id
)
SELECT name_found_voices(recording_id, $4::jsonb, $5, $6, $7::jsonb, $8) FROM saved

-- name: voice_match_clear
-- Before `voice_match_set`: what named speaker $3 of the owner's ($1) record $2, and
-- where their voice $4 named another speaker of it.
DELETE FROM voice_matches m USING recordings r
 WHERE r.id = m.recording_id AND r.owner_id = $1 AND m.recording_id = $2
   AND (m.speaker = $3 OR m.voice_id = $4)

-- name: voice_match_set
-- Speaker $3 of the owner's ($1) record $2 named by their voice $4: the record a voice
-- was remembered from is named after it at once (the owner said who it is).
INSERT INTO voice_matches (recording_id, speaker, voice_id, cosine)
SELECT r.id, $3, v.id, 1
  FROM recordings r JOIN voices v ON v.owner_id = r.owner_id
 WHERE r.owner_id = $1 AND r.id = $2 AND v.id = $4

-- name: voice_match_forget
-- The owner ($1) gave speaker $3 of their record $2 back its found label: the name a
-- voice gave it goes too (the owner's say wins; a diarization run again may match anew).
DELETE FROM voice_matches m USING recordings r
 WHERE r.id = m.recording_id AND r.owner_id = $1 AND m.recording_id = $2 AND m.speaker = $3
