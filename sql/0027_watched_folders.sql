-- Folders the service watches for an owner (transcriber/watch; `transcriber watch add`).
-- A watch is an owner field: the operator adds it for the owner, the pipeline never
-- writes it, and it goes with its owner.
CREATE TABLE watches (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    owner_id    bigint NOT NULL REFERENCES owners (id) ON DELETE CASCADE,
    -- An absolute path as the daemons see it (a local or mounted folder).
    folder      text NOT NULL CHECK (folder LIKE '/%' AND length(folder) <= 4096),
    -- The transcript's renderings written beside each file (transcriber.watch.formats).
    formats     text[] NOT NULL CHECK (cardinality(formats) BETWEEN 1 AND 6),
    created_at  timestamptz NOT NULL DEFAULT now(),
    -- The last scan of any daemon: when, by whom (host:pid), and why it could not read
    -- the folder (NULL: it could).
    scanned_at  timestamptz,
    scanned_by  text,
    scan_error  text,
    CONSTRAINT watch_once UNIQUE (owner_id, folder)
);

-- Each content an owner's watches took, once: the claim is this row (its key the owner
-- and the file's sha256), so a rename, a restart or a second daemon on the same folder
-- finds it taken. The row stays when its watch is removed (adding the folder again does
-- not take the same files again) and when the owner deletes the record (the file is not
-- transcribed again behind their back); it goes with the owner.
CREATE TABLE watch_takes (
    owner_id         bigint NOT NULL REFERENCES owners (id) ON DELETE CASCADE,
    content_sha256   bytea NOT NULL CHECK (octet_length(content_sha256) = 32),
    watch_id         bigint REFERENCES watches (id) ON DELETE SET NULL,
    -- Where and as what it was taken: its transcript is written beside that name.
    folder           text NOT NULL,
    name             text NOT NULL,
    size_bytes       bigint NOT NULL CHECK (size_bytes >= 0),
    mtime_ns         bigint NOT NULL,
    taken_at         timestamptz NOT NULL DEFAULT now(),
    -- The daemon taking it, until its record commits; a claim whose lease ran out (its
    -- daemon died between the claim and the commit) is taken over.
    claim_token      uuid,
    lease_expires_at timestamptz,
    -- No foreign key: a record its owner deletes leaves the take (see above).
    recording_id     uuid,
    -- The stop whose note (NAME.stopped.txt) was written; the outcome once written.
    noted_stop       text,
    written_at       timestamptz,
    written          text,
    PRIMARY KEY (owner_id, content_sha256),
    CONSTRAINT watch_claim_whole CHECK ((claim_token IS NULL) = (lease_expires_at IS NULL))
);

-- The takes whose transcript is still to be written, per watch.
CREATE INDEX watch_takes_open ON watch_takes (watch_id) WHERE written_at IS NULL;
