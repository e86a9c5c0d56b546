-- The seconds of audio an owner's records hold, kept on the owner as they change, so
-- the read of a claim at `received` (sql/queue.sql read_claimed, against the owner's
-- audio quota) takes one row instead of summing every record of the owner: the sum
-- read all of them for each record normalized (about 0.1 s at 100,000 records, and a
-- third of the server's time per transition in `transcriber bench` at 5,000).
--
-- Kept by a trigger on the only column it follows (duration_s, written once a record is
-- normalized: sql/queue.sql save_normalized), so no writer can forget it. The queue
-- saves a trip's normalized results in the order of their owners
-- (transcriber/pipeline/pg_queue.py _save_on): two trips' transactions then lock owners'
-- rows in the same order and cannot deadlock on them.
ALTER TABLE owners ADD COLUMN audio_s float8 NOT NULL DEFAULT 0;

UPDATE owners o
   SET audio_s = coalesce((SELECT sum(r.duration_s) FROM recordings r WHERE r.owner_id = o.id), 0);

CREATE FUNCTION owner_audio_follows() RETURNS trigger
LANGUAGE plpgsql AS $follows$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') AND OLD.duration_s IS NOT NULL THEN
        UPDATE owners SET audio_s = audio_s - OLD.duration_s WHERE id = OLD.owner_id;
    END IF;
    IF TG_OP IN ('UPDATE', 'INSERT') AND NEW.duration_s IS NOT NULL THEN
        UPDATE owners SET audio_s = audio_s + NEW.duration_s WHERE id = NEW.owner_id;
    END IF;
    RETURN NULL;
END
$follows$;

CREATE TRIGGER owner_audio_on_insert AFTER INSERT ON recordings
    FOR EACH ROW WHEN (NEW.duration_s IS NOT NULL) EXECUTE FUNCTION owner_audio_follows();
CREATE TRIGGER owner_audio_on_update AFTER UPDATE OF duration_s, owner_id ON recordings
    FOR EACH ROW
    WHEN (OLD.duration_s IS DISTINCT FROM NEW.duration_s OR OLD.owner_id <> NEW.owner_id)
    EXECUTE FUNCTION owner_audio_follows();
CREATE TRIGGER owner_audio_on_delete AFTER DELETE ON recordings
    FOR EACH ROW WHEN (OLD.duration_s IS NOT NULL) EXECUTE FUNCTION owner_audio_follows();
