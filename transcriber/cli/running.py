"""What every command shares: exit codes and the one line an operator reads instead of
a traceback, and running a command's work with a migrated database.

Exit codes: 0 done, 1 refused (bad input, nothing changed), 2 the environment does not
allow it (the database did not answer, TRANSCRIBER_HOME or the embedded database cannot
be used, the HTTP port is taken, the model folder is missing): one line on stderr, never
a traceback; 143 a one-shot command stopped by SIGTERM (its embedded database stopped
too)."""

from __future__ import annotations

import signal
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, NoReturn, TypeVar

import trio
import trio_asyncio
import typer

from transcriber.config import Config
from transcriber.db.connect import open_session
from transcriber.db.database import Database, DatabaseUnreachable
from transcriber.db.embedded import EmbeddedFailed
from transcriber.home import HomeUnusable
from transcriber.languages import UnknownLanguage, language_hint
from transcriber.options import BadOptions, RecognitionOptions, parse_vocabulary
from transcriber.storage.blobs import StorageError

T = TypeVar("T")

LANGUAGE_HELP = (
    "language hint: one of Whisper's codes such as en, ru or de (docs/api.md lists them); "
    "empty or auto to detect it"
)
TASK_HELP = "transcribe (text in the speech's language) or translate (English text)"


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
    except BaseException as e:  # trio wraps everything in groups
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


SPEAKERS_HELP = (
    "who spoke: off, auto, a count (2) or a range (2-4); default: TRANSCRIBER_SPEAKERS (off)"
)


def language_option(value: str | None) -> str | None:
    """`--language` as stored: one of the recognizer's codes, None to detect it; exit 2
    naming it before anything is stored when the recognizer has no such language."""
    try:
        return language_hint(value)
    except UnknownLanguage as e:
        fail(str(e), 2)


VOCABULARY_HELP = (
    "names and terms the recognizer is to hear, separated by commas; "
    "default: TRANSCRIBER_VOCABULARY"
)
ALIGN_HELP = "a text file of the speech: the transcript is its words, each timed (task align)"


def recognition_options(
    task: str,
    speakers: str | None = None,
    vocabulary: str | None = None,
    align: Path | None = None,
) -> RecognitionOptions:
    """The options of the command's flags; exit 2 naming what is wrong. `--align FILE`
    makes the task `align` with FILE's text (UTF-8)."""
    try:
        text = None
        if align is not None:
            if task != "transcribe":
                fail("--align is a task of its own: leave --task out", 2)
            task = "align"
            try:
                text = align.read_text(encoding="utf-8-sig")
            except (OSError, UnicodeDecodeError) as e:
                fail(f"cannot read {align}: {e}", 2)
        return RecognitionOptions(
            task=task, speakers=speakers, vocabulary=parse_vocabulary(vocabulary), text=text
        )
    except BadOptions as e:
        fail(str(e), 2)


def operator_name() -> str:
    """Who runs the command, for the journal's `by` (resume, delete)."""
    import getpass

    try:
        return getpass.getuser()
    except Exception:  # no user name is not a reason to refuse
        return "unknown"
