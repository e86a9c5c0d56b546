"""The service log: one logfmt line per event, readable by journald and by grep."""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger("transcriber")


def value(v: Any) -> str:
    """One logfmt value: quoted and escaped when it holds spaces, quotes or newlines."""
    text = str(v)
    if text == "" or any(c in text for c in ' ="\n'):
        return '"' + text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"'
    return text


def logfmt(event: str, **fields: Any) -> str:
    return " ".join(
        [f"event={event}"] + [f"{k}={value(v)}" for k, v in fields.items() if v is not None]
    )


def event(level: int, name: str, **fields: Any) -> None:
    if log.isEnabledFor(level):  # a line a claim: do not build the unwanted ones
        log.log(level, logfmt(name, **fields))
