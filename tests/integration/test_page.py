"""The owner's page (capability `page`) over real HTTP on loopback, on a real
PostgreSQL, without a browser: sessions, forgery, another owner's records, search,
audio ranges, corrections and their exports. tests/integration/test_page_browser.py
drives the same page in a real Chromium."""

from __future__ import annotations

import json
import re
import uuid
from pathlib import Path

import httpx
import pytest

from tests.helpers.api_clients import (
    client,
    count_recordings,
    uploaded,
)
from tests.helpers.pages import (
    correct,
    csrf_of,
    signed_in,
    state_of_record,
    transcribed_with_audio,
)
from tests.helpers.raw_http import (
    exchange,
    request_head,
)
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.http import create_app, serving
from transcriber.http.page import recordings as page_list
from transcriber.http.page import session as page_sign_in
from transcriber.owners import NewOwner, token_hash
from transcriber.records import archive
from transcriber.storage.local import LocalBlobs

ROOT = Path(__file__).resolve().parents[2]


def scenario(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("page", title)


# --- helpers ---------------------------------------------------------------------------


# --- sessions ------------------------------------------------------------------------------


@scenario("Signing in sets a strict session cookie and signing out ends it")
async def test_sign_in_cookie_and_sign_out(
    base_url: str, ann: NewOwner, as_ann: httpx.AsyncClient
) -> None:
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as c:
        r = await c.get("/", headers={"Accept": "text/html"})
        assert (r.status_code, r.headers["location"]) == (303, "/signin?next=%2F")
        r = await c.post("/signin", data={"token": "tr_wrong", "next": "/"})
        assert r.status_code == 401 and "not an owner&#39;s API token" in r.text
        assert "transcriber_session" not in c.cookies

        r = await c.post("/signin", data={"token": ann.token, "next": "/recordings/x"})
        assert (r.status_code, r.headers["location"]) == (303, "/recordings/x")
        cookie = r.headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie and "secure" not in cookie
        page = await c.get("/")
        assert page.status_code == 200 and "My recordings" in page.text
        assert "default-src 'self'" in page.headers["content-security-policy"]
        secret = c.cookies["transcriber_session"]

        r = await c.post("/signout", data={"csrf": csrf_of(page.text)})
        assert (r.status_code, r.headers["location"]) == (303, "/signin")
        # The old cookie, sent again by hand, is refused.
        c.cookies.set("transcriber_session", secret)
        assert (await c.get("/", headers={"Accept": "text/html"})).status_code == 303
        assert (await c.get("/?fragment=rows", headers={"X-CSRF-Token": "x"})).status_code == 401

    # Behind a proxy that says HTTPS, the cookie is Secure and __Host- (this host only,
    # every path, no Domain), and only that name signs in there; the API's bearer token
    # is untouched by all of it.
    https = {"X-Forwarded-Proto": "https"}
    async with httpx.AsyncClient(base_url=base_url, timeout=30, headers=https) as c:
        r = await c.post("/signin", data={"token": ann.token})
        cookie = r.headers["set-cookie"]
        assert cookie.startswith("__Host-transcriber_session=")
        assert "secure" in cookie.lower() and "path=/" in cookie.lower()
        assert "domain" not in cookie.lower()
        secret = cookie.split(";")[0].split("=", 1)[1]
        signed_in = await c.get("/", headers={"Cookie": f"__Host-transcriber_session={secret}"})
        assert signed_in.status_code == 200 and "My recordings" in signed_in.text
        plain = await c.get(
            "/", headers={"Cookie": f"transcriber_session={secret}", "Accept": "text/html"}
        )
        assert plain.status_code == 303
    assert (await as_ann.get("/v1/recordings")).status_code == 200
    # A foreign `next` never leads off the site.
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as c:
        r = await c.post("/signin", data={"token": ann.token, "next": "//evil.example/"})
        assert r.headers["location"] == "/"


@scenario(
    "A revoked token or an expired session sends the owner back to sign in "
    "without losing the upload form"
)
async def test_revoked_token_and_expired_session_end_the_session(
    db: Database, page_ann: httpx.AsyncClient, ann: NewOwner, config: Config
) -> None:
    csrf = page_ann.csrf  # type: ignore[attr-defined]
    upload = {
        "files": {"file": ("a.wav", b"RIFF data", "audio/wav")},
        "headers": {"X-CSRF-Token": csrf},
    }
    assert (await page_ann.post("/upload", **upload)).status_code == 201

    # Expired: refused, and the upload stored nothing.
    await db.run(
        lambda con: con.execute("UPDATE page_sessions SET expires_at = now() - interval '1 second'")
    )
    before = await count_recordings(db)
    r = await page_ann.post("/upload", **upload)
    assert (r.status_code, r.json()) == (401, {"error": "your session has ended; sign in again"})
    assert await count_recordings(db) == before
    assert (await page_ann.get("/", headers={"Accept": "text/html"})).status_code == 303

    # Revoked (or rotated): whatever changes the owner's token hash ends the session.
    page_ann.cookies.clear()
    async with signed_in(str(page_ann.base_url), ann) as fresh:
        assert (await fresh.get("/")).status_code == 200
        await db.run(
            lambda con: con.execute(
                "UPDATE owners SET token_hash = $1 WHERE id = $2", token_hash("tr_new"), ann.id
            )
        )
        r = await fresh.post("/upload", files=upload["files"], headers={"X-CSRF-Token": fresh.csrf})  # type: ignore[attr-defined]
        assert r.status_code == 401
        assert await count_recordings(db) == before
        # Signing in with the new token works again (the page's script does this in place).
        r = await fresh.post(
            "/signin", data={"token": "tr_new"}, headers={"Accept": "application/json"}
        )
        assert r.status_code == 200 and r.json()["csrf"]
        r = await fresh.post(
            "/upload", files=upload["files"], headers={"X-CSRF-Token": r.json()["csrf"]}
        )
        # The same upload as the first one: that record, named as such (200), not a second.
        assert r.status_code == 200 and await count_recordings(db) == before


@scenario("A forged cross-site request is refused")
async def test_forged_cross_site_requests_are_refused(
    db: Database, config: Config, page_ann: httpx.AsyncClient, as_ann: httpx.AsyncClient
) -> None:
    rid = (await uploaded(as_ann))["id"]
    await transcribed_with_audio(db, config)
    before = (await state_of_record(db, rid), await count_recordings(db))
    csrf = page_ann.csrf  # type: ignore[attr-defined]
    cross = {"Origin": "https://evil.example"}
    attempts = [
        ("edit", {"csrf": csrf, "title": "pwned"}, cross),
        ("edit", {"title": "pwned"}, {}),
        ("edit", {"csrf": "wrong", "title": "pwned"}, {}),
        ("edit", {"csrf": csrf, "title": "pwned"}, {"Sec-Fetch-Site": "cross-site"}),
        ("segments/0", {"text": "pwned"}, {"X-CSRF-Token": csrf, **cross}),
        ("segments/0", {"text": "pwned"}, {}),
        ("segments/0", {"text": "pwned"}, {"X-CSRF-Token": "wrong"}),
    ]
    for path, data, headers in attempts:
        r = await page_ann.post(f"/recordings/{rid}/{path}", data=data, headers=headers)
        assert r.status_code == 403, (path, headers, r.text)
    for headers in ({"X-CSRF-Token": csrf, **cross}, {}):
        r = await page_ann.post(
            "/upload", files={"file": ("a.wav", b"RIFF", "audio/wav")}, headers=headers
        )
        assert r.status_code == 403
    r = await page_ann.post("/signout", data={"csrf": csrf}, headers=cross)
    assert r.status_code == 403
    r = await page_ann.post("/signin", data={"token": "x"}, headers=cross)
    assert r.status_code == 403
    assert (await state_of_record(db, rid), await count_recordings(db)) == before
    assert (await page_ann.get("/")).status_code == 200  # still signed in


@scenario("A file refused at upload says why in words")
async def test_refused_uploads_say_why(
    db: Database, config: Config, base_url: str, ann: NewOwner
) -> None:
    app = create_app(db, config, max_upload_bytes=1000)
    async with serving(app) as url, signed_in(url, ann) as c:
        headers = {"X-CSRF-Token": c.csrf}  # type: ignore[attr-defined]
        cases = [
            ({"file": ("empty.wav", b"", "audio/wav")}, {}, 400, "the upload is empty"),
            (
                {"file": ("a.wav", b"RIFF", "audio/wav")},
                {"language": "english"},
                422,
                "language 'english' is not one the recognizer knows: give one of Whisper's "
                "codes such as en, ru or de (docs/api.md, Languages, lists them), or leave it "
                "empty or auto to detect it",
            ),
            (
                {"file": ("big.wav", b"x" * 5000, "audio/wav")},
                {},
                413,
                "the upload is larger than 1000 bytes",
            ),
        ]
        for files, data, status, words in cases:
            r = await c.post("/upload", files=files, data=data, headers=headers)
            assert (r.status_code, r.json()) == (status, {"error": words})
    assert await count_recordings(db) == 0
    assert not LocalBlobs(config.home).uploads.exists() or not list(
        LocalBlobs(config.home).uploads.iterdir()
    )


@scenario("The page's upload is checked before its body is read and bounded as the API's")
async def test_page_upload_checked_first_and_bounded(
    db: Database, config: Config, base_url: str, page_ann: httpx.AsyncClient, ann: NewOwner
) -> None:
    secret = page_ann.cookies[page_sign_in.COOKIE]
    declared = {
        "Content-Type": "multipart/form-data; boundary=x",
        "Content-Length": str(300 * 10**6),
    }
    for headers, status, words in (
        (declared, 401, page_sign_in.SESSION_EXPIRED),
        ({**declared, "Cookie": f"{page_sign_in.COOKIE}={secret}"}, 403, page_sign_in.FORGED),
    ):
        # 300 MB declared, not a byte sent: the answer comes anyway.
        got, _, body = await exchange(
            base_url, request_head(base_url, "POST /upload HTTP/1.1", **headers)
        )
        assert (got, json.loads(body)) == (status, {"error": words})
    # The owner's quota holds for the page as for the API.
    tight = Config(home=config.home, owner_max_bytes=1000)
    async with serving(create_app(db, tight)) as url, signed_in(url, ann) as c:
        r = await c.post(
            "/upload",
            files={"file": ("big.wav", b"x" * 5000, "audio/wav")},
            headers={"X-CSRF-Token": c.csrf},
        )  # type: ignore[attr-defined]
        assert r.status_code == 507 and "quota of 1000" in r.json()["error"], r.text
    assert await count_recordings(db) == 0
    assert not LocalBlobs(config.home).uploads.exists() or not list(
        LocalBlobs(config.home).uploads.iterdir()
    )


# --- another owner ---------------------------------------------------------------------------


@scenario("A second owner cannot see, play, correct or download the first owner's record")
async def test_second_owner_gets_404_everywhere(
    db: Database,
    config: Config,
    as_ann: httpx.AsyncClient,
    page_ann: httpx.AsyncClient,
    page_ben: httpx.AsyncClient,
) -> None:
    rid = (await uploaded(as_ann, title="Secret plans"))["id"]
    await transcribed_with_audio(db, config)
    assert (await page_ann.get(f"/recordings/{rid}/audio")).status_code == 200
    before = await state_of_record(db, rid)
    csrf = page_ben.csrf  # type: ignore[attr-defined]
    for target in (rid, str(uuid.uuid4()), "not-an-id"):
        answers = [
            await page_ben.get(f"/recordings/{target}"),
            await page_ben.get(f"/recordings/{target}?fragment=live"),
            await page_ben.get(f"/recordings/{target}/audio"),
            await page_ben.head(f"/recordings/{target}/audio"),
            await page_ben.get(f"/recordings/{target}/audio", headers={"Range": "bytes=0-9"}),
            await page_ben.get(f"/recordings/{target}/peaks.json"),
            *[
                await page_ben.get(f"/recordings/{target}/transcript.{ext}")
                for ext in ("txt", "srt", "vtt", "json")
            ],
            await page_ben.get(f"/recordings/{target}/transcript.srt?machine=true"),
            await page_ben.post(
                f"/recordings/{target}/edit", data={"csrf": csrf, "title": "mine now"}
            ),
            await correct(page_ben, target, 0, "mine now"),
        ]
        assert [a.status_code for a in answers] == [404] * len(answers), target
    listing = await page_ben.get("/", params={"q": "secret"})
    assert rid not in listing.text and rid not in (await page_ben.get("/")).text
    assert await state_of_record(db, rid) == before


# --- the list ------------------------------------------------------------------------------------


def listed(html: str) -> list[str]:
    return re.findall(r'<tr id="rec-([0-9a-f-]+)"', html)


@scenario("A search too broad is cut off and said so in the list")
async def test_a_search_too_broad_is_said_so(
    db: Database, page_ann: httpx.AsyncClient, ann: NewOwner, monkeypatch: pytest.MonkeyPatch
) -> None:
    await db.run(
        lambda con: con.execute(
            "INSERT INTO recordings (owner_id, filename, milestone) SELECT $1, "
            "'done ' || g || ' take.wav', 'transcribed' FROM generate_series(1, 30000) AS g",
            ann.id,
        )
    )
    await db.run(lambda con: con.execute("ANALYZE recordings"))
    monkeypatch.setattr(archive, "SEARCH_TIMEOUT_S", 0.005)
    with pytest.raises(archive.SearchTooBroad):
        await archive.found_records_page(db, ann.id, None, 25, state=None, search="done:*")
    for fragment in ({}, {"fragment": "rows"}):
        r = await page_ann.get("/", params={"q": "done", **fragment})
        assert r.status_code == 200 and 'id="search-too-broad"' in r.text, r.text[:300]
        assert 'class="recordings"' not in r.text
    listed = await page_ann.get("/")  # no search: not bounded
    assert listed.status_code == 200 and 'id="search-too-broad"' not in listed.text
    assert listed.text.count('<tr id="rec-') == page_list.PAGE_SIZE
    monkeypatch.setattr(archive, "SEARCH_TIMEOUT_S", 30.0)
    one = await page_ann.get("/", params={"q": "done 4242"})
    assert one.text.count('<tr id="rec-') == 1 and "done 4242 take.wav" in one.text


@scenario("The list filters by state and searches titles and transcript text")
async def test_list_filters_searches_and_pages(
    db: Database,
    config: Config,
    base_url: str,
    as_ann: httpx.AsyncClient,
    page_ann: httpx.AsyncClient,
    ben: NewOwner,
) -> None:
    done_a = (await uploaded(as_ann, title="Quarterly budget review"))["id"]
    done_b = (await uploaded(as_ann, title="Standup"))["id"]
    await transcribed_with_audio(
        db,
        config,
        text="the engineers agreed to hire more",
        segments=[{"start": 0, "end": 1, "text": "hire more"}],
    )
    stopped = (await uploaded(as_ann, title="Broken"))["id"]
    await db.run(
        lambda con: con.execute(
            "UPDATE recordings SET stopped_at = now(), stop_reason = 'undecodable_audio',"
            " stop_error = 'Invalid data' WHERE id = $1",
            uuid.UUID(stopped),
        )
    )
    working = (await uploaded(as_ann, title="Fresh"))["id"]
    async with client(base_url, ben) as as_ben:
        await uploaded(as_ben, title="Quarterly budget of ben")
    r = await correct(page_ann, done_b, 0, "hire more zebras")
    assert r.status_code == 200, r.text

    async def ids(**params: str) -> list[str]:
        r = await page_ann.get("/", params=params)
        assert r.status_code == 200
        return listed(r.text)

    newest_first = [working, stopped, done_b, done_a]
    assert await ids() == newest_first
    assert await ids(state="working") == [working]
    assert await ids(state="transcribed") == [done_b, done_a]
    assert await ids(state="stopped") == [stopped]
    assert await ids(q="budget") == [done_a]
    assert await ids(q="BUDG") == [done_a]  # a prefix, any case
    assert await ids(q="engineers") == [done_b, done_a]
    assert await ids(q="zebras") == [done_b]
    # The owner's summary and topics are searched too.
    r = await as_ann.patch(
        f"/v1/recordings/{stopped}", json={"summary": "Notes on giraffes", "topics": ["okapi"]}
    )
    assert r.status_code == 200
    assert await ids(q="giraff") == [stopped] and await ids(q="okapi") == [stopped]
    assert await ids(q="engineers", state="stopped") == []
    assert await ids(q="no-such-word") == []
    assert await ids(q="&|!:*()'") == newest_first  # no words: no search, never an error
    stop_row = (await page_ann.get("/", params={"state": "stopped"})).text
    assert "The file could not be read as audio." in stop_row

    # Pages of 25: follow "Older" through 30 recordings.
    for i in range(26):
        await uploaded(as_ann, title=f"bulk {i}")
    seen: list[str] = []
    url = "/"
    while url:
        r = await page_ann.get(url)
        seen += listed(r.text)
        m = re.search(r'<a href="([^"]+)" rel="next">', r.text)
        url = m.group(1).replace("&amp;", "&") if m else ""
    assert len(seen) == len(set(seen)) == 30 and seen[-4:] == newest_first


# --- languages -----------------------------------------------------------------------------


@scenario("A browser asking for Russian gets Russian without the switch")
async def test_the_language_comes_from_the_cookie_or_accept_language(base_url: str) -> None:
    async with httpx.AsyncClient(base_url=base_url, timeout=30) as c:
        ru = await c.get("/signin", headers={"Accept-Language": "ru-RU,ru;q=0.9,en;q=0.5"})
        assert ru.headers["content-language"] == "ru" and '<html lang="ru">' in ru.text
        assert "Войти" in ru.text and "Sign in" not in ru.text
        assert "Accept-Language" in ru.headers["vary"]
        en = await c.get("/signin", headers={"Accept-Language": "de, en;q=0.5"})
        assert en.headers["content-language"] == "en" and "Sign in" in en.text
        # The switch: remembered in a cookie, and back to a page of this site only.
        switched = await c.get("/lang/en", params={"next": "/signin?next=/x"})
        assert switched.status_code == 303 and switched.headers["location"] == "/signin?next=/x"
        assert "Max-Age=31536000" in switched.headers["set-cookie"]
        chosen = await c.get("/signin", headers={"Accept-Language": "ru"})
        assert chosen.headers["content-language"] == "en"
        away = await c.get("/lang/ru", params={"next": "//elsewhere.example/"})
        assert away.headers["location"] == "/"
        assert (await c.get("/lang/xx")).status_code == 404
