"""Where a record is, as its owner reads it on the list, its page and the API's card:
queued with how many are ahead, the step at work (with its percentage), done, stopped
(openspec/specs/page/spec.md, "Progress as it is")."""

from __future__ import annotations

import re
import uuid
from pathlib import Path

import httpx
import pytest
import trio
from selenium.webdriver.common.by import By

from tests.helpers.api_clients import client, uploaded
from tests.helpers.browser import browser_session, css, wait
from tests.helpers.pages import signed_in
from transcriber.db.database import Database
from transcriber.owners import NewOwner


def scenario(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("page", title)


async def at_work(
    db: Database, rid: str, milestone: str, progress: float | None, *, lease: str = "1 hour"
) -> None:
    """`rid` claimed at `milestone` by a worker whose lease runs `lease` from now
    (negative: ran out), its step having reported `progress`."""
    await db.run(
        lambda con: con.execute(
            "UPDATE recordings SET milestone = $2, claim_token = gen_random_uuid(),"
            " lease_expires_at = now() + $3::text::interval, progress = $4 WHERE id = $1",
            uuid.UUID(rid),
            milestone,
            lease,
            progress,
        )
    )


def plain(text: str) -> str:
    """`text` with the no-break spaces of dates and times (Babel's, the browser's) plain."""
    return text.replace("\u202f", " ").replace("\xa0", " ")


def row_state(html: str, rid: str) -> str:
    """The words of the state badge in `rid`'s row of the list."""
    m = re.search(rf'<tr id="rec-{rid}".*?<span class="badge[^>]*>([^<]*)</span>', html, re.S)
    assert m, html
    return m.group(1)


@scenario("The list, the record page and the card say where a record is, as it is")
async def test_states_as_they_are(
    db: Database, base_url: str, as_ann: httpx.AsyncClient, ann: NewOwner, ben: NewOwner
) -> None:
    normalizing = (await uploaded(as_ann, title="Normalizing"))["id"]
    async with client(base_url, ben) as as_ben:
        bens = (await uploaded(as_ben, title="Ben's, queued"))["id"]
    transcribing = (await uploaded(as_ann, title="Transcribing"))["id"]
    short = (await uploaded(as_ann, title="Short, no report yet"))["id"]
    lost = (await uploaded(as_ann, title="A lost claim"))["id"]
    speakers = (await uploaded(as_ann, title="Speakers"))["id"]
    queued = (await uploaded(as_ann, title="Queued"))["id"]
    await at_work(db, normalizing, "received", None)
    await at_work(db, transcribing, "normalized", 0.42)
    await at_work(db, short, "normalized", None)
    # A claim whose lease ran out is the queue's again; its last report is stale.
    await at_work(db, lost, "normalized", 0.9, lease="-1 minute")
    await at_work(db, speakers, "recognized", 0.5)

    cards = {
        rid: (await as_ann.get(f"/v1/recordings/{rid}")).json()
        for rid in (normalizing, transcribing, short, lost, speakers, queued)
    }
    assert cards[normalizing]["state"] == "normalizing"
    assert (cards[transcribing]["state"], cards[transcribing]["progress"]) == (
        "transcribing",
        pytest.approx(0.42),
    )
    assert cards[short]["state"] == "transcribing" and cards[short]["progress"] is None
    assert cards[speakers]["state"] == "finding_speakers"
    # Ahead of `lost`: ben's (the others are claimed). Ahead of `queued`: ben's and `lost`.
    assert (cards[lost]["state"], cards[lost]["queue_ahead"], cards[lost]["progress"]) == (
        "queued",
        1,
        None,
    )
    assert (cards[queued]["state"], cards[queued]["queue_ahead"]) == ("queued", 2)
    assert all(cards[r]["queue_ahead"] is None for r in (normalizing, transcribing, speakers))
    listed = (await as_ann.get("/v1/recordings")).json()["items"]
    assert {c["id"]: c["queue_ahead"] for c in listed}[queued] == 2
    assert bens not in {c["id"] for c in listed}  # counted, never named

    async with signed_in(base_url, ann) as page:
        rows = (await page.get("/")).text
        assert row_state(rows, normalizing) == "Preparing the audio"
        assert row_state(rows, transcribing) == "Transcribing, 42%"
        assert row_state(rows, short) == "Transcribing"
        assert row_state(rows, speakers) == "Finding the speakers, 50%"
        assert row_state(rows, lost) == "Queued, 1 recording ahead"
        assert row_state(rows, queued) == "Queued, 2 recordings ahead"
        assert "Waiting to be transcribed" not in rows
        live = (await page.get(f"/recordings/{queued}", params={"fragment": "live"})).text
        assert "Queued, 2 recordings ahead" in live
        live = (await page.get(f"/recordings/{transcribing}", params={"fragment": "live"})).text
        assert "Transcribing, 42%" in live and '<progress max="1" value="0.4' in live

        page.cookies.set("transcriber_lang", "ru")
        rows = (await page.get("/")).text
        assert row_state(rows, lost) == "В очереди, впереди 1 запись"
        assert row_state(rows, queued) == "В очереди, впереди 2 записи"
        assert row_state(rows, normalizing) == "Готовим звук"

    # The workers take ben's: the owner's records move up.
    await at_work(db, bens, "received", None)
    assert (await as_ann.get(f"/v1/recordings/{queued}")).json()["queue_ahead"] == 1
    await at_work(db, lost, "normalized", None)
    card = (await as_ann.get(f"/v1/recordings/{queued}")).json()
    assert card["queue_ahead"] == 0
    async with signed_in(base_url, ann) as page:
        assert row_state((await page.get("/")).text, queued) == "Queued, next in line"


# --- owner words -----------------------------------------------------------------------


def internal_terms(html: str) -> list[str]:
    """What of the pipeline's or the CLI's own terms `html` shows its owner."""
    terms = (
        "`",
        "transcriber resume",
        "transcriber stopped",
        "transcriber owner",
        "TRANSCRIBER_",
        "milestone",
        "reason",
        "lease",
        "pipeline",
    )
    terms += ("received", "normalized", "attempts_exhausted", "undecodable_audio")
    # The words shown, not ids, attributes and the scripts' own.
    text = re.sub(r"<script.*?</script>", " ", html, flags=re.S)
    text = re.sub(r"<[^>]*>", " ", text)
    return [t for t in terms if t in text]


async def journaled(db: Database, rid: str, kind: str, milestone: str, detail: str) -> None:
    await db.run(
        lambda con: con.execute(
            "INSERT INTO journal (recording_id, origin, kind, milestone, detail)"
            " VALUES ($1, 'pipeline', $2, $3, $4::text::jsonb)",
            uuid.UUID(rid),
            kind,
            milestone,
            detail,
        )
    )


@scenario("A stop and the journal speak to the owner in the owner's words")
async def test_owner_words(
    db: Database, base_url: str, as_ann: httpx.AsyncClient, ann: NewOwner
) -> None:
    from transcriber.stops import MESSAGES

    rid = (await uploaded(as_ann, title="Stops"))["id"]
    await journaled(db, rid, "milestone_reached", "normalized", '{"step": "normalize"}')
    await journaled(db, rid, "attempt_failed", "normalized", '{"error": "boom"}')
    await journaled(db, rid, "lease_lost", "normalized", '{"write": "progress"}')
    await journaled(
        db, rid, "stopped", "normalized", '{"reason": "attempts_exhausted", "error": "boom"}'
    )
    await db.run(
        lambda con: con.execute(
            "UPDATE recordings SET milestone = 'normalized', stopped_at = now(),"
            " stop_reason = 'attempts_exhausted', stop_error = 'boom' WHERE id = $1",
            uuid.UUID(rid),
        )
    )
    async with signed_in(base_url, ann) as page:
        html = (await page.get(f"/recordings/{rid}")).text
        assert internal_terms(html) == []
        assert "Stopped while transcribing" in html
        assert "Wait for the service&#39;s operator, who has been told" in html
        journal = html[html.index('id="journal"') :]
        for said in ("Uploaded", "Audio prepared", "A try failed; it will be tried again"):
            assert said in journal
        assert "Interrupted; it will be taken up again" in journal
        rows = (await page.get("/")).text
        assert row_state(rows, rid) == "Stopped" and internal_terms(rows) == []

        # Every stop, in each language: what happened and what to do, no command.
        for reason in [*MESSAGES, "some_new_reason"]:
            await db.run(
                lambda con, reason=reason: con.execute(
                    "UPDATE recordings SET stop_reason = $2 WHERE id = $1",
                    uuid.UUID(rid),
                    reason,
                )
            )
            for lang in ("en", "ru"):
                page.cookies.set("transcriber_lang", lang)
                html = (await page.get(f"/recordings/{rid}")).text
                assert internal_terms(html) == [], (reason, lang)
        page.cookies.set("transcriber_lang", "ru")
        html = (await page.get(f"/recordings/{rid}")).text
        assert "Остановлена при расшифровке" in html and "Загружена" in html

    async with httpx.AsyncClient(base_url=base_url, timeout=30) as c:
        for lang in ("en", "ru"):
            c.cookies.set("transcriber_lang", lang)
            refused = await c.post("/signin", data={"token": "tr_wrong", "next": "/"})
            assert internal_terms(refused.text) == [], lang
            assert "operator" in refused.text or "оператор" in refused.text


# --- times in the reader's time zone ------------------------------------------------------


@scenario("Times on the owner's page are in the reader's time zone, UTC without the script")
async def test_times_in_the_readers_zone(
    db: Database, base_url: str, as_ann: httpx.AsyncClient, ann: NewOwner, tmp_path: Path
) -> None:
    rid = (await uploaded(as_ann, title="Zones"))["id"]
    await db.run(
        lambda con: con.execute(
            "UPDATE recordings SET created_at = '2026-12-01 13:40:00+00' WHERE id = $1",
            uuid.UUID(rid),
        )
    )
    async with signed_in(base_url, ann) as page:
        # Without the script: the server's UTC.
        html = plain((await page.get(f"/recordings/{rid}")).text)
        assert ">Dec 1, 2026, 1:40 PM UTC</time>" in html

    def read_in_tokyo() -> tuple[str, str, str]:
        with browser_session(tmp_path / "profile") as d:
            d.execute_cdp_cmd("Emulation.setTimezoneOverride", {"timezoneId": "Asia/Tokyo"})
            d.get(base_url + "/signin")
            css(d, "#token").send_keys(ann.token)
            css(d, "#signin-form").submit()
            wait(d, lambda d: d.find_elements(By.ID, "list"))
            # Read in one step each: the live page may swap its parts in at any moment.
            read = (
                "const t = document.querySelector(arguments[0] + ' time[data-local]');"
                "return t && [t.textContent, t.title];"
            )
            listed = wait(d, lambda d: d.execute_script(read, f"#rec-{rid}"))
            d.get(f"{base_url}/recordings/{rid}")
            shown = wait(d, lambda d: d.execute_script(read, "#status"))
            return listed[0], shown[0], shown[1]

    listed, shown, title = map(plain, await trio.to_thread.run_sync(read_in_tokyo))
    # 13:40 UTC is 22:40 in Tokyo (UTC+9, no summer time).
    assert "10:40" in listed and "PM" in listed and "UTC" not in listed, listed
    assert "Dec 1, 2026" in shown and "10:40" in shown and "GMT+9" in shown, shown
    assert title == "Dec 1, 2026, 1:40 PM UTC"
