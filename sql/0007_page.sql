-- The owner's web page: sign-in sessions, the owner's corrections of a transcript, and
-- full-text search over titles and transcripts.

-- A signed-in browser. The cookie holds a random secret; only its sha256 is stored.
-- `token_hash` is the owner's API token hash at sign-in: a session is valid only while
-- that token is still one `owner_by_token` accepts for the owner, so whatever ends a
-- token for the API (rotating it, revoking it) ends every session signed in with it.
CREATE TABLE page_sessions (
    id_hash     bytea PRIMARY KEY,
    owner_id    bigint NOT NULL REFERENCES owners (id) ON DELETE CASCADE,
    token_hash  bytea NOT NULL,
    -- The session's anti-forgery token, sent back in every form and state-changing request.
    csrf        text NOT NULL,
    created_at  timestamptz NOT NULL DEFAULT now(),
    expires_at  timestamptz NOT NULL
);
CREATE INDEX page_sessions_by_owner ON page_sessions (owner_id);
CREATE INDEX page_sessions_expiry ON page_sessions (expires_at);

-- An owner field: the owner's text for one segment (by its index in the transcript's
-- segments), shown and exported instead of the machine's. Only the page writes it; the
-- pipeline never does (its transcript row keeps the machine text untouched).
CREATE TABLE corrections (
    recording_id uuid NOT NULL REFERENCES recordings (id),
    segment      integer NOT NULL CHECK (segment >= 0),
    text         text NOT NULL,
    corrected_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (recording_id, segment)
);

-- Search: words of the title (and file name), of the machine transcript and of the
-- owner's corrections. The 'simple' configuration: no stemming, so any language is
-- found by its own words (recordings are in many). The queries use these expressions
-- exactly, so the indexes serve them.
CREATE INDEX recordings_title_search ON recordings
    USING gin (to_tsvector('simple', coalesce(title, '') || ' ' || coalesce(filename, '')));
CREATE INDEX transcripts_text_search ON transcripts
    USING gin (to_tsvector('simple', text));
CREATE INDEX corrections_text_search ON corrections
    USING gin (to_tsvector('simple', text));
