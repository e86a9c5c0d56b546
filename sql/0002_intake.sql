-- HTTP intake: the startup sweep asks, for the files in the upload store, whether a
-- record points at them (`sources_referenced`). It asks by the file's own name (a
-- generated uuid), not its whole path, so a home reached by another path (a symlink, a
-- relative TRANSCRIBER_HOME) can never make a stored upload look like a stray.
CREATE INDEX recordings_by_source_name ON recordings ((regexp_replace(source_path, '^.*/', '')));
