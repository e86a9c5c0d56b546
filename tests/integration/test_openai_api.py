"""The OpenAI-compatible endpoint's own rules (capability `openai`), in process with
fake audio steps: the fields it takes, its error shape, the answer formats, stopped
records and the wait's limit. The real SDK and model: tests/integration/test_openai.py.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import trio
from fastapi import APIRouter

from actors import StopRecord
from tests.helpers.api_clients import client, fake_audio, store_files
from tests.helpers.pg_pipeline import journal, table
from tests.helpers.raw_http import (
    RawUpload,
    exchange,
    request_head,
    until,
)
from transcriber.config import Config
from transcriber.db.database import Database, DatabaseBusy, open_database
from transcriber.http import create_app, serving
from transcriber.http.openai.requests import DROPPED_FIELDS, TRANSCRIPTION_FIELDS
from transcriber.http.uploads import receive_form
from transcriber.http.waiting import Waiting
from transcriber.owners import NewOwner
from transcriber.pipeline.pg_queue import Saved
from transcriber.pipeline.runner import Pipeline
from transcriber.stops import stop_message
from transcriber.storage.local import LocalBlobs


def scenario(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("openai", title)


LIMIT = 10_000
SEGMENTS = [
    {
        "start": 0.0,
        "end": 1.5,
        "text": "Hello there.",
        "words": [
            {"start": 0.0, "end": 0.6, "word": " Hello", "probability": 0.9},
            {"start": 0.6, "end": 1.5, "word": " there.", "probability": 0.8},
        ],
    },
    {
        "start": 1.5,
        "end": 3.25,
        "text": "General Kenobi.",
        "words": [
            {"start": 1.5, "end": 2.4, "word": " General", "probability": 0.9},
            {"start": 2.4, "end": 3.25, "word": " Kenobi.", "probability": 0.7},
        ],
    },
]
TEXT = "Hello there. General Kenobi."


async def normalized(job: Any, progress: Any) -> Saved:
    return Saved("save_normalized", ("/store/audio.wav", 3.25))


async def recognized(job: Any, progress: Any) -> Saved:
    return Saved("save_transcript", (TEXT, SEGMENTS, "en", "test-model"))


@pytest.fixture
def config(tmp_path: Path) -> Config:
    # Six uploads at once in test_every_response_format: more than an owner's default.
    return Config(home=tmp_path / "home", openai_wait_s=60.0, owner_max_uploads=8)


@pytest.fixture
async def api(db: Database, config: Config, ann: NewOwner) -> AsyncIterator[httpx.AsyncClient]:
    async with (
        serving(create_app(db, config, max_upload_bytes=LIMIT)) as url,
        httpx.AsyncClient(
            base_url=url, timeout=60, headers={"Authorization": f"Bearer {ann.token}"}
        ) as client,
    ):
        yield client


async def working(db: Database, nursery: trio.Nursery, **steps: Any) -> None:
    """Workers with these fake steps, taking records as they come."""
    pipeline = Pipeline(
        db, table(**({"normalize": normalized, "recognize": recognized} | steps)), workers=1
    )
    await nursery.start(pipeline.run)


def post(
    api: httpx.AsyncClient,
    data: dict[str, Any],
    audio: bytes | None = None,
    path: str = "/v1/audio/transcriptions",
    **kwargs: Any,
) -> Any:
    audio = fake_audio() if audio is None else audio
    return api.post(path, data=data, files={"file": ("talk.wav", audio)}, **kwargs)


def openai_error(r: httpx.Response) -> dict[str, Any]:
    return openai_shaped(r.json())


def openai_shaped(body: dict[str, Any]) -> dict[str, Any]:
    assert set(body) == {"error"} and set(body["error"]) == {"message", "type", "param", "code"}
    return body["error"]


async def count(db: Database) -> int:
    return await db.run(lambda con: con.fetchval("SELECT count(*) FROM recordings"))


@scenario("Every response_format answers in OpenAI's shape")
async def test_every_response_format(db: Database, api: httpx.AsyncClient) -> None:
    answers: dict[str, httpx.Response] = {}
    formats = ["json", "text", "srt", "vtt", "verbose_json", "words"]
    async with trio.open_nursery() as nursery:
        await working(db, nursery)
        async with trio.open_nursery() as requests:
            for fmt in formats:

                async def ask(fmt: str = fmt) -> None:
                    if fmt == "words":
                        data: Any = {
                            "response_format": "verbose_json",
                            "timestamp_granularities[]": ["word"],
                        }
                    else:
                        data = {"response_format": fmt, "model": "whisper-1"}
                    answers[fmt] = await post(api, data)

                requests.start_soon(ask)
        nursery.cancel_scope.cancel()
    assert all(r.status_code == 200 for r in answers.values()), answers
    assert answers["json"].json() == {"text": TEXT, "usage": {"type": "duration", "seconds": 4}}
    assert answers["text"].text == TEXT + "\n"
    assert answers["srt"].text.startswith("1\n00:00:00,000 --> 00:00:01,500\nHello there.\n")
    assert answers["vtt"].text.startswith("WEBVTT\n\n00:00:00.000 --> 00:00:01.500\n")
    assert answers["vtt"].headers["content-type"].startswith("text/vtt")
    verbose = answers["verbose_json"].json()
    assert {k: verbose[k] for k in ("task", "language", "duration", "text", "model")} == {
        "task": "transcribe",
        "language": "english",
        "duration": 3.25,
        "text": TEXT,
        "model": "test-model",
    }
    assert "words" not in verbose  # segments only, unless words are asked for
    assert [(s["id"], s["start"], s["end"], s["text"]) for s in verbose["segments"]] == [
        (0, 0.0, 1.5, "Hello there."),
        (1, 1.5, 3.25, "General Kenobi."),
    ]
    assert verbose["segments"][0]["avg_logprob"] is None  # not kept, so not made up
    words = answers["words"].json()
    assert "segments" not in words  # only the granularity asked for
    assert words["words"] == [
        {"word": "Hello", "start": 0.0, "end": 0.6},
        {"word": "there.", "start": 0.6, "end": 1.5},
        {"word": "General", "start": 1.5, "end": 2.4},
        {"word": "Kenobi.", "start": 2.4, "end": 3.25},
    ]
    ids = {r.headers["x-transcriber-recording-id"] for r in answers.values()}
    assert len(ids) == len(formats)
    for rid in ids:
        assert (await journal(db, uuid.UUID(rid)))[0]["detail"] == {"via": "openai"}


@scenario("A stopped record answers with its reason and the status a client expects")
async def test_stopped_records_answer_with_their_reason(
    db: Database, api: httpx.AsyncClient
) -> None:
    cases = [
        ("too_long", 413),
        ("empty_audio", 400),
        ("implausible_rate", 400),
        ("audio_quota", 507),
        ("attempts_exhausted", 503),
    ]
    for reason, status in cases:

        async def stop(job: Any, progress: Any, reason: str = reason) -> Saved:
            raise StopRecord(reason, f"said the test ({reason})")

        async with trio.open_nursery() as nursery:
            await working(db, nursery, normalize=stop)
            r = await post(api, {"model": "whisper-1"})
            nursery.cancel_scope.cancel()
        assert r.status_code == status, r.text
        error = openai_error(r)
        rid = r.headers["x-transcriber-recording-id"]
        assert (error["code"], error["param"]) == (reason, "file")
        # The owner's plain words, not the error text, which is the operator's.
        assert rid in error["message"] and stop_message(reason) in error["message"]
        assert "said the test" not in error["message"]
        assert r.headers["x-should-retry"] == "false"  # a retry would be a second record
        assert error["type"] == ("server_error" if status >= 500 else "invalid_request_error")


@scenario("A wait past its limit names the record, which goes on")
async def test_a_wait_past_its_limit_names_the_record(
    db: Database, config: Config, ann: NewOwner
) -> None:
    quick = Config(home=config.home, openai_wait_s=0.2)
    async with (
        serving(create_app(db, quick)) as url,
        httpx.AsyncClient(
            base_url=url, timeout=60, headers={"Authorization": f"Bearer {ann.token}"}
        ) as api,
    ):
        # OpenAI's fields for other models are taken (and not used): the client works.
        r = await post(
            api,
            {
                "model": "gpt-4o-transcribe",
                "include[]": ["logprobs"],
                "chunking_strategy": "auto",
                "stream": "false",
            },
        )
        assert r.status_code == 504, r.text
        rid = r.headers["x-transcriber-recording-id"]
        error = openai_error(r)
        assert error["code"] == "still_working" and rid in error["message"]
        assert f"/v1/recordings/{rid}" in error["message"]
        assert r.headers["x-should-retry"] == "false"
        async with trio.open_nursery() as nursery:
            await working(db, nursery)
            with trio.fail_after(30):
                while not (await api.get(f"/v1/recordings/{rid}")).json()["done"]:
                    await trio.sleep(0.01)
            nursery.cancel_scope.cancel()
        assert (await api.get(f"/v1/recordings/{rid}/text")).text == TEXT + "\n"


@scenario("A wait longer than the body's silence bound waits for its limit")
async def test_a_wait_is_not_cut_by_the_silent_body_bound(
    db: Database, config: Config, ann: NewOwner
) -> None:
    # No worker runs: the request waits its whole limit, five silent-body bounds long.
    patient = Config(home=config.home, openai_wait_s=1.0, http_body_idle_s=0.2)
    async with (
        serving(create_app(db, patient)) as url,
        httpx.AsyncClient(
            base_url=url, timeout=60, headers={"Authorization": f"Bearer {ann.token}"}
        ) as api,
    ):
        r = await post(api, {"model": "whisper-1"})
        # Cut by the silent-body bound, it was a 500 after 0.2 s (and the SDKs retried it).
        assert r.status_code == 504, r.text
        assert openai_error(r)["code"] == "still_working"


@scenario("Bad requests get OpenAI's errors and leave nothing behind")
async def test_bad_requests_get_openais_errors(
    db: Database, config: Config, api: httpx.AsyncClient
) -> None:
    cases: list[tuple[int, str | None, str, Any]] = [
        (400, "response_format", "xml", {"data": {"response_format": "xml"}}),
        (400, "temperature", "from 0 to 1", {"data": {"temperature": "2"}}),
        (400, "temperature", "a number", {"data": {"temperature": "warm"}}),
        (400, "language", "not one the recognizer knows", {"data": {"language": "english"}}),
        (400, "stream", "true or false", {"data": {"stream": "maybe"}}),
        (400, "stream", "in json or text", {"data": {"stream": "true", "response_format": "srt"}}),
        (
            400,
            None,
            "unexpected form field 'stream'",
            {"data": {"stream": "true"}, "path": "/v1/audio/translations"},
        ),
        (400, "timestamp_granularities", "char", {"data": {"timestamp_granularities[]": "char"}}),
        (400, None, "unexpected form field 'voice'", {"data": {"voice": "alloy"}}),
        (400, "file", "empty", {"data": {}, "audio": b""}),
        (413, None, f"larger than {LIMIT}", {"data": {}, "audio": b"x" * (LIMIT + 1)}),
        # translations take no timestamp granularities
        (
            400,
            None,
            "unexpected form field 'timestamp_granularities[]'",
            {"data": {"timestamp_granularities[]": "word"}, "path": "/v1/audio/translations"},
        ),
    ]
    for status, param, said, kwargs in cases:
        r = await post(api, **kwargs)
        assert r.status_code == status, (kwargs, r.text)
        error = openai_error(r)
        assert error["param"] == param and said in error["message"], (kwargs, error)
    no_form = await api.post(
        "/v1/audio/transcriptions", content=b"RIFF", headers={"Content-Type": "audio/wav"}
    )
    assert no_form.status_code == 400 and "multipart/form-data" in openai_error(no_form)["message"]
    no_file = await api.post(
        "/v1/audio/transcriptions", data={"model": "whisper-1"}, files={"other": ("x", b"")}
    )
    assert no_file.status_code == 400
    for path in ("/v1/audio/transcriptions", "/v1/audio/translations", "/v1/models"):
        method = "GET" if path == "/v1/models" else "POST"
        anonymous = await api.request(
            method,
            path,
            headers={"Authorization": "Bearer x"},
            files={"file": ("a.wav", b"RIFF")} if method == "POST" else None,
        )
        assert anonymous.status_code == 401
        assert openai_error(anonymous)["code"] == "invalid_api_key"
        assert anonymous.headers["www-authenticate"] == "Bearer"
    # The rest of the API keeps its own shape.
    assert (await api.get("/v1/recordings", headers={"Authorization": "Bearer x"})).json() == {
        "error": "missing or invalid API token"
    }
    assert await count(db) == 0
    assert (
        not LocalBlobs(config.home).uploads.exists()
        or list(LocalBlobs(config.home).uploads.iterdir()) == []
    )


async def test_a_waiting_request_is_woken_by_the_journal(
    db: Database, config: Config, ann: NewOwner
) -> None:
    app = create_app(db, config)
    # No poll to speak of: only the journal's notifications can wake the request.
    app.state.waiting = waiting = Waiting(poll_first_s=3600, poll_max_s=3600)
    async with trio.open_nursery() as nursery:
        nursery.start_soon(waiting.follow_journal, db)
        async with (
            serving(app) as url,
            httpx.AsyncClient(
                base_url=url, timeout=60, headers={"Authorization": f"Bearer {ann.token}"}
            ) as api,
        ):
            await working(db, nursery)
            with trio.fail_after(30):
                r = await post(api, {"response_format": "text"})
        nursery.cancel_scope.cancel()
    assert (r.status_code, r.text) == (200, TEXT + "\n")


TRANSCRIPTIONS = "/v1/audio/transcriptions"
FORM = "multipart/form-data; boundary=b0undary"
FORM_HEAD = b'--b0undary\r\nContent-Disposition: form-data; name="file"; filename="a.wav"\r\n\r\n'


@scenario("The hardening's refusals come in OpenAI's shape")
async def test_the_hardenings_refusals_come_in_openais_shape(
    db: Database, db_url: str, config: Config, ann: NewOwner, ben: NewOwner
) -> None:
    tight = Config(
        home=config.home, http_max_requests=2, owner_max_uploads=1, owner_max_bytes=64 * 1024
    )
    async with serving(create_app(db, tight)) as url:
        # 300 MB declared without a token, not a byte sent: answered all the same.
        status, _, body = await exchange(
            url,
            request_head(
                url,
                f"POST {TRANSCRIPTIONS} HTTP/1.1",
                **{"Content-Type": FORM, "Content-Length": str(300 * 10**6)},
            ),
        )
        assert status == 401 and openai_shaped(json.loads(body))["code"] == "invalid_api_key"
        first = await RawUpload.start(url, ann, content_type=FORM, length=1000, path=TRANSCRIPTIONS)
        await first.send(FORM_HEAD + b"x")
        await until(lambda: len(store_files(tight)) == 1, "the upload under way")
        async with client(url, ann) as as_ann, client(url, ben) as as_ben:
            # A second upload of ann's at once.
            second = await post(as_ann, {})
            assert second.status_code == 429 and second.headers["retry-after"]
            assert openai_error(second)["code"] == "rate_limit_exceeded"
            # Ben's quota filled through the API's own route, then passed here.
            assert (
                await as_ben.post(
                    "/v1/recordings", content=b"z" * 60_000, headers={"Content-Type": "audio/wav"}
                )
            ).status_code == 201
            over = await post(as_ben, {}, audio=b"z" * 10_000)
            assert over.status_code == 507 and "quota" in openai_error(over)["message"]
            # Two requests under way: a third is told to come back.
            other = await RawUpload.start(url, ben, length=1000)
            await other.send(b"x")
            await until(lambda: len(store_files(tight)) == 3, "two requests under way")
            busy = await as_ben.get("/v1/models")
            assert busy.status_code == 503 and busy.headers["retry-after"]
            assert openai_error(busy)["type"] == "server_error"
        for upload in (first, other):
            await upload.aclose()
    assert await count(db) == 1  # ben's upload to /v1/recordings

    # The database away: while the token is checked, and inside the application.
    failing = APIRouter()

    @failing.get(f"{TRANSCRIPTIONS}/test-busy")
    async def busy_route() -> None:
        raise DatabaseBusy("no answer within 5 s")

    app = create_app(db, config)
    app.include_router(failing)  # routes that fail as the real ones may
    async with serving(app) as url, client(url, ann) as c:
        away = await c.get(f"{TRANSCRIPTIONS}/test-busy")
        assert away.status_code == 503 and away.headers["retry-after"]
        assert openai_error(away)["code"] == "service_unavailable"
    async with open_database(db_url, min_size=1, max_size=1) as gone_db:
        pass
    async with serving(create_app(gone_db, config)) as url, client(url, ann) as c:
        away = await c.get("/v1/models")
        assert away.status_code == 503 and away.headers["retry-after"]
        assert openai_error(away)["code"] == "service_unavailable"

    # An upload that goes silent.
    async with serving(create_app(db, Config(home=config.home, http_body_idle_s=0.5))) as url:
        silent = await RawUpload.start(
            url, ann, content_type=FORM, length=1000, path=TRANSCRIPTIONS
        )
        await silent.send(FORM_HEAD + b"x")
        with trio.fail_after(10):
            status, answered = await silent.answer()
        await silent.aclose()
    assert status == 408 and openai_shaped(answered)["code"] == "request_timeout"
    assert await count(db) == 1


@scenario("Every server error tells the SDK not to retry")
async def test_every_server_error_says_do_not_retry(
    db: Database, db_url: str, config: Config, ann: NewOwner
) -> None:
    failing = APIRouter()

    @failing.get(f"{TRANSCRIPTIONS}/test-broken")
    @failing.get("/v1/recordings-test-broken")
    async def broken_route() -> None:
        raise RuntimeError("an unexpected error")

    @failing.get(f"{TRANSCRIPTIONS}/test-busy")
    async def busy_route() -> None:
        raise DatabaseBusy("no answer within 5 s")

    app = create_app(db, Config(home=config.home, http_max_requests=1))
    app.include_router(failing)
    async with serving(app) as url, client(url, ann) as c:
        broken = await c.get(f"{TRANSCRIPTIONS}/test-broken")
        assert broken.status_code == 500 and openai_error(broken)["code"] == "server_error"
        away = await c.get(f"{TRANSCRIPTIONS}/test-busy")
        assert away.status_code == 503
        for r in (broken, away):
            assert r.headers.get("x-should-retry") == "false", r.headers
        # The API's own routes keep their answers: their clients do not retry on their own.
        own = await c.get("/v1/recordings-test-broken")
        assert own.status_code == 500 and "x-should-retry" not in own.headers
        # The one request slot held by an upload under way: the next is busy.
        held = await RawUpload.start(url, ann, length=1000)
        await held.send(b"x")
        await until(lambda: len(store_files(config)) == 1, "the upload under way")
        busy = await c.get("/v1/models")
        assert busy.status_code == 503 and busy.headers.get("x-should-retry") == "false"
        await held.aclose()
    async with open_database(db_url, min_size=1, max_size=1) as gone_db:
        pass
    async with serving(create_app(gone_db, config)) as url, client(url, ann) as c:
        gone = await c.get("/v1/models")
        assert gone.status_code == 503 and gone.headers.get("x-should-retry") == "false"


@scenario("Waiting requests hold no place of the service's, and each owner's are bounded")
async def test_waiting_requests_do_not_take_the_services_places(
    db: Database, config: Config, ann: NewOwner, ben: NewOwner
) -> None:
    # No worker runs: every request waits its whole limit.
    tight = Config(home=config.home, http_max_requests=2, owner_max_waiting=2, openai_wait_s=60)
    app = create_app(db, tight)
    budgets = app.state.budgets
    async with serving(app) as url, client(url, ann) as as_ann, client(url, ben) as as_ben:
        async with trio.open_nursery() as nursery:
            for _ in range(2):
                nursery.start_soon(post, as_ann, {})
            await until(lambda: len(store_files(tight)) == 2, "both requests in")
            # Waiting, they have given their places back...
            await until(lambda: budgets.requests.taken == 0, "both waiting")
            assert await count(db) == 2
            # ...so another owner is served as ever, and transcribes as well.
            assert (await as_ben.get("/v1/models")).status_code == 200
            nursery.start_soon(post, as_ben, {})
            await until(lambda: len(store_files(tight)) == 3, "ben's request in")
            # Its file is stored before its record commits; once waiting, it is committed.
            await until(lambda: budgets.requests.taken == 0, "ben's request waiting")
            assert (await as_ben.get("/v1/recordings")).status_code == 200
            # The owner's own places are all taken: the next is told to come back,
            # before anything of it is kept.
            third = await post(as_ann, {})
            assert third.status_code == 429 and third.headers["retry-after"]
            assert openai_error(third)["code"] == "rate_limit_exceeded"
            assert await count(db) == 3
            nursery.cancel_scope.cancel()


def many_parts(parts: list[tuple[str, bytes]], audio: bytes = b"RIFF parts") -> bytes:
    """A multipart body with a file and these text parts, names repeated as given."""
    body = b"".join(
        b'--b0undary\r\nContent-Disposition: form-data; name="'
        + name.encode()
        + b'"\r\n\r\n'
        + value
        + b"\r\n"
        for name, value in parts
    )
    return body + FORM_HEAD + audio + b"\r\n--b0undary--\r\n"


@scenario("A form's text fields are bounded and the ignored ones are not kept")
async def test_form_text_is_bounded_and_ignored_fields_are_dropped(
    db: Database, config: Config, ann: NewOwner
) -> None:
    quick = Config(home=config.home, openai_wait_s=0.1)
    async with serving(create_app(db, quick)) as url, client(url, ann) as api:

        async def send(parts: list[tuple[str, bytes]], audio: bytes) -> httpx.Response:
            return await api.post(
                TRANSCRIPTIONS, content=many_parts(parts, audio), headers={"Content-Type": FORM}
            )

        # Sixty 4 KiB keywords: taken (a client that sends them works) and thrown away.
        taken = await send([("keywords[]", b"k" * 4000)] * 60, b"RIFF keywords")
        assert taken.status_code == 504, taken.text  # no worker: the wait runs out
        too_many = await send([("include[]", b"logprobs")] * 65, b"RIFF too many")
        assert too_many.status_code == 400
        assert "more than 64 fields" in openai_error(too_many)["message"]
        too_long = await send([("timestamp_granularities[]", b"w" * 4000)] * 17, b"RIFF long")
        assert too_long.status_code == 413
        assert "65536 bytes in all" in openai_error(too_long)["message"]
    assert await count(db) == 1


async def test_ignored_parts_are_not_kept() -> None:
    class Nowhere:
        size = 0

        async def write(self, data: bytes) -> None:
            self.size += len(data)

    parts = [("keywords[]", b"k" * 4000)] * 40 + [("include[]", b"logprobs")] * 5
    parts += [("timestamp_granularities[]", b"word"), ("model", b"whisper-1")]

    async def chunks() -> AsyncIterator[bytes]:
        yield many_parts(parts)

    form = await receive_form(
        chunks(),
        FORM,
        Nowhere(),  # type: ignore[arg-type]
        LIMIT,
        TRANSCRIPTION_FIELDS,
        DROPPED_FIELDS,
    )
    assert form.lists == {"timestamp_granularities[]": ["word"]}
    assert form.fields == {"model": "whisper-1"}
    assert form.text_bytes == len(b"word" + b"whisper-1")
