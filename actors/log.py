"""The service log: one logfmt line per event, readable by journald and by grep.

The runtime names no product: its events go to the logger named "actors" until the
product names its own, once at start, with `use_logger`."""

from __future__ import annotations

import logging
from typing import Any

DEFAULT_LOGGER = "actors"

_log = logging.getLogger(DEFAULT_LOGGER)


def use_logger(name: str) -> None:
    """Send every event (the runtime's and the product's) to the logger `name` from now
    on; the product calls it once at start, before its workers run."""
    global _log
    _log = logging.getLogger(name)


def _escaped(c: str) -> str:
    if c == "\n":
        return "\\n"
    if c in '\\"':
        return "\\" + c
    if c.isprintable():
        return c
    return f"\\u{ord(c):04x}" if ord(c) <= 0xFFFF else f"\\U{ord(c):08x}"


def value(v: Any) -> str:
    """One logfmt value: quoted and escaped when it holds spaces, quotes, newlines or
    a character Python does not print (controls, bidi overrides, noncharacters: they
    would drive or reorder the terminal the line is read in), those as `\\uXXXX`."""
    text = str(v)
    if text == "" or any(c in ' ="\n' or not c.isprintable() for c in text):
        return '"' + "".join(_escaped(c) for c in text) + '"'
    return text


def logfmt(event: str, **fields: Any) -> str:
    return " ".join(
        [f"event={event}"] + [f"{k}={value(v)}" for k, v in fields.items() if v is not None]
    )


def event(level: int, name: str, **fields: Any) -> None:
    if _log.isEnabledFor(level):  # a line a claim: do not build the unwanted ones
        _log.log(level, logfmt(name, **fields))


def describe(exc: BaseException, *, with_type: bool = True) -> str:
    """The machine error text of a failure, for the log and the journal: the first line
    of its message, after its type name (`ValueError: bad header`). `with_type=False`
    leaves the type out, for texts where it tells the reader nothing (a connection
    refused is one whatever the driver calls it). No message: the type name alone."""
    text = str(exc).strip().splitlines()
    if not text:
        return type(exc).__name__
    return f"{type(exc).__name__}: {text[0]}" if with_type else text[0]
