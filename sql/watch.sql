---------------------------------------------------------------------------------------
-- Watched folders (transcriber/watch). The operator's queries (`watch add|list|remove`)
-- first; then the daemons': the watches to scan and their outcome, the takes (one row
-- per owner and content, claimed by INSERT … ON CONFLICT), and the takes whose
-- transcript is still to be written. `$now` parameters: NULL is the database's now(),
-- so tests can set the clock.
---------------------------------------------------------------------------------------

-- name: watch_add
-- The owner's ($1) watch of folder $2 writing formats $3; the same folder again changes
-- its formats. `created`: false when it was there already.
INSERT INTO watches (owner_id, folder, formats) VALUES ($1, $2, $3)
ON CONFLICT (owner_id, folder) DO UPDATE SET formats = EXCLUDED.formats
RETURNING id, (xmax = 0) AS created

-- name: watch_list
-- Every watch with its owner and what it took: `taken` files, `waiting` (taken, the
-- transcript not yet written), `stopped` (their record stopped and its note written
-- beside them: they wait for an operator's resume, not for the pipeline), and whether
-- the owner is revoked (then it is paused).
SELECT w.id, o.name AS owner, w.folder, w.formats, w.created_at, w.scanned_at,
       w.scanned_by, w.scan_error, o.revoked_at IS NOT NULL AS paused,
       count(t.*) AS taken,
       count(t.*) FILTER (WHERE t.written_at IS NULL AND (r.stop_reason IS NULL
                            OR r.stop_reason IS DISTINCT FROM t.noted_stop)) AS waiting,
       count(t.*) FILTER (WHERE t.written_at IS NULL
                            AND r.stop_reason = t.noted_stop) AS stopped
  FROM watches w JOIN owners o ON o.id = w.owner_id
  LEFT JOIN watch_takes t ON t.watch_id = w.id
  LEFT JOIN recordings r ON r.id = t.recording_id AND r.owner_id = t.owner_id
 GROUP BY w.id, o.name, o.revoked_at
 ORDER BY o.name, w.folder

-- name: watch_remove
-- Watch $1 ends; what it took stays taken. No row: no such watch.
DELETE FROM watches WHERE id = $1 RETURNING id

-- name: watches_to_scan
-- The watches a daemon scans: those of owners not revoked.
SELECT w.id, w.owner_id, w.folder, w.formats
  FROM watches w JOIN owners o ON o.id = w.owner_id
 WHERE o.revoked_at IS NULL
 ORDER BY w.id

-- name: watch_scanned
-- Watch $1 was scanned now by $2 (host:pid); $3 why its folder could not be read, NULL
-- when it could.
UPDATE watches SET scanned_at = now(), scanned_by = $2, scan_error = $3 WHERE id = $1

-- name: watch_taken_files
-- The files watch $1 took, as they were when taken: a file still so is not read again.
-- A claim whose lease ran out made no record: its file is read again (and taken over).
SELECT name, size_bytes, mtime_ns FROM watch_takes
 WHERE watch_id = $1 AND (recording_id IS NOT NULL OR lease_expires_at >= now())

-- name: watch_claim
-- Take the owner's ($1) content of sha256 $2, found by watch $3 in folder $4 as file
-- $5 ($6 bytes, modified $7 ns), for $8 seconds: a new row, or the row of a claim whose
-- lease ran out before its record committed (its daemon died). No row: taken already.
-- A claim taken over keeps the name it was first taken by (the record's file name).
INSERT INTO watch_takes AS t (owner_id, content_sha256, watch_id, folder, name,
                              size_bytes, mtime_ns, claim_token, lease_expires_at, taken_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, gen_random_uuid(),
        coalesce($9::timestamptz, now()) + make_interval(secs => $8),
        coalesce($9::timestamptz, now()))
ON CONFLICT (owner_id, content_sha256) DO UPDATE
   SET claim_token = gen_random_uuid(),
       lease_expires_at = coalesce($9::timestamptz, now()) + make_interval(secs => $8)
 WHERE t.recording_id IS NULL AND t.lease_expires_at < coalesce($9::timestamptz, now())
RETURNING t.claim_token, t.name

-- name: watch_accepted
-- The claim $3 of the owner's ($1) content $2 made record $4. No row: the claim was
-- taken over (the taker's accept names the same record: its Idempotency-Key is the hash).
UPDATE watch_takes SET recording_id = $4, claim_token = NULL, lease_expires_at = NULL
 WHERE owner_id = $1 AND content_sha256 = $2 AND claim_token = $3
RETURNING recording_id

-- name: watch_release
-- The claim $3 of the owner's ($1) content $2 made no record (refused, or the file
-- changed or went while read): the content is not taken.
DELETE FROM watch_takes
 WHERE owner_id = $1 AND content_sha256 = $2 AND claim_token = $3 AND recording_id IS NULL

-- name: watch_open_takes
-- The takes of watch $1 with a record whose transcript is not yet written, with where
-- the record is (`found` false: its owner deleted it). Not those stopped whose stop is
-- noted beside them: they wait for an operator's resume, maybe forever, and $2 of them
-- would leave no room for the transcripts of the files taken after.
SELECT t.content_sha256, t.folder, t.name, t.recording_id, t.noted_stop,
       r.id IS NOT NULL AS found, r.milestone, r.stop_reason
  FROM watch_takes t LEFT JOIN recordings r
       ON r.id = t.recording_id AND r.owner_id = t.owner_id
 WHERE t.watch_id = $1 AND t.written_at IS NULL AND t.recording_id IS NOT NULL
   AND (r.stop_reason IS NULL OR r.stop_reason IS DISTINCT FROM t.noted_stop)
 ORDER BY t.taken_at
 LIMIT $2

-- name: watch_noted_stop
-- The note of stop $3 was written beside the owner's ($1) content $2.
UPDATE watch_takes SET noted_stop = $3 WHERE owner_id = $1 AND content_sha256 = $2

-- name: watch_written
-- The transcript of the owner's ($1) content $2 is written (or will never be: $3 says
-- what became of each format, or that the record was deleted).
UPDATE watch_takes SET written_at = now(), written = $3
 WHERE owner_id = $1 AND content_sha256 = $2 AND written_at IS NULL
