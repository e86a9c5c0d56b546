"""The operator's journal as lines (`transcriber journal`) and the service log are read
in a terminal: a value holding a control character, a bidi override or a noncharacter
is written escaped (issue 33, finding 5), so the line shows what is stored and cannot
drive or reorder the terminal."""

from __future__ import annotations

import datetime as dt
import json
import uuid

import pytest

from actors.log import logfmt
from transcriber.cli.operator_commands import format_event
from transcriber.pipeline.operator import JournalEvent

RAW = ("\x1b", "\u202e", "\ufffe", "\U0010ffff", "\n", "\x85", "\u2028")


@pytest.mark.scenario("operations", "A journal line prints no control or bidi character raw")
def test_journal_lines_escape_what_a_terminal_would_obey() -> None:
    detail = {
        "name": "Eve\u202etxt.exe",
        "error": "\x1b[2J\x1b[31mcleared\n\x85\u2028",
        "title": "\ufffe\U0010ffff",
        "said": "שלום Привет",
    }
    e = JournalEvent(
        1, uuid.uuid4(), dt.datetime.now(dt.UTC), "human", "edited", "received", None, detail
    )
    line = format_event(e, as_json=False)
    assert "\n" not in line
    for c in RAW:
        assert c not in line, repr(c)
    assert 'name="Eve\\u202etxt.exe"' in line
    assert 'error="\\u001b[2J\\u001b[31mcleared\\n\\u0085\\u2028"' in line
    assert 'title="\\ufffe\\U0010ffff"' in line
    assert 'said="שלום Привет"' in line  # letters are not escaped
    as_json = format_event(e, as_json=True)
    assert not any(c in as_json for c in RAW)
    assert json.loads(as_json)["detail"] == detail
    # The service log writes its values the same way.
    assert logfmt("x", v="a\u202eb") == 'event=x v="a\\u202eb"'
