---------------------------------------------------------------------------------------
-- Owners and their API tokens (transcriber/owners.py; `owner_by_name` and `owner_list` for
-- the CLI's `owner` commands). Tokens are stored as their sha256 only ($2 of `owner_add`,
-- `owner_ensure`, `owner_rotate`; $1 of `owner_by_token`).
---------------------------------------------------------------------------------------

-- name: owner_add
-- $1 name, $2 token hash.
INSERT INTO owners (name, token_hash) VALUES ($1, $2) RETURNING id

-- name: owner_ensure
-- The owner of recordings submitted from this machine's command line.
-- $1 name, $2 token hash (of a token nobody holds).
WITH made AS (
    INSERT INTO owners (name, token_hash) VALUES ($1, $2)
    ON CONFLICT (name) DO NOTHING
    RETURNING id
)
SELECT id FROM made UNION ALL SELECT id FROM owners WHERE name = $1 LIMIT 1

-- name: owner_by_name
-- $1 name.
SELECT id, name FROM owners WHERE name = $1

-- name: owner_by_token
-- The owner holding an API token, by the token's sha256. The caller compares the hash
-- again in constant time; looking up by a hash leaks nothing about the token.
-- A revoked owner holds no token.
SELECT id, token_hash FROM owners WHERE token_hash = $1 AND revoked_at IS NULL

-- name: owner_list
-- Every owner with what they keep: for `transcriber owner list`.
SELECT o.id, o.name, o.created_at, o.revoked_at, count(r.id) AS recordings,
       coalesce(sum(r.size_bytes), 0)::bigint AS stored_bytes
  FROM owners o LEFT JOIN recordings r ON r.owner_id = o.id
 GROUP BY o.id
 ORDER BY o.name

-- name: owner_revoke
-- The owner's ($1, a name) token stops working at once; their records stay. No row: no
-- such owner. The first statement of the revoke's transaction: this row's lock waits for
-- a link being made (`share_add` locks the row FOR SHARE), so `owner_revoke_shares`,
-- the second statement, with a snapshot of its own, sees that link too.
UPDATE owners SET revoked_at = coalesce(revoked_at, now()) WHERE name = $1 RETURNING id

-- name: owner_revoke_shares
-- Every link of the revoked owner ($1, an id) ends for good, each journaled on its
-- record as `share_revoked` with origin `human` and detail $2 (who) with the link's id:
-- `owner_rotate` reinstates the owner, not the links (sql/0019). `links`: those ended.
WITH gone AS (
    UPDATE shares s SET revoked_at = now()
      FROM recordings r
     WHERE r.id = s.recording_id AND r.owner_id = $1 AND s.revoked_at IS NULL
    RETURNING s.id, s.recording_id, r.milestone
), event AS (
    INSERT INTO journal (recording_id, origin, kind, milestone, detail)
    SELECT recording_id, 'human', 'share_revoked', milestone,
           $2::jsonb || jsonb_build_object('share', id, 'why', 'owner_revoked')
      FROM gone
    RETURNING id, kind
)
SELECT (SELECT count(*) FROM gone) AS links,
       (SELECT count(pg_notify('transcriber_journal', id || ' ' || kind)) FROM event) AS notified

-- name: owner_rotate
-- A new token hash in place of the old one (which stops working at once); a revoked
-- owner is reinstated by it. Their live links stay: rotation is a new token, not a new
-- person (docs/security.md). No row: no such owner; `links`: their live links.
WITH owner AS (
    UPDATE owners SET token_hash = $2, revoked_at = NULL WHERE name = $1 RETURNING id
)
SELECT owner.id,
       (SELECT count(*) FROM shares s JOIN recordings r ON r.id = s.recording_id
         WHERE r.owner_id = owner.id AND s.revoked_at IS NULL
           AND (s.expires_at IS NULL OR s.expires_at > now())) AS links
  FROM owner
