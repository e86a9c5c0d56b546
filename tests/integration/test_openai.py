"""The OpenAI-compatible endpoint (capability `openai`): the real `openai` SDK against a
real `transcriber serve` process on loopback, with the bundled model.

Real recognition costs seconds of CPU a call on this machine, so the SDK's calls share
one service and go out together; the short samples only.
"""

from __future__ import annotations

import contextlib
import os
import re
import unicodedata
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
import trio

from tests.helpers.generated_audio import SAMPLES
from tests.helpers.pg_pipeline import journal
from tests.helpers.postgres import scratch_database
from tests.helpers.serve_process import serve_process
from transcriber.db.database import Database, open_database
from transcriber.owners import NewOwner, add_owner


def scenario(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("openai", title)


EN, RU = SAMPLES / "en.ogg", SAMPLES / "ru.ogg"
RECORDING = "x-transcriber-recording-id"


def sdk(url: str, key: str, timeout: float = 300.0, max_retries: int = 0) -> openai.OpenAI:
    return openai.OpenAI(
        api_key=key, base_url=f"{url}/v1", max_retries=max_retries, timeout=timeout
    )


async def in_thread(fn: Callable[[], Any]) -> Any:
    """The SDK's synchronous client, off the trio thread."""
    return await trio.to_thread.run_sync(fn)


async def until(check: Callable[[], Any], seconds: float = 180.0) -> Any:
    """Ask `check` (an async function) until it answers something true: the state of
    another process, which nothing here can wait on otherwise."""
    with trio.fail_after(seconds):
        while not (found := await check()):
            await trio.sleep(0.1)
        return found


def is_english(text: str) -> bool:
    letters = [ch for ch in text if ch.isalpha()]
    latin = [ch for ch in letters if "LATIN" in unicodedata.name(ch, "")]
    common = {"the", "we", "a", "to", "is", "of", "and", "this", "will", "for", "our"}
    return (
        len(letters) > 20
        and len(latin) == len(letters)
        and bool(common & set(re.findall(r"[a-z]+", text.lower())))
    )


def transcribe(client: openai.OpenAI, sample: Path, model: str = "whisper-1", **fields: Any) -> Any:
    with open(sample, "rb") as f:
        raw = client.audio.transcriptions.with_raw_response.create(model=model, file=f, **fields)
    return raw.headers[RECORDING], raw.parse()


# This SDK marks `audio.translations.create` deprecated (OpenAI's newer models do not
# translate); it is still there, and what clients of Whisper call.
@pytest.mark.filterwarnings("ignore:deprecated:DeprecationWarning")
@scenario("The OpenAI SDK transcribes and translates unchanged")
@scenario("A streamed transcription sends text as it is recognized")
@scenario("A bad key and an unreadable file get OpenAI's errors")
@scenario("A recording submitted to the first is recognized by the second")
async def test_the_sdk_against_a_real_service(
    db: Database, db_url: str, pg_admin_url: str, template_db: str, tmp_path: Path, model_dir: Path
) -> None:
    ann, first = await add_owner(db, "ann"), await add_owner(db, "first")
    # Ann's seven requests below upload at once: more than an owner's default (4).
    async with (
        serve_process(
            db_url, tmp_path / "home", "--workers", "2", model=str(model_dir), owner_max_uploads="8"
        ) as service,
        contextlib.AsyncExitStack() as stack,
    ):
        url = service.url
        # Another transcriber (a database of its own) whose recognizer is this service:
        # its upload is recognized here, alongside the SDK's calls.
        first_url = await stack.enter_async_context(scratch_database(pg_admin_url, template_db))
        first_db = await stack.enter_async_context(open_database(first_url, min_size=1, max_size=2))
        bob = await add_owner(first_db, "bob")
        other = await stack.enter_async_context(
            serve_process(
                first_url,
                tmp_path / "first",
                "--workers",
                "1",
                recognizer_url=url,
                recognizer_key=first.token,
            )
        )
        as_bob = await stack.enter_async_context(
            httpx.AsyncClient(
                base_url=other.url, timeout=30, headers={"Authorization": f"Bearer {bob.token}"}
            )
        )
        relayed = (
            await as_bob.post(
                "/v1/recordings",
                data={"language": "ru"},
                files={"file": ("ru.ogg", RU.read_bytes())},
            )
        ).json()["id"]

        client = sdk(url, ann.token)
        stack.callback(client.close)
        models = await in_thread(lambda: [m.id for m in client.models.list()])
        assert models == ["whisper-1", "whisper-base"]

        calls: dict[str, Callable[[], Any]] = {
            "json": lambda: transcribe(client, EN, response_format="json"),
            "verbose": lambda: transcribe(
                client,
                EN,
                response_format="verbose_json",
                timestamp_granularities=["word", "segment"],
            ),
            "text": lambda: transcribe(client, RU, response_format="text", language="ru"),
            "srt": lambda: transcribe(client, RU, response_format="srt", language="ru"),
            "vtt": lambda: transcribe(
                client, RU, response_format="vtt", language="ru", model="whisper-base"
            ),
            "translation": lambda: _translate(client, RU),
            "streamed": lambda: _streamed(client, EN),
        }
        got: dict[str, Any] = {}
        async with trio.open_nursery() as nursery:
            for name, call in calls.items():

                async def run(name: str = name, call: Callable[[], Any] = call) -> None:
                    got[name] = await in_thread(call)

                nursery.start_soon(run)

            # Meanwhile, the errors (no recognition needed).
            stranger = sdk(url, "tr_wrong")
            stack.callback(stranger.close)
            with pytest.raises(openai.AuthenticationError) as unknown:
                await in_thread(
                    lambda: stranger.audio.transcriptions.create(
                        model="whisper-1", file=("a.ogg", EN.read_bytes())
                    )
                )
            with pytest.raises(openai.BadRequestError) as refused:
                await in_thread(
                    lambda: client.audio.transcriptions.create(
                        model="whisper-1", file=("noise.mp3", os.urandom(4096))
                    )
                )

        assert unknown.value.code == "invalid_api_key"
        assert "undecodable_audio" in refused.value.message
        assert refused.value.code == "undecodable_audio"
        assert refused.value.response.headers["x-should-retry"] == "false"
        noise = refused.value.response.headers[RECORDING]
        assert noise in refused.value.message

        _, json_ = got["json"]
        assert "meeting" in json_.text.lower()
        _, verbose = got["verbose"]
        assert (verbose.language, verbose.model) == ("english", "whisper-base")
        assert 12 < verbose.duration < 13
        assert verbose.text == json_.text  # the same audio, the same model
        assert verbose.segments and all(s.start < s.end for s in verbose.segments)
        assert " ".join(s.text for s in verbose.segments) == verbose.text
        words = [w.word for w in verbose.words]
        assert "quarterly" in [w.lower().strip(".,") for w in words], words
        assert all(w.start <= w.end for w in verbose.words)
        _, text = got["text"]
        assert isinstance(text, str) and re.search(r"[а-яё]", text.lower()), text
        _, srt = got["srt"]
        assert srt.startswith("1\n00:00:0") and " --> " in srt, srt
        _, vtt = got["vtt"]
        assert vtt.startswith("WEBVTT\n\n00:00:0"), vtt
        _, translation = got["translation"]
        assert is_english(translation.text), translation.text
        # Streamed, the recognizer's own segments as they are heard, the same words.
        _, events = got["streamed"]
        assert [e.type for e in events][-1] == "transcript.text.done"
        assert "".join(e.delta for e in events[:-1]) == events[-1].text == json_.text

        # Each request is a record of the caller's, journaled as coming in by this door.
        async with httpx.AsyncClient(
            base_url=url, timeout=30, headers={"Authorization": f"Bearer {ann.token}"}
        ) as api:
            listed = (await api.get("/v1/recordings", params={"limit": 100})).json()["items"]
            ids = {rid for rid, _ in got.values()} | {noise}
            assert {c["id"] for c in listed} == ids
            assert {c["id"] for c in listed if c["done"]} == ids - {noise}
            text_of_json = (await api.get(f"/v1/recordings/{got['json'][0]}/text")).text
            assert text_of_json.strip() == json_.text

        # The other transcriber's recording was recognized here, by its own request.
        [done] = await until(lambda: _all_done(other.url, bob))
        assert done["id"] == relayed
        transcript = (await as_bob.get(done["links"]["json"])).json()
        assert transcript["model"] == "remote:whisper-1"
        assert re.search(r"[а-яё]", transcript["text"].lower()), transcript["text"]
        [here] = await recordings_of(url, first)
        assert here["done"]
        ids.add(here["id"])
        assert (await journal(first_db, uuid.UUID(relayed)))[0]["detail"] == {"via": "api"}
    for rid in ids:
        accepted = (await journal(db, uuid.UUID(rid)))[0]
        assert (accepted["kind"], accepted["detail"]) == ("accepted", {"via": "openai"})


def _streamed(client: openai.OpenAI, sample: Path) -> Any:
    with open(sample, "rb") as f:
        raw = client.audio.transcriptions.with_raw_response.create(
            model="whisper-1", file=f, stream=True, language="en"
        )
    return raw.headers[RECORDING], list(raw.parse())


def _translate(client: openai.OpenAI, sample: Path) -> Any:
    with open(sample, "rb") as f:
        raw = client.audio.translations.with_raw_response.create(model="whisper-1", file=f)
    return raw.headers[RECORDING], raw.parse()


async def recordings_of(url: str, owner: NewOwner) -> list[dict[str, Any]]:
    async with httpx.AsyncClient(
        base_url=url, timeout=30, headers={"Authorization": f"Bearer {owner.token}"}
    ) as api:
        return (await api.get("/v1/recordings")).json()["items"]


@scenario("A client that goes away does not cancel its record")
@scenario("A restart answers the waiting client with the record's id, and the record completes")
async def test_disconnect_and_restart(
    db: Database, db_url: str, tmp_path: Path, model_dir: Path
) -> None:
    ann = await add_owner(db, "ann")
    home = tmp_path / "home"
    # No workers at first: the records wait at `received` for as long as the test needs.
    async with serve_process(db_url, home, "--workers", "0", model=str(model_dir)) as service:
        url = service.url
        with sdk(url, ann.token, timeout=2.0) as impatient, pytest.raises(openai.APITimeoutError):
            await in_thread(
                lambda: impatient.audio.transcriptions.create(
                    model="whisper-1", file=("ru.ogg", RU.read_bytes()), language="ru"
                )
            )
        [gone] = await recordings_of(url, ann)
        assert not gone["done"]

        answered: list[BaseException | None] = []
        async with trio.open_nursery() as nursery:

            async def ask() -> None:
                answered.append(await in_thread(lambda: _error_of(url, ann)))

            nursery.start_soon(ask)
            # Once the second record exists its request is waiting: stop the service.
            [kept, _] = await until(lambda: _count(url, ann, 2))
            assert not answered
            assert await service.stop() == 0
    [error] = answered
    assert isinstance(error, openai.InternalServerError), error
    assert error.status_code == 503 and error.code == "service_stopping"
    assert kept["id"] in error.message and error.response.headers[RECORDING] == kept["id"]
    assert error.response.headers["x-should-retry"] == "false"

    async with serve_process(db_url, home, "--workers", "1", model=str(model_dir)) as service:
        done = await until(lambda: _all_done(service.url, ann))
        assert {c["id"] for c in done} == {gone["id"], kept["id"]}  # none more: no retries
        async with httpx.AsyncClient(
            base_url=service.url, timeout=30, headers={"Authorization": f"Bearer {ann.token}"}
        ) as api:
            for c in done:
                text = (await api.get(c["links"]["text"])).text
                assert re.search(r"[а-яё]", text.lower()), text


def _error_of(url: str, owner: NewOwner) -> BaseException | None:
    """What a transcription request that waits raises, with the SDK's own retries (two
    by default), which the answer must turn off."""
    try:
        with sdk(url, owner.token, max_retries=2) as client:
            # Another name: the same request again would name the first record.
            client.audio.transcriptions.create(
                model="whisper-1", file=("ru-again.ogg", RU.read_bytes()), language="ru"
            )
    except openai.APIError as e:
        return e
    return None


async def _count(url: str, owner: NewOwner, n: int) -> list[dict[str, Any]] | None:
    found = await recordings_of(url, owner)
    return found if len(found) == n else None


async def _all_done(url: str, owner: NewOwner) -> list[dict[str, Any]] | None:
    found = await recordings_of(url, owner)
    return found if found and all(c["done"] for c in found) else None
