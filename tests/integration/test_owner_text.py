"""What an owner's text may hold, and the exports of any text (issue 33, findings 3 and
5), through the real app on loopback over a real PostgreSQL: noncharacters and bidi
controls are refused in every owner field with the character named (API and page);
a record whose stored text holds what XML forbids still exports a valid DOCX on every
face (API, page, share link); and an owner's correction or speaker name holding `-->`
or markup makes no cue of its own in the SRT and VTT the API and a share link give."""

from __future__ import annotations

import io
import uuid
from typing import Any

import docx
import httpx
import pytest

from tests.helpers.api_clients import client
from tests.helpers.pages import correct, signed_in
from tests.integration.test_speaker_names import SEGMENTS, diarized
from tests.unit.test_cue_escaping import parse_srt, parse_vtt
from transcriber.db.database import Database
from transcriber.owners import NewOwner
from transcriber.records.archive import edit_owner_fields
from transcriber.records.corrections import set_correction
from transcriber.records.shares import add_share
from transcriber.records.speaker_names import name_speaker
from transcriber.subtitles.profiles import PROFILES

REFUSED = {"\ufffe": "U+FFFE", "\uffff": "U+FFFF", "\u202e": "U+202E"}


def scenario(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("archive", title)


@scenario("Noncharacters and bidi controls in an owner's field are refused, named")
async def test_owner_fields_refuse_noncharacters_and_bidi_controls(
    db: Database, base_url: str, ann: NewOwner, as_ann: httpx.AsyncClient
) -> None:
    rid = await diarized(db, as_ann)
    before = (await as_ann.get(f"/v1/recordings/{rid}")).json()
    async with signed_in(base_url, ann) as page:
        for c, code in REFUSED.items():
            # The API: a title, a speaker's name, a share link's note.
            r = await as_ann.patch(f"/v1/recordings/{rid}", json={"title": f"a{c}b"})
            assert r.status_code == 422 and code in r.json()["error"], r.text
            r = await as_ann.put(f"/v1/recordings/{rid}/speakers/Speaker 1", json={"name": f"A{c}"})
            assert r.status_code == 422 and code in r.json()["error"], r.text
            r = await as_ann.post(f"/v1/recordings/{rid}/shares", json={"note": f"n{c}"})
            assert r.status_code in (400, 422) and code in r.json()["error"], r.text
            # The page: the record's form, a speaker's name, a segment's correction.
            r = await page.post(
                f"/recordings/{rid}/edit",
                data={"csrf": page.csrf, "title": f"a{c}b", "summary": "", "topics": ""},  # type: ignore[attr-defined]
            )
            assert r.status_code == 422 and code in r.text, r.text[:500]
            r = await page.post(
                f"/recordings/{rid}/speakers/Speaker 1",
                data={"csrf": page.csrf, "name": f"A{c}"},  # type: ignore[attr-defined]
            )
            assert r.status_code == 422 and code in r.text, r.text[:500]
            r = await correct(page, rid, 0, f"x{c}y")
            assert r.status_code == 422 and code in r.json()["error"], r.text
    after = (await as_ann.get(f"/v1/recordings/{rid}")).json()
    assert after == before
    renderings = await as_ann.get(f"/v1/recordings/{rid}/transcript.json")
    assert [s["speaker"] for s in renderings.json()["segments"]] == [
        "Speaker 1",
        "Speaker 2",
        "Speaker 1",
    ]
    # The marks right-to-left text is typed with stay allowed.
    hebrew = "\u05e9\u05dc\u05d5\u05dd\u200f (Tel Aviv)\u200e"
    r = await as_ann.patch(f"/v1/recordings/{rid}", json={"title": hebrew})
    assert r.status_code == 200 and r.json()["title"] == hebrew, r.text
    r = await as_ann.put(f"/v1/recordings/{rid}/speakers/Speaker 1", json={"name": hebrew})
    assert r.status_code == 200, r.text


def docx_texts(content: bytes) -> list[str]:
    document = docx.Document(io.BytesIO(content))
    return [document.core_properties.title, *(p.text for p in document.paragraphs)]


@scenario("A document of text XML forbids is written without it")
async def test_docx_of_stored_text_xml_forbids(
    db: Database, base_url: str, ann: NewOwner, as_ann: httpx.AsyncClient
) -> None:
    rid = await diarized(db, as_ann)
    record = uuid.UUID(rid)
    # Stored as text written before today's checks would be: past the validation.
    assert await edit_owner_fields(
        db, ann.id, record, title="Board\ufffe meeting\u202e", summary=None, topics=None, detail={}
    )
    await set_correction(db, ann.id, record, 0, "Good\uffff morning.", {"by": "owner"})
    await name_speaker(db, ann.id, record, 1, "Anna\ufffe", {"by": "owner"})
    made = await add_share(db, ann.id, record, note="", expires_at=None)
    assert made is not None
    answers: dict[str, httpx.Response] = {}
    answers["api"] = await as_ann.get(f"/v1/recordings/{rid}/transcript.docx")
    async with signed_in(base_url, ann) as page:
        answers["page"] = await page.get(f"/recordings/{rid}/transcript.docx")
    async with client(base_url) as anyone:
        answers["share"] = await anyone.get(f"/s/{made[0]}/transcript.docx")
    for face, r in answers.items():
        assert r.status_code == 200, (face, r.status_code, r.text[:300])
        texts = docx_texts(r.content)
        assert texts[0] == "Board meeting\u202e" and texts[1] == "Board meeting\u202e", face
        assert "[0:00] Speaker 1: Good morning." in texts, (face, texts)
        assert any(t.startswith("[0:02] Anna: ") for t in texts), (face, texts)
        assert not any(c in t for t in texts for c in "\ufffe\uffff"), face


@scenario("A cue's text cannot add, end or style a cue")
async def test_owner_text_makes_no_cue_of_its_own(
    db: Database, base_url: str, ann: NewOwner, as_ann: httpx.AsyncClient
) -> None:
    rid = await diarized(db, as_ann)
    forged = "Good --> 00:00:09.000 --> <c.x>&amp; <b>"
    async with signed_in(base_url, ann) as page:
        assert (await correct(page, rid, 0, forged)).status_code == 200
    name = "Mallory --> <v Eve>&"
    r = await as_ann.put(f"/v1/recordings/{rid}/speakers/Speaker 2", json={"name": name})
    assert r.status_code == 200, r.text
    made = await add_share(db, ann.id, uuid.UUID(rid), note="", expires_at=None)
    assert made is not None
    got: dict[str, Any] = {}
    # One cue per segment (`segments`) to compare each with its segment; then every
    # profile's cues, cut from the same words, read back by the same strict parsers.
    one_each = "?profile=segments"
    got["api srt"] = (await as_ann.get(f"/v1/recordings/{rid}/transcript.srt{one_each}")).text
    got["api vtt"] = (await as_ann.get(f"/v1/recordings/{rid}/transcript.vtt{one_each}")).text
    async with client(base_url) as anyone:
        got["share srt"] = (await anyone.get(f"/s/{made[0]}/transcript.srt{one_each}")).text
        got["share vtt"] = (await anyone.get(f"/s/{made[0]}/transcript.vtt{one_each}")).text
        for profile in PROFILES:
            at = f"/s/{made[0]}/transcript"
            srt = (await anyone.get(f"{at}.srt?profile={profile}")).text
            assert all("\n\n" not in cue for cue in parse_srt(srt)), (profile, srt)
            vtt = parse_vtt((await anyone.get(f"{at}.vtt?profile={profile}")).text)
            assert (
                " ".join(t for _, t in vtt).split()
                == " ".join([forged, SEGMENTS[1]["text"], SEGMENTS[2]["text"]]).split()
            ), profile
            assert {v for v, _ in vtt} == {"Speaker 1", name}, profile
    for where in ("api", "share"):
        srt = parse_srt(got[f"{where} srt"])
        assert srt == [
            "Speaker 1: Good -> 00:00:09.000 -> <c.x>&amp; <b>",
            f"Mallory -> <v Eve>&: {SEGMENTS[1]['text']}",
            f"Speaker 1: {SEGMENTS[2]['text']}",
        ], where
        vtt = parse_vtt(got[f"{where} vtt"])
        assert vtt == [
            ("Speaker 1", forged),
            (name, SEGMENTS[1]["text"]),
            ("Speaker 1", SEGMENTS[2]["text"]),
        ], where
