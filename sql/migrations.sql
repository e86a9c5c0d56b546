---------------------------------------------------------------------------------------
-- Migrations: the bookkeeping of transcriber.db.migrations, which applies the
-- NNNN_name.sql files of this folder in order, each once.
---------------------------------------------------------------------------------------

-- name: migrations_lock
-- Held to the end of the migrating transaction, so two processes starting at once
-- apply each migration once: the second waits, then finds nothing left to do.
SELECT pg_advisory_xact_lock(7318829305417745)

-- name: migrations_table
CREATE TABLE IF NOT EXISTS schema_migrations (
    version    integer PRIMARY KEY,
    name       text NOT NULL,
    applied_at timestamptz NOT NULL DEFAULT now()
)

-- name: migrations_applied
SELECT version FROM schema_migrations ORDER BY version

-- name: migration_record
INSERT INTO schema_migrations (version, name) VALUES ($1, $2)
