"""`transcriber transcribe FILE`: the whole pipeline in one process, for one file."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar, TextIO

import attrs
import trio

from actors import StepTable
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.intake import accept_file
from transcriber.options import RecognitionOptions
from transcriber.owners import local_owner
from transcriber.pipeline.operator import card
from transcriber.pipeline.runner import Pipeline


@attrs.frozen
class Outcome:
    card: dict[str, Any]
    transcript: Any | None
    """The stored transcript row once the record was recognized (even if finding its
    speakers then stopped), else None."""


async def transcribe_file(
    db: Database,
    config: Config,
    steps: StepTable,
    path: Path,
    *,
    language: str | None = None,
    options: RecognitionOptions | None = None,
    on_card: Callable[[dict[str, Any]], None] = lambda c: None,
    poll_s: float = 0.2,
) -> Outcome:
    """Accept `path`, run a worker until its record is transcribed or stopped.

    Cancellation: the worker is cancelled with the caller; the record stays accepted
    and another run (or `serve`) takes it up.
    """
    owner = await local_owner(db)
    rid = await accept_file(db, config, path, owner, language=language, options=options)
    pipeline = Pipeline(db, steps, workers=1)
    async with trio.open_nursery() as nursery:
        await nursery.start(pipeline.run)
        while True:
            current = await card(db, rid)
            assert current is not None
            on_card(current)
            if current["done"] or current["stopped"]:
                break
            await trio.sleep(poll_s)
        nursery.cancel_scope.cancel()
    # Readable from recognition on: a diarization that stopped keeps the transcript.
    transcript = await db.fetchrow("transcript", rid) if current["readable"] else None
    return Outcome(current, transcript)


class ProgressBar:
    """One line on stderr, redrawn in place on a terminal, one line a change otherwise."""

    STEP: ClassVar[dict[str, str]] = {
        "received": "normalizing",
        "normalized": "recognizing",
        "recognized": "speakers",
        "transcribed": "done",
    }

    def __init__(self, stream: TextIO = sys.stderr, width: int = 30) -> None:
        self.stream = stream
        self.width = width
        self.tty = stream.isatty()
        self.last = ""

    def __call__(self, c: dict[str, Any]) -> None:
        label = "stopped" if c["stopped"] else self.STEP.get(c["milestone"], c["milestone"])
        fraction = 1.0 if c["done"] else (c["progress"] or 0.0)
        filled = int(fraction * self.width)
        line = f"{label:<12} [{'#' * filled}{'.' * (self.width - filled)}] {fraction:4.0%}"
        if line == self.last:
            return
        if self.tty:
            self.stream.write("\r" + line + ("\n" if c["done"] or c["stopped"] else ""))
        elif label != self.last.split(" ", 1)[0]:
            self.stream.write(line + "\n")
        self.stream.flush()
        self.last = line
