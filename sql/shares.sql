---------------------------------------------------------------------------------------
-- Read-only links to one record (transcriber/records/shares.py). The owner's queries
-- name the owner ($1) and the record ($2) as api.sql's do; `share_open` and
-- `share_find` find a link by its secret's sha256, as `page_session` finds a session:
-- there is no owner yet, and what they answer (the record and its owner) is then read
-- with the owner's own queries. The operator's queries, last (for
-- transcriber/pipeline/operator_shares.py), read and revoke any owner's links, never
-- their notes.
---------------------------------------------------------------------------------------

-- name: share_add
-- A new link to the owner's ($1) record $2: $3 the secret's sha256, $4 the note, $5 its
-- expiry (NULL: none). No row: not theirs, or the owner revoked meanwhile. The owner's
-- row is locked FOR SHARE until the commit: a revoke (sql/owners.sql `owner_revoke`)
-- waits for this link and then ends it, or this waits for the revoke and makes none.
INSERT INTO shares (recording_id, secret_hash, note, expires_at)
SELECT r.id, $3, $4, $5
  FROM recordings r JOIN owners o ON o.id = r.owner_id
 WHERE r.owner_id = $1 AND r.id = $2 AND o.revoked_at IS NULL
   FOR SHARE OF o
RETURNING id, note, created_at, expires_at, revoked_at, opened, last_opened_at

-- name: owner_shares
-- The links to the owner's ($1) record $2, oldest first.
SELECT s.id, s.note, s.created_at, s.expires_at, s.revoked_at, s.opened, s.last_opened_at
  FROM shares s JOIN recordings r ON r.id = s.recording_id
 WHERE r.owner_id = $1 AND s.recording_id = $2
 ORDER BY s.created_at, s.id

-- name: share_revoke
-- The owner ($1) ends link $3 of their record $2 at once. No row: not theirs (or no
-- such link); revoking again keeps the first time.
UPDATE shares s SET revoked_at = coalesce(s.revoked_at, now())
  FROM recordings r
 WHERE r.id = s.recording_id AND r.owner_id = $1 AND s.recording_id = $2 AND s.id = $3
RETURNING s.id

-- name: share_open
-- A link opened by someone: the record and its owner if the link ($1, the secret's
-- sha256) is live (not revoked, not expired) and its owner active (not revoked), its
-- opening counted. The owner is checked here, where every route resolves a link, so no
-- route can forget it.
UPDATE shares s SET opened = s.opened + 1, last_opened_at = now()
  FROM recordings r JOIN owners o ON o.id = r.owner_id
 WHERE r.id = s.recording_id AND s.secret_hash = $1 AND s.revoked_at IS NULL
   AND (s.expires_at IS NULL OR s.expires_at > now()) AND o.revoked_at IS NULL
RETURNING s.recording_id, r.owner_id

-- name: share_find
-- As `share_open`, without counting: the audio and downloads a shared page asks for.
SELECT s.recording_id, r.owner_id
  FROM shares s JOIN recordings r ON r.id = s.recording_id JOIN owners o ON o.id = r.owner_id
 WHERE s.secret_hash = $1 AND s.revoked_at IS NULL
   AND (s.expires_at IS NULL OR s.expires_at > now()) AND o.revoked_at IS NULL

-- name: ops_shares
-- The operator's list of links, of owner $1 (a name; NULL: every owner), at most $2,
-- newest first: ids, owner, times, openings and state, never the note. `state`:
-- revoked, owner_revoked (the owner's token is revoked), expired or live.
SELECT s.id, s.recording_id, o.name AS owner, s.created_at, s.expires_at, s.revoked_at,
       s.opened, s.last_opened_at,
       CASE WHEN s.revoked_at IS NOT NULL THEN 'revoked'
            WHEN o.revoked_at IS NOT NULL THEN 'owner_revoked'
            WHEN s.expires_at IS NOT NULL AND s.expires_at <= now() THEN 'expired'
            ELSE 'live' END AS state
  FROM shares s JOIN recordings r ON r.id = s.recording_id JOIN owners o ON o.id = r.owner_id
 WHERE $1::text IS NULL OR o.name = $1
 ORDER BY s.created_at DESC, s.id
 LIMIT $2

-- name: ops_share_revoke
-- The operator ends links $1 (ids) of any owner at once, each journaled on its record
-- as `share_revoked` with origin `human` and detail $2 (who) and the link's id. Only
-- links not yet revoked are answered (an unknown or already revoked one changes
-- nothing, and journals nothing).
WITH gone AS (
    UPDATE shares s SET revoked_at = now()
     WHERE s.id = ANY($1::uuid[]) AND s.revoked_at IS NULL
    RETURNING s.id, s.recording_id
), event AS (
    INSERT INTO journal (recording_id, origin, kind, milestone, detail)
    SELECT gone.recording_id, 'human', 'share_revoked', r.milestone,
           $2::jsonb || jsonb_build_object('share', gone.id)
      FROM gone JOIN recordings r ON r.id = gone.recording_id
    RETURNING id, kind
)
SELECT gone.id,
       (SELECT count(pg_notify('transcriber_journal', id || ' ' || kind)) FROM event) AS notified
  FROM gone

-- name: ops_shares_known
-- Which of links $1 (ids) exist: to tell an unknown link from one revoked already.
SELECT id FROM shares WHERE id = ANY($1::uuid[])
