-- Recognition drafts (sql/0028_recognition_drafts.sql): written by the recognize step
-- (transcriber.records.drafts), read by the OpenAI endpoint's streamed answers.

-- name: drafts_begin
-- An attempt's first pieces: the earlier attempts' go, while the claim is this one's.
DELETE FROM recognition_drafts d
 USING recordings r
 WHERE d.recording_id = $1 AND r.id = $1 AND r.claim_token = $2
   AND d.claim_token <> $2;

-- name: drafts_add
-- Pieces $3, $3 + 1, … of the attempt holding claim $2; none when the claim is lost.
INSERT INTO recognition_drafts (recording_id, claim_token, piece, text)
SELECT r.id, $2, $3 + u.n - 1, u.text
  FROM recordings r, unnest($4::text[]) WITH ORDINALITY AS u (text, n)
 WHERE r.id = $1 AND r.claim_token = $2
ON CONFLICT DO NOTHING;

-- name: owner_draft
-- The owner's record's pieces of its latest attempt, from piece $3 on.
SELECT d.claim_token, d.text
  FROM recognition_drafts d JOIN recordings r ON r.id = d.recording_id
 WHERE r.owner_id = $1 AND d.recording_id = $2 AND d.piece >= $3
   AND d.claim_token = (SELECT claim_token FROM recognition_drafts
                         WHERE recording_id = $2 AND piece = 0 LIMIT 1)
 ORDER BY d.piece;
