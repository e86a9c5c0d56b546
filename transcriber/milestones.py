"""Milestones of a recording and the step table: the one place that says which step
moves a record on, and under which lease, time limit, attempts and backoff."""

from __future__ import annotations

from actors import Backoff, Lease, Step, StepTable
from actors.steps import StepFn

RECEIVED = "received"
NORMALIZED = "normalized"
TRANSCRIBED = "transcribed"  # final: named in sql/0001_initial.sql's claim index too

MILESTONES = (RECEIVED, NORMALIZED, TRANSCRIBED)


def step_table(*, normalize: StepFn, recognize: StepFn) -> StepTable:
    """The pipeline with the given step functions (the audio ones, or fakes in tests)."""
    return StepTable.of([
        Step(name="normalize", milestone=RECEIVED, next_milestone=NORMALIZED, run=normalize,
             # Decoding is fast, but it reads the whole upload; the lease grows with
             # the audio once its duration is known (it is not, before normalize).
             lease=Lease(base_s=300.0),
             time_limit_s=24 * 3600.0, max_attempts=5, backoff=Backoff(base_s=5.0, cap_s=600.0)),
        Step(name="recognize", milestone=NORMALIZED, next_milestone=TRANSCRIBED, run=recognize,
             # CPU recognition runs ~10x faster than real time on one core; a lease of
             # one audio second per second leaves a wide margin before a retry.
             lease=Lease(base_s=120.0, per_audio_s=1.0),
             time_limit_s=72 * 3600.0, max_attempts=5, backoff=Backoff(base_s=30.0, cap_s=1800.0)),
    ])
