"""PostgreSQL from trio: the connection pool, named SQL, migrations and the embedded server."""
