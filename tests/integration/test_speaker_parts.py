"""Where the speakers change inside one of the recognizer's segments, the record page
shows it split as the exports do, each part under its speaker; the owner moves and
corrects a part, and the page, the API's transcript and every export agree (capability
`speakers`). A real PostgreSQL and the real app over loopback HTTP; the recognition and
the diarization are fake steps whose output has the shape of the real ones'
(tests/integration/test_speakers_browser.py runs the real ones in a browser)."""

from __future__ import annotations

import html
import re
import uuid
from typing import Any

import httpx
import pytest

from tests.helpers.api_clients import diarized_with, normalized
from tests.helpers.pg_pipeline import journal
from transcriber.db.database import Database
from transcriber.pipeline.pg_queue import Saved
from transcriber.records.voices import saved_voices


def word(start: float, end: float, text: str) -> dict[str, Any]:
    return {"start": start, "end": end, "word": text, "probability": 0.9}


# One segment of the recognizer's; its words are three turns of two speakers.
WORDS = [
    word(0.0, 0.5, " Good"),
    word(0.6, 1.5, " morning."),
    word(2.5, 3.0, " Morning"),
    word(3.1, 3.3, " to"),
    word(3.4, 4.0, " you."),
    word(4.5, 4.9, " Shall"),
    word(5.0, 5.3, " we"),
    word(5.4, 6.0, " start?"),
]
TEXT = "Good morning. Morning to you. Shall we start?"
SEGMENTS = [
    {"start": 0.0, "end": 6.0, "text": TEXT, "words": WORDS},
    {"start": 6.5, "end": 8.0, "text": "Yes.", "words": [word(6.5, 8.0, " Yes.")]},
]
TURNS = [[0.0, 2.2, 0], [2.3, 4.2, 1], [4.3, 6.2, 0], [6.4, 8.0, 1]]
PARTS = ["Good morning.", "Morning to you.", "Shall we start?", "Yes."]


def scenario(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("speakers", title)


async def recognize(job: Any, progress: Any) -> Saved:
    return Saved("save_transcript", (TEXT + " Yes.", SEGMENTS, "en", "t"))


async def diarize(job: Any, progress: Any) -> Saved:
    return Saved("save_speakers_voices", saved_voices(TURNS, 2, {}))


async def diarized(db: Database, as_owner: httpx.AsyncClient) -> str:
    return await diarized_with(
        db, as_owner, normalize=normalized, recognize=recognize, diarize=diarize
    )


_ROW = re.compile(
    r'<li id="segment-\d+" class="segment[^"]*"(?P<attrs>[^>]*)>(?P<body>.*?)</li>', re.S
)


def page_rows(page: str) -> list[tuple[str | None, str, str | None]]:
    """The record page's transcript rows: (speaker selected, text, the part's word)."""
    rows = []
    for m in _ROW.finditer(page):
        chosen = re.search(r"<option [^>]*selected>([^<]*)</option>", m["body"])
        text = re.search(r'<p class="text">([^<]*)</p>', m["body"])
        part = re.search(r'data-word="(\d+)"', m["attrs"])
        assert text, m["body"]
        rows.append(
            (
                html.unescape(chosen[1]) if chosen else None,
                html.unescape(text[1]),
                part[1] if part else None,
            )
        )
    return rows


CUE_A_PART = "profile=segments"


def srt_cues(srt: str) -> list[tuple[str, str]]:
    """Each SRT cue's (speaker, text)."""
    return re.findall(r"^([^:\n]+): (.*)$", srt, re.M)


async def shown(c: httpx.AsyncClient, page: httpx.AsyncClient, rid: str) -> dict[str, Any]:
    base = f"/v1/recordings/{rid}"
    return {
        "page": page_rows((await page.get(f"/recordings/{rid}")).text),
        # A cue per part, as the page lists them (the default profile may cut a long
        # part into several cues).
        "srt": srt_cues((await c.get(f"{base}/transcript.srt?{CUE_A_PART}")).text),
        "page_srt": srt_cues(
            (await page.get(f"/recordings/{rid}/transcript.srt?{CUE_A_PART}")).text
        ),
        "json": (await c.get(f"{base}/transcript.json")).json(),
        "machine": srt_cues((await c.get(f"{base}/transcript.srt?machine=true&{CUE_A_PART}")).text),
    }


def agree(now: dict[str, Any]) -> list[tuple[str, str]]:
    """The page, the API's SRT and JSON and the page's SRT download list the same parts
    under the same speakers; their (speaker, text)."""
    cues = now["srt"]
    assert now["page_srt"] == cues
    assert [(s["speaker"], s["text"]) for s in now["json"]["segments"]] == cues
    assert [(who, text) for who, text, _ in now["page"]] == cues
    return list(cues)


async def move(page: httpx.AsyncClient, rid: str, segment: int, **fields: str) -> httpx.Response:
    return await page.post(
        f"/recordings/{rid}/segments/{segment}/speaker",
        data={"csrf": page.csrf, **fields},  # type: ignore[attr-defined]
    )


async def correct(page: httpx.AsyncClient, rid: str, segment: int, **fields: str) -> httpx.Response:
    return await page.post(
        f"/recordings/{rid}/segments/{segment}",
        data=fields,
        headers={"X-CSRF-Token": page.csrf},  # type: ignore[attr-defined]
    )


@scenario("The record page shows a segment split where its speakers change, as the exports do")
async def test_the_page_lists_the_parts_as_the_srt_does(
    db: Database, as_ann: httpx.AsyncClient, page_ann: httpx.AsyncClient
) -> None:
    rid = await diarized(db, as_ann)
    now = await shown(as_ann, page_ann, rid)
    assert agree(now) == list(
        zip(["Speaker 1", "Speaker 2", "Speaker 1", "Speaker 2"], PARTS, strict=True)
    )
    # The split segment's parts carry their first word; the whole one none.
    assert [part for _, _, part in now["page"]] == ["0", "2", "5", None]


@scenario("The owner moves or corrects one part of a split segment and every rendering agrees")
async def test_a_part_moved_and_corrected_alone(
    db: Database, as_ann: httpx.AsyncClient, page_ann: httpx.AsyncClient
) -> None:
    rid = await diarized(db, as_ann)
    before = await shown(as_ann, page_ann, rid)

    # The middle part to Speaker 1: that part only.
    r = await move(page_ann, rid, 0, speaker="Speaker 1", word="2")
    assert r.status_code == 303, r.text
    now = await shown(as_ann, page_ann, rid)
    assert [who for who, _ in agree(now)] == ["Speaker 1", "Speaker 1", "Speaker 1", "Speaker 2"]
    words = now["json"]["segments"][1]["words"]
    assert {w["speaker"] for w in words} == {"Speaker 1"}
    assert now["machine"] == now["srt"]  # who spoke is not the recognizer's text

    # The last part of the segment to Speaker 2, named: the middle one stays moved.
    await as_ann.put(f"/v1/recordings/{rid}/speakers/2", json={"name": "Anna"})
    assert (await move(page_ann, rid, 0, speaker="Anna", word="5")).status_code == 303
    now = await shown(as_ann, page_ann, rid)
    assert [who for who, _ in agree(now)] == ["Speaker 1", "Speaker 1", "Anna", "Anna"]

    # The middle part's text corrected: that part's words only; the machine's stay.
    r = await correct(page_ann, rid, 0, text="Morning to you, Anna.", word="2")
    assert r.status_code == 200, r.text
    assert r.json() == {
        "text": "Morning to you, Anna.",
        "machine_text": "Morning to you.",
        "corrected": True,
    }
    now = await shown(as_ann, page_ann, rid)
    assert [text for _, text in agree(now)] == [
        "Good morning.",
        "Morning to you, Anna.",
        "Shall we start?",
        "Yes.",
    ]
    assert now["json"]["text"] == "Good morning. Morning to you, Anna. Shall we start? Yes."
    assert [text for _, text in now["machine"]] == PARTS
    fixed = now["json"]["segments"][1]
    assert fixed["corrected"] and fixed["machine_text"] == "Morning to you."
    events = [e["detail"] for e in await journal(db, uuid.UUID(rid)) if e["origin"] == "human"]
    assert [(e.get("segment"), e.get("word")) for e in events][-1] == (0, 2)

    # Refused: a word no part starts at, or no word at all.
    for bad in ("1", "3", "99", "-1", "x"):
        assert (await move(page_ann, rid, 0, speaker="Speaker 2", word=bad)).status_code == 404
        assert (await correct(page_ann, rid, 0, text="no", word=bad)).status_code == 404
    assert agree(await shown(as_ann, page_ann, rid)) == agree(now)

    # Restored and moved back: what diarization found, as before.
    r = await correct(page_ann, rid, 0, restore="1", word="2")
    assert r.json()["corrected"] is False and r.json()["text"] == "Morning to you."
    await as_ann.put(f"/v1/recordings/{rid}/speakers/Anna", json={"name": ""})
    await move(page_ann, rid, 0, speaker="", word="2")
    await move(page_ann, rid, 0, speaker="", word="5")
    assert agree(await shown(as_ann, page_ann, rid)) == agree(before)


@scenario("A whole segment's move takes its parts with it")
async def test_a_whole_segment_move_drops_its_parts_choices(
    db: Database, as_ann: httpx.AsyncClient, page_ann: httpx.AsyncClient
) -> None:
    rid = await diarized(db, as_ann)
    await move(page_ann, rid, 0, speaker="Speaker 2", word="0")
    assert [who for who, _ in agree(await shown(as_ann, page_ann, rid))] == [
        "Speaker 2",
        "Speaker 2",
        "Speaker 1",
        "Speaker 2",
    ]
    # The API moves the stored segment whole: one cue again, its parts' choices gone.
    r = await as_ann.put(f"/v1/recordings/{rid}/segments/0/speaker", json={"speaker": "1"})
    assert r.status_code == 200, r.text
    now = await shown(as_ann, page_ann, rid)
    assert agree(now) == [("Speaker 1", TEXT), ("Speaker 2", "Yes.")]
    assert [part for _, _, part in now["page"]] == [None, None]
    r = await as_ann.put(f"/v1/recordings/{rid}/segments/0/speaker", json={"speaker": None})
    assert [who for who, _ in agree(await shown(as_ann, page_ann, rid))] == [
        "Speaker 1",
        "Speaker 2",
        "Speaker 1",
        "Speaker 2",
    ]
