"""Voices named once (capability `speakers`): an owner's library of voices through the
API on a real PostgreSQL, over loopback HTTP. The diarize step here is a fake that saves
what the real one saves (turns, and each found speaker's voice) through the real query,
so the keeping and matching in the commit are the real ones; the last test takes the
voices from real diarizations of espeak-ng conversations."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import numpy as np
import pytest

from tests.helpers.api_clients import diarized_with, normalized
from tests.helpers.pg_pipeline import journal
from transcriber.db.database import Database
from transcriber.pipeline.pg_queue import Saved
from transcriber.records.voices import saved_voices

SEGMENTS = [
    {"start": 0.0, "end": 2.0, "text": "Good morning."},
    {"start": 2.5, "end": 4.0, "text": "Morning to you."},
    {"start": 4.5, "end": 6.0, "text": "Shall we start?"},
]
TURNS = [[0.0, 2.2, 0], [2.3, 4.2, 1], [4.3, 6.0, 0]]
DIM = 192


def scenario(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("speakers", title)


def unit(*weights: tuple[int, float]) -> list[float]:
    v = np.zeros(DIM)
    for i, w in weights:
        v[i] = w
    return list(v / np.linalg.norm(v))


ANNA = unit((0, 1.0), (5, 0.2))
ANNA_AGAIN = unit((0, 1.0), (6, 0.25))  # cosine 0.95 with ANNA
BORIS = unit((1, 1.0))
STRANGER = unit((2, 1.0))


async def recognize(job: Any, progress: Any) -> Saved:
    return Saved("save_transcript", (" ".join(s["text"] for s in SEGMENTS), SEGMENTS, "en", "t"))


def diarize_with(voices: dict[int, list[float]], turns: list[list[Any]] = TURNS) -> Any:
    async def diarize(job: Any, progress: Any) -> Saved:
        return Saved("save_speakers_voices", saved_voices(turns, 2, voices))

    return diarize


async def diarized(db: Database, c: httpx.AsyncClient, voices: dict[int, list[float]]) -> str:
    return await diarized_with(
        db, c, normalize=normalized, recognize=recognize, diarize=diarize_with(voices)
    )


async def speakers_of(c: httpx.AsyncClient, rid: str) -> list[str]:
    j = (await c.get(f"/v1/recordings/{rid}/transcript.json")).json()
    return [s["speaker"] for s in j["segments"]]


async def count(db: Database, table: str) -> int:
    return int(await db.run(lambda con: con.fetchval(f"SELECT count(*) FROM {table}")))


async def remember_voices(c: httpx.AsyncClient, on: bool = True) -> None:
    r = await c.patch("/v1/settings", json={"remember_voices": on})
    assert r.status_code == 200, r.text


@scenario("A voice named once names the speaker in later recordings")
async def test_a_voice_named_once_names_later_recordings(
    db: Database, as_ann: httpx.AsyncClient
) -> None:
    await remember_voices(as_ann)
    first = await diarized(db, as_ann, {0: BORIS, 1: ANNA})
    r = await as_ann.post(
        "/v1/voices", json={"name": " Anna ", "recording": first, "speaker": "Speaker 2"}
    )
    assert r.status_code == 201, r.text
    anna = r.json()
    assert anna["name"] == "Anna" and anna["recordings"] == 1 and "vector" not in anna
    listed = (await as_ann.get("/v1/voices")).json()["voices"]
    assert [(v["name"], v["id"]) for v in listed] == [("Anna", anna["id"])]

    # A later recording: Anna speaks first now, and is named; the stranger is not.
    later = await diarized(db, as_ann, {0: ANNA_AGAIN, 1: STRANGER})
    assert await speakers_of(as_ann, later) == ["Anna", "Speaker 2", "Anna"]
    for kind in ("text", "transcript.srt", "transcript.vtt"):
        assert "Anna" in (await as_ann.get(f"/v1/recordings/{later}/{kind}")).text, kind
    # The journal names nobody, and carries no vector.
    events = [e["detail"] for e in await journal(db, uuid.UUID(later))]
    assert "Anna" not in repr(events) and str(round(ANNA[0], 4))[:6] not in repr(events)

    # The same name from another recording adds to the voice (a weighted mean).
    r = await as_ann.post(
        "/v1/voices", json={"name": "Anna", "recording": later, "speaker": "Anna"}
    )
    assert r.status_code == 200 and r.json()["recordings"] == 2, r.text

    # The owner's own name wins; renaming the voice renames where it named.
    r = await as_ann.put(f"/v1/recordings/{later}/speakers/Anna", json={"name": "Ann K."})
    assert r.status_code == 200, r.text
    assert await speakers_of(as_ann, later) == ["Ann K.", "Speaker 2", "Ann K."]
    r = await as_ann.patch(f"/v1/voices/{anna['id']}", json={"name": "Anna P."})
    assert r.status_code == 200 and r.json()["name"] == "Anna P.", r.text
    assert await speakers_of(as_ann, first) == ["Speaker 1", "Anna P.", "Speaker 1"]
    assert await speakers_of(as_ann, later) == ["Ann K.", "Speaker 2", "Ann K."]
    # Back to the found label is that, not the voice's name again.
    r = await as_ann.put(f"/v1/recordings/{later}/speakers/Speaker 1", json={"name": ""})
    assert r.status_code == 200, r.text
    assert await speakers_of(as_ann, later) == ["Speaker 1", "Speaker 2", "Speaker 1"]


@scenario("One voice names one speaker")
async def test_one_voice_names_one_speaker(db: Database, as_ann: httpx.AsyncClient) -> None:
    await remember_voices(as_ann)
    first = await diarized(db, as_ann, {0: ANNA, 1: BORIS})
    r = await as_ann.post("/v1/voices", json={"name": "Anna", "recording": first, "speaker": "1"})
    assert r.status_code == 201, r.text
    # Both found speakers are like Anna; only the more alike is called so.
    both = await diarized(db, as_ann, {0: unit((0, 1.0), (7, 0.45)), 1: ANNA_AGAIN})
    assert await speakers_of(as_ann, both) == ["Speaker 1", "Anna", "Speaker 1"]


@scenario("Voices are remembered only when the owner opts in")
async def test_voices_are_kept_only_when_the_owner_opts_in(
    db: Database, as_ann: httpx.AsyncClient
) -> None:
    rid = await diarized(db, as_ann, {0: ANNA, 1: BORIS})
    assert await count(db, "record_voices") == 0
    r = await as_ann.post("/v1/voices", json={"name": "Anna", "recording": rid, "speaker": "1"})
    assert r.status_code == 409 and "remember_voices" in r.json()["error"], r.text

    await remember_voices(as_ann)
    rid = await diarized(db, as_ann, {0: ANNA, 1: BORIS})
    assert await count(db, "record_voices") == 2
    r = await as_ann.post("/v1/voices", json={"name": "Anna", "recording": rid, "speaker": "1"})
    assert r.status_code == 201, r.text
    later = await diarized(db, as_ann, {0: ANNA_AGAIN, 1: BORIS})
    assert (await speakers_of(as_ann, later))[0] == "Anna"

    # Turned off: what was kept of the records goes, and their names with it.
    await remember_voices(as_ann, on=False)
    assert await count(db, "record_voices") == 0 and await count(db, "voice_matches") == 0
    assert (await speakers_of(as_ann, later))[0] == "Speaker 1"
    again = await diarized(db, as_ann, {0: ANNA_AGAIN, 1: BORIS})
    assert (await speakers_of(as_ann, again))[0] == "Speaker 1"


@scenario("Deleting a voice deletes its vector and its names")
async def test_deleting_a_voice_deletes_its_vector_and_names(
    db: Database, as_ann: httpx.AsyncClient
) -> None:
    await remember_voices(as_ann)
    rid = await diarized(db, as_ann, {0: ANNA, 1: BORIS})
    vid = (
        await as_ann.post("/v1/voices", json={"name": "Anna", "recording": rid, "speaker": "1"})
    ).json()["id"]
    later = await diarized(db, as_ann, {0: ANNA_AGAIN, 1: BORIS})
    assert (await speakers_of(as_ann, later))[0] == "Anna"
    assert (await as_ann.delete(f"/v1/voices/{vid}")).status_code == 204
    assert await count(db, "voices") == 0 and await count(db, "voice_matches") == 0
    assert (await speakers_of(as_ann, later))[0] == "Speaker 1"
    assert (await as_ann.delete(f"/v1/voices/{vid}")).status_code == 404
    assert (await as_ann.get("/v1/voices")).json() == {"voices": []}


@scenario("Another owner, an operator and a link holder reach no voice")
async def test_others_reach_no_voice(
    db: Database, as_ann: httpx.AsyncClient, as_ben: httpx.AsyncClient, base_url: str
) -> None:
    await remember_voices(as_ann)
    await remember_voices(as_ben)
    rid = await diarized(db, as_ann, {0: ANNA, 1: BORIS})
    vid = (
        await as_ann.post("/v1/voices", json={"name": "Anna", "recording": rid, "speaker": "1"})
    ).json()["id"]
    later = await diarized(db, as_ann, {0: ANNA_AGAIN, 1: BORIS})

    # Another owner: ann's record and ann's voice are not there for them.
    body = {"name": "Eve", "recording": rid, "speaker": "1"}
    assert (await as_ben.post("/v1/voices", json=body)).status_code == 404
    assert (await as_ben.post("/v1/voices", json={**body, "voice": vid})).status_code == 404
    assert (await as_ben.patch(f"/v1/voices/{vid}", json={"name": "Eve"})).status_code == 404
    assert (await as_ben.delete(f"/v1/voices/{vid}")).status_code == 404
    assert (await as_ben.get("/v1/voices")).json() == {"voices": []}
    # ben's own record may not add to ann's voice either.
    bens = await diarized(db, as_ben, {0: ANNA, 1: BORIS})
    r = await as_ben.post(
        "/v1/voices", json={"name": "Anna", "recording": bens, "speaker": "1", "voice": vid}
    )
    assert r.status_code == 404, r.text
    assert (await as_ann.get("/v1/voices")).json()["voices"][0]["recordings"] == 1

    # A stranger: no token, no voices.
    async with httpx.AsyncClient(base_url=base_url) as stranger:
        assert (await stranger.get("/v1/voices")).status_code == 401
        assert (await stranger.get("/v1/settings")).status_code == 401

    # A link holder sees the found labels, not the names the voices gave.
    share = (await as_ann.post(f"/v1/recordings/{later}/shares", json={})).json()
    async with httpx.AsyncClient(base_url=base_url) as holder:
        page = (await holder.get(share["url"])).text
        assert "Anna" not in page and "Speaker 1" in page
        srt = (await holder.get(share["url"] + "/transcript.srt")).text
        assert "Anna" not in srt and "Speaker 1" in srt
    assert (await speakers_of(as_ann, later))[0] == "Anna"


@scenario("Voices on real speech name the same voices in another recording")
async def test_real_voices_name_the_same_voices_in_another_recording(
    db: Database, as_ann: httpx.AsyncClient, conversation: tuple[Any, list[Any]], tmp_path: Any
) -> None:
    """Two conversations of the same two espeak-ng voices, other words: diarized for real,
    their voices kept and matched by the real queries. The second's speech is named right."""
    from transcriber.audio.speakers import diarize
    from transcriber.audio.voice_cohort import cohort as voice_cohort
    from transcriber.bench.speakers import make_conversation
    from transcriber.speaker_options import SpeakersOption

    path, reference = conversation
    other = tmp_path / "again.wav"
    again = make_conversation(other, speakers=2, turns=8, seed=70)
    two = SpeakersOption.parse("2")
    a, b = diarize(path, two), diarize(other, two)
    outsiders = voice_cohort(tmp_path)  # as the diarize step measures voices against

    def saved(d: Any) -> Any:
        turns = [[t.start, t.end, t.speaker] for t in d.turns]

        async def step(job: Any, progress: Any) -> Saved:
            return Saved(
                "save_speakers_voices", saved_voices(turns, d.speakers, d.voices, outsiders)
            )

        return step

    await remember_voices(as_ann)
    steps = {"normalize": normalized, "recognize": recognize}
    first = await diarized_with(db, as_ann, **steps, diarize=saved(a))
    # Each reference voice's name, given to the found speaker that says most of it.
    voice_of = {}
    for n, name in ((0, "Mira"), (1, "Oleg")):
        found = max(
            range(a.speakers),
            key=lambda s: sum(
                max(0.0, min(t.end, e) - max(t.start, s0))
                for t in a.turns
                if t.speaker == s
                for s0, e, who in reference
                if who == n
            ),
        )
        r = await as_ann.post(
            "/v1/voices", json={"name": name, "recording": first, "speaker": str(found + 1)}
        )
        assert r.status_code == 201, r.text
        voice_of[n] = name
    second = await diarized_with(db, as_ann, **steps, diarize=saved(b))
    names = {
        r["speaker"]: r["name"]
        for r in await db.fetch("voice_names", await owner_of(db, second), uuid.UUID(second))
    }
    right = total = 0.0
    for s0, e, who in again:
        total += e - s0
        for t in b.turns:
            overlap = max(0.0, min(t.end, e) - max(t.start, s0))
            if names.get(t.speaker) == voice_of[who]:
                right += overlap
    assert right / total >= 0.9, (right / total, names)


async def owner_of(db: Database, rid: str) -> int:
    return int(
        await db.run(
            lambda con: con.fetchval(
                "SELECT owner_id FROM recordings WHERE id = $1", uuid.UUID(rid)
            )
        )
    )
