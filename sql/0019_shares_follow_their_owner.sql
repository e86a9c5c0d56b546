-- Share links follow their owner: a link answers only while its owner is active
-- (sql/shares.sql `share_open` and `share_find` join the owner), and revoking an owner
-- ends every link they made for good (sql/owners.sql `owner_revoke`), so a later
-- `owner rotate`, which reinstates the owner, does not bring back the links a stolen
-- token made. The links of owners revoked before this migration end here the same way.
UPDATE shares s SET revoked_at = o.revoked_at
  FROM recordings r JOIN owners o ON o.id = r.owner_id
 WHERE r.id = s.recording_id AND o.revoked_at IS NOT NULL AND s.revoked_at IS NULL;
