"""The owner's record over the HTTP API (capability `archive`), on a real PostgreSQL:
edits of the owner's fields, the transcript in its formats, what the pipeline sends
back (nothing) and the journal. tests/integration/test_api.py has the intake and the
card."""

from __future__ import annotations

import logging
import uuid
from typing import Any

import httpx
import pytest
import trio

from tests.helpers.api_clients import (
    SEGMENTS,
    TEXT,
    normalized,
    recognized,
    transcribe,
    uploaded,
    worker,
)
from tests.helpers.pg_pipeline import Gate, journal, outbound_connects
from transcriber.db.database import Database
from transcriber.pipeline.pg_queue import Saved
from transcriber.stops import stop_message


def archive(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("archive", title)


# --- archive: edits ---------------------------------------------------------------------------


@archive("The owner edits title, summary and topics")
async def test_owner_edits_title_summary_topics(db: Database, as_ann: httpx.AsyncClient) -> None:
    rid = (await uploaded(as_ann, title="Draft"))["id"]
    first = await as_ann.patch(
        f"/v1/recordings/{rid}",
        json={"title": "Q3 review", "summary": "Budget talk", "topics": ["budget", "q3"]},
    )
    assert first.status_code == 200, first.text
    assert (first.json()["title"], first.json()["summary"], first.json()["topics"]) == (
        "Q3 review",
        "Budget talk",
        ["budget", "q3"],
    )
    second = await as_ann.patch(f"/v1/recordings/{rid}", json={"title": "Q3 final"})
    assert (second.json()["title"], second.json()["summary"], second.json()["topics"]) == (
        "Q3 final",
        "Budget talk",
        ["budget", "q3"],
    )
    assert (await as_ann.get(f"/v1/recordings/{rid}")).json() == second.json()
    empty = await as_ann.patch(f"/v1/recordings/{rid}", json={})
    assert empty.status_code == 200 and empty.json() == second.json()

    edits = [e for e in await journal(db, uuid.UUID(rid)) if e["kind"] == "edited"]
    assert [(e["origin"], e["detail"]["fields"]) for e in edits] == [
        ("human", ["summary", "title", "topics"]),
        ("human", ["title"]),
    ]


@archive("A field other than the owner's is refused")
async def test_fields_other_than_the_owners_are_refused(
    db: Database, as_ann: httpx.AsyncClient
) -> None:
    rid = (await uploaded(as_ann, title="Kept"))["id"]
    before = ((await as_ann.get(f"/v1/recordings/{rid}")).json(), await journal(db, uuid.UUID(rid)))
    for body in [
        {"milestone": "transcribed"},
        {"title": "x", "stopped": None},
        {"owner_id": 2},
        {"title": None},
        {"topics": "budget"},
        {"topics": [""]},
        {"title": "x" * 501},
        {"summary": "a\x00b"},
        {"topics": [f"t{i}" for i in range(51)]},
        ["title"],
        # Control characters: they break the subtitle files, terminals and logs.
        {"title": "bell\x07"},
        {"title": "two\nlines"},
        {"summary": "\x1b[31mred"},
        {"summary": "para\u2029graph"},
        {"topics": ["tab\there"]},
    ]:
        r = await as_ann.patch(f"/v1/recordings/{rid}", json=body)
        assert r.status_code == 422, (body, r.text)
        assert set(r.json()) == {"error"} and r.json()["error"], body
    bell = await as_ann.patch(f"/v1/recordings/{rid}", json={"title": "bell\x07"})
    assert "control characters (U+0007)" in bell.json()["error"]
    upload_bell = await as_ann.post(
        "/v1/recordings", files={"file": ("a.wav", b"RIFF bell")}, data={"title": "bell\x07"}
    )
    assert upload_bell.status_code == 422 and "control characters" in upload_bell.json()["error"]
    not_json = await as_ann.patch(
        f"/v1/recordings/{rid}", content=b"{", headers={"Content-Type": "application/json"}
    )
    assert not_json.status_code == 422
    after = ((await as_ann.get(f"/v1/recordings/{rid}")).json(), await journal(db, uuid.UUID(rid)))
    assert after == before
    # A summary of several lines keeps its line breaks and tabs.
    lines = await as_ann.patch(f"/v1/recordings/{rid}", json={"summary": "one\r\ntwo\n\tthree"})
    assert lines.status_code == 200 and lines.json()["summary"] == "one\r\ntwo\n\tthree"


@archive("An edit over HTTP survives the step's save")
async def test_edit_over_http_survives_the_steps_save(
    db: Database, as_ann: httpx.AsyncClient
) -> None:
    rid = (await uploaded(as_ann, title="Before"))["id"]
    gate = Gate(result=Saved("save_normalized", ("/store/a.wav", 12.5)))
    w = worker(db, normalize=gate)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(w.work_once)
        await gate.entered.wait()
        # The step holds the claim now; the owner edits over HTTP meanwhile.
        r = await as_ann.patch(
            f"/v1/recordings/{rid}",
            json={"title": "Board meeting", "summary": "Q3 budget", "topics": ["budget"]},
        )
        assert r.status_code == 200 and r.json()["milestone"] == "received"
        gate.open.set()
    after = (await as_ann.get(f"/v1/recordings/{rid}")).json()
    assert (after["milestone"], after["duration_s"]) == ("normalized", 12.5)
    assert (after["title"], after["summary"], after["topics"]) == (
        "Board meeting",
        "Q3 budget",
        ["budget"],
    )


# --- archive: transcripts ----------------------------------------------------------------------


@archive("The transcript is served in four formats")
async def test_transcript_in_four_formats(db: Database, as_ann: httpx.AsyncClient) -> None:
    rid = (await uploaded(as_ann))["id"]
    await transcribe(db)
    links = (await as_ann.get(f"/v1/recordings/{rid}")).json()["links"]

    text = await as_ann.get(links["text"])
    assert text.status_code == 200
    assert text.headers["content-type"] == "text/plain; charset=utf-8"
    assert text.text == TEXT + "\n"

    # The default profile (general) ends a cue two frames (at 24 fps) before the next.
    srt = await as_ann.get(links["srt"])
    assert srt.headers["content-type"].startswith("application/x-subrip")
    assert srt.text == (
        "1\n00:00:00,000 --> 00:00:01,416\nHello world.\n\n"
        "2\n00:00:01,500 --> 00:00:03,250\nGoodbye.\n"
    )
    vtt = await as_ann.get(links["vtt"])
    assert vtt.headers["content-type"].startswith("text/vtt")
    assert vtt.text == (
        "WEBVTT\n\n00:00:00.000 --> 00:00:01.416\nHello world.\n\n"
        "00:00:01.500 --> 00:00:03.250\nGoodbye.\n"
    )
    # One cue per segment, as the stored segments are: `segments`.
    segments = await as_ann.get(links["srt"] + "?profile=segments")
    assert segments.text == (
        "1\n00:00:00,000 --> 00:00:01,500\nHello world.\n\n"
        "2\n00:00:01,500 --> 00:00:03,250\nGoodbye.\n"
    )
    as_json = await as_ann.get(links["json"])
    assert as_json.headers["content-type"] == "application/json"
    assert as_json.json() == {
        "id": rid,
        "language": "en",
        "model": "test-model",
        "duration_s": 3.25,
        "text": TEXT,
        "segments": SEGMENTS,
    }


@archive("A transcript asked for too early answers 409 with the card")
async def test_transcript_too_early_is_409_with_the_card(as_ann: httpx.AsyncClient) -> None:
    card = await uploaded(as_ann)
    for link in card["links"].values():
        r = await as_ann.get(link)
        assert r.status_code == 409, link
        assert r.json() == card


# --- archive: the pipeline sends nothing back -----------------------------------------------


@archive("The text does not go to the sender")
async def test_text_does_not_go_to_the_sender(db: Database, as_ann: httpx.AsyncClient) -> None:
    rid = (await uploaded(as_ann))["id"]
    # The sender is the HTTP client that uploaded; any outbound call would connect.
    with outbound_connects() as connects:
        w = worker(db, normalize=normalized, recognize=recognized)
        assert await w.work_once() and await w.work_once()
    assert connects == []
    card = (await as_ann.get(f"/v1/recordings/{rid}")).json()
    assert (card["milestone"], card["done"]) == ("transcribed", True)
    text = await as_ann.get(card["links"]["text"])
    assert (text.status_code, text.text) == (200, TEXT + "\n")


@archive("A stop shows on the card, not in a message")
async def test_stop_shows_on_the_card(
    db: Database, as_ann: httpx.AsyncClient, caplog: pytest.LogCaptureFixture
) -> None:
    rid = (await uploaded(as_ann))["id"]

    async def broken(job: Any, progress: Any) -> None:
        raise ValueError("decoder crashed")

    caplog.set_level(logging.INFO, logger="transcriber")
    assert await worker(db, normalize=broken, max_attempts=1).work_once()
    card = (await as_ann.get(f"/v1/recordings/{rid}")).json()
    assert (card["milestone"], card["done"]) == ("received", False)
    assert card["stopped"]["reason"] == "attempts_exhausted"
    assert card["stopped"]["message"] == stop_message("attempts_exhausted")
    assert card["stopped"]["at"] and "error" not in card["stopped"]
    assert "decoder crashed" not in (await as_ann.get(f"/v1/recordings/{rid}/events")).text
    # Asking for the text tells the same, with the card.
    early = await as_ann.get(card["links"]["text"])
    assert early.status_code == 409 and early.json()["stopped"] == card["stopped"]
    stops = [r.getMessage() for r in caplog.records if "event=stopped" in r.getMessage()]
    assert len(stops) == 1
    assert f"id={rid}" in stops[0] and "reason=attempts_exhausted" in stops[0]


# --- archive: the journal ---------------------------------------------------------------------


@archive("The owner reads the record's journal")
async def test_owner_reads_the_journal(db: Database, as_ann: httpx.AsyncClient) -> None:
    rid = (await uploaded(as_ann))["id"]
    await as_ann.patch(f"/v1/recordings/{rid}", json={"title": "Named"})
    await transcribe(db)
    whole = await as_ann.get(f"/v1/recordings/{rid}/events")
    assert whole.status_code == 200
    events = whole.json()["events"]
    assert [(e["kind"], e["origin"], e["milestone"]) for e in events] == [
        ("accepted", "pipeline", "received"),
        ("edited", "human", "received"),
        ("milestone_reached", "pipeline", "normalized"),
        ("milestone_reached", "pipeline", "transcribed"),
    ]
    assert whole.json()["next_after"] is None
    assert all(set(e) == {"id", "at", "origin", "kind", "milestone", "detail"} for e in events)
    assert [e["id"] for e in events] == [1, 2, 3, 4]  # numbered within the record

    paged, after = [], 0
    while after is not None:
        page = (
            await as_ann.get(f"/v1/recordings/{rid}/events", params={"after": after, "limit": 1})
        ).json()
        paged += page["events"]
        after = page["next_after"]
    assert paged == events
    bad = await as_ann.get(f"/v1/recordings/{rid}/events", params={"limit": 0})
    assert bad.status_code == 422
