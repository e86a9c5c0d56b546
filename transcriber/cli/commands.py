"""The `transcriber` command: the operator's tools. Exit codes: 0 done, 1 refused
(bad input, nothing changed), 2 the environment does not allow it (the database did not
answer, TRANSCRIBER_HOME or the embedded database cannot be used, the HTTP port is
taken, the model folder is missing): one line on stderr, never a traceback; 143 a
one-shot command stopped by SIGTERM (its embedded database stopped too)."""

from __future__ import annotations

import datetime as dt
import functools
import json
import logging
import signal
import sys
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Annotated, Any, NoReturn, TypeVar

import trio
import trio_asyncio
import typer

from actors.log import use_logger
from actors.log import value as logfmt_value
from transcriber.config import Config
from transcriber.db.connect import open_session
from transcriber.db.database import Database, DatabaseUnreachable
from transcriber.db.embedded import EmbeddedFailed
from transcriber.db.migrations import migrate as apply_migrations
from transcriber.home import HomeUnusable
from transcriber.options import BadOptions, RecognitionOptions
from transcriber.owners import NoSuchOwner, OwnerExists, add_owner, revoke, rotate_token
from transcriber.pipeline.pg_queue import NotStopped, PgQueue
from transcriber.storage.blobs import StorageError

app = typer.Typer(
    add_completion=False,
    no_args_is_help=True,
    help="Audio recordings in, text out, on a durable PostgreSQL pipeline.",
)
owner_app = typer.Typer(no_args_is_help=True, help="Owners of recordings and their API tokens.")
app.add_typer(owner_app, name="owner")
storage_app = typer.Typer(no_args_is_help=True, help="Where the recordings' bytes live.")
app.add_typer(storage_app, name="storage")

T = TypeVar("T")


TASK_HELP = "transcribe (text in the speech's language) or translate (English text)"


def recognition_options(task: str) -> RecognitionOptions:
    try:
        return RecognitionOptions(task=task)
    except BadOptions as e:
        fail(str(e), 2)


class Refused(Exception):
    """Bad input: one line for the operator, exit 1, nothing changed."""


class Terminated(Exception):
    """SIGTERM or SIGINT reached a one-shot command: it stops, leaving everything as a
    crash would but for the embedded database, which it stops."""

    def __init__(self, signum: int):
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def environment_failures() -> tuple[type[BaseException], ...]:
    """Failures of the machine, not of the input: exit 2 with their one line."""
    from transcriber.audio.devices import DeviceUnavailable
    from transcriber.audio.recognize import ModelUnavailable
    from transcriber.daemon import ListenFailed

    return (
        DatabaseUnreachable,
        HomeUnusable,
        EmbeddedFailed,
        ModelUnavailable,
        DeviceUnavailable,
        ListenFailed,
        StorageError,
    )


def fail(message: str, code: int) -> NoReturn:
    typer.echo(f"transcriber: {message}", err=True)
    raise typer.Exit(code)


def unwrap(exc: BaseException) -> BaseException:
    """The one meaningful exception inside trio's exception groups."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


def with_database(work: Callable[[Database], Awaitable[T]], *, needs_home: bool = False) -> T:
    """Run `work` with a migrated database, translating failures into exit codes;
    SIGTERM or SIGINT cancels it (the embedded database is left, and stopped if ours)."""

    async def main() -> T:
        async def on_signal(signals: Any) -> None:
            async for signum in signals:
                raise Terminated(signum)

        # Signals become a cancellation, so the embedded server is always left (a
        # KeyboardInterrupt could land while it is starting and skip that).
        with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(on_signal, signals)
                async with trio_asyncio.open_loop():
                    async with open_session(Config.from_env(), needs_home=needs_home) as db:
                        result = await work(db)
                nursery.cancel_scope.cancel()
        return result

    return run_trio(main)


def run_trio(main: Callable[[], Awaitable[T]]) -> T:
    """trio.run, with the failures an operator should read as one line."""
    try:
        return trio.run(main)
    except BaseException as e:  # noqa: BLE001 - trio wraps everything in groups
        inner = unwrap(e)
        if isinstance(inner, environment_failures()):
            fail(str(inner), 2)
        if isinstance(inner, Refused):
            fail(str(inner), 1)
        if isinstance(inner, Terminated):
            if inner.signum == signal.SIGINT:
                raise KeyboardInterrupt from None  # Ctrl-C: what the command line expects
            fail("stopped by SIGTERM", 143)
        if inner is not e:
            raise inner from None
        raise


def record_id(text: str) -> uuid.UUID:
    try:
        return uuid.UUID(text)
    except ValueError:
        fail(f"{text!r} is not a recording id (a UUID)", 1)


def parse_duration(text: str) -> dt.timedelta:
    """`90s`, `15m`, `2h`, `3d` (a bare number is seconds)."""
    units = {"s": 1, "m": 60, "h": 3600, "d": 86400}
    number, unit = (text[:-1], text[-1]) if text[-1:] in units else (text, "s")
    try:
        value = float(number)
    except ValueError:
        raise ValueError(f"{text!r} is not a duration like 90s, 15m, 2h or 3d") from None
    if value < 0:
        raise ValueError(f"{text!r} is negative")
    return dt.timedelta(seconds=value * units[unit])


def ago(seconds: float | None) -> str:
    if seconds is None:
        return "-"
    s = int(seconds)
    return f"{s // 3600}h{s % 3600 // 60:02d}m" if s >= 3600 else f"{s // 60}m{s % 60:02d}s"


@app.command()
def migrate() -> None:
    """Apply the database migrations that are missing."""

    async def work(db: Database) -> list[str]:
        return await apply_migrations(db)  # open_session migrated already; says so

    with_database(work)
    typer.echo("database is up to date")


@owner_app.command("add")
def owner_add(name: str) -> None:
    """Create an owner and print their API token (shown once, only its hash is kept)."""

    async def work(db: Database) -> Any:
        try:
            return await add_owner(db, name)
        except OwnerExists:
            raise Refused(f"owner {name!r} exists already") from None

    show_token(with_database(work))


def show_token(owner: Any) -> None:
    typer.echo(owner.token)
    typer.echo(
        f"owner {owner.name} (id {owner.id}): keep this token, it is not shown again", err=True
    )


@owner_app.command("list")
def owner_list() -> None:
    """Owners: name, since when, revoked or not, their recordings and stored bytes."""
    rows = with_database(lambda db: db.fetch("owner_list"))
    typer.echo(
        f"{'name':<20} {'created':<20} {'revoked':<20} {'recordings':>10} {'stored_bytes':>14}"
    )
    for r in rows:
        revoked = r["revoked_at"].isoformat(timespec="seconds") if r["revoked_at"] else "-"
        typer.echo(
            f"{r['name']:<20} {r['created_at'].isoformat(timespec='seconds'):<20} "
            f"{revoked:<20} {r['recordings']:>10} {r['stored_bytes']:>14}"
        )


@owner_app.command("revoke")
def owner_revoke(name: str) -> None:
    """Stop NAME's token at once; their recordings and journal stay for the operator
    (`rotate` gives them a new token)."""

    async def work(db: Database) -> None:
        try:
            await revoke(db, name)
        except NoSuchOwner:
            raise Refused(f"no owner {name!r}") from None

    with_database(work)
    typer.echo(f"owner {name} revoked: their token no longer works")


@owner_app.command("rotate")
def owner_rotate(name: str) -> None:
    """Give NAME a new token (printed once); the old one stops working at once."""

    async def work(db: Database) -> Any:
        try:
            return await rotate_token(db, name)
        except NoSuchOwner:
            raise Refused(f"no owner {name!r}") from None

    show_token(with_database(work))


@app.command()
def status() -> None:
    """Per milestone: waiting, in flight, pausing before a retry, stopped; oldest waiting."""
    rows = with_database(lambda db: db.fetch("status"))
    typer.echo(
        f"{'milestone':<12} {'waiting':>8} {'in_flight':>9} {'pausing':>8} "
        f"{'stopped':>8} {'oldest_waiting':>15}"
    )
    for r in rows:
        typer.echo(
            f"{r['milestone']:<12} {r['waiting']:>8} {r['in_flight']:>9} "
            f"{r['pausing']:>8} {r['stopped']:>8} {ago(r['oldest_waiting_s']):>15}"
        )


@app.command()
def stopped(
    reason: Annotated[str | None, typer.Option(help="only this stop reason")] = None,
) -> None:
    """Stopped records: id, milestone, reason, since, first line of the error."""
    rows = with_database(lambda db: db.fetch("stopped", reason))
    for r in rows:
        error = (r["stop_error"] or "").strip().splitlines()
        typer.echo(
            f"{r['id']}  {r['milestone']:<11} {r['stop_reason']:<22} "
            f"{r['stopped_at'].isoformat(timespec='seconds')}  {error[0] if error else ''}"
        )


@app.command()
def resume(
    recordings: Annotated[list[str] | None, typer.Argument(metavar="ID...")] = None,
    reason: Annotated[
        str | None, typer.Option(help="also every record stopped with this reason")
    ] = None,
) -> None:
    """Return stopped records to work from the milestone each reached (journaled as
    human). Exit 1 if any could not be resumed; the others are."""
    if not recordings and reason is None:
        fail("name the records to resume (IDs) or a stop reason (--reason)", 1)
    ids = [record_id(r) for r in recordings or []]

    async def work(db: Database) -> int:
        queue = PgQueue(db, _no_steps())
        targets = list(ids)
        if reason is not None:
            stopped = await db.fetch("stopped", reason)
            typer.echo(f"{len(stopped)} records stopped with reason {reason}")
            targets += [r["id"] for r in stopped if r["id"] not in ids]
        refused = 0
        for rid in targets:
            try:
                done = await queue.resume(rid, by=_operator())
            except NotStopped:
                refused += 1
                row = await db.fetchrow("recording", rid)
                why = (
                    f"no recording {rid}"
                    if row is None
                    else f"recording {rid} is not stopped (at {row['milestone']}), "
                    "nothing to resume"
                )
                typer.echo(f"transcriber: {why}", err=True)
                continue
            typer.echo(f"resumed {done.id} at {done.milestone}")
        return refused

    if with_database(work):
        raise typer.Exit(1)


def _no_steps() -> Any:
    from actors import StepTable

    return StepTable({})


def _operator() -> str:
    import getpass

    try:
        return getpass.getuser()
    except Exception:  # noqa: BLE001 - no user name is not a reason to refuse
        return "unknown"


def format_event(e: Any, as_json: bool) -> str:
    if as_json:
        return json.dumps(
            {
                "id": e["id"],
                "recording_id": str(e["recording_id"]),
                "at": e["at"].isoformat(),
                "origin": e["origin"],
                "kind": e["kind"],
                "milestone": e["milestone"],
                "claim_token": str(e["claim_token"]) if e["claim_token"] else None,
                "detail": e["detail"],
            }
        )
    at = e["at"].astimezone(dt.timezone.utc).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3]
    detail = " ".join(f"{k}={logfmt_value(v)}" for k, v in (e["detail"] or {}).items())
    token = f" token={str(e['claim_token'])[:8]}" if e["claim_token"] else ""
    return (
        f"{at} {e['recording_id']} {e['origin']:<8} {e['kind']:<17} "
        f"{e['milestone'] or '-':<11}{token} {detail}"
    ).rstrip()


@app.command()
def journal(
    recording: Annotated[str | None, typer.Argument(metavar="[ID]")] = None,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="keep printing new events")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="one JSON object a line")] = False,
    since: Annotated[
        str | None, typer.Option(help="only events of the last DURATION: 90s, 15m, 2h, 3d")
    ] = None,
) -> None:
    """The record journal of one record, or of all; live with --follow."""
    rid = None if recording is None else record_id(recording)
    window = None
    if since is not None:
        try:
            window = parse_duration(since)
        except ValueError as e:
            fail(str(e), 1)

    async def work(db: Database) -> None:
        last = 0
        if window is not None:
            last = await db.fetchval("journal_id_before", window)

        async def drain() -> None:
            nonlocal last
            while True:
                rows = await db.fetch("journal_after", last, rid, 1000)
                for e in rows:
                    typer.echo(format_event(e, as_json))
                    last = e["id"]
                if len(rows) < 1000:
                    sys.stdout.flush()
                    return

        if not follow:
            await drain()
            return
        async with db.listen() as listener:
            await drain()
            while True:
                # A notification says "something new"; the poll covers a lost one.
                with trio.move_on_after(2.0):
                    await listener.payloads.receive()
                await drain()

    try:
        with_database(work)
    except KeyboardInterrupt:
        pass


@app.command()
def serve(
    http: Annotated[
        str, typer.Option(help="HOST:PORT of the HTTP API", envvar="TRANSCRIBER_HTTP")
    ] = "127.0.0.1:8080",
    workers: Annotated[
        int, typer.Option(help="worker actors (0: the API only)", envvar="TRANSCRIBER_WORKERS")
    ] = 2,
    api: Annotated[bool, typer.Option(help="serve the HTTP API (--no-api: workers only)")] = True,
    grace: Annotated[
        float,
        typer.Option(
            help="seconds running steps may finish after SIGTERM", envvar="TRANSCRIBER_GRACE_S"
        ),
    ] = 30.0,
) -> None:
    """The daemon: HTTP API, workers and the systemd watchdog, until SIGTERM."""
    from transcriber.daemon import ServeOptions, parse_http
    from transcriber.daemon import serve as run_serve
    from transcriber.pipeline.audio_steps import audio_steps

    logging.getLogger("transcriber").setLevel(logging.INFO)  # not the libraries' chatter
    try:
        address = parse_http(http) if api else None
    except ValueError as e:
        fail(str(e), 1)
    options = ServeOptions(http=address, workers=workers, grace_s=grace)
    config = Config.from_env()

    async def main() -> None:
        async with trio_asyncio.open_loop():
            # One warm recognizer child per worker, loading while the service starts.
            await run_serve(config, options, steps_for=functools.partial(audio_steps, warm=workers))

    run_trio(main)


@app.command()
def submit(
    files: Annotated[
        list[Path], typer.Argument(exists=True, dir_okay=False, readable=True, metavar="FILE...")
    ],
    owner: Annotated[str | None, typer.Option(help="owner name (default: local)")] = None,
    title: Annotated[str | None, typer.Option(help="title of each recording")] = None,
    language: Annotated[str | None, typer.Option(help="language hint")] = None,
    task: Annotated[str, typer.Option(help=TASK_HELP)] = "transcribe",
    wait: Annotated[
        bool,
        typer.Option(help="wait until each is transcribed or stopped (a daemon does the work)"),
    ] = False,
) -> None:
    """Accept files as recordings for the daemon to transcribe; prints each id."""
    from transcriber.owners import local_owner
    from transcriber.records.cards import card
    from transcriber.storage.intake import accept_file

    config = Config.from_env()
    options = recognition_options(task)

    async def work(db: Database) -> int:
        if owner is None:
            owner_id = await local_owner(db)
        else:
            row = await db.fetchrow("owner_by_name", owner)
            if row is None:
                raise Refused(f"no owner {owner!r} (transcriber owner add NAME)")
            owner_id = row["id"]
        ids = []
        for path in files:
            rid = await accept_file(
                db,
                config,
                path,
                owner_id,
                language=language or config.language,
                title=title,
                options=options,
            )
            typer.echo(f"{rid}  {path.name}")
            ids.append(rid)
        stopped = 0
        for rid in ids if wait else []:
            while True:
                c = await card(db, rid)
                assert c is not None
                if c["done"] or c["stopped"]:
                    break
                await trio.sleep(0.5)
            state = "transcribed" if c["done"] else f"stopped ({c['stopped']['reason']})"
            stopped += not c["done"]
            typer.echo(f"{rid}  {state}")
        return stopped

    if with_database(work, needs_home=True):
        raise typer.Exit(1)


@app.command()
def transcribe(
    file: Annotated[
        Path,
        typer.Argument(exists=True, dir_okay=False, readable=True, help="an audio or video file"),
    ],
    language: Annotated[str | None, typer.Option(help="language hint, e.g. en, ru")] = None,
    fmt: Annotated[str, typer.Option("--format", help="txt, srt, vtt or json")] = "txt",
    task: Annotated[str, typer.Option(help=TASK_HELP)] = "transcribe",
) -> None:
    """One shot: run the pipeline on FILE and print its transcript (exit 1 if stopped)."""
    from transcriber.daemon import require_model
    from transcriber.formats import FORMATS, render
    from transcriber.pipeline.audio_steps import audio_steps
    from transcriber.pipeline.oneshot import ProgressBar, transcribe_file

    if fmt not in FORMATS:
        fail(f"unknown format {fmt!r}; choose from {', '.join(FORMATS)}", 1)
    options = recognition_options(task)
    config = Config.from_env()
    try:
        require_model(config)
    except environment_failures() as e:
        fail(str(e), 2)
    # The recognizer child loads the model while the database starts and the audio is
    # normalized, instead of after.
    steps = audio_steps(config, warm=1)
    done = with_database(
        lambda db: transcribe_file(
            db, config, steps, file, language=language, options=options, on_card=ProgressBar()
        ),
        needs_home=True,
    )
    if done.transcript is None:
        stop = done.card["stopped"]
        fail(
            f"{file.name}: stopped at {done.card['milestone']} ({stop['reason']}): {stop['error']}",
            1,
        )
    t = done.transcript
    typer.echo(
        render(
            fmt,
            t["text"],
            t["segments"],
            id=done.card["id"],
            language=t["language"],
            model=t["model"],
            duration_s=done.card["duration_s"],
        ),
        nl=False,
    )


@app.command()
def bench(
    records: Annotated[int, typer.Option(help="records to drain")] = 5000,
    workers: Annotated[int, typer.Option(help="worker actors")] = 8,
    samples: Annotated[int, typer.Option(help="wake-up latency samples")] = 200,
    analyze: Annotated[bool, typer.Option(help="ANALYZE after the enqueue")] = True,
    plans: Annotated[bool, typer.Option(help="claim plans at 1M finished and a burst")] = True,
    processes: Annotated[
        int, typer.Option(help="also drain with the workers split over this many processes")
    ] = 2,
) -> None:
    """No-op steps through both milestones on a fresh embedded database."""
    from transcriber.bench.throughput import main as run_bench

    raise typer.Exit(run_bench(records, workers, samples, analyze, plans, processes))


@storage_app.command("migrate")
def storage_migrate() -> None:
    """Copy this home's uploads and audio into the object store of
    TRANSCRIBER_STORAGE_URL, verify each by sha256, then switch its record over.
    Resumable: run it again after an interruption."""
    from transcriber.storage.configured import blobs_of
    from transcriber.storage.s3 import S3Blobs
    from transcriber.storage.to_object_store import migrate_to_store

    config = Config.from_env()
    if not config.storage_url:
        fail("set TRANSCRIBER_STORAGE_URL=s3://BUCKET/PREFIX (and AWS_*) to migrate into", 1)

    async def work(db: Database) -> int:
        store = blobs_of(config)
        assert isinstance(store, S3Blobs)
        done = await migrate_to_store(db, store)
        typer.echo(
            f"switched {done.switched} refs to {config.storage_url} "
            f"({done.copied} files copied, the rest already there and verified)"
        )
        for error in done.errors:
            typer.echo(f"not migrated: {error}", err=True)
        return len(done.errors)

    if with_database(work):
        raise typer.Exit(1)


@app.command("bench-audio")
def bench_audio(
    minutes: Annotated[float, typer.Option(help="minutes for the ratio")] = 5.0,
    long_minutes: Annotated[float, typer.Option(help="minutes for peak RSS")] = 60.0,
    queue_files: Annotated[int, typer.Option(help="files submitted at once")] = 6,
    queue_minutes: Annotated[float, typer.Option(help="minutes of each")] = 5.0,
) -> None:
    """Raw faster-whisper (sequential, batched) against the service on the same file;
    the queue's throughput; peak RSS of a long recording."""
    from transcriber.bench.recognition import main as run_bench_audio

    raise typer.Exit(run_bench_audio(minutes, long_minutes, queue_files, queue_minutes))


@app.command("bench-api")
def bench_api(
    clients: Annotated[int, typer.Option(help="concurrent card readers")] = 50,
    seconds: Annotated[float, typer.Option(help="how long they read")] = 20.0,
    every: Annotated[
        float, typer.Option(help="seconds between one open-loop reader's reads")
    ] = 0.5,
    upload_gib: Annotated[float, typer.Option(help="size of the big upload")] = 1.0,
) -> None:
    """Card latency under concurrent clients, closed and open loop, alone and during
    recognition; upload peak memory."""
    from transcriber.bench.api_latency import main as run_bench_api

    raise typer.Exit(run_bench_api(clients, seconds, upload_gib, every))


def main() -> None:
    # The service log goes to stderr, one logfmt line an event; the command line shows
    # warnings and worse, `serve` shows everything.
    logging.basicConfig(level=logging.WARNING, format="%(message)s", stream=sys.stderr)
    use_logger("transcriber")  # the runtime's events and ours, under the product's name
    app()


@app.command()
def models() -> None:
    """The models in TRANSCRIBER_HOME/models, and the one TRANSCRIBER_MODEL names."""
    from transcriber.audio.models import NAMES, model_name, present_models

    config = Config.from_env()
    in_use = model_name(config)
    present = present_models(config.models)
    for name, size in present:
        mark = "  (in use)" if name == in_use and not _is_folder(config.model) else ""
        typer.echo(f"{name:<20} {size / 1e6:7.0f} MB{mark}")
    if _is_folder(config.model):
        typer.echo(f"in use: the folder {config.model}")
    elif in_use not in {name for name, _ in present}:
        how = "joined from its packages" if in_use == "whisper-base" else "fetched (network needed)"
        typer.echo(f"in use: {in_use}, {how} into {config.models} on first use")
    typer.echo(f"names TRANSCRIBER_MODEL takes: {', '.join(NAMES)}, or a folder")


def _is_folder(model: str | None) -> bool:
    from transcriber.audio.models import BUNDLED_ALIASES, NAMES

    return model not in BUNDLED_ALIASES and model not in NAMES
