"""The page's microphone script speaks only in the page's words: every `words.X` it
shows, and every code it maps to words, is a text of `microphone.WORDS` (which the
Russian catalogue translates, tests/unit/test_i18n.py)."""

from __future__ import annotations

import re
from pathlib import Path

from transcriber.http.page import microphone

SCRIPT = Path(microphone.__file__).parent / "static" / "microphone.js"


def test_every_word_the_script_shows_is_the_pages() -> None:
    script = SCRIPT.read_text()
    used = set(re.findall(r"\bwords\.(\w+)", script))
    table = re.search(r"const KEPT_ENDINGS = \{(.*?)\};", script, re.S)
    assert table is not None
    mapped = dict(re.findall(r"(\w+): \"(\w+)\"", table.group(1)))
    assert mapped["insufficient_quota"] == "quota" and "session_too_long" in mapped
    missing = (used | set(mapped.values())) - set(microphone.WORDS)
    assert not missing, missing


def test_every_ending_the_socket_tells_has_the_pages_words() -> None:
    # The Russian page showed the service's English message for these (idle, a store
    # that refused, a lease lost) and went on recording into a closed socket.
    from transcriber.http.live import kept, realtime

    told = {s.code for s in vars(kept).values() if isinstance(s, kept.Stop)}
    told |= {realtime.SHUTTING_DOWN.code, realtime.SESSION_IDLE, *realtime.ENDING}
    script = SCRIPT.read_text()
    table = re.search(r"const KEPT_ENDINGS = \{(.*?)\};", script, re.S)
    assert table is not None
    mapped = dict(re.findall(r"(\w+): \"(\w+)\"", table.group(1)))
    handled = set(re.findall(r'error\.code === "(\w+)"', script))
    assert not told - set(mapped) - handled, told - set(mapped) - handled
