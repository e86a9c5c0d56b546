"""`GET /metrics`: the runtime's counters of this process, and the queue as the database
sees it (shared by every daemon)."""

from __future__ import annotations

from actors.metrics import REGISTRY
from transcriber.db import Database


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")


async def render_metrics(db: Database) -> str:
    lines = [
        "# HELP transcriber_recordings Recordings by milestone; stopped ones apart.",
        "# TYPE transcriber_recordings gauge",
    ]
    for r in await db.fetch("metrics_milestones"):
        m = _escape(r["milestone"])
        lines.append(f'transcriber_recordings{{milestone="{m}",stopped="false"}} {r["active"]}')
        lines.append(f'transcriber_recordings{{milestone="{m}",stopped="true"}} {r["stopped"]}')
    lines += ["# HELP transcriber_stopped Stopped recordings by stop reason.",
              "# TYPE transcriber_stopped gauge"]
    for r in await db.fetch("metrics_stop_reasons"):
        lines.append(f'transcriber_stopped{{reason="{_escape(r["stop_reason"])}"}} {r["n"]}')
    return "\n".join(lines) + "\n" + REGISTRY.render()
