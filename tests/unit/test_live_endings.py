"""Why a live session ended, in the owner's words (capability `live`): every reason a
record's `live_ended` can say has its own line in the record page's history, in English
and in Russian; a reason the page does not know reads as the plain line."""

from __future__ import annotations

from transcriber.http.i18n import LANGS
from transcriber.http.page.text import event_words
from transcriber.live import endings


def ended(reason: object) -> dict[str, object]:
    return {"kind": "live_ended", "milestone": "received", "detail": {"reason": reason}}


def test_every_end_reason_has_its_words() -> None:
    plain = event_words(LANGS["en"], {"kind": "live_ended", "detail": {}})
    for code, lang in LANGS.items():
        said = {event_words(lang, ended(reason)) for reason in endings.RECORDED}
        assert len(said) == len(endings.RECORDED), code  # each its own line
        assert event_words(lang, {"kind": "live_ended", "detail": {}}) not in said, code
    assert event_words(LANGS["en"], ended("dropped")).startswith("Live session's connection")
    assert event_words(LANGS["ru"], ended("dropped")).startswith("Соединение живой сессии")
    for unknown in ("not-a-reason", 7, None):
        assert event_words(LANGS["en"], ended(unknown)) == plain
