-- What deletions still have to remove from the store: the to-do list that makes a
-- deletion finish whatever happens to the process that made it.
--
-- A deletion removes the record's row and, after its commit, the stored bytes (the
-- upload, the normalized audio, every claim's audio of the record). A process that dies
-- between the two, a store that is away, or a reply lost on its way (the retry finds no
-- record and answers 404) would leave bytes no record names. So the deleting statement
-- (sql/deletion.sql) inserts here, in its own transaction, one row per deleted record
-- naming the refs of its bytes; the row goes only once the bytes are gone
-- (transcriber/records/deletion.py). Every daemon finishes the rows it finds, at start
-- and periodically, whatever their age: removing what is already gone is harmless, so
-- several daemons may race on one row.
--
-- No foreign key: the record is gone when the row is made.
CREATE TABLE removals (
    recording_id uuid PRIMARY KEY,
    refs         text[] NOT NULL,
    deleted_at   timestamptz NOT NULL DEFAULT now()
);
