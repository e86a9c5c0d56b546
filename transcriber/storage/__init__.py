"""Where the recordings' bytes live: the blob interface, the local folder, the
S3-compatible store, moving between them, and accepting a local file."""
