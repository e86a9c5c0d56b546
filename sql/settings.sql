---------------------------------------------------------------------------------------
-- The owner's defaults (transcriber/records/settings.py). Owner-scoped: $1 is always the
-- owner, so a request reaches its caller's settings only. Never journaled (owner text).
---------------------------------------------------------------------------------------

-- name: owner_settings
-- The owner's ($1) settings; no row: none set.
SELECT language, speakers, vocabulary, subtitle_profile, remember_voices, updated_at
  FROM owner_settings WHERE owner_id = $1

-- name: owner_settings_put
-- The owner's ($1) settings, all of them as given ($2 language, $3 speakers, $4
-- vocabulary, $5 subtitle profile, $6 remember voices). Turning remembering off
-- forgets the voices kept of their records and the names matched (the library stays
-- until its voices are deleted).
WITH put AS (
    INSERT INTO owner_settings AS s
           (owner_id, language, speakers, vocabulary, subtitle_profile, remember_voices)
    VALUES ($1, $2, $3, $4, $5, $6)
    ON CONFLICT (owner_id) DO UPDATE
       SET language = excluded.language, speakers = excluded.speakers,
           vocabulary = excluded.vocabulary, subtitle_profile = excluded.subtitle_profile,
           remember_voices = excluded.remember_voices, updated_at = now()
    RETURNING language, speakers, vocabulary, subtitle_profile, remember_voices, updated_at
), kept AS (
    DELETE FROM record_voices k USING recordings r
     WHERE NOT $6 AND r.id = k.recording_id AND r.owner_id = $1
), matched AS (
    DELETE FROM voice_matches m USING recordings r
     WHERE NOT $6 AND r.id = m.recording_id AND r.owner_id = $1
)
SELECT * FROM put
