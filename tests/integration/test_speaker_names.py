"""The owner's names for a record's speakers and their moves of segments, on a real
PostgreSQL through the real app over loopback HTTP: every rendering shows them, another
owner cannot touch them, and a re-run of diarization keeps them (capability `speakers`).
The diarization itself is a fake step here (tests/integration/test_speakers.py runs the
real one); the turns it saves are what the real step saves."""

from __future__ import annotations

import re
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest

from actors import Wakeup, Worker
from tests.helpers.api_clients import diarized_with, normalized
from tests.helpers.cli_process import cli
from tests.helpers.pg_pipeline import accept, journal
from tests.helpers.postgres import scratch_database
from tests.helpers.sql_text import code_only
from transcriber.db.database import Database, open_database
from transcriber.db.migrations import migrate
from transcriber.db.named_sql import BENCH_AREAS, load_migrations, load_queries
from transcriber.operators import add_operator
from transcriber.owners import add_owner
from transcriber.pipeline.pg_queue import PgQueue, Saved
from transcriber.pipeline.step_table import step_table
from transcriber.records.voices import saved_voices

ROOT = Path(__file__).resolve().parents[2]

SEGMENTS = [
    {"start": 0.0, "end": 2.0, "text": "Good morning."},
    {"start": 2.5, "end": 4.0, "text": "Morning to you."},
    {"start": 4.5, "end": 6.0, "text": "Shall we start?"},
]
TURNS = [[0.0, 2.2, 0], [2.3, 4.2, 1], [4.3, 6.0, 0]]


def scenario(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("speakers", title)


async def recognize(job: Any, progress: Any) -> Saved:
    return Saved("save_transcript", (" ".join(s["text"] for s in SEGMENTS), SEGMENTS, "en", "t"))


diarized_runs: list[Any] = []


async def diarize(job: Any, progress: Any) -> Saved:
    diarized_runs.append(job.claim.id)
    return Saved("save_speakers_voices", saved_voices(TURNS, 2, {}))


async def diarized(db: Database, as_owner: httpx.AsyncClient) -> str:
    return await diarized_with(
        db, as_owner, normalize=normalized, recognize=recognize, diarize=diarize
    )


async def renderings(c: httpx.AsyncClient, rid: str) -> dict[str, Any]:
    base = f"/v1/recordings/{rid}"
    return {
        "json": (await c.get(f"{base}/transcript.json")).json(),
        "srt": (await c.get(f"{base}/transcript.srt")).text,
        "vtt": (await c.get(f"{base}/transcript.vtt")).text,
        "text": (await c.get(f"{base}/text")).text,
    }


async def name_and_move(as_ann: httpx.AsyncClient, rid: str) -> None:
    r = await as_ann.put(f"/v1/recordings/{rid}/speakers/Speaker 2", json={"name": "  Anna "})
    assert r.status_code == 200 and r.json() == {"label": "Speaker 2", "name": "Anna"}, r.text
    r = await as_ann.put(f"/v1/recordings/{rid}/segments/2/speaker", json={"speaker": "Anna"})
    assert r.status_code == 200 and r.json() == {"segment": 2, "speaker": "Anna"}, r.text


def shows_names(shown: dict[str, Any]) -> None:
    j = shown["json"]
    assert [s["speaker"] for s in j["segments"]] == ["Speaker 1", "Anna", "Anna"]
    assert [(s["name"], s["label"]) for s in j["speakers"]] == [
        ("Speaker 1", "Speaker 1"),
        ("Anna", "Speaker 2"),
    ]
    assert re.findall(r"^(?:Speaker 1|Anna): ", shown["srt"], re.M) == [
        "Speaker 1: ",
        "Anna: ",
        "Anna: ",
    ]
    assert re.findall(r"<v ([^>]+)>", shown["vtt"]) == ["Speaker 1", "Anna", "Anna"]
    assert shown["text"] == "Speaker 1: Good morning.\n\nAnna: Morning to you. Shall we start?\n"


@scenario("The owner's names and moves are in every rendering")
async def test_names_and_moves_in_every_rendering(
    db: Database, as_ann: httpx.AsyncClient, as_ben: httpx.AsyncClient
) -> None:
    rid = await diarized(db, as_ann)
    before = await renderings(as_ann, rid)
    assert [s["speaker"] for s in before["json"]["segments"]] == [
        "Speaker 1",
        "Speaker 2",
        "Speaker 1",
    ]
    # Another owner's record is not there for them, names or segments alike.
    assert (
        await as_ben.put(f"/v1/recordings/{rid}/speakers/2", json={"name": "Eve"})
    ).status_code == 404
    assert (
        await as_ben.put(f"/v1/recordings/{rid}/segments/0/speaker", json={"speaker": "2"})
    ).status_code == 404
    assert await renderings(as_ann, rid) == before

    await name_and_move(as_ann, rid)
    shows_names(await renderings(as_ann, rid))
    events = [e for e in await journal(db, uuid.UUID(rid)) if e["kind"] == "edited"]
    assert [(e["origin"], e["detail"].get("speaker")) for e in events] == [
        ("human", "Speaker 2"),
        ("human", "Speaker 2"),
    ]

    # Refused: another speaker's name or label, a second line, too long; no such
    # speaker or segment.
    for name in ("Anna", "Speaker 2", "speaker 2", "Bo\nBee", "x" * 81):
        r = await as_ann.put(f"/v1/recordings/{rid}/speakers/1", json={"name": name})
        assert r.status_code == 422, (name, r.text)
    assert (
        await as_ann.put(f"/v1/recordings/{rid}/speakers/Speaker 3", json={"name": "Cy"})
    ).status_code == 404
    assert (
        await as_ann.put(f"/v1/recordings/{rid}/segments/3/speaker", json={"speaker": "1"})
    ).status_code == 404
    r = await as_ann.put(f"/v1/recordings/{rid}/segments/0/speaker", json={"speaker": "Speaker 9"})
    assert r.status_code == 422
    shows_names(await renderings(as_ann, rid))

    # Back to what diarization found: the label by an empty name, the segment by null.
    await as_ann.put(f"/v1/recordings/{rid}/speakers/Anna", json={"name": ""})
    await as_ann.put(f"/v1/recordings/{rid}/segments/2/speaker", json={"speaker": None})
    assert await renderings(as_ann, rid) == before


async def diarized_at(db: Database, rid: str) -> Any:
    return await db.run(
        lambda con: con.fetchval(
            "SELECT diarized_at FROM transcripts WHERE recording_id = $1", uuid.UUID(rid)
        )
    )


@scenario("A re-run of diarization keeps the owner's names")
async def test_rerun_keeps_names(db: Database, as_ann: httpx.AsyncClient) -> None:
    rid = await diarized(db, as_ann)
    await name_and_move(as_ann, rid)
    runs = diarized_runs.count(uuid.UUID(rid))
    first = await diarized_at(db, rid)
    # Diarization again, as a resume from `recognized` runs it: the step saves its turns
    # once more over the old ones. (The pipeline reaches a milestone once: the record is
    # put back before `transcribed` by hand, its journal's entry with it.)

    async def back_to_recognized(con: Any) -> None:
        await con.execute(
            "UPDATE recordings SET milestone = 'recognized' WHERE id = $1", uuid.UUID(rid)
        )
        await con.execute(
            "DELETE FROM journal WHERE recording_id = $1 AND kind = 'milestone_reached'"
            " AND milestone = 'transcribed'",
            uuid.UUID(rid),
        )

    await db.run(back_to_recognized)
    steps = step_table(normalize=normalized, recognize=recognize, diarize=diarize)
    w = Worker("w", PgQueue(db, steps), steps, Wakeup())
    while await w.work_once():
        pass
    assert diarized_runs.count(uuid.UUID(rid)) == runs + 1
    assert await diarized_at(db, rid) > first
    shows_names(await renderings(as_ann, rid))

    # Only the owner's routes write the names and moves: no query of the pipeline does.
    writes = re.compile(
        r"\b(?:INSERT\s+INTO|UPDATE|DELETE\s+FROM)\s+(?:speaker_names|speaker_choices)\b", re.I
    )
    writers = {n for n, sql in load_queries(BENCH_AREAS).items() if writes.search(code_only(sql))}
    assert writers == {"speaker_name_set", "speaker_choice_set"}
    callers = {
        str(p.relative_to(ROOT))
        for p in (ROOT / "transcriber").rglob("*.py")
        for name in writers
        if f'"{name}"' in p.read_text()
    }
    assert callers == {"transcriber/records/speaker_names.py"}
    users = {
        str(p.relative_to(ROOT))
        for p in (ROOT / "transcriber").rglob("*.py")
        if p.name != "speaker_names.py"
        and re.search(r"\b(?:name_speaker|choose_speaker)\(", p.read_text())
    }
    assert users == {"transcriber/http/speaker_changes.py"}


NAME = "Zebulon Quartz"


@scenario("A speaker's name stays out of the journal")
async def test_a_renamed_speakers_name_stays_out_of_the_journal(
    db: Database, db_url: str, base_url: str, as_ann: httpx.AsyncClient
) -> None:
    rid = await diarized(db, as_ann)
    base = f"/v1/recordings/{rid}"
    assert (await as_ann.put(f"{base}/speakers/2", json={"name": NAME})).status_code == 200
    assert (await as_ann.put(f"{base}/speakers/{NAME}", json={"name": "Zeb"})).status_code == 200
    assert (await as_ann.put(f"{base}/speakers/Zeb", json={"name": ""})).status_code == 200
    # The journal says which speaker was named, and whether it has a name now.
    named = [
        (e["detail"]["speaker"], e["detail"]["named"])
        for e in await journal(db, uuid.UUID(rid))
        if e["kind"] == "edited"
    ]
    assert named == [("Speaker 2", True), ("Speaker 2", True), ("Speaker 2", False)]

    olga = await add_operator(db, "olga")
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as ops:
        signed = await ops.post("/ops/signin", data={"token": olga.token, "next": "/ops"})
        assert signed.status_code == 303, signed.text
        page = await ops.get(f"/ops/records/{rid}")
        assert page.status_code == 200 and "edited" in page.text
        assert "Zeb" not in page.text

    async def printed() -> str:
        shown = await cli(db_url, "journal", rid)
        as_json = await cli(db_url, "journal", rid, "--json")
        assert shown.returncode == 0 and as_json.returncode == 0, shown.stderr + as_json.stderr
        assert "edited" in shown.stdout and "edited" in as_json.stdout
        return shown.stdout + as_json.stdout

    assert "Zeb" not in await printed()
    assert (await as_ann.delete(base)).status_code == 204
    after = await printed()
    assert "deleted" in after and "Zeb" not in after


@scenario("Names journaled before are taken back")
async def test_the_migration_takes_journaled_names_back(pg_admin_url: str, aio_loop: None) -> None:
    async with (
        scratch_database(pg_admin_url) as url,
        open_database(url, min_size=1, max_size=2) as old,
    ):
        # The schema as it was before sql/0020_journal_settled.sql, and journal rows of
        # renames as they were written then.
        async def before(con: Any) -> None:
            await con.execute(old.sql("migrations_table"))
            for m in load_migrations():
                if m.version < 20:
                    await con.execute(m.sql)
                    await con.execute(old.sql("migration_record"), m.version, m.name)

        await old.run(before)
        owner = await add_owner(old, "ann")
        rid = await accept(old, owner.id, "talk.wav")
        by = {"by": "owner", "owner_id": owner.id, "via": "api", "speaker": "Speaker 2"}
        details = [{**by, "name": NAME}, {**by, "name": None}, {"by": "owner", "fields": ["title"]}]

        async def renamed(con: Any) -> None:
            for d in details:
                await con.execute(
                    "INSERT INTO journal (recording_id, origin, kind, milestone, detail)"
                    " VALUES ($1, 'human', 'edited', 'received', $2)",
                    rid,
                    d,
                )

        await old.run(renamed)
        await migrate(old)
        edited = [e["detail"] for e in await journal(old, rid) if e["kind"] == "edited"]
        assert edited == [{**by, "named": True}, {**by, "named": False}, details[2]]
