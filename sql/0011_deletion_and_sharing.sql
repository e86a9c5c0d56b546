-- Owners delete their records and share them read-only.

-- Deletion removes the row (and with it the transcript, the corrections and the share
-- links); it is not a second flag that keeps a record out of selection. The journal
-- outlives the record: its events stay, with a last `deleted` one, so the operator can
-- still see that the record existed, what happened to it and who deleted it when. So
-- the journal no longer refers to the record by a foreign key; a write fenced by a
-- claim of a deleted record (a step that was working on it) journals its `lease_lost`
-- there too, instead of failing on the missing row. No journal event carries
-- transcript text (corrections journal the segment's index only).
ALTER TABLE journal DROP CONSTRAINT journal_recording_id_fkey;

ALTER TABLE transcripts
    DROP CONSTRAINT transcripts_recording_id_fkey,
    ADD CONSTRAINT transcripts_recording_id_fkey
        FOREIGN KEY (recording_id) REFERENCES recordings (id) ON DELETE CASCADE;
ALTER TABLE corrections
    DROP CONSTRAINT corrections_recording_id_fkey,
    ADD CONSTRAINT corrections_recording_id_fkey
        FOREIGN KEY (recording_id) REFERENCES recordings (id) ON DELETE CASCADE;

-- A read-only link to one record, for people without an account. The link holds a
-- long random secret; only its sha256 is stored. Several per record, each with the
-- owner's note; optional expiry; revoking sets `revoked_at` (the row stays, so the
-- owner still sees how often it was opened) and ends it at once.
CREATE TABLE shares (
    id             uuid PRIMARY KEY DEFAULT gen_random_uuid(),
    recording_id   uuid NOT NULL REFERENCES recordings (id) ON DELETE CASCADE,
    secret_hash    bytea NOT NULL UNIQUE,
    note           text NOT NULL DEFAULT '' CHECK (length(note) <= 200),
    created_at     timestamptz NOT NULL DEFAULT now(),
    expires_at     timestamptz,
    revoked_at     timestamptz,
    opened         bigint NOT NULL DEFAULT 0 CHECK (opened >= 0),
    last_opened_at timestamptz
);
CREATE INDEX shares_by_recording ON shares (recording_id, created_at);

-- Retention (TRANSCRIBER_RETENTION_DAYS) asks for the records older than a time.
CREATE INDEX recordings_by_age ON recordings (created_at);
