"""transcriber: audio recordings in, text out, on a durable PostgreSQL pipeline."""
