"""The owner's defaults (capability `owner-settings`): `GET`/`PATCH /v1/settings` on a
real PostgreSQL through the real app over loopback HTTP; the intake fills in what an
upload did not say, whichever door it came by, and the card says which; SRT and VTT
downloads follow the default subtitle profile; settings are the owner's alone."""

from __future__ import annotations

import re
import uuid
from typing import Any

import httpx
import pytest

from tests.helpers.api_clients import transcribe, uploaded
from tests.helpers.cli_process import cli
from tests.helpers.pages import signed_in
from transcriber.db.database import Database
from transcriber.owners import NewOwner
from transcriber.pipeline.operator import card as operator_card


def scenario(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("owner-settings", title)


EMPTY = {
    "language": None,
    "speakers": None,
    "vocabulary": [],
    "subtitle_profile": None,
    "remember_voices": False,
}


def without_time(s: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in s.items() if k != "updated_at"}


@scenario("The owner's defaults are kept and checked")
async def test_settings_are_kept_checked_and_the_owners_own(
    as_ann: httpx.AsyncClient, as_ben: httpx.AsyncClient
) -> None:
    r = await as_ann.get("/v1/settings")
    assert r.status_code == 200 and without_time(r.json()) == EMPTY, r.text
    assert "no-store" in r.headers["cache-control"]
    r = await as_ann.patch(
        "/v1/settings",
        json={
            "language": "RU",
            "speakers": " 2-3 ",
            "vocabulary": ["  Kubernetes ", "Anna  Petrova", "Kubernetes", ""],
            "subtitle_profile": "netflix-en",
            "remember_voices": True,
        },
    )
    assert r.status_code == 200, r.text
    kept = {
        "language": "ru",
        "speakers": "2-3",
        "vocabulary": ["Kubernetes", "Anna Petrova"],
        "subtitle_profile": "netflix-en",
        "remember_voices": True,
    }
    assert without_time(r.json()) == kept
    # A field left out stays; null clears one.
    r = await as_ann.patch("/v1/settings", json={"speakers": None})
    assert without_time(r.json()) == {**kept, "speakers": None}
    kept["speakers"] = None

    refused = [
        {"language": "klingon"},
        {"speakers": "0"},
        {"speakers": "2-30"},
        {"vocabulary": ["word"] * 101},
        {"vocabulary": ["x" * 61]},
        {"vocabulary": ["two\nlines"]},
        {"vocabulary": "not a list"},
        {"subtitle_profile": "cinema"},
        {"remember_voices": None},
        {"colour": "blue"},
    ]
    for body in refused:
        r = await as_ann.patch("/v1/settings", json=body)
        assert r.status_code in (400, 422), (body, r.status_code, r.text)
        assert r.json()["error"], r.text
    # Nothing of a refused change was kept, and another owner's settings are their own.
    assert without_time((await as_ann.get("/v1/settings")).json()) == kept
    assert without_time((await as_ben.get("/v1/settings")).json()) == EMPTY


@scenario("An upload that does not say uses the owner's defaults")
async def test_uploads_that_do_not_say_use_the_defaults(
    db: Database,
    as_ann: httpx.AsyncClient,
    as_ben: httpx.AsyncClient,
    ann: NewOwner,
    base_url: str,
) -> None:
    r = await as_ann.patch("/v1/settings", json={"language": "ru", "speakers": "2"})
    assert r.status_code == 200, r.text

    plain = await uploaded(as_ann)
    assert plain["language"] == "ru" and plain["speakers"]["asked"] == "2", plain
    assert plain["from_settings"] == ["language", "speakers"]
    said = await uploaded(as_ann, language="en", speakers="off")
    assert said["language"] == "en" and said["speakers"]["asked"] == "off", said
    assert said["from_settings"] == []
    half = await uploaded(as_ann, language="de")
    assert half["language"] == "de" and half["speakers"]["asked"] == "2"
    assert half["from_settings"] == ["speakers"]
    # Another owner's uploads know nothing of them.
    other = await uploaded(as_ben)
    assert other["language"] is None and other["from_settings"] == []

    # The OpenAI-compatible endpoint: its own request's fields, then the owner's.
    r = await as_ann.post(
        "/v1/audio/transcriptions",
        files={"file": ("talk.wav", b"RIFF openai " + uuid.uuid4().bytes, "audio/wav")},
        data={"model": "whisper-1"},
    )
    assert r.status_code in (200, 202, 409, 500, 504), r.text
    rid = await newest(db, ann.id)
    card = (await as_ann.get(f"/v1/recordings/{rid}")).json()
    assert card["language"] == "ru" and card["from_settings"] == ["language", "speakers"], card

    # The operator's card of the same record does not say which were the owner's.
    assert "from_settings" not in (await operator_card(db, uuid.UUID(plain["id"])) or {})

    # The page's upload form, and its record page saying which came from the settings.
    async with signed_in(base_url, ann) as page:
        r = await page.post(
            "/upload",
            files={"file": ("a.wav", b"RIFF page " + uuid.uuid4().bytes, "audio/wav")},
            headers={"X-CSRF-Token": page.csrf},  # type: ignore[attr-defined]
        )
        assert r.status_code == 201 and r.json()["from_settings"] == ["language", "speakers"]
        shown = (await page.get(r.json()["page"])).text
        assert re.search(r'id="from-settings">Language, Speakers<', shown), shown[:2000]


async def newest(db: Database, owner: int) -> str:
    return str(
        await db.run(
            lambda con: con.fetchval(
                "SELECT id FROM recordings WHERE owner_id = $1 ORDER BY created_at DESC LIMIT 1",
                owner,
            )
        )
    )


@scenario("An upload that does not say uses the owner's defaults")
async def test_the_command_line_given_an_owner_uses_their_defaults(
    db: Database, db_url: str, as_ann: httpx.AsyncClient, ann: NewOwner, tmp_path: Any
) -> None:
    await as_ann.patch("/v1/settings", json={"language": "ru", "speakers": "3"})
    audio = tmp_path / "talk.wav"
    audio.write_bytes(b"RIFF cli " + uuid.uuid4().bytes)
    done = await cli(db_url, "submit", str(audio), "--owner", "ann", home=str(tmp_path / "h"))
    assert done.returncode == 0, done.stderr
    card = (await as_ann.get(f"/v1/recordings/{done.stdout.split()[0]}")).json()
    assert card["language"] == "ru" and card["speakers"]["asked"] == "3", card
    assert card["from_settings"] == ["language", "speakers"]


@scenario("Downloads follow the default subtitle profile")
async def test_srt_follows_the_default_profile(db: Database, as_ann: httpx.AsyncClient) -> None:
    rid = (await uploaded(as_ann))["id"]
    await transcribe(db)
    report = f"/v1/recordings/{rid}/transcript.srt?report=true"
    assert (await as_ann.get(report)).json()["profile"] == "general"
    await as_ann.patch("/v1/settings", json={"subtitle_profile": "bbc"})
    assert (await as_ann.get(report)).json()["profile"] == "bbc"
    # One the request names still wins.
    named = await as_ann.get(f"{report}&profile=netflix-en")
    assert named.json()["profile"] == "netflix-en"


@scenario("Settings and voices go with their owner")
async def test_settings_and_voices_go_with_the_owner(db: Database, ann: NewOwner) -> None:
    await db.run(
        lambda con: con.execute(
            "INSERT INTO owner_settings (owner_id, language, remember_voices)"
            " VALUES ($1, 'ru', true)",
            ann.id,
        )
    )
    await db.run(
        lambda con: con.execute(
            "INSERT INTO voices (owner_id, name, vector, seconds) VALUES ($1, 'Anna', '{1,0}', 3)",
            ann.id,
        )
    )
    await db.run(lambda con: con.execute("DELETE FROM owners WHERE id = $1", ann.id))
    left = await db.run(
        lambda con: con.fetchval(
            "SELECT (SELECT count(*) FROM owner_settings) + (SELECT count(*) FROM voices)"
        )
    )
    assert left == 0
