"""Share links follow their owner (capability `sharing`), over real HTTP on a real
PostgreSQL and the real command line: a revoked owner's links stop on every route at
once and for good, a rotated owner's stay; the operator lists and revokes any owner's
links from `transcriber share` and from `/ops/shares`, seeing no note, title or text,
journaled as human; what a stranger, an owner and a forged form get there."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import pytest
import trio
import trio_asyncio

from tests.helpers.api_clients import client
from tests.helpers.cli_process import cli
from tests.helpers.pages import as_operator, owner_session_secret
from tests.helpers.pg_pipeline import journal
from tests.integration.test_shares import corrected_record, secret_of
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.http.ops import session as ops_sign_in
from transcriber.http.page import session as page_sign_in
from transcriber.operators import NewOperator, add_operator
from transcriber.owners import NewOwner, revoke, rotate_token
from transcriber.pipeline import operator_shares
from transcriber.records.shares import add_share, secret_hash


def scenario(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("sharing", title)


@pytest.fixture
async def olga(db: Database) -> NewOperator:
    return await add_operator(db, "olga")


SHARED_PATHS = [
    "",
    "/audio",
    *(f"/transcript.{ext}" for ext in ("txt", "srt", "vtt", "json", "md", "docx")),
]
"""Every route under a link: the view, its audio, each download format."""


async def answers(base_url: str, secret: str) -> dict[str, int]:
    async with client(base_url) as anyone:
        return {p: (await anyone.get(f"/s/{secret}{p}")).status_code for p in SHARED_PATHS}


ALL_OK = dict.fromkeys(SHARED_PATHS, 200)
ALL_GONE = dict.fromkeys(SHARED_PATHS, 404)


async def shared(as_owner: httpx.AsyncClient, rid: str, note: str = "for Bob") -> dict:  # type: ignore[type-arg]
    r = await as_owner.post(f"/v1/recordings/{rid}/shares", json={"note": note})
    assert r.status_code == 201, r.text
    return r.json()  # type: ignore[no-any-return]


@scenario(
    "A revoked owner's links stop on every route at once, and rotation does not bring them back"
)
async def test_revoking_an_owner_ends_their_links(
    db: Database,
    db_url: str,
    config: Config,
    base_url: str,
    ann: NewOwner,
    as_ann: httpx.AsyncClient,
    ben: NewOwner,
    as_ben: httpx.AsyncClient,
) -> None:
    rid = await corrected_record(db, config, ann, as_ann)
    links = [await shared(as_ann, rid, "for Bob"), await shared(as_ann, rid, "for Carol")]
    secrets = [secret_of(link["url"]) for link in links]
    bens = secret_of((await shared(as_ben, await corrected_record(db, config, ben, as_ben)))["url"])
    for secret in secrets:
        assert await answers(base_url, secret) == ALL_OK

    revoked = await cli(db_url, "owner", "revoke", "ann")
    assert revoked.returncode == 0, revoked.stderr
    assert "2 share links ended" in revoked.stdout
    for secret in secrets:
        assert await answers(base_url, secret) == ALL_GONE
    assert await answers(base_url, bens) == ALL_OK  # another owner's stay
    # Ended for good, each journaled on its record by whoever ran the command.
    events = [e for e in await journal(db, uuid.UUID(rid)) if e["kind"] == "share_revoked"]
    assert {e["detail"]["share"] for e in events} == {link["id"] for link in links}
    assert all(e["origin"] == "human" and e["detail"]["why"] == "owner_revoked" for e in events)
    assert all(e["detail"]["by"] for e in events)

    # Rotation reinstates the owner with a new token, not the links the old one made.
    rotated = await cli(db_url, "owner", "rotate", "ann")
    assert rotated.returncode == 0, rotated.stderr
    assert "0 live share links of ann stay" in rotated.stderr
    for secret in secrets:
        assert await answers(base_url, secret) == ALL_GONE
    async with client(base_url, NewOwner(ann.id, "ann", rotated.stdout.strip())) as new:
        fresh = secret_of((await shared(new, rid))["url"])
    assert await answers(base_url, fresh) == ALL_OK


@scenario("A link answers only while its owner is active, on every route")
async def test_a_link_is_checked_against_its_owner_where_it_is_resolved(
    db: Database, config: Config, base_url: str, ann: NewOwner, as_ann: httpx.AsyncClient
) -> None:
    """The owner is checked in the statement that finds a link, whatever ended the
    owner: here only the owner's row changes (an older revoke, a hand in the
    database), not the link's."""
    rid = await corrected_record(db, config, ann, as_ann)
    secret = secret_of((await shared(as_ann, rid))["url"])
    await db.run(
        lambda con: con.execute("UPDATE owners SET revoked_at = now() WHERE id = $1", ann.id)
    )
    assert await answers(base_url, secret) == ALL_GONE
    async with client(base_url) as anyone:
        # The same answer as a made-up link's: nothing tells the reason.
        gone, made_up = await anyone.get(f"/s/{secret}"), await anyone.get("/s/" + "A" * 43)
        assert (gone.status_code, gone.text) == (made_up.status_code, made_up.text)
    [link] = await operator_shares.links(db, "ann")
    assert link.state == "owner_revoked" and link.revoked_at is None


@scenario("Rotating an owner's token keeps their links")
async def test_rotation_keeps_links(
    db: Database,
    db_url: str,
    config: Config,
    base_url: str,
    ann: NewOwner,
    as_ann: httpx.AsyncClient,
) -> None:
    rid = await corrected_record(db, config, ann, as_ann)
    secret = secret_of((await shared(as_ann, rid))["url"])
    rotated = await cli(db_url, "owner", "rotate", "ann")
    assert rotated.returncode == 0, rotated.stderr
    assert "1 live share links of ann stay" in rotated.stderr
    assert "transcriber share list --owner ann" in rotated.stderr
    assert (await as_ann.get(f"/v1/recordings/{rid}")).status_code == 401  # the old token
    assert await answers(base_url, secret) == ALL_OK


@scenario("The operator lists and revokes any owner's links from the command line, seeing no text")
async def test_share_commands(
    db: Database,
    db_url: str,
    config: Config,
    base_url: str,
    ann: NewOwner,
    as_ann: httpx.AsyncClient,
) -> None:
    rid = await corrected_record(db, config, ann, as_ann)
    first, second = await shared(as_ann, rid, "for Bob"), await shared(as_ann, rid, "for Carol")
    async with client(base_url) as anyone:
        assert (await anyone.get(f"/s/{secret_of(first['url'])}")).status_code == 200

    listed = await cli(db_url, "share", "list", "--owner", "ann")
    assert listed.returncode == 0, listed.stderr
    lines = listed.stdout.splitlines()[1:]
    assert [line.split()[0] for line in lines] == [second["id"], first["id"]]  # newest first
    assert all(rid in line and " ann " in line and line.endswith(" live") for line in lines)
    for private in ("for Bob", "for Carol", "Board meeting", "Hello, shared world."):
        assert private not in listed.stdout
    for secret in (secret_of(first["url"]), secret_of(second["url"])):
        assert secret not in listed.stdout
    assert (await cli(db_url, "share", "list")).stdout.count(" ann ") == 2
    nobody = await cli(db_url, "share", "list", "--owner", "nobody")
    assert nobody.returncode == 1 and "no owner 'nobody'" in nobody.stderr

    unknown = str(uuid.uuid4())
    revoked = await cli(db_url, "share", "revoke", first["id"], unknown)
    assert revoked.returncode == 1  # one was no link; the other is revoked all the same
    assert (
        f"revoked {first['id']}" in revoked.stdout and f"no share link {unknown}" in revoked.stderr
    )
    async with client(base_url) as anyone:
        assert (await anyone.get(f"/s/{secret_of(first['url'])}")).status_code == 404
        assert (await anyone.get(f"/s/{secret_of(second['url'])}")).status_code == 200
    again = await cli(db_url, "share", "revoke", first["id"])
    assert again.returncode == 0 and "was revoked already" in again.stdout
    assert (await cli(db_url, "share", "revoke", "nope")).returncode == 1
    events = [e for e in await journal(db, uuid.UUID(rid)) if e["kind"] == "share_revoked"]
    assert [(e["origin"], e["detail"]["share"]) for e in events] == [("human", first["id"])]
    assert events[0]["detail"]["by"]
    # The owner's list shows it revoked, with its openings.
    mine = (await as_ann.get(f"/v1/recordings/{rid}/shares")).json()["items"]
    assert [(s["id"], s["revoked_at"] is not None, s["opened"]) for s in mine] == [
        (first["id"], True, 1),
        (second["id"], False, 1),
    ]
    after = (await cli(db_url, "share", "list", "--owner", "ann")).stdout
    assert f"{first['id']}" in after and after.splitlines()[2].endswith(" revoked")


@scenario("The operator lists and revokes any owner's links on the screen, seeing no text")
async def test_ops_shares_screen(
    db: Database,
    config: Config,
    base_url: str,
    ann: NewOwner,
    as_ann: httpx.AsyncClient,
    ben: NewOwner,
    as_ben: httpx.AsyncClient,
    olga: NewOperator,
) -> None:
    rid = await corrected_record(db, config, ann, as_ann)
    link = await shared(as_ann, rid, "for Bob")
    bens = await shared(as_ben, await corrected_record(db, config, ben, as_ben), "for Dan")
    secret = secret_of(link["url"])
    async with as_operator(base_url, olga.token) as c:
        every = await c.get("/ops/shares")
        assert every.status_code == 200
        assert link["id"] in every.text and bens["id"] in every.text
        page = await c.get("/ops/shares", params={"owner": "ann"})
        assert link["id"] in page.text and bens["id"] not in page.text and rid in page.text
        for private in ("for Bob", "Board meeting", "Hello, shared world.", secret):
            assert private not in page.text
        assert page.headers["cache-control"] == "no-store"
        # What the screen echoes is escaped; its counts are bounded.
        echoed = await c.get("/ops/shares", params={"owner": '"><script>x()</script>'})
        assert echoed.status_code == 200 and "<script>x()" not in echoed.text
        for bad in ("-1", "1001", "abc"):
            assert (await c.get("/ops/shares", params={"ended": bad})).status_code == 422

        # A forged form and one from another site are refused, and change nothing.
        forged = await c.post("/ops/shares/revoke", data={"csrf": "wrong", "id": link["id"]})
        other = await c.post(
            "/ops/shares/revoke",
            data={"csrf": c.csrf, "id": link["id"]},  # type: ignore[attr-defined]
            headers={"origin": "https://evil.example"},
        )
        assert (forged.status_code, other.status_code) == (403, 403)
        async with client(base_url) as anyone:
            assert (await anyone.get(f"/s/{secret}")).status_code == 200

        done = await c.post(
            "/ops/shares/revoke",
            data={"csrf": c.csrf, "id": [link["id"], "not-an-id"], "owner": "ann"},  # type: ignore[attr-defined]
        )
        assert done.status_code == 303 and done.text == ""
        where = done.headers["location"]
        assert where == "/ops/shares?owner=ann&ended=1&already=0&unknown=0", where
        shown = await c.get(where)
        assert 'id="shares-done"' in shown.text and "operator:olga" in shown.text
        assert f'<tr data-id="{link["id"]}" class="revoked">' in shown.text
    async with client(base_url) as anyone:
        assert await answers(base_url, secret) == ALL_GONE
        assert (await anyone.get(f"/s/{secret_of(bens['url'])}")).status_code == 200
    [event] = [e for e in await journal(db, uuid.UUID(rid)) if e["kind"] == "share_revoked"]
    assert event["origin"] == "human"
    assert event["detail"] == {"by": "operator:olga", "share": link["id"]}


@scenario("Only an operator reaches the share links' list and revoke")
async def test_share_admin_is_the_operators(
    db: Database,
    config: Config,
    base_url: str,
    ann: NewOwner,
    as_ann: httpx.AsyncClient,
    olga: NewOperator,
) -> None:
    rid = await corrected_record(db, config, ann, as_ann)
    link = await shared(as_ann, rid, "for Bob")
    owner_secret = await owner_session_secret(base_url, ann)
    routes = [
        ("GET", "/ops/shares"),
        ("GET", "/ops/shares?owner=ann"),
        ("POST", "/ops/shares/revoke"),
    ]
    # A stranger, the owner's session in either cookie, the owner's token, a share link.
    for cookies, headers in (
        ({}, {}),
        ({page_sign_in.COOKIE: owner_secret}, {}),
        ({ops_sign_in.COOKIE: owner_secret}, {}),
        ({}, {"authorization": f"Bearer {ann.token}"}),
        ({}, {"authorization": f"Bearer {secret_of(link['url'])}"}),
    ):
        async with httpx.AsyncClient(base_url=base_url, cookies=cookies, headers=headers) as c:
            for method, path in routes:
                r = await c.request(
                    method,
                    path,
                    headers={"accept": "application/json"},
                    data={"csrf": "x", "id": link["id"]} if method == "POST" else None,
                )
                assert r.status_code in (401, 403), (cookies, headers, method, path, r.status_code)
                assert link["id"] not in r.text
            browser = await c.get("/ops/shares", headers={"accept": "text/html"})
            assert browser.status_code in (303, 401) and link["id"] not in browser.text
    async with client(base_url) as anyone:
        assert (await anyone.get(f"/s/{secret_of(link['url'])}")).status_code == 200
    assert not [e for e in await journal(db, uuid.UUID(rid)) if e["kind"] == "share_revoked"]
    # The owner's own API has no way to another owner's, nor to any list of every link.
    assert (await as_ann.get("/v1/shares")).status_code == 404


async def wait_for_lock_waiters(db: Database, n: int) -> None:
    """Until `n` sessions of this database wait on a lock: the race is then set up."""
    sql = (
        "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
        "AND wait_event_type = 'Lock'"
    )
    with trio.fail_after(10):
        while await db.run(lambda con: con.fetchval(sql)) < n:
            await trio.sleep(0.005)


@scenario("A link made while its owner is revoked is ended with the others, or not made")
async def test_a_link_made_during_the_owners_revoke(
    db: Database,
    db_url: str,
    config: Config,
    base_url: str,
    ann: NewOwner,
    as_ann: httpx.AsyncClient,
) -> None:
    rid = uuid.UUID(await corrected_record(db, config, ann, as_ann))
    secret = "made-while-revoking-" + "x" * 30

    # A link in the making (its token was good when the request began): its statement
    # ran, its transaction is not committed when the revoke comes.
    async def making(ran: trio.Event, release: trio.Event) -> None:
        async def work(con: Any) -> None:
            async with con.transaction():
                row = await con.fetchrow(
                    db.sql("share_add"), ann.id, rid, secret_hash(secret), "", None
                )
                assert row is not None
                ran.set()
                await trio_asyncio.trio_as_aio(release.wait)()

        await db.run(work)

    ran, release = trio.Event(), trio.Event()
    ended: list[int] = []
    async with trio.open_nursery() as nursery:
        nursery.start_soon(making, ran, release)
        await ran.wait()

        async def revoking() -> None:
            ended.append(await revoke(db, "ann", by="test"))

        nursery.start_soon(revoking)
        await wait_for_lock_waiters(db, 1)  # the revoke waits for the link's commit
        release.set()
    assert ended == [1]  # it saw the link committed meanwhile, and ended it
    rotated = await rotate_token(db, "ann")
    async with client(base_url) as anyone:
        assert (await anyone.get(f"/s/{secret}")).status_code == 404

    # The other way round: the revoke's owner row first, a link asked for meanwhile
    # waits for it and is not made.
    await db.run(lambda con: con.execute("UPDATE shares SET revoked_at = now()"))
    asked: list[Any] = []

    async def revoking_held(locked: trio.Event, release: trio.Event) -> None:
        async def work(con: Any) -> None:
            async with con.transaction():
                owner = await con.fetchval(db.sql("owner_revoke"), "ann")
                locked.set()
                await trio_asyncio.trio_as_aio(release.wait)()
                await con.fetchval(db.sql("owner_revoke_shares"), owner, {"by": "test"})

        await db.run(work)

    locked, release = trio.Event(), trio.Event()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(revoking_held, locked, release)
        await locked.wait()

        async def asking() -> None:
            asked.append(await add_share(db, rotated.owner.id, rid, note="", expires_at=None))

        nursery.start_soon(asking)
        await wait_for_lock_waiters(db, 1)
        release.set()
    assert asked == [None]
    live = await db.run(
        lambda con: con.fetchval("SELECT count(*) FROM shares WHERE revoked_at IS NULL")
    )
    assert live == 0
