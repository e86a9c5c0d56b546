-- The operator's screen (/ops): operators with their own tokens, their sessions beside
-- the owners' in page_sessions (told apart by `kind`), the daemons' registrations and
-- heartbeats, and an index for the screen's per-minute counts of the journal.

-- Operators are not owners: they own no records and hold a token of their own (its
-- sha256 only), which no owner's route accepts; revoking keeps the row, as for owners.
CREATE TABLE operators (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    name        text NOT NULL UNIQUE CHECK (name <> ''),
    token_hash  bytea NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL DEFAULT now(),
    revoked_at  timestamptz
);

-- A session is an owner's (of the page at /) or an operator's (of /ops), never both:
-- each side's lookup asks for its own kind, so a secret of one kind opens nothing of
-- the other.
ALTER TABLE page_sessions
    ALTER COLUMN owner_id DROP NOT NULL,
    ADD COLUMN kind text NOT NULL DEFAULT 'owner' CHECK (kind IN ('owner', 'operator')),
    ADD COLUMN operator_id bigint REFERENCES operators (id) ON DELETE CASCADE,
    ADD CONSTRAINT session_holder CHECK (
        (kind = 'owner' AND owner_id IS NOT NULL AND operator_id IS NULL)
        OR (kind = 'operator' AND operator_id IS NOT NULL AND owner_id IS NULL));

-- A running (or once running) `transcriber serve`: registered at start, beaten while it
-- runs, marked stopped when it drains. Not a lease: nothing selects records by it, and
-- no queue column is written by its statements. `claims` is what its workers held at
-- the last beat ([{worker, id, token, since}]); the screen joins it with the records.
CREATE TABLE daemons (
    id           uuid PRIMARY KEY,
    host         text NOT NULL,
    pid          integer NOT NULL,
    version      text NOT NULL,
    workers      integer NOT NULL,
    model        text,
    device       text,
    started_at   timestamptz NOT NULL DEFAULT now(),
    beat_at      timestamptz NOT NULL DEFAULT now(),
    beat_every_s real NOT NULL CHECK (beat_every_s > 0),
    stopped_at   timestamptz,
    claims       jsonb NOT NULL DEFAULT '[]',
    -- Recognition done by this daemon since it started: seconds of audio, seconds taken
    -- (their ratio is its real-time factor).
    recognized_audio_s float8 NOT NULL DEFAULT 0,
    recognizing_s      float8 NOT NULL DEFAULT 0
);
CREATE INDEX daemons_by_beat ON daemons (beat_at DESC);

-- The screen's charts count milestones reached (per milestone) and stops per minute over
-- the last day: by kind, milestone and time, so each bucket is counted from the index
-- alone (the journal is append-only: its pages are soon all-visible).
CREATE INDEX journal_by_kind_time ON journal (kind, milestone, at);

-- The screen's search by part of a file name: trigrams, so `ILIKE '%part%'` is an index
-- scan, not a read of every record. pg_trgm is a trusted extension (PostgreSQL 13+): a
-- database owner may create it without being a superuser.
CREATE EXTENSION IF NOT EXISTS pg_trgm;
CREATE INDEX recordings_filename_trgm ON recordings USING gin (filename gin_trgm_ops);
