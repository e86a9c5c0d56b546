"""A language hint is one the recognizer knows, or none (capability `intake`): an
unknown code (`rus`, `xx`) is refused where it comes in — the API's upload, the page's,
the OpenAI endpoint, the command line — before a record or a file is kept, instead of
being accepted and failing every recognition attempt minutes later."""

from __future__ import annotations

import uuid
from pathlib import Path

import httpx
import pytest

from tests.helpers.api_clients import count_recordings, store_files
from tests.helpers.cli_process import cli
from tests.helpers.pages import signed_in
from tests.integration.test_openai_api import openai_error
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.http.openai.requests import parse_request
from transcriber.intake import Described
from transcriber.languages import NAMES, UnknownLanguage, language_hint
from transcriber.owners import NewOwner

UNKNOWN = ("rus", "xx")
KNOWN = {"ru": "ru", "en": "en", "EN": "en", "": None, "auto": None}
"""What the sender gives, and the hint the record keeps."""


def intake(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("intake", title)


def refused_for(code: str, error: str) -> bool:
    return f"language {code!r} is not one the recognizer knows" in error and "docs/api.md" in error


async def stored_language(db: Database, rid: str) -> str | None:
    return await db.run(
        lambda con: con.fetchval("SELECT language FROM recordings WHERE id = $1", uuid.UUID(rid))
    )


@intake("A language the recognizer does not know is refused at upload")
async def test_the_api_refuses_an_unknown_language_and_keeps_nothing(
    db: Database, config: Config, as_ann: httpx.AsyncClient
) -> None:
    for code in UNKNOWN:
        as_form = await as_ann.post(
            "/v1/recordings", files={"file": ("a.ogg", b"OggS audio")}, data={"language": code}
        )
        raw = await as_ann.post(
            "/v1/recordings",
            content=b"OggS audio",
            params={"language": code},
            headers={"Content-Type": "audio/ogg"},
        )
        for r in (as_form, raw):
            assert r.status_code == 422 and refused_for(code, r.json()["error"]), r.text
    assert await count_recordings(db) == 0 and store_files(config) == []
    for n, (given, kept) in enumerate(KNOWN.items()):
        r = await as_ann.post(
            "/v1/recordings", files={"file": (f"{n}.ogg", b"OggS audio")}, data={"language": given}
        )
        assert r.status_code == 201, (given, r.text)
        assert r.json()["language"] == kept == await stored_language(db, r.json()["id"])


@intake("A language the recognizer does not know is refused at upload")
async def test_the_page_refuses_an_unknown_language_and_keeps_nothing(
    db: Database, config: Config, base_url: str, ann: NewOwner
) -> None:
    async with signed_in(base_url, ann) as c:
        headers = {"X-CSRF-Token": c.csrf}  # type: ignore[attr-defined]
        form = await c.get("/")
        # The form offers the recognizer's codes, and says so.
        assert '<option value="ru">' in form.text and "languages the recognizer knows" in form.text
        for code in UNKNOWN:
            r = await c.post(
                "/upload",
                files={"file": ("a.wav", b"RIFF", "audio/wav")},
                data={"language": code},
                headers=headers,
            )
            assert r.status_code == 422 and refused_for(code, r.json()["error"]), r.text
        assert await count_recordings(db) == 0 and store_files(config) == []
        for n, (given, kept) in enumerate(KNOWN.items()):
            r = await c.post(
                "/upload",
                files={"file": (f"{n}.wav", b"RIFF", "audio/wav")},
                data={"language": given},
                headers=headers,
            )
            assert r.status_code == 201, (given, r.text)
            assert await stored_language(db, r.json()["id"]) == kept


@intake("A language the recognizer does not know is refused at upload")
async def test_the_openai_endpoint_refuses_an_unknown_language_as_openai_does(
    db: Database, config: Config, base_url: str, ann: NewOwner
) -> None:
    async with httpx.AsyncClient(
        base_url=base_url, timeout=30, headers={"Authorization": f"Bearer {ann.token}"}
    ) as c:
        for code in UNKNOWN:
            r = await c.post(
                "/v1/audio/transcriptions",
                files={"file": ("a.wav", b"RIFF", "audio/wav")},
                data={"model": "whisper-1", "language": code},
            )
            assert r.status_code == 400, r.text
            error = openai_error(r)
            assert (error["type"], error["param"]) == ("invalid_request_error", "language")
            assert refused_for(code, error["message"]), error
    assert await count_recordings(db) == 0 and store_files(config) == []
    # What it takes, read as the endpoint reads its form (a 200 waits for a recognizer).
    for given, kept in KNOWN.items():
        assert parse_request("transcribe", {"language": given}, {}).language == kept


@intake("A language the recognizer does not know is refused at upload")
async def test_the_command_line_refuses_an_unknown_language_before_storing(
    db: Database, db_url: str, tmp_path: Path
) -> None:
    audio = tmp_path / "talk.wav"
    audio.write_bytes(b"RIFF not really audio")
    home = tmp_path / "home"
    for code in UNKNOWN:
        for command in ("submit", "transcribe"):
            r = await cli(db_url, command, str(audio), "--language", code, home=str(home))
            assert r.returncode == 2, (command, r.stdout, r.stderr)
            assert refused_for(code, r.stderr), r.stderr
    assert await count_recordings(db) == 0
    assert not (home / "uploads").exists() or not list((home / "uploads").iterdir())
    for given, kept in KNOWN.items():
        r = await cli(db_url, "submit", str(audio), "--language", given, home=str(home))
        assert r.returncode == 0, (given, r.stderr)
        rid = r.stdout.split()[0]
        assert await stored_language(db, rid) == kept


def test_every_hint_the_intake_keeps_is_a_code_of_the_recognizer() -> None:
    for code in UNKNOWN:
        with pytest.raises(UnknownLanguage):
            language_hint(code)
        with pytest.raises(UnknownLanguage):
            Described("a.wav", None, code)  # whatever the door
    assert Described("a.wav", None, " Ru ").language == "ru"
    assert Described("a.wav", None, "auto").language is None


def test_the_codes_are_the_recognizers_own() -> None:
    tokenizer = pytest.importorskip("faster_whisper.tokenizer")
    assert set(NAMES) == set(tokenizer._LANGUAGE_CODES)


def test_the_service_default_is_checked_as_a_hint_is() -> None:
    # TRANSCRIBER_LANGUAGE is every hint-less record's hint: refused when the service
    # starts, not at each record's recognition.
    for code in UNKNOWN:
        with pytest.raises(UnknownLanguage):
            Config.from_env({"TRANSCRIBER_LANGUAGE": code})
    for given, kept in KNOWN.items():
        assert Config.from_env({"TRANSCRIBER_LANGUAGE": given}).language == kept
