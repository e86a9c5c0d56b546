"""A recording's milestones, in order: the vocabulary the pipeline, the cards and the
pages share. Which step moves a record from one to the next is the step table's
(transcriber.pipeline.step_table)."""

RECEIVED = "received"
NORMALIZED = "normalized"
RECOGNIZED = "recognized"
"""The transcript is stored and readable; who spoke is not known yet (or not asked)."""
TRANSCRIBED = "transcribed"  # final: named in sql/0017_hot_commits.sql's `finished` too
"""Done: recognized, and diarized when the record asked for speakers."""

MILESTONES = (RECEIVED, NORMALIZED, RECOGNIZED, TRANSCRIBED)
