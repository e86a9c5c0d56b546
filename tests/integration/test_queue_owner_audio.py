"""The owner's audio total the claim's read takes for the quota (sql/0014): kept by a
trigger as records are normalized and normalized again, equal to the sum it replaced."""

from __future__ import annotations

import uuid
from typing import Any

from actors import Claim, Job, StepTable
from tests.helpers.pg_pipeline import accept, table
from transcriber.db.database import Database
from transcriber.owners import add_owner
from transcriber.pipeline.pg_queue import PgQueue, Saved


async def _normalize(queue: PgQueue, duration_s: float) -> Any:
    job = await queue.next_job()
    assert job is not None and job.milestone == "received"
    ok = await queue.commit(
        job, queue.steps["received"], Saved("save_normalized", (f"{job.claim.id}.wav", duration_s))
    )
    assert ok
    return job


async def _total(db: Database, owner: int) -> float:
    return await db.run(lambda con: con.fetchval("SELECT audio_s FROM owners WHERE id = $1", owner))


async def test_the_owner_total_follows_normalized_audio(db: Database, owner_id: int) -> None:
    bob = (await add_owner(db, "bob")).id
    # Normalization only: a normalized record waits, unclaimed, for a recognizer.
    queue = PgQueue(db, StepTable({"received": table().steps["received"]}))
    for name in ("a.wav", "b.wav"):
        await accept(db, owner_id, name)
    first = await _normalize(queue, 5.0)
    await _normalize(queue, 7.0)
    await accept(db, bob, "c.wav")
    await _normalize(queue, 11.0)
    assert await _total(db, owner_id) == 12.0
    assert await _total(db, bob) == 11.0
    # The total is the sum over the owner's records it stands for.
    assert await db.fetchval("owner_audio_seconds", owner_id) == 12.0

    # A new record of alice's reads what her other records hold.
    await accept(db, owner_id, "d.wav")
    job = await queue.next_job()
    assert job is not None and job.inputs["owner_audio_s"] == 12.0
    assert job.inputs["owner_id"] == owner_id

    # A record back at `received` with audio of its own (as one normalized again) reads
    # the others' only; a new duration replaces its old one in the total.
    await db.run(
        lambda con: con.execute(
            "UPDATE recordings SET milestone = 'received', claim_token = NULL,"
            " lease_expires_at = NULL WHERE id = $1",
            first.claim.id,
        )
    )
    again = await queue.next_job()
    assert again is not None and again.claim.id == first.claim.id
    assert again.inputs["owner_audio_s"] == 7.0
    await db.execute("save_normalized", first.claim.id, "x", 6.0)
    assert await _total(db, owner_id) == 13.0 == await db.fetchval("owner_audio_seconds", owner_id)
    assert await _total(db, bob) == 11.0


class _Statements:
    """A connection that only notes the statements' rows, in order."""

    def __init__(self) -> None:
        self.rows: list[tuple[Any, ...]] = []

    async def executemany(self, _sql: str, rows: list[tuple[Any, ...]]) -> None:
        self.rows.extend(rows)


async def test_a_trip_saves_in_the_order_of_owners(db: Database) -> None:
    """Each normalized result locks its owner's row (the total's trigger) to the end of
    the trip's transaction: saved in the order of owners, two trips never hold one
    owner each while waiting for the other's."""
    queue = PgQueue(db, table())
    jobs = [
        Job(Claim(uuid.uuid4(), uuid.uuid4()), "received", 1, 60.0, 0.0, {"owner_id": owner})
        for owner in (3, 1, 2)
    ]
    con = _Statements()
    saves = [(j, Saved("save_normalized", ("ref", 1.0))) for j in jobs]
    await queue._save_on(con, saves, {(j.claim.id, j.claim.token) for j in jobs})  # type: ignore[arg-type]
    assert [r[0] for r in con.rows] == [jobs[1].claim.id, jobs[2].claim.id, jobs[0].claim.id]


async def test_the_record_claimed_with_a_commit_reads_the_audio_that_commit_saved(
    db: Database, owner_id: int
) -> None:
    """A commit that claims the worker's next record reads it in the same statement,
    before the commit's own saves: the next record of the same owner must still count
    the audio just normalized, or the quota lets one record too many through."""
    queue = PgQueue(db, StepTable({"received": table().steps["received"]}))
    for name in ("a.wav", "b.wav"):
        await accept(db, owner_id, name)
    first = await queue.next_job()
    assert first is not None
    ok, following = await queue.commit_then_next(
        first, queue.steps["received"], Saved("save_normalized", ("a.wav.out", 5.0))
    )
    assert ok and following is not None and following.claim.id != first.claim.id
    assert following.inputs["owner_audio_s"] == 5.0
    # The claim read again is the one the record carries.
    read = await queue.read(following.claim)
    assert read is not None and read.inputs == following.inputs
