"""The operator's screen (/ops, capability `operations`) over real HTTP on loopback and
a real PostgreSQL, without a browser: operators apart from owners, the sessions of each
kind refused by the other, the stopped records filtered and resumed (one and a bulk
list), search, and the glance. tests/integration/test_ops_browser.py drives the same
screen in a real Chromium."""

from __future__ import annotations

import os
import re
import socket
import uuid
from typing import Any

import httpx
import pytest
import trio

from tests.helpers.api_clients import transcribe
from tests.helpers.cli_process import cli
from tests.helpers.pages import as_operator, csrf_of, owner_session_secret
from tests.helpers.pg_pipeline import Gate, accept, journal, state, table
from transcriber.db.database import Database
from transcriber.http import i18n
from transcriber.http.ops import session as ops_sign_in
from transcriber.http.page import session as page_sign_in
from transcriber.operators import NewOperator, add_operator
from transcriber.owners import NewOwner
from transcriber.pipeline import daemons, operator, ops_screen
from transcriber.pipeline.pg_queue import PgQueue
from transcriber.pipeline.runner import Pipeline


def scenario(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("operations", title)


@pytest.fixture
async def olga(db: Database) -> NewOperator:
    return await add_operator(db, "olga")


async def stopped(
    db: Database, owner_id: int, reason: str = "attempts_exhausted", name: str = "a.wav"
) -> Any:
    rid = await accept(db, owner_id, name)
    queue = PgQueue(db, table())
    claim = await queue.claim()
    assert claim is not None and claim.id == rid
    job = await queue.read(claim)
    assert await queue.stop(job, reason, f"RuntimeError: {reason} of {name}\nsecond line")
    return rid


OPS_ROUTES = [
    ("GET", "/ops"),
    ("GET", "/ops?fragment=live"),
    ("GET", "/ops/stopped"),
    ("GET", "/ops/search?q=ann"),
    ("GET", "/ops/daemons.json"),
    ("GET", "/ops/records/{rid}"),
    ("POST", "/ops/resume"),
    ("GET", f"/ops/resumed/{uuid.UUID(int=1)}"),
    ("GET", "/ops/shares"),
    ("POST", "/ops/shares/revoke"),
    ("POST", "/ops/signout"),
]


# --- operators are not owners ----------------------------------------------------------


@scenario("Operators are added, listed, rotated and revoked like owners")
async def test_operator_commands(db: Database, db_url: str, base_url: str) -> None:
    added = await cli(db_url, "operator", "add", "olga")
    assert added.returncode == 0, added.stderr
    token = added.stdout.strip()
    assert token.startswith("tro_") and "not shown again" in added.stderr
    stored = await db.run(
        lambda con: con.fetchval("SELECT token_hash FROM operators WHERE name = 'olga'")
    )
    assert token.encode() not in bytes(stored) and len(bytes(stored)) == 32
    assert (await cli(db_url, "operator", "add", "olga")).returncode == 1
    listed = await cli(db_url, "operator", "list")
    assert "olga" in listed.stdout and listed.returncode == 0

    async with as_operator(base_url, token) as c:
        assert (await c.get("/ops")).status_code == 200
        rotated = await cli(db_url, "operator", "rotate", "olga")
        assert rotated.returncode == 0
        # The old token's session ended with it.
        assert (await c.get("/ops", headers={"accept": "application/json"})).status_code == 401
    async with httpx.AsyncClient(base_url=base_url) as c:
        r = await c.post("/ops/signin", data={"token": token})
        assert r.status_code == 401
    new = rotated.stdout.strip()
    async with as_operator(base_url, new) as c:
        assert (await cli(db_url, "operator", "revoke", "olga")).returncode == 0
        assert (await c.get("/ops", headers={"accept": "application/json"})).status_code == 401
    assert (await cli(db_url, "operator", "revoke", "nobody")).returncode == 1


@scenario("The operator's session cookie is its own, scoped to /ops")
async def test_operator_cookie_rules(base_url: str, olga: NewOperator) -> None:
    for https in (False, True):
        headers = {"X-Forwarded-Proto": "https"} if https else {}
        async with httpx.AsyncClient(base_url=base_url, headers=headers) as c:
            forged = await c.post(
                "/ops/signin",
                data={"token": olga.token},
                headers={"Origin": "https://evil.example"},
            )
            assert forged.status_code == 403 and "set-cookie" not in forged.headers
            # A `next` outside the screen, or off the site, comes back to the screen.
            for target, location in (
                ("/ops/stopped", "/ops/stopped"),
                ("/", "/ops"),
                ("//evil.example/ops", "/ops"),
            ):
                r = await c.post("/ops/signin", data={"token": olga.token, "next": target})
                assert (r.status_code, r.headers["location"]) == (303, location)
            cookie = r.headers["set-cookie"]
            # Its own name over HTTPS too: `__Host-` needs the whole site, and this one is
            # scoped to /ops.
            assert cookie.startswith(f"{ops_sign_in.COOKIE}=")
            attributes = [a.strip().lower() for a in cookie.split(";")[1:]]
            assert "path=/ops" in attributes and "httponly" in attributes
            assert "samesite=strict" in attributes and ("secure" in attributes) == https
            secret = cookie.split(";")[0].split("=", 1)[1]
            c.cookies.set(ops_sign_in.COOKIE, secret)
            screen = await c.get("/ops")
            assert screen.status_code == 200
            out = await c.post("/ops/signout", data={"csrf": csrf_of(screen.text)})
            assert (out.status_code, out.headers["location"]) == (303, "/ops/signin")
            cleared = out.headers["set-cookie"].lower()
            assert cleared.startswith(f"{ops_sign_in.COOKIE}=") and "path=/ops" in cleared
            again = await c.get("/ops", headers={"Accept": "text/html"})
            assert (again.status_code, again.headers["location"]) == (
                303,
                "/ops/signin?next=%2Fops",
            )


@scenario("An owner's session and token reach nothing under /ops")
async def test_owner_refused_under_ops(
    db: Database, base_url: str, ann: NewOwner, olga: NewOperator
) -> None:
    rid = await stopped(db, ann.id)
    secret = await owner_session_secret(base_url, ann)
    # The owner's token does not sign in here.
    async with httpx.AsyncClient(base_url=base_url) as c:
        r = await c.post("/ops/signin", data={"token": ann.token})
        assert r.status_code == 401 and ops_sign_in.COOKIE not in r.cookies
    # Nor does the owner's session, whichever cookie carries it, nor the bearer token.
    for cookies, headers in (
        ({page_sign_in.COOKIE: secret}, {}),
        ({ops_sign_in.COOKIE: secret}, {}),
        ({}, {"authorization": f"Bearer {ann.token}"}),
    ):
        async with httpx.AsyncClient(base_url=base_url, cookies=cookies, headers=headers) as c:
            for method, path in OPS_ROUTES:
                r = await c.request(
                    method,
                    path.format(rid=rid),
                    headers={"accept": "application/json"},
                    data={"csrf": "x", "all": "1"} if method == "POST" else None,
                )
                assert r.status_code in (401, 403), (method, path, r.status_code)
                assert str(rid) not in r.text
    assert (await state(db, rid))["stopped_at"] is not None


@scenario("An operator's session reaches no owner page, audio or transcript")
async def test_operator_refused_owner_pages(
    db: Database, base_url: str, ann: NewOwner, olga: NewOperator
) -> None:
    (rid,) = [await accept(db, ann.id, "talk.wav")]
    await transcribe(db)
    words = (await db.fetchrow("transcript", rid))["text"]
    assert words
    async with as_operator(base_url, olga.token) as c:
        secret = c.cookies[ops_sign_in.COOKIE]
        page = await c.get(f"/ops/records/{rid}")
        assert page.status_code == 200 and "talk.wav" in page.text
        assert words not in page.text
        for path in (f"/ops/records/{rid}/audio", f"/ops/records/{rid}/transcript.txt"):
            assert (await c.get(path)).status_code == 404
    # The operator's session secret opens no owner page, in either cookie; nor is the
    # operator's token an API token.
    owner_paths = [
        "/",
        f"/recordings/{rid}",
        f"/recordings/{rid}/audio",
        f"/recordings/{rid}/transcript.txt",
    ]
    for cookies, headers in (
        ({page_sign_in.COOKIE: secret}, {}),
        ({}, {"authorization": f"Bearer {olga.token}"}),
    ):
        async with httpx.AsyncClient(base_url=base_url, cookies=cookies, headers=headers) as c:
            for path in owner_paths:
                r = await c.get(path, headers={"accept": "application/json"})
                assert r.status_code == 401, (path, r.status_code)
                assert words not in r.text
            api = await c.get(f"/v1/recordings/{rid}/transcript")
            assert api.status_code == 401


# --- stopped records -------------------------------------------------------------------


@scenario("One record's page shows its card, stop flag and whole journal")
async def test_record_page(db: Database, base_url: str, ann: NewOwner, olga: NewOperator) -> None:
    rid = await stopped(db, ann.id, "undecodable_audio", "broken.mp3")
    async with as_operator(base_url, olga.token) as c:
        r = await c.get(f"/ops/records/{rid}")
    assert r.status_code == 200
    assert "broken.mp3" in r.text and "undecodable_audio" in r.text
    assert "RuntimeError: undecodable_audio of broken.mp3\nsecond line" in r.text
    for e in await journal(db, rid):
        assert f'<td class="num">{e["id"]}</td>' in r.text and e["kind"] in r.text
    async with as_operator(base_url, olga.token) as c:
        assert (await c.get(f"/ops/records/{uuid.uuid4()}")).status_code == 404
        assert (await c.get("/ops/records/nope")).status_code == 404


@scenario("Stopped records are filtered by reason, milestone, owner and age, and searched")
async def test_filters_and_search(
    db: Database, base_url: str, ann: NewOwner, ben: NewOwner, olga: NewOperator
) -> None:
    a1 = await stopped(db, ann.id, "attempts_exhausted", "one.wav")
    a2 = await stopped(db, ann.id, "too_long", "two.wav")
    b1 = await stopped(db, ben.id, "attempts_exhausted", "three.wav")
    await db.run(
        lambda con: con.execute(
            "UPDATE recordings SET stopped_at = now() - interval '2 hours' WHERE id = $1", b1
        )
    )

    async def listed(c: httpx.AsyncClient, **params: str) -> set[str]:
        r = await c.get("/ops/stopped", params=params)
        assert r.status_code == 200
        return set(re.findall(r'<tr data-id="([0-9a-f-]+)">', r.text))

    async with as_operator(base_url, olga.token) as c:
        assert await listed(c) == {str(a1), str(a2), str(b1)}
        assert await listed(c, reason="attempts_exhausted") == {str(a1), str(b1)}
        assert await listed(c, owner="ann") == {str(a1), str(a2)}
        assert await listed(c, milestone="received") == {str(a1), str(a2), str(b1)}
        assert await listed(c, milestone="normalized") == set()
        assert await listed(c, older="60") == {str(b1)}
        assert await listed(c, q="two") == {str(a2)}
        assert await listed(c, q=str(b1)) == {str(b1)}
        assert await listed(c, q="%") == set()  # a wildcard is a character here
        found = await c.get("/ops/search", params={"q": "ben"})
        assert set(re.findall(r'<tr data-id="([0-9a-f-]+)">', found.text)) == {str(b1)}
        by_file = await c.get("/ops/search", params={"q": "one.wav"})
        assert set(re.findall(r'<tr data-id="([0-9a-f-]+)">', by_file.text)) == {str(a1)}


@scenario("A search too short for file names, or too broad, says so")
async def test_search_too_short_or_too_broad(
    db: Database, base_url: str, ann: NewOwner, olga: NewOperator, monkeypatch: pytest.MonkeyPatch
) -> None:
    short = await accept(db, ann.id, "ab.wav")
    # Many records with a common part in their file names, as a long history has.
    await db.run(
        lambda con: con.execute(
            "INSERT INTO recordings (owner_id, filename, milestone) SELECT $1, "
            "'done-' || g || '.wav', 'transcribed' FROM generate_series(1, 30000) AS g",
            ann.id,
        )
    )
    await db.run(lambda con: con.execute("ANALYZE recordings"))

    def found(html: str) -> set[str]:
        return set(re.findall(r'<tr data-id="([0-9a-f-]+)">', html))

    # Two characters: no file name is searched (it would read every record), and the
    # screen says why; an owner's name or a record id is still found.
    assert await ops_screen.search(db, "ab") == []
    assert [r["id"] for r in await ops_screen.search(db, str(short))] == [short]
    assert len(await ops_screen.search(db, "ab.wav")) == 1
    async with as_operator(base_url, olga.token) as c:
        r = await c.get("/ops/search", params={"q": "ab"})
        assert r.status_code == 200 and found(r.text) == set()
        assert 'id="search-too-short"' in r.text
        r = await c.get("/ops/search", params={"q": str(short)})
        assert found(r.text) == {str(short)} and 'id="search-too-short"' not in r.text

        # A part of nearly every file name, past the bound: cut off, said plainly.
        with pytest.raises(ops_screen.SearchTooBroad):
            await ops_screen.search(db, "done-", timeout_s=0.005)
        narrow = await ops_screen.search(db, "done-4242.wav")
        assert [r["filename"] for r in narrow] == ["done-4242.wav"]
        monkeypatch.setattr(ops_screen, "SEARCH_TIMEOUT_S", 0.005)
        r = await c.get("/ops/search", params={"q": "done-"})
        assert r.status_code == 200 and 'id="search-too-broad"' in r.text
        assert found(r.text) == set() and 'id="found"' not in r.text
        # The connection is fine afterwards: the bound was the search's alone.
        assert await db.fetchval("health") == 1


@scenario("A bulk resume of a filtered list resumes exactly those, each journaled once")
async def test_bulk_resume_of_a_filtered_list(
    db: Database, base_url: str, ann: NewOwner, ben: NewOwner, olga: NewOperator
) -> None:
    wanted = {await stopped(db, ann.id, "attempts_exhausted", f"w{i}.wav") for i in range(100)}
    others = {await stopped(db, ann.id, "too_long", f"t{i}.wav") for i in range(10)}
    others |= {await stopped(db, ben.id, "attempts_exhausted", f"b{i}.wav") for i in range(10)}
    async with as_operator(base_url, olga.token) as c:
        r = await c.post(
            "/ops/resume",
            data={"csrf": c.csrf, "all": "1", "reason": "attempts_exhausted", "owner": "ann"},  # type: ignore[attr-defined]
            follow_redirects=True,
        )
    assert r.status_code == 200, r.text
    assert "100 of 100 resumed" in r.text
    shown = set(re.findall(r'<tr data-id="([0-9a-f-]+)" class="ok">', r.text))
    assert shown == {str(i) for i in wanted}
    for rid in wanted:
        row = await state(db, rid)
        assert row["stopped_at"] is None and row["stop_reason"] is None
        assert row["claim_token"] is None and row["attempts"] == 0
        resumed = [e for e in await journal(db, rid) if e["kind"] == "resumed"]
        assert len(resumed) == 1
        assert resumed[0]["origin"] == "human" and resumed[0]["detail"]["by"] == "operator:olga"
    for rid in others:
        assert (await state(db, rid))["stopped_at"] is not None
        assert not [e for e in await journal(db, rid) if e["kind"] == "resumed"]


@scenario("Resuming from the screen is refused without the session's anti-forgery token")
async def test_resume_needs_csrf_and_reports_refusals(
    db: Database, base_url: str, ann: NewOwner, olga: NewOperator
) -> None:
    rid = await stopped(db, ann.id)
    async with as_operator(base_url, olga.token) as c:
        forged = await c.post("/ops/resume", data={"csrf": "wrong", "id": str(rid)})
        assert forged.status_code == 403
        other = await c.post(
            "/ops/resume",
            data={"csrf": c.csrf, "id": str(rid)},  # type: ignore[attr-defined]
            headers={"origin": "https://evil.example"},
        )
        assert other.status_code == 403
        assert (await state(db, rid))["stopped_at"] is not None
        once = await c.post("/ops/resume", data={"csrf": c.csrf, "id": str(rid)})  # type: ignore[attr-defined]
        # A redirect to the batch's page (Post/Redirect/Get), which says what it did.
        assert once.status_code == 303 and once.text == ""
        where = once.headers["location"]
        assert re.fullmatch(r"/ops/resumed/[0-9a-f-]{36}\?asked=1", where), where
        shown = await c.get(where)
        assert "1 of 1 resumed" in shown.text and "back to work from received" in shown.text
        # The record stops again; reloading the page resumes nothing, and says the same.
        queue = PgQueue(db, table())
        job = await queue.read(await queue.claim())
        assert job.claim.id == rid and await queue.stop(job, "too_long", "again")
        reloaded = await c.get(where)
        assert reloaded.text == shown.text
        assert (await state(db, rid))["stopped_at"] is not None
        assert len([e for e in await journal(db, rid) if e["kind"] == "resumed"]) == 1
        await operator.resume(db, rid, by="test")  # back to work, so the next is refused
        again = await c.post(
            "/ops/resume",
            data={"csrf": c.csrf, "id": str(rid)},  # type: ignore[attr-defined]
            follow_redirects=True,
        )
        assert "0 of 1 resumed" in again.text and "is not stopped" in again.text
        assert f'<tr data-id="{rid}" class="refused">' in again.text
    assert len([e for e in await journal(db, rid) if e["kind"] == "resumed"]) == 2


# --- daemons and the glance ------------------------------------------------------------


@scenario("Daemons register and beat with their workers' claims; a heartbeat is no lease")
async def test_daemons_beat_with_claims(
    db: Database, db_url: str, base_url: str, ann: NewOwner, olga: NewOperator
) -> None:
    rid = await accept(db, ann.id, "held.wav")
    gate = Gate()
    pipeline = Pipeline(db, table(normalize=gate), workers=1)
    daemon_id = await daemons.register(
        db, daemons.DaemonInfo(workers=1, model="tiny", device="cpu", version="test")
    )
    async with trio.open_nursery() as nursery:
        await nursery.start(pipeline.run)
        await gate.entered.wait()
        before = await state(db, rid)
        seen = await daemons.beat_once(
            db, daemon_id, pipeline.held(), daemons.RecognitionTotals(), {}
        )
        after = await state(db, rid)
        # The beat wrote nothing of the record: not a lease.
        assert dict(before) == dict(after)
        (shown,) = await ops_screen.daemons(db)
        assert shown.state == "running" and shown.host and shown.pid
        (claim,) = shown.claims
        assert (claim.id, claim.milestone, claim.attempt) == (rid, "received", 1)
        assert claim.lease_left_s is not None and claim.lease_left_s > 0
        assert claim.since is not None
        listed = await cli(db_url, "daemons")
        assert listed.returncode == 0 and str(rid) in listed.stdout
        assert "running" in listed.stdout and "attempt 1" in listed.stdout
        async with as_operator(base_url, olga.token) as c:
            r = await c.get("/ops?fragment=live")
            assert str(daemon_id) in r.text and "state-running" in r.text
        # The same claim seen again keeps its first-seen time.
        again = await daemons.beat_once(
            db, daemon_id, pipeline.held(), daemons.RecognitionTotals(), seen
        )
        assert again == seen
        gate.open.set()
        await pipeline.drain(5)
        nursery.cancel_scope.cancel()
    # A daemon whose beats stopped coming is marked silent; the record is untouched.
    await db.run(
        lambda con: con.execute(
            "UPDATE daemons SET beat_at = now() - interval '10 minutes' WHERE id = $1",
            daemon_id,
        )
    )
    (silent,) = await ops_screen.daemons(db)
    assert silent.state == "silent"
    listed = await cli(db_url, "daemons")
    assert "silent" in listed.stdout
    await daemons.stopped(db, daemon_id)
    (gone,) = await ops_screen.daemons(db)
    assert gone.state == "stopped" and gone.claims == []
    await daemons.beat_once(db, daemon_id, [], daemons.RecognitionTotals(), {})
    assert (await ops_screen.daemons(db))[0].state == "stopped"


@scenario("The glance counts each milestone's states, throughput and stops, live")
async def test_glance(db: Database, base_url: str, ann: NewOwner, olga: NewOperator) -> None:
    done = await accept(db, ann.id, "done.wav")
    await transcribe(db)
    await stopped(db, ann.id, "too_long", "long.wav")
    await accept(db, ann.id, "waiting.wav")
    await db.run(
        lambda con: con.execute("UPDATE recordings SET duration_s = 120 WHERE id = $1", done)
    )
    glance = await ops_screen.glance(db)
    by = {m.milestone: m for m in glance.milestones}
    # A finished record is never waiting, in flight, pausing or stopped: not read.
    assert set(by) == {"received"}
    assert (by["received"].waiting, by["received"].stopped) == (1, 1)
    assert by["received"].oldest_waiting_s is not None
    # One record reached both milestones within the hour.
    assert sum(sum(c) for c in glance.reached_hour.counts.values()) == 2
    # (Every milestone has its series; `recognized` is skipped by a record without speakers.)
    reached = {m for m, c in glance.reached_hour.counts.items() if sum(c)}
    assert reached == {"normalized", "transcribed"}
    assert glance.stops_hour.labels == ["too_long"] and glance.stops_day.labels == ["too_long"]
    async with as_operator(base_url, olga.token) as c:
        full = await c.get("/ops")
        live = await c.get("/ops?fragment=live")
    assert full.status_code == live.status_code == 200
    assert 'id="ops-live"' in full.text and "<html" not in live.text
    assert "<svg" in live.text and "too_long" in live.text
    assert 'data-milestone="received"' in live.text


@scenario("The day's charts are read once a minute, however many screens refresh")
async def test_day_charts_are_kept_a_minute(db: Database, ann: NewOwner) -> None:
    def total(s: ops_screen.Series) -> int:
        return sum(sum(c) for c in s.counts.values())

    now = [1000.0]
    charts = ops_screen.DayCharts(clock=lambda: now[0])
    await stopped(db, ann.id, "too_long", "a.wav")
    assert total((await ops_screen.glance(db, charts)).stops_day) == 1
    await stopped(db, ann.id, "too_long", "b.wav")
    now[0] += 59
    kept = await ops_screen.glance(db, charts)
    assert (total(kept.stops_day), total(kept.stops_hour)) == (1, 2)
    now[0] += 1
    assert total((await ops_screen.glance(db, charts)).stops_day) == 2

    now[0] += 60
    got: list[ops_screen.DayCounts] = []

    async def screen() -> None:
        got.append(await charts.get(db))

    async with trio.open_nursery() as nursery:
        for _ in range(3):
            nursery.start_soon(screen)
    assert len(got) == 3 and got[0].read_at == now[0]
    assert got[1] is got[0] and got[2] is got[0]  # one read for the three


@scenario("Metrics show what the screen shows")
async def test_metrics_twin_of_the_screen(db: Database, base_url: str, ann: NewOwner) -> None:
    await stopped(db, ann.id, "too_long", "long.wav")
    waiting = await accept(db, ann.id, "wait.wav")
    await db.run(
        lambda con: con.execute(
            "UPDATE recordings SET milestone = 'normalized', duration_s = 90 WHERE id = $1",
            waiting,
        )
    )
    daemon_id = await daemons.register(
        db, daemons.DaemonInfo(workers=2, model="tiny", device="cpu", version="test")
    )
    await daemons.beat_once(db, daemon_id, [], daemons.RecognitionTotals(30.0, 3.0), {})
    async with httpx.AsyncClient(base_url=base_url) as c:
        text = (await c.get("/metrics")).text
    lines = set(text.splitlines())
    assert 'transcriber_queue{milestone="received",state="stopped"} 1' in lines
    assert 'transcriber_queue{milestone="normalized",state="waiting"} 1' in lines
    assert "transcriber_audio_waiting_seconds 90.000" in lines
    assert any(
        s.startswith('transcriber_oldest_waiting_seconds{milestone="normalized"}') for s in lines
    )
    assert 'transcriber_daemons{state="running"} 1' in lines
    labels = f'daemon="{daemon_id}",host="{socket.gethostname()}",pid="{os.getpid()}"'
    assert f"transcriber_daemon_recognized_audio_seconds{{{labels}}} 30.000" in lines
    assert f"transcriber_daemon_recognizing_seconds{{{labels}}} 3.000" in lines


# --- in the reader's language ----------------------------------------------------------


@scenario("The operator's screen speaks the reader's language")
async def test_screen_in_russian(
    db: Database, base_url: str, ann: NewOwner, olga: NewOperator
) -> None:
    rid = await stopped(db, ann.id, "too_long", "long.wav")
    await db.run(
        lambda con: con.execute(
            "UPDATE recordings SET stopped_at = now() - interval '2 hours' WHERE id = $1", rid
        )
    )
    async with as_operator(base_url, olga.token) as c:
        c.headers["accept-language"] = "ru-RU,ru;q=0.9,en;q=0.5"
        glance = await c.get("/ops")
        listed = await c.get("/ops/stopped")
        record = await c.get(f"/ops/records/{rid}")
        c.cookies.set(i18n.COOKIE, "en")  # the switch's choice wins over the header
        english = await c.get("/ops/stopped")
    for r in (glance, listed, record):
        assert r.status_code == 200 and r.headers["content-language"] == "ru"
        assert '<html lang="ru">' in r.text and 'id="lang-en"' in r.text
    assert "Конвейер: обзор" in glance.text and "Этапы" in glance.text
    assert "последний час" in glance.text and "too_long" in glance.text
    # The stopped list: its words, its count's plural, the reason's plain words beside
    # the code, a date in Russian.
    assert "<h1>Остановленные записи</h1>" in listed.text
    assert "1 остановленная запись." in listed.text
    assert 'too_long <span class="why">(длиннее TRANSCRIBER_MAX_DURATION_S)</span>' in (listed.text)
    assert "г., " in listed.text and "Stopped records" not in listed.text
    assert "Журнал" in record.text and "Возобновить эту запись" in record.text
    assert english.headers["content-language"] == "en"
    assert "<h1>Stopped records</h1>" in english.text and "1 stopped record." in english.text


@scenario(
    "The operator finds a record by the beginning of its id and is warned before a resume "
    "that cannot help"
)
async def test_id_prefix_and_hopeless_resume(
    db: Database, base_url: str, ann: NewOwner, olga: NewOperator
) -> None:
    hopeless = await stopped(db, ann.id, "undecodable_audio", "noise.bin")
    other = await stopped(db, ann.id, "attempts_exhausted", "talk.wav")
    ids = r'<tr data-id="([0-9a-f-]+)"'
    async with as_operator(base_url, olga.token) as c:
        for q in (str(hopeless)[:8], str(hopeless)[:13], str(hopeless)[:12].upper()):
            found = await c.get("/ops/search", params={"q": q})
            assert set(re.findall(ids, found.text)) == {str(hopeless)}, q
            listed = await c.get("/ops/stopped", params={"q": q})
            assert set(re.findall(ids, listed.text)) == {str(hopeless)}, q
        page = (await c.get(f"/ops/records/{hopeless}")).text
        assert 'id="resume-warning"' in page and "data-confirm=" in page
        assert "no: stopped" in page and "lease left" not in page
        page = (await c.get(f"/ops/records/{other}")).text
        assert 'id="resume-warning"' not in page and "data-confirm=" not in page
        # "Resume the checked" with nothing checked: back to the list, nothing resumed.
        r = await c.post(
            "/ops/resume",
            data={"csrf": c.csrf, "checked": "1", "owner": "ann"},  # type: ignore[attr-defined]
        )
        assert r.status_code == 303 and r.headers["location"] == "/ops/stopped?owner=ann"
    assert [e["kind"] for e in await journal(db, hopeless)].count("resumed") == 0
