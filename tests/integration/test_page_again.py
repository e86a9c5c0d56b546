"""Transcribing a recording again with other options: a finished record's uploaded file
made a new record, by the API and from the record page (openspec/specs/page/spec.md,
"Transcribe again with…")."""

from __future__ import annotations

import re
import uuid

import httpx
import pytest

from tests.helpers.api_clients import client, fake_audio, store_files, uploaded
from tests.helpers.pages import csrf_of, signed_in
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.owners import NewOwner


def scenario(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("page", title)


async def stop(db: Database, rid: str, reason: str, milestone: str = "normalized") -> None:
    await db.run(
        lambda con: con.execute(
            "UPDATE recordings SET milestone = $2, stopped_at = now(), stop_reason = $3,"
            " stop_error = 'boom' WHERE id = $1",
            uuid.UUID(rid),
            milestone,
            reason,
        )
    )


async def row(db: Database, rid: str) -> dict:
    found = await db.run(
        lambda con: con.fetchrow(
            "SELECT language, options, title, filename, size_bytes, milestone, stop_reason"
            " FROM recordings WHERE id = $1",
            uuid.UUID(rid),
        )
    )
    return dict(found)


async def journal(db: Database, rid: str) -> list[dict]:
    rows = await db.run(
        lambda con: con.fetch(
            "SELECT origin, kind, detail FROM journal WHERE recording_id = $1 ORDER BY id",
            uuid.UUID(rid),
        )
    )
    return [dict(r) for r in rows]


@scenario("A finished recording is transcribed again with another language, as a new record")
async def test_api_transcribes_again(
    db: Database,
    config: Config,
    base_url: str,
    as_ann: httpx.AsyncClient,
    as_ben: httpx.AsyncClient,
) -> None:
    audio = fake_audio()
    old = (await uploaded(as_ann, audio, title="Планёрка", language="en", speakers="2"))["id"]
    # Still at work: not yet.
    r = await as_ann.post(f"/v1/recordings/{old}/again", json={"language": "ru"})
    assert r.status_code == 409, r.text
    await stop(db, old, "attempts_exhausted")
    before = await row(db, old)

    # A code no recognizer takes, an unknown field, nothing changed: 422, nothing made.
    files = len(store_files(config))
    for body in ({"language": "rus"}, {"language": "xx"}, {"speakers": "many"}, {"lang": "ru"}):
        r = await as_ann.post(f"/v1/recordings/{old}/again", json=body)
        assert r.status_code == 422, (body, r.text)
    assert (
        "'rus'" in (await as_ann.post(f"/v1/recordings/{old}/again", json={"language": "rus"})).text
    )
    r = await as_ann.post(f"/v1/recordings/{old}/again", json={"language": "EN", "speakers": "2"})
    assert r.status_code == 422 and "nothing differs" in r.text
    assert len(store_files(config)) == files

    # Another owner's, an unknown and a malformed id: the same 404.
    for rid in (old, str(uuid.uuid4()), "nope"):
        r = await as_ben.post(f"/v1/recordings/{rid}/again", json={"language": "ru"})
        assert r.status_code == 404 and r.json() == {"error": "no such recording"}, r.text

    r = await as_ann.post(
        f"/v1/recordings/{old}/again",
        json={"language": "ru", "speakers": "auto"},
        headers={"Idempotency-Key": "again-1"},
    )
    assert r.status_code == 201, r.text
    new = r.json()
    assert r.headers["location"] == f"/v1/recordings/{new['id']}"
    assert new["id"] != old and new["milestone"] == "received" and new["stopped"] is None
    assert (new["title"], new["filename"], new["size_bytes"]) == (
        "Планёрка",
        "talk.wav",
        len(audio),
    )
    made = await row(db, new["id"])
    assert made["language"] == "ru" and made["options"]["speakers"] == "auto"
    # The same key again: the same new record, no third.
    again = await as_ann.post(
        f"/v1/recordings/{old}/again",
        json={"language": "ru", "speakers": "auto"},
        headers={"Idempotency-Key": "again-1"},
    )
    assert again.status_code == 200 and again.json()["id"] == new["id"]
    assert len(store_files(config)) == files + 1
    # The copy holds the same bytes as the upload.
    copies = [p.read_bytes() for p in store_files(config)]
    assert copies.count(audio) == 2

    # The old record is as it was, and its journal names the new one, as the owner's act.
    assert await row(db, old) == before
    events = await journal(db, old)
    assert [e for e in events if e["kind"] == "transcribed_again"] == [
        {"origin": "human", "kind": "transcribed_again", "detail": {"as": new["id"], "via": "api"}}
    ]
    # A transcribed record may be asked again too (translated, here).
    await db.run(
        lambda con: con.execute(
            "UPDATE recordings SET milestone = 'transcribed', stopped_at = NULL,"
            " stop_reason = NULL WHERE id = $1",
            uuid.UUID(old),
        )
    )
    r = await as_ann.post(f"/v1/recordings/{old}/again", json={"task": "translate"})
    assert (
        r.status_code == 201 and (await row(db, r.json()["id"]))["options"]["task"] == "translate"
    )


def attempt_of(html: str) -> str:
    m = re.search(r'<input type="hidden" name="attempt" value="([^"]+)">', html)
    assert m, html
    return m.group(1)


@scenario("The record page transcribes a stopped recording again with another language")
async def test_page_transcribes_again(
    db: Database, base_url: str, as_ann: httpx.AsyncClient, ann: NewOwner, ben: NewOwner
) -> None:
    old = (await uploaded(as_ann, title="Notes"))["id"]
    hopeless = (await uploaded(as_ann, title="Not audio"))["id"]
    await stop(db, old, "recognizer_refused_audio")
    await stop(db, hopeless, "undecodable_audio", "received")
    async with signed_in(base_url, ann) as page:
        for lang, words in (("en", "Transcribe again with…"), ("ru", "Распознать заново")):
            page.cookies.set("transcriber_lang", lang)
            html = (await page.get(f"/recordings/{old}")).text
            assert words in html and 'id="again-form"' in html
            # The stop's advice points to it.
            assert "(below)" in html or "(ниже)" in html
            # Another file cannot be cured by another language: no form.
            assert 'id="again-form"' not in (await page.get(f"/recordings/{hopeless}")).text
        page.cookies.set("transcriber_lang", "ru")
        html = (await page.get(f"/recordings/{old}")).text
        form = {"csrf": csrf_of(html), "attempt": attempt_of(html), "speakers": "", "task": ""}
        url = f"/recordings/{old}/again"

        # Without the anti-forgery token: refused, nothing made.
        r = await page.post(url, data={**form, "csrf": "wrong", "language": "ru"})
        assert r.status_code == 403
        # A language no recognizer knows: said next to the form, in the page's language.
        r = await page.post(url, data={**form, "language": "клингонский"})
        assert r.status_code == 422 and "не знает языка «клингонский»" in r.text
        assert 'id="again-error"' in r.text and 'value="клингонский"' in r.text
        # A language by its name in the page's language is its code.
        r = await page.post(url, data={**form, "language": "Русский"})
        assert r.status_code == 303, r.text
        new = r.headers["location"].rsplit("/", 1)[1]
        assert new != old and (await row(db, new))["language"] == "ru"
        # The same form pressed again: the same new record.
        r = await page.post(url, data={**form, "language": "Русский"})
        assert r.status_code == 303 and r.headers["location"] == f"/recordings/{new}"
        events = await journal(db, old)
        assert [e["detail"] for e in events if e["kind"] == "transcribed_again"] == [
            {"as": new, "via": "page"}
        ]
        # The old record's page links the new one in its journal.
        html = (await page.get(f"/recordings/{old}")).text
        assert f'href="/recordings/{new}"' in html and "Распознана заново" in html
    # Another owner's session: the same not-found page, nothing made.
    async with signed_in(base_url, ben) as other:
        html = (await other.get("/")).text
        r = await other.post(
            f"/recordings/{old}/again",
            data={"csrf": csrf_of(html), "attempt": "x" * 20, "language": "de"},
        )
        assert r.status_code == 404
    async with client(base_url, ann) as api:
        assert len((await api.get("/v1/recordings")).json()["items"]) == 3
