"""The step table: the one place that says which step moves a record on from each
milestone, and under which lease, time limit, attempts and backoff."""

from __future__ import annotations

from actors import Backoff, Lease, RunLimit, Step, StepFn, StepTable
from transcriber.milestones import NORMALIZED, RECEIVED, RECOGNIZED, TRANSCRIBED


def step_table(
    *,
    normalize: StepFn,
    recognize: StepFn,
    diarize: StepFn | None = None,
    lease_s: float = 30.0,
    renew_s: float = 10.0,
    run_limit_s: float = 900.0,
    run_limit_per_audio_s: float = 3.0,
    diarize_limit_per_audio_s: float = 1.5,
) -> StepTable:
    """The pipeline with the given step functions (the audio ones, or fakes in tests).

    With `diarize`, recognition reaches `recognized` and diarization `transcribed`; a
    record whose speakers are off skips it (its recognize result names `transcribed`,
    pg_queue.Saved.next_milestone). Without, recognition reaches `transcribed` itself.

    The lease is the time without a sign of life: a live worker renews it every
    `renew_s`, so it can be short, and a dead or frozen worker's record is taken over
    within it. The run limit bounds one attempt however alive its worker is.
    """
    lease = Lease(base_s=lease_s, renew_s=renew_s)
    steps = [
        Step(
            name="normalize",
            milestone=RECEIVED,
            next_milestone=NORMALIZED,
            run=normalize,
            # Decoding reads the whole upload; its duration is not known before it.
            lease=lease,
            run_limit=RunLimit(base_s=run_limit_s),
            time_limit_s=24 * 3600.0,
            max_attempts=5,
            backoff=Backoff(base_s=5.0, cap_s=600.0),
        ),
        Step(
            name="recognize",
            milestone=NORMALIZED,
            next_milestone=TRANSCRIBED if diarize is None else RECOGNIZED,
            run=recognize,
            # Base on these 2 cores takes ~0.09 s a second of audio (bench-audio); the
            # largest model, ~20 times the work, ~1.7 s. 3 s a second of audio leaves
            # it room and cuts a hung attempt of the longest record accepted (4 h,
            # TRANSCRIBER_MAX_DURATION_S) at 12.25 h, not at 40 h as 10 s did.
            lease=lease,
            run_limit=RunLimit(base_s=run_limit_s, per_audio_s=run_limit_per_audio_s),
            time_limit_s=72 * 3600.0,
            max_attempts=5,
            backoff=Backoff(base_s=30.0, cap_s=1800.0),
        ),
    ]
    if diarize is not None:
        steps.append(
            Step(
                name="diarize",
                milestone=RECOGNIZED,
                next_milestone=TRANSCRIBED,
                run=diarize,
                # Who spoke, after the transcript is stored (and readable): measured at
                # about a fifth of real time on a loaded 2-core CPU (bench-speakers),
                # its limit grows with the audio, half as fast as recognition's. A
                # record whose speakers are off skips it. Fewer attempts: a
                # diarization that keeps failing stops sooner, the transcript kept.
                lease=lease,
                run_limit=RunLimit(base_s=run_limit_s, per_audio_s=diarize_limit_per_audio_s),
                time_limit_s=72 * 3600.0,
                max_attempts=3,
                backoff=Backoff(base_s=30.0, cap_s=1800.0),
            )
        )
    return StepTable.of(steps)
