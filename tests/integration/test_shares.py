"""Read-only links (capability `sharing`) over real HTTP on a real PostgreSQL: made,
listed, opened without credentials, revoked; another owner refused; the shared view's
headers and what it does not offer. tests/integration/test_page_browser.py opens one
in a fresh Chromium profile."""

from __future__ import annotations

import hashlib
import io
import json
import re
import uuid
import zipfile

import httpx
import pytest

from tests.helpers.api_clients import client, uploaded
from tests.helpers.pages import signed_in, transcribed_with_audio
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.http.page import new_share as page_module
from transcriber.owners import NewOwner
from transcriber.records.corrections import set_correction


def scenario(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("sharing", title)


def secret_of(url: str) -> str:
    m = re.fullmatch(r"http://[^/]+/s/([A-Za-z0-9_-]+)", url)
    assert m, url
    return m.group(1)


def assert_shared_headers(r: httpx.Response) -> None:
    assert r.headers["referrer-policy"] == "no-referrer"
    assert "noindex" in r.headers["x-robots-tag"]


async def corrected_record(
    db: Database, config: Config, ann: NewOwner, c: httpx.AsyncClient
) -> str:
    rid = (await uploaded(c, title="Board meeting"))["id"]
    await transcribed_with_audio(db, config)
    await set_correction(db, ann.id, uuid.UUID(rid), 0, "Hello, shared world.", {"by": "owner"})
    return rid


@scenario("A link is made, listed with its openings, and revoked at once")
async def test_links_are_made_listed_and_revoked(
    db: Database, config: Config, base_url: str, ann: NewOwner, as_ann: httpx.AsyncClient
) -> None:
    rid = await corrected_record(db, config, ann, as_ann)
    r = await as_ann.post(f"/v1/recordings/{rid}/shares", json={"note": "for Bob"})
    assert r.status_code == 201, r.text
    first = r.json()
    r = await as_ann.post(
        f"/v1/recordings/{rid}/shares", json={"note": "for Carol", "expires_in_days": 1}
    )
    second = r.json()
    assert second["expires_at"] is not None and first["expires_at"] is None
    secret = secret_of(first["url"])
    assert len(secret) >= 43  # 256 bits
    async with client(base_url) as anyone:
        for _ in range(2):
            opened = await anyone.get(f"/s/{secret}")
            assert opened.status_code == 200
            assert "Hello, shared world." in opened.text
    listed = (await as_ann.get(f"/v1/recordings/{rid}/shares")).json()["items"]
    assert [(s["note"], s["opened"]) for s in listed] == [("for Bob", 2), ("for Carol", 0)]
    assert all("url" not in s for s in listed)
    stored = await db.run(lambda con: con.fetch("SELECT secret_hash FROM shares"))
    assert hashlib.sha256(secret.encode()).digest() in {bytes(s["secret_hash"]) for s in stored}
    dumped = await db.run(lambda con: con.fetchval("SELECT string_agg(s::text, ' ') FROM shares s"))
    assert secret not in dumped

    r = await as_ann.delete(f"/v1/recordings/{rid}/shares/{first['id']}")
    assert r.status_code == 204
    async with client(base_url) as anyone:
        gone = await anyone.get(f"/s/{secret}")
        assert gone.status_code == 404
        assert_shared_headers(gone)
        assert (await anyone.get(f"/s/{secret_of(second['url'])}")).status_code == 200
    listed = (await as_ann.get(f"/v1/recordings/{rid}/shares")).json()["items"]
    assert listed[0]["revoked_at"] is not None and listed[0]["opened"] == 2
    # The record page shows the links and their openings.
    async with signed_in(base_url, ann) as page:
        html = (await page.get(f"/recordings/{rid}")).text
    assert 'id="share-list"' in html and "for Bob" in html and "revoked" in html


@scenario("Another owner cannot make, list or revoke links of a record")
async def test_another_owner_cannot_share(
    db: Database,
    config: Config,
    base_url: str,
    ann: NewOwner,
    ben: NewOwner,
    as_ann: httpx.AsyncClient,
    as_ben: httpx.AsyncClient,
) -> None:
    rid = await corrected_record(db, config, ann, as_ann)
    link = (await as_ann.post(f"/v1/recordings/{rid}/shares", json={})).json()
    unknown = await as_ben.get(f"/v1/recordings/{uuid.uuid4()}/shares")
    assert unknown.status_code == 404
    answers = [
        await as_ben.post(f"/v1/recordings/{rid}/shares", json={"note": "mine now"}),
        await as_ben.get(f"/v1/recordings/{rid}/shares"),
        await as_ben.delete(f"/v1/recordings/{rid}/shares/{link['id']}"),
        await as_ben.delete(f"/v1/recordings/{uuid.uuid4()}/shares/{link['id']}"),
    ]
    assert [(a.status_code, a.json()) for a in answers] == [(404, unknown.json())] * 4
    async with signed_in(base_url, ben) as page:
        r = await page.post(
            f"/recordings/{rid}/shares/{link['id']}/revoke", data={"csrf": page.csrf}
        )
        assert r.status_code == 404
        r = await page.post(f"/recordings/{rid}/shares", data={"csrf": page.csrf})
        assert r.status_code == 404
    assert await db.run(lambda con: con.fetchval("SELECT count(*) FROM shares")) == 1
    async with client(base_url) as anyone:
        assert (await anyone.get(f"/s/{secret_of(link['url'])}")).status_code == 200


@scenario("Making a link on the record page redirects, so a reload makes no second link")
async def test_the_page_form_redirects_after_making_a_link(
    db: Database, config: Config, base_url: str, ann: NewOwner, as_ann: httpx.AsyncClient
) -> None:
    rid = await corrected_record(db, config, ann, as_ann)

    async def links() -> int:
        return int(await db.run(lambda con: con.fetchval("SELECT count(*) FROM shares")))

    async with signed_in(base_url, ann) as page:
        forged = await page.post(
            f"/recordings/{rid}/shares",
            data={"csrf": page.csrf, "note": "for Bob"},
            headers={"Origin": "https://evil.example"},
        )
        assert forged.status_code == 403 and await links() == 0
        made = await page.post(
            f"/recordings/{rid}/shares", data={"csrf": page.csrf, "note": "for Bob"}
        )
        assert made.status_code == 303, made.text
        assert made.headers["location"] == f"/recordings/{rid}#shares"
        assert made.text == ""  # no page: a reload of what the browser shows is the GET
        shown = await page.get(f"/recordings/{rid}")
        m = re.search(r'<input id="new-share" readonly value="([^"]+)"', shown.text)
        assert m, shown.text[:2000]
        async with client(base_url) as anyone:
            assert (await anyone.get(m.group(1))).status_code == 200
        # The reload reads the page again: no second link, and the secret is not shown again.
        again = await page.get(f"/recordings/{rid}")
        assert again.status_code == 200 and 'id="new-share"' not in again.text
        assert "for Bob" in again.text and await links() == 1
        # The cookie shows only a live link of the very record: not on another record's
        # page, and not once the link is revoked.
        other = (await uploaded(as_ann, title="Another"))["id"]
        for where in (other, rid):
            page.cookies.set(page_module.NEW_SHARE_COOKIE, secret_of(m.group(1)))
            if where == rid:
                await db.run(lambda con: con.execute("UPDATE shares SET revoked_at = now()"))
            assert 'id="new-share"' not in (await page.get(f"/recordings/{where}")).text


@scenario("The shared view shows the record with the owner's corrections and no way to edit")
async def test_the_shared_view_is_read_only(
    db: Database, config: Config, base_url: str, ann: NewOwner, as_ann: httpx.AsyncClient
) -> None:
    rid = await corrected_record(db, config, ann, as_ann)
    secret = secret_of((await as_ann.post(f"/v1/recordings/{rid}/shares", json={})).json()["url"])
    base = f"/s/{secret}"
    async with client(base_url) as anyone:
        view = await anyone.get(base)
        assert view.status_code == 200
        assert_shared_headers(view)
        html = view.text
        assert '<meta name="robots" content="noindex' in html
        assert "Board meeting" in html and "Hello, shared world." in html
        assert f'src="{base}/audio"' in html and f'href="{base}/transcript.srt"' in html
        assert "<form" not in html and 'href="/recordings/' not in html
        audio = await anyone.get(f"{base}/audio", headers={"Range": "bytes=0-9"})
        assert audio.status_code == 206 and len(audio.content) == 10
        assert_shared_headers(audio)
        srt = await anyone.get(f"{base}/transcript.srt")
        assert srt.status_code == 200 and "Hello, shared world." in srt.text
        assert_shared_headers(srt)
        assert (await anyone.post(base)).status_code == 405
        assert (await anyone.get(f"{base}/transcript.exe")).status_code == 404
        made_up = await anyone.get("/s/" + "A" * 43)
        assert made_up.status_code == 404
        # Expired: the same answer.
        await db.run(lambda con: con.execute("UPDATE shares SET expires_at = now()"))
        expired = await anyone.get(base)
        assert (expired.status_code, expired.text) == (404, made_up.text)
        await db.run(lambda con: con.execute("UPDATE shares SET expires_at = NULL"))
        assert (await anyone.get(base)).status_code == 200
        # The record deleted: its links go with it.
        assert (await as_ann.delete(f"/v1/recordings/{rid}")).status_code == 204
        deleted = await anyone.get(base)
        assert (deleted.status_code, deleted.text) == (404, made_up.text)
    assert await db.run(lambda con: con.fetchval("SELECT count(*) FROM shares")) == 0


@scenario("The shared view speaks its reader's language")
async def test_the_shared_view_speaks_the_readers_language(
    db: Database, config: Config, base_url: str, ann: NewOwner, as_ann: httpx.AsyncClient
) -> None:
    rid = await corrected_record(db, config, ann, as_ann)
    live = (await as_ann.post(f"/v1/recordings/{rid}/shares", json={})).json()
    gone = (await as_ann.post(f"/v1/recordings/{rid}/shares", json={})).json()
    assert (await as_ann.delete(f"/v1/recordings/{rid}/shares/{gone['id']}")).status_code == 204
    base = f"/s/{secret_of(live['url'])}"
    async with httpx.AsyncClient(
        base_url=base_url, headers={"Accept-Language": "ru-RU,ru;q=0.9"}, timeout=30
    ) as russian:
        view = await russian.get(base)
        assert view.status_code == 200 and view.headers["content-language"] == "ru"
        assert_shared_headers(view)
        assert '<html lang="ru">' in view.text and "Расшифровка" in view.text
        assert "Hello, shared world." in view.text  # the transcript itself as it is
        switched = await russian.get(f"/lang/en?next={base}", follow_redirects=True)
        assert str(switched.url).endswith(base) and switched.headers["content-language"] == "en"
        assert_shared_headers(switched)
        assert "Transcript" in switched.text and "Расшифровка" not in switched.text
        russian.cookies.clear()
        refused = await russian.get(f"/s/{secret_of(gone['url'])}")
        assert refused.status_code == 404 and "Эта ссылка недействительна" in refused.text
        assert_shared_headers(refused)


DOWNLOAD_CSP = "default-src 'none'; frame-ancestors 'none'; sandbox"
EXTS = ("txt", "srt", "vtt", "json", "md", "docx")


NAMED = [
    {
        "start": 0.0,
        "end": 1.5,
        "text": " My name is John.",
        "words": [
            {"start": 0.0, "end": 0.3, "word": " My", "probability": 0.9},
            {"start": 0.3, "end": 0.6, "word": " name", "probability": 0.9},
            {"start": 0.6, "end": 0.9, "word": " is", "probability": 0.9},
            {"start": 0.9, "end": 1.5, "word": " John.", "probability": 0.9},
        ],
    },
    {
        "start": 1.5,
        "end": 3.25,
        "text": " Goodbye.",
        "words": [{"start": 1.5, "end": 3.25, "word": " Goodbye.", "probability": 0.9}],
    },
]


@scenario("A shared download is the corrected text, whatever it asks for")
async def test_a_shared_download_never_gives_the_machine_text(
    db: Database, config: Config, base_url: str, ann: NewOwner, as_ann: httpx.AsyncClient
) -> None:
    rid = (await uploaded(as_ann, title="Interview"))["id"]
    await transcribed_with_audio(db, config, segments=NAMED, text="My name is John. Goodbye.")
    await set_correction(db, ann.id, uuid.UUID(rid), 0, "My name is withheld.", {"by": "owner"})
    # The owner's own downloads still offer the recognizer's text.
    async with signed_in(base_url, ann) as page:
        owner_machine = await page.get(f"/recordings/{rid}/transcript.txt?machine=true")
        assert "John" in owner_machine.text
        assert "John" in (await page.get(f"/recordings/{rid}/transcript.json")).text
    secret = secret_of((await as_ann.post(f"/v1/recordings/{rid}/shares", json={})).json()["url"])
    async with client(base_url) as anyone:
        for ext in EXTS:
            for query in ("?machine=true", "?machine=1", "?machine=yes", ""):
                r = await anyone.get(f"/s/{secret}/transcript.{ext}{query}")
                assert r.status_code == 200, (ext, query)
                body = (
                    zipfile.ZipFile(io.BytesIO(r.content)).read("word/document.xml").decode()
                    if ext == "docx"
                    else r.text
                )
                assert "withheld" in body and "Goodbye." in body, (ext, query)
                assert "John" not in body, (ext, query)
                assert ".machine" not in r.headers["content-disposition"]
        shown = json.loads((await anyone.get(f"/s/{secret}/transcript.json")).text)
        first, second = shown["segments"]
        assert first["corrected"] is True and "machine_text" not in first and "words" not in first
        assert second["words"] == NAMED[1]["words"]  # an uncorrected segment keeps its words
        view = await anyone.get(f"/s/{secret}")
        assert "withheld" in view.text and "John" not in view.text


@scenario("The page's share form refuses the days the API refuses")
async def test_the_page_form_refuses_bad_days(
    db: Database, config: Config, base_url: str, ann: NewOwner, as_ann: httpx.AsyncClient
) -> None:
    rid = await corrected_record(db, config, ann, as_ann)

    async def links() -> int:
        return int(await db.run(lambda con: con.fetchval("SELECT count(*) FROM shares")))

    bad = ("-1", "0", "99999", "abc", "nan", "inf", "-inf", "1e308", "3650.5")
    for days in bad:
        r = await as_ann.post(f"/v1/recordings/{rid}/shares", json={"expires_in_days": days})
        assert r.status_code == 422, (days, r.status_code)
    async with signed_in(base_url, ann) as page:
        for days in bad:
            r = await page.post(
                f"/recordings/{rid}/shares",
                data={"csrf": page.csrf, "note": "for Bob", "days": days},  # type: ignore[attr-defined]
            )
            assert r.status_code == 422, (days, r.status_code)
            assert 'id="share-days-error"' in r.text and 'aria-invalid="true"' in r.text
            assert 'value="for Bob"' in r.text  # what was typed stays
            assert "set-cookie" not in r.headers and await links() == 0
        long_note = await page.post(
            f"/recordings/{rid}/shares",
            data={"csrf": page.csrf, "note": "x" * 201},  # type: ignore[attr-defined]
        )
        assert long_note.status_code == 422 and 'id="share-note-error"' in long_note.text
        assert await links() == 0
        for days in ("", "0.5", "3650"):
            r = await page.post(
                f"/recordings/{rid}/shares",
                data={"csrf": page.csrf, "days": days},  # type: ignore[attr-defined]
            )
            assert r.status_code == 303, (days, r.text)
    made = (await as_ann.get(f"/v1/recordings/{rid}/shares")).json()["items"]
    assert [s["expires_at"] is not None for s in made] == [False, True, True]


@scenario("Shared answers carry the owner's download headers, and no cache keeps them")
async def test_shared_answers_headers(
    db: Database, config: Config, base_url: str, ann: NewOwner, as_ann: httpx.AsyncClient
) -> None:
    rid = await corrected_record(db, config, ann, as_ann)
    link = (await as_ann.post(f"/v1/recordings/{rid}/shares", json={})).json()
    base = f"/s/{secret_of(link['url'])}"
    async with signed_in(base_url, ann) as page, client(base_url) as anyone:
        for ext in EXTS:
            mine = await page.get(f"/recordings/{rid}/transcript.{ext}")
            theirs = await anyone.get(f"{base}/transcript.{ext}")
            assert (mine.status_code, theirs.status_code) == (200, 200)
            for r in (mine, theirs):
                assert r.headers["content-security-policy"] == DOWNLOAD_CSP, ext
                assert r.headers["cache-control"] == "private, no-store", ext
                assert r.headers["x-content-type-options"] == "nosniff"
            assert_shared_headers(theirs)
        # The audio: never stored, seeking by ranges still works.
        whole = await anyone.get(f"{base}/audio")
        part = await anyone.get(f"{base}/audio", headers={"Range": "bytes=100-199"})
        head = await anyone.head(f"{base}/audio")
        assert (whole.status_code, part.status_code, head.status_code) == (200, 206, 200)
        assert part.content == whole.content[100:200]
        assert part.headers["content-range"] == f"bytes 100-199/{len(whole.content)}"
        for r in (whole, part, head):
            assert r.headers["cache-control"] == "no-store"
            assert r.headers["accept-ranges"] == "bytes"
            assert "sandbox" in r.headers["content-security-policy"]
            assert_shared_headers(r)
        # The view itself and its refusal: the page's own policy, never stored.
        view = await anyone.get(base)
        assert view.headers["cache-control"] == "no-store"
        assert "default-src 'self'" in view.headers["content-security-policy"]
        assert (await as_ann.delete(f"/v1/recordings/{rid}/shares/{link['id']}")).status_code == 204
        for path in ("", "/audio", "/transcript.txt"):
            gone = await anyone.get(base + path)
            assert gone.status_code == 404 and gone.headers["cache-control"] == "no-store"
