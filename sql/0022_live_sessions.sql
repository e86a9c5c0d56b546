-- Live sessions are records from their first second (transcriber/live/): a session of
-- the realtime socket is a record of its owner at the milestone `live` from its start,
-- which no step starts from, so no worker claims it (claim_next joins the step table's
-- milestones) while the session runs. Beside it, the session's own row: the lease of
-- the daemon whose socket holds it (a token and an expiry, renewed while the socket
-- lives, as a claim's), where its audio is being written, how much of it is durable,
-- and the live draft, the turns' text as they complete. When the session ends, or its
-- lease runs out and another daemon takes it, the record moves on to `received` with
-- its audio complete, and the pipeline transcribes it like an upload. The row stays
-- (its `text` the draft the card shows until the transcript is there); it goes with
-- its record.
CREATE TABLE live_sessions (
    recording_id     uuid PRIMARY KEY REFERENCES recordings (id) ON DELETE CASCADE,
    token            uuid NOT NULL,
    lease_expires_at timestamptz NOT NULL,
    rate             integer NOT NULL CHECK (rate > 0),
    audio_ref        text NOT NULL,
    audio_bytes      bigint NOT NULL DEFAULT 0,
    text             text NOT NULL DEFAULT '',
    started_at       timestamptz NOT NULL DEFAULT now(),
    ended_at         timestamptz,
    end_reason       text,
    -- An object store's chunks still there after the session ended (they go once the
    -- whole is stored; a daemon that died in between leaves them to the sweep).
    chunks_left      boolean NOT NULL DEFAULT false
);
-- The sweep's question: which running sessions' leases ran out.
CREATE INDEX live_sessions_running ON live_sessions (lease_expires_at) WHERE ended_at IS NULL;
