-- Every reader that pages the journal (`journal --follow`, `/v1/recordings/{id}/events`)
-- sees every event once, in one stable order.
--
-- A journal id is taken at INSERT, not at COMMIT: a commit transaction that inserts id N
-- and then waits (on the owner's row its save locks) commits after id N+1 was read, and a
-- reader paging by id, now past N+1, never read N. Each row now carries the id of the
-- transaction that wrote it (`xid`), and readers read only the rows of transactions
-- below the oldest one still running (pg_snapshot_xmin of their snapshot): every
-- transaction there has ended, so no row can appear there later. Ordered by (xid, id),
-- what a reader has read is a prefix that only grows at its end: a cursor (xid, id)
-- never passes an event still to come, and a record's events numbered in that order
-- keep their numbers (`/events`' `after`). An event shows once every transaction that
-- began writing before it has ended: the commits and edits of the service take
-- milliseconds.
--
-- A sequence taken at commit would be commit order itself, but only by serializing every
-- journaling commit on one lock (the queue's commits among them); the transaction id is
-- taken anyway, and costs 8 bytes a row and one index entry.
--
-- The rows already written are all committed: they get xid 0 (a constant default, so
-- the table is not rewritten), before every new one, in id order among themselves.
ALTER TABLE journal ADD COLUMN xid xid8 NOT NULL DEFAULT '0';
ALTER TABLE journal ALTER COLUMN xid SET DEFAULT pg_current_xact_id();

-- The follower of every record's journal reads a range of it from its cursor; one
-- record's readers find its few rows through journal_by_recording and sort them.
CREATE INDEX journal_in_order ON journal (xid, id);

-- A speaker's name is the owner's text, as a correction is: the journal is read by
-- operators (`transcriber journal`, /ops) and outlives the record. A rename journaled
-- the name; it now journals whether the speaker was named or given its label back, and
-- the names journaled before go. The one rewrite of journal rows (the journal is
-- append-only; this takes back text it should never have held).
UPDATE journal
   SET detail = (detail - 'name') || jsonb_build_object('named', detail -> 'name' <> 'null')
 WHERE kind = 'edited' AND detail ? 'name';
