---------------------------------------------------------------------------------------
-- Deleting records (transcriber/records/deletion.py): the owner's (API, page), the
-- operator's (`transcriber delete`) and retention's (TRANSCRIBER_RETENTION_DAYS). Each
-- removes the rows in one statement (the transcript, corrections and share links go by
-- ON DELETE CASCADE, see sql/0011) and journals `deleted` with who, when and the size;
-- it returns the refs of the stored bytes, which the caller removes after the commit,
-- and names them in `removals` in the same statement (sql/0021_removals.sql): a caller
-- that dies before it removed them leaves them to the daemons' removal rounds.
-- A step working on a deleted record finds its claim's token gone with the row: every
-- fenced write of sql/queue.sql is refused (`lease_lost`).
---------------------------------------------------------------------------------------

-- name: owner_delete
-- The owner's ($1) records among $2 (ids), journaled `deleted` with origin `human` and
-- detail $3 (who, how). Another owner's or an unknown id matches nothing.
WITH gone AS (
    DELETE FROM recordings WHERE owner_id = $1 AND id = ANY($2::uuid[])
    RETURNING id, owner_id, milestone, size_bytes, duration_s, created_at, source_path,
              audio_path
), event AS (
    INSERT INTO journal (recording_id, origin, kind, milestone, detail)
    SELECT id, 'human', 'deleted', milestone,
           $3::jsonb || jsonb_build_object('owner_id', owner_id, 'size_bytes', size_bytes,
                                           'duration_s', duration_s, 'created_at', created_at)
      FROM gone
    RETURNING id, kind
), todo AS (
    INSERT INTO removals (recording_id, refs)
    SELECT id, array_remove(ARRAY[source_path, audio_path], NULL) FROM gone
)
SELECT gone.id, gone.source_path, gone.audio_path, gone.size_bytes,
       (SELECT count(pg_notify('transcriber_journal', id || ' ' || kind)) FROM event) AS notified
  FROM gone

-- name: delete_records
-- The operator's deletion of records $1 (ids) of any owner, journaled `deleted` with
-- origin $2 ('human': `transcriber delete`; 'pipeline': retention) and detail $3.
WITH gone AS (
    DELETE FROM recordings WHERE id = ANY($1::uuid[])
    RETURNING id, owner_id, milestone, size_bytes, duration_s, created_at, source_path,
              audio_path
), event AS (
    INSERT INTO journal (recording_id, origin, kind, milestone, detail)
    SELECT id, $2, 'deleted', milestone,
           $3::jsonb || jsonb_build_object('owner_id', owner_id, 'size_bytes', size_bytes,
                                           'duration_s', duration_s, 'created_at', created_at)
      FROM gone
    RETURNING id, kind
), todo AS (
    INSERT INTO removals (recording_id, refs)
    SELECT id, array_remove(ARRAY[source_path, audio_path], NULL) FROM gone
)
SELECT gone.id, gone.source_path, gone.audio_path, gone.size_bytes,
       (SELECT count(pg_notify('transcriber_journal', id || ' ' || kind)) FROM event) AS notified
  FROM gone

-- name: records_older_than
-- Retention: up to $2 records created before $1, oldest first.
SELECT id FROM recordings WHERE created_at < $1 ORDER BY created_at, id LIMIT $2

-- name: deletions
-- The journal's `deleted` events, newest first, $1 at most: for `transcriber delete --list`.
SELECT recording_id, at, origin, detail FROM journal
 WHERE kind = 'deleted' ORDER BY id DESC LIMIT $1

-- name: unfinished_removals
-- Deletions whose bytes are not all removed yet, oldest first, $1 at most, whatever
-- their age: the daemons' removal rounds.
SELECT recording_id, refs, deleted_at FROM removals ORDER BY deleted_at, recording_id LIMIT $1

-- name: removal_done
-- The bytes of deleted record $1 are gone: its to-do row goes. A row another daemon
-- removed first matches nothing.
DELETE FROM removals WHERE recording_id = $1
