"""A recording's milestones, in order: the vocabulary the pipeline, the cards and the
pages share. Which step moves a record from one to the next is the step table's
(transcriber.pipeline.step_table)."""

RECEIVED = "received"
NORMALIZED = "normalized"
TRANSCRIBED = "transcribed"  # final: named in sql/0001_initial.sql's claim index too

MILESTONES = (RECEIVED, NORMALIZED, TRANSCRIBED)
