"""Where the recordings' bytes live: the blob interface, the local folder, the
S3-compatible store and moving between them. Recordings come in through transcriber.intake."""
