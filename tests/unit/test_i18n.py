"""The page's catalogues against the messages of its templates and code: every message
translated into every language (each plural form too), no translation of a message that
is gone, placeholders kept; and no English left outside a message in a template."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from transcriber.http import i18n


def scenario(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("page", title)


TRANSLATED = [code for code in i18n.LOCALES if code != i18n.DEFAULT]
PLACEHOLDER = re.compile(r"%\(\w+\)[sd]|\{\w+\}")


def key(message: str | tuple[str, ...]) -> str:
    return message if isinstance(message, str) else message[0]


@scenario("Every message of the page has a translation in every language")
@pytest.mark.parametrize("code", TRANSLATED)
def test_every_message_is_translated(code: str) -> None:
    messages = {(key(m), c): m for m, c, _, _ in i18n.extracted()}
    assert len(messages) > 100  # the extraction found the templates and the code
    catalog = i18n.read_catalogue(code)
    untranslated = []
    for (msgid, context), message in messages.items():
        entry = catalog.get(msgid, context)
        found = None if entry is None else entry.string
        strings: list[str] = (
            [] if not found else [found] if isinstance(found, str) else [str(f) for f in found]
        )
        if entry is None or entry.fuzzy or not strings or not all(strings):
            untranslated.append(msgid)
            continue
        assert not isinstance(message, tuple) or len(strings) == catalog.num_plurals, msgid
        wanted = sorted(PLACEHOLDER.findall(key(message)))
        for s in strings:
            # Russian plurals: the count may be spelled out for one form, never another name.
            assert set(PLACEHOLDER.findall(s)) <= set(wanted), (msgid, s)
            if not isinstance(message, tuple):
                assert sorted(PLACEHOLDER.findall(s)) == wanted, (msgid, s)
    assert untranslated == [], f"{code}.po lacks these (run i18n.update(), then translate them)"
    gone = sorted(
        {(m.id if isinstance(m.id, str) else m.id[0], m.context) for m in catalog if m.id}
        - set(messages),
        key=str,
    )
    assert gone == [], f"{code}.po translates messages no longer used"
    assert [e for _, errors in catalog.check() for e in errors] == []


# Words a template may show as they are: the product's name, key names, formats.
AS_THEY_ARE = {"transcriber", "Space", "Esc", "TXT"}


def english_outside_messages(source: str) -> list[str]:
    """The words of a template that are outside `_()`/`{% trans %}`: its text between
    tags, and the attributes a person reads (labels, placeholders, titles)."""
    text = re.sub(r"\{#.*?#\}", " ", source, flags=re.S)
    text = re.sub(r"\{%-?\s*trans\b.*?endtrans\s*-?%\}", " ", text, flags=re.S)
    text = re.sub(r"\{\{.*?\}\}|\{%.*?%\}", " ", text, flags=re.S)
    read = re.findall(r'(?:aria-label|placeholder|title|alt|data-label)="([^"]*)"', text)
    between = re.sub(r"<script.*?</script>|<[^>]*>", " ", text, flags=re.S)
    words = re.findall(r"[A-Za-z][A-Za-z']+", " ".join([between, *read]))
    return [w for w in words if w not in AS_THEY_ARE]


@scenario("Every message of the page has a translation in every language")
@pytest.mark.parametrize(
    "template", sorted(t for d in i18n.TEMPLATE_DIRS for t in d.glob("*.html")), ids=str
)
def test_no_english_outside_the_catalogue(template: Path) -> None:
    assert english_outside_messages(template.read_text()) == []


def test_the_check_sees_untranslated_english() -> None:
    assert english_outside_messages('<p title="Play">Hello {{ _("x") }}</p>') == [
        "Hello",
        "Play",
    ]


@pytest.mark.parametrize(
    ("cookie", "header", "code"),
    [
        (None, "ru-RU,ru;q=0.9,en-US;q=0.8", "ru"),
        (None, "en-US,ru;q=0.5", "en"),
        (None, "de-DE,ru;q=0.7,en;q=0.3", "ru"),
        (None, "fr", "en"),
        (None, "", "en"),
        (None, "ru;q=0", "en"),
        ("en", "ru", "en"),
        ("ru", "en", "ru"),
        ("xx", "ru", "ru"),
    ],
)
def test_the_language_of_a_request(cookie: str | None, header: str, code: str) -> None:
    cookies = {} if cookie is None else {i18n.COOKIE: cookie}
    assert i18n.pick(cookies, header).code == code


def test_dates_durations_and_sizes_in_the_readers_language() -> None:
    en, ru = i18n.LANGS["en"], i18n.LANGS["ru"]

    def plain(text: str) -> str:  # CLDR's no-break spaces as spaces
        return text.replace("\u00a0", " ").replace("\u202f", " ")

    at = "2026-12-01T13:40:00+00:00"
    assert plain(en.when(at)) == "Dec 1, 2026, 1:40 PM UTC"
    assert plain(ru.when(at)) == "1 дек. 2026 г., 13:40 UTC"
    assert plain(ru.duration(3725)) == "1 ч 2 мин 5 с"
    assert plain(en.duration(3725)) == "1 hr 2 min 5 sec"
    assert plain(ru.size(1536000)) == "1,5 МБ" and plain(en.size(1536000)) == "1.5 MB"
    assert plain(en.size(10)) == "10 bytes"
    assert ru.clock(63.25) == "1:03,2" and en.clock(63.25) == "1:03.2"
    assert ru.gettext("The file could not be read as audio.") == (
        "Файл не удалось прочитать как звук."
    )
    # One English word, two Russian ones by the context: a record is stopped, a daemon too.
    assert ru.gettext("Stopped") == "Остановлена" and ru.pgettext("daemon", "stopped") == (
        "остановлен"
    )
