"""`GET /metrics`: the queue by milestone and stop reason, and the runtime's counters."""

from __future__ import annotations

import re

import httpx
import pytest

from tests.helpers.api_clients import (
    transcribe,
)
from tests.helpers.pg_pipeline import accept, table
from transcriber.db.database import Database
from transcriber.pipeline.pg_queue import PgQueue


def value(text: str, series: str) -> float:
    m = re.search(rf"^{re.escape(series)} (\S+)$", text, re.M)
    assert m, f"{series} not in\n{text}"
    return float(m.group(1))


@pytest.mark.scenario("operations", "Metrics show the queue")
async def test_metrics_count_milestones_stops_and_steps(
    db: Database, owner_id: int, base_url: str
) -> None:
    async with httpx.AsyncClient(base_url=base_url) as c:
        before = (await c.get("/metrics")).text
    claims_before = value(before, "transcriber_claims_total")
    for i in range(3):
        await accept(db, owner_id, f"{i}.wav")
    await transcribe(db)  # all three through both steps
    parked = await accept(db, owner_id, "parked.wav")
    queue = PgQueue(db, table())
    job = await queue.read(await queue.claim())
    assert job.claim.id == parked and await queue.stop(job, "empty_audio", "no samples")

    async with httpx.AsyncClient(base_url=base_url) as c:
        answer = await c.get("/metrics")
    assert answer.status_code == 200
    assert answer.headers["content-type"].startswith("text/plain")
    text = answer.text
    # Finished records are not counted (that would read the whole history); every other
    # milestone is, zeros too.
    assert 'transcriber_recordings{milestone="transcribed",stopped="false"}' not in text
    assert value(text, 'transcriber_recordings{milestone="transcribed",stopped="true"}') == 0
    assert value(text, 'transcriber_recordings{milestone="received",stopped="true"}') == 1
    assert value(text, 'transcriber_recordings{milestone="received",stopped="false"}') == 0
    assert value(text, 'transcriber_recordings{milestone="normalized",stopped="false"}') == 0
    assert value(text, 'transcriber_stopped{reason="empty_audio"}') == 1
    assert value(text, "transcriber_claims_total") - claims_before == 6
    assert value(text, 'transcriber_step_seconds_count{step="recognize"}') >= 3
