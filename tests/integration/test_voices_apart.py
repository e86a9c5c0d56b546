"""Voices named once, the match's rule (capability `speakers`): a found speaker is named
after a library voice only when the pair is more alike than either side is to a cohort
of outsiders (sql/0031), and
the commit's SQL matches as the Python twin the benchmark measures
(transcriber/records/voices_match.py). Fakes of the audio steps save chosen voices
through the real query; the API and PostgreSQL are real."""

from __future__ import annotations

import random
import uuid
from typing import Any

import httpx
import numpy as np
import pytest

from tests.helpers.api_clients import diarized_with, normalized
from tests.integration.test_voices import (
    TURNS,
    owner_of,
    recognize,
    remember_voices,
    speakers_of,
    unit,
)
from transcriber.db.database import Database
from transcriber.pipeline.pg_queue import Saved
from transcriber.records.voices import MATCH, found_voices, saved_voices
from transcriber.records.voices_match import Voice, match

# A library voice, outsiders (the cohort), and a stranger about as like Anna (0.91: the
# old rule, the cosine at 0.87 alone, named them after her) as like the outsiders.
ANNA = unit((0, 1.0), (3, 0.6))
ANNA_AGAIN = unit((0, 1.0), (3, 0.6), (8, 0.15))
OUTSIDERS = [unit((0, 1.0), (k, 0.5)) for k in (5, 6, 7)]
STRANGER = unit((0, 1.0), (3, 0.25), (5, 0.2), (6, 0.2), (7, 0.2))
ELSE = unit((9, 1.0))


def diarize_with(voices: dict[int, list[float]], cohort: list[list[float]]) -> Any:
    async def diarize(job: Any, progress: Any) -> Saved:
        return Saved("save_speakers_voices", saved_voices(TURNS, 2, voices, cohort))

    return diarize


async def diarized(
    db: Database, c: httpx.AsyncClient, voices: dict[int, list[float]], cohort: list[Any]
) -> str:
    return await diarized_with(
        db, c, normalize=normalized, recognize=recognize, diarize=diarize_with(voices, cohort)
    )


async def keep(c: httpx.AsyncClient, rid: str, speaker: str, name: str) -> str:
    r = await c.post("/v1/voices", json={"name": name, "recording": rid, "speaker": speaker})
    assert r.status_code == 201, r.text
    return str(r.json()["id"])


@pytest.mark.scenario("speakers", "A stranger as like outsiders as like a voice is not named")
async def test_a_stranger_as_like_outsiders_as_like_a_voice_is_not_named(
    db: Database, as_ann: httpx.AsyncClient
) -> None:
    await remember_voices(as_ann)
    first = await diarized(db, as_ann, {0: ANNA, 1: ELSE}, OUTSIDERS)
    await keep(as_ann, first, "1", "Anna")
    assert float(np.dot(STRANGER, ANNA)) >= 0.87

    stranger = await diarized(db, as_ann, {0: STRANGER, 1: ELSE}, OUTSIDERS)
    assert await speakers_of(as_ann, stranger) == ["Speaker 1", "Speaker 2", "Speaker 1"]
    # Anna herself stands apart from the outsiders: named.
    again = await diarized(db, as_ann, {0: ANNA_AGAIN, 1: ELSE}, OUTSIDERS)
    assert await speakers_of(as_ann, again) == ["Anna", "Speaker 2", "Anna"]
    # Without a cohort (no espeak-ng where the daemon runs) the cosine alone decides.
    bare = await diarized(db, as_ann, {0: STRANGER, 1: ELSE}, [])
    assert await speakers_of(as_ann, bare) == ["Anna", "Speaker 2", "Anna"]


async def test_the_commit_names_as_the_rule_does(db: Database, as_ann: httpx.AsyncClient) -> None:
    """The diarize step's commit (SQL) and voices_match.match (Python) give the same
    names, on voices drawn near the library's, some near two of them."""
    await remember_voices(as_ann)
    rng = random.Random(36)
    base = [unit(*((i, 1.0), (i + 10, 0.7))) for i in range(4)]
    # Outsiders alike to Anna: some of her draws are refused for them.
    outsiders = [unit((0, 1.0), (10, 0.7), (k, 0.4)) for k in (20, 21, 22)]
    names = ["Anna", "Boris", "Cleo", "Dan"]
    for k in (0, 2):
        rid = await diarized(db, as_ann, {0: base[k], 1: base[k + 1]}, outsiders)
        await keep(as_ann, rid, "1", names[k])
        await keep(as_ann, rid, "2", names[k + 1])
    owner = await owner_of(db, rid)
    library = {}
    for v in (await as_ann.get("/v1/voices")).json()["voices"]:
        row = await db.fetchrow("voice_of_owner", owner, uuid.UUID(v["id"]))
        library[v["name"]] = Voice(tuple(row["vector"]), float(row["seconds"]))
    agreed = refused = 0
    for _ in range(6):
        found = {}
        for s in (0, 1):
            a, b = rng.sample(range(4), 2)
            mix = np.array(base[a]) + rng.uniform(0, 0.6) * np.array(base[b])
            mix += np.random.default_rng(rng.randrange(1 << 30)).normal(0, 0.015, len(mix))
            found[s] = list(mix / np.linalg.norm(mix))
        rid = await diarized(db, as_ann, found, outsiders)
        heard = {s: Voice(tuple(v), sec) for s, v, sec in found_voices(found, TURNS)}
        expected = match(heard, library, MATCH, [Voice(tuple(v), 0.0) for v in outsiders])
        got = {
            r["speaker"]: r["name"] for r in await db.fetch("voice_names", owner, uuid.UUID(rid))
        }
        assert got == expected, (found, got, expected)
        agreed += bool(got)
        refused += got != match(heard, library, MATCH)
    # The draws named somebody, and the cohort refused some of them.
    assert agreed >= 2 and refused >= 1
