"""`GET /metrics`: the runtime's counters of this process, and the queue as the database
sees it (shared by every daemon)."""

from __future__ import annotations

from actors import RuntimeMetrics
from transcriber.db.database import Database

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
    lines += [
        "# HELP transcriber_recordings Recordings by milestone; stopped ones apart.",
        "# TYPE transcriber_recordings gauge",
    ]
    for r in await db.fetch("metrics_milestones"):
        m = _escape(r["milestone"])
        lines.append(f'transcriber_recordings{{milestone="{m}",stopped="false"}} {r["active"]}')
        lines.append(f'transcriber_recordings{{milestone="{m}",stopped="true"}} {r["stopped"]}')
    lines += [
        "# HELP transcriber_stopped Stopped recordings by stop reason.",
        "# TYPE transcriber_stopped gauge",
    ]
    for r in await db.fetch("metrics_stop_reasons"):
        lines.append(f'transcriber_stopped{{reason="{_escape(r["stop_reason"])}"}} {r["n"]}')
    return "\n".join(lines) + "\n" + RUNTIME_METRICS.render()
