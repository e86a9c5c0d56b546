---------------------------------------------------------------------------------------
-- Storage housekeeping: the startup sweep of unreferenced files and objects
-- (transcriber/storage/blobs.py) and `transcriber storage migrate`
-- (transcriber/storage/to_object_store.py).
---------------------------------------------------------------------------------------

-- name: sources_referenced
-- Which of the given file names of the upload store a record points at (the rest are
-- strays). By name, not path: see sql/0002_intake.sql.
SELECT regexp_replace(source_path, '^.*/', '') AS name
  FROM recordings
 WHERE regexp_replace(source_path, '^.*/', '') = ANY($1::text[])

-- name: audio_referenced
-- The normalized audio of the given records ($1 ids): the startup sweep removes the audio
-- files and objects of these records that their row does not name (a stale claim's).
SELECT id, audio_path FROM recordings WHERE id = ANY($1::uuid[])

-- name: storage_local_refs
-- `storage migrate`: the records whose upload or audio is still a local file (a path).
SELECT id, source_path, audio_path FROM recordings
 WHERE source_path LIKE '/%' OR audio_path LIKE '/%'
 ORDER BY created_at, id

-- name: storage_switch_source
-- `storage migrate`: the record's upload ref moves from the local file ($2) to its
-- verified copy in the object store ($3), unless it changed meanwhile.
UPDATE recordings SET source_path = $3 WHERE id = $1 AND source_path = $2 RETURNING id

-- name: storage_switch_audio
-- The same for the normalized audio.
UPDATE recordings SET audio_path = $3 WHERE id = $1 AND audio_path = $2 RETURNING id
