"""`GET /metrics`: the runtime's counters of this process, and the queue as the database
sees it (shared by every daemon)."""

from __future__ import annotations

from actors import RuntimeMetrics
from transcriber.db.database import Database
from transcriber.milestones import TRANSCRIBED
from transcriber.pipeline import operator, ops_screen

RUNTIME_METRICS = RuntimeMetrics(namespace="transcriber")
"""This process's workers and supervisors count here (`transcriber_claims_total`, …);
the pipeline hands it to each."""


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


async def render_metrics(db: Database, recognizer: dict[str, str] | None = None) -> str:
    """`recognizer`: what recognizes here (transcriber.devices.recognizer_info)."""
    lines = []
    if recognizer is not None:
        labels = ",".join(f'{k}="{_escape(v)}"' for k, v in sorted(recognizer.items()))
        lines += [
            "# HELP transcriber_recognizer The recognizer of this process: model, device.",
            "# TYPE transcriber_recognizer gauge",
            f"transcriber_recognizer{{{labels}}} 1",
        ]
    # One read of the queue for both families below: only the records that may need
    # work or are stopped (sql/operator.sql `status`), never the finished history.
    queue = await ops_screen.queue_now(db)
    lines += [
        "# HELP transcriber_recordings Recordings by milestone, stopped ones apart; "
        "finished ones are not counted (that would read the whole history).",
        "# TYPE transcriber_recordings gauge",
    ]
    for s in operator.every_milestone(queue.milestones):
        m = _escape(s.milestone)
        if s.milestone != TRANSCRIBED:
            active = s.waiting + s.in_flight + s.pausing
            lines.append(f'transcriber_recordings{{milestone="{m}",stopped="false"}} {active}')
        lines.append(f'transcriber_recordings{{milestone="{m}",stopped="true"}} {s.stopped}')
    lines += [
        "# HELP transcriber_stopped Stopped recordings by stop reason.",
        "# TYPE transcriber_stopped gauge",
    ]
    for r in await db.fetch("metrics_stop_reasons"):
        lines.append(f'transcriber_stopped{{reason="{_escape(r["stop_reason"])}"}} {r["n"]}')
    lines += await screen_metrics(db, queue)
    return "\n".join(lines) + "\n" + RUNTIME_METRICS.render()


async def screen_metrics(db: Database, glance: ops_screen.QueueNow) -> list[str]:
    """What the operator's screen shows that the lines above lack: each milestone's
    records by state and its oldest waiting, the audio waiting for recognition, the
    daemons by state with their last beat and recognition totals (throughput and stops
    per minute are the rates of the runtime's counters); `glance`, the queue read for
    the lines above. Cancellation: plain reads."""
    lines = [
        "# HELP transcriber_queue Records by milestone and state (waiting, in_flight, "
        "pausing before a retry, stopped), as the operator's screen counts them.",
        "# TYPE transcriber_queue gauge",
    ]
    for m in glance.milestones:
        name = _escape(m.milestone)
        for state, n in (
            ("waiting", m.waiting),
            ("in_flight", m.in_flight),
            ("pausing", m.pausing),
            ("stopped", m.stopped),
        ):
            lines.append(f'transcriber_queue{{milestone="{name}",state="{state}"}} {n}')
    lines += [
        "# HELP transcriber_oldest_waiting_seconds How long the oldest waiting record of "
        "each milestone has waited.",
        "# TYPE transcriber_oldest_waiting_seconds gauge",
    ]
    for m in glance.milestones:
        if m.oldest_waiting_s is not None:
            lines.append(
                f'transcriber_oldest_waiting_seconds{{milestone="{_escape(m.milestone)}"}} '
                f"{m.oldest_waiting_s:.3f}"
            )
    lines += [
        "# HELP transcriber_audio_waiting_seconds Audio normalized and not yet recognized.",
        "# TYPE transcriber_audio_waiting_seconds gauge",
        f"transcriber_audio_waiting_seconds {glance.audio_waiting_s:.3f}",
    ]
    daemons = await ops_screen.daemons(db)
    lines += [
        "# HELP transcriber_daemons Daemons of the last day by state (running, silent: "
        "stopped beating, stopped).",
        "# TYPE transcriber_daemons gauge",
    ]
    for state in ("running", "silent", "stopped"):
        lines.append(
            f'transcriber_daemons{{state="{state}"}} {sum(d.state == state for d in daemons)}'
        )
    for metric, help_text, field in (
        ("daemon_beat_age_seconds", "Seconds since each daemon's last beat.", "silent_s"),
        (
            "daemon_recognized_audio_seconds",
            "Audio each daemon recognized since it started (its counter).",
            "recognized_audio_s",
        ),
        (
            "daemon_recognizing_seconds",
            "Seconds each daemon spent recognizing since it started (its counter).",
            "recognizing_s",
        ),
    ):
        kind = "gauge" if field == "silent_s" else "counter"
        lines += [f"# HELP transcriber_{metric} {help_text}", f"# TYPE transcriber_{metric} {kind}"]
        for d in daemons:
            if d.stopped_at is None:
                labels = f'daemon="{d.id}",host="{_escape(d.host)}",pid="{d.pid}"'
                lines.append(f"transcriber_{metric}{{{labels}}} {getattr(d, field):.3f}")
    return lines
