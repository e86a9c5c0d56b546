"""The page's languages: English and Russian, the texts in gettext catalogues.

The messages are English in the code and the templates of every face with a screen
(the owner's page, the operator's screen: `SOURCES`) (`_("…")` in a template,
`N_("…")` beside a constant to be translated where it is shown; `pgettext("ops", "…")`
and `NP_("daemon", "…")` where one English word needs another translation in another
place, e.g. "stopped" of a record and of a daemon); `locales/<code>.po`
holds each other language's translations. The `.po` files are the only thing kept: they
are compiled in memory when this module is imported (Babel reads them, the standard
library's `gettext` looks messages up), so no generated `.mo` file is committed or has
to be built before the wheel. English needs no catalogue: an untranslated message is its
own English text.

Which language a request gets: the `transcriber_lang` cookie (set by the page's switch,
`/lang/<code>`), else the browser's `Accept-Language`, else English.

`python -c 'from transcriber.http import i18n; i18n.update()'` brings the catalogues up
to date with the code and templates (new messages added empty, gone ones dropped,
sorted, without source lines, so branches seldom collide in them); fill in the empty
`msgstr`s. tests/unit/test_i18n.py fails while any message lacks a translation.
"""

from __future__ import annotations

import datetime as dt
import gettext
import io
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import babel
import babel.dates
import babel.numbers
import babel.units
from babel.messages.catalog import Catalog
from babel.messages.extract import extract_from_file
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po, write_po

HERE = Path(__file__).resolve().parent
LOCALE_DIR = HERE / "locales"
LOCALES = ("en", "ru")
DEFAULT = "en"
NAMES = {"en": "English", "ru": "Русский"}
"""Each language in its own words, for the switch."""
COOKIE = "transcriber_lang"
COOKIE_MAX_AGE_S = 365 * 86400


def N_(message: str) -> str:
    """Marks `message` for the catalogues where it is defined; it is translated where it
    is shown (`Lang.gettext`)."""
    return message


def NP_(context: str, message: str) -> tuple[str, str]:
    """`N_` with a context: translated where it is shown (`Lang.pgettext`)."""
    return context, message


def NN_(singular: str, plural: str) -> tuple[str, str]:
    """`N_` of a message with a count: its plural forms (`Lang.ngettext`)."""
    return singular, plural


# The page's script's own texts, by key: the page gets them in its language as a small
# JSON dictionary (base.html), `{name}` replaced by the script.
SCRIPT_WORDS = {
    "no_answer": N_("The server did not answer; try again."),
    "signin_refused": N_("Sign-in refused."),
    "remove": N_("Remove"),
    "title_for": N_("Title for {name}"),
    "language_for": N_("Language of {name}"),
    "speakers_for": N_("Speakers of {name}"),
    "detect": N_("detect"),
    "bad_speakers": N_(
        "“{value}” is not a number of speakers: give auto, a count such as 2, a range "
        "such as 2-4, or off"
    ),
    "service_default": N_("service default"),
    "upload_of": N_("Upload of {name}"),
    "empty_file": N_("the file is empty"),
    "too_large": N_("the file is larger than the limit of {limit}"),
    "refused": N_("Refused: {why}."),
    "unknown_language": N_(
        "the recognizer knows no language “{code}”: choose a code from the list, "
        "or leave it empty to detect the language"
    ),
    "uploading": N_("Uploading…"),
    "accepted": N_("Accepted."),
    "copied": N_("Copied."),
    "saved": N_("Saved."),
    "not_changed": N_("Not saved: see the reason next to the field."),
    "copy_by_hand": N_("Select the link and copy it."),
    "uploaded_before": N_(
        "Uploaded before: the same file with the same title and options is already "
        "a recording of yours."
    ),
    "open_page": N_("Open its page"),
    "cut_off": N_(
        "the connection broke off (a file over the size limit is cut off this way); try again"
    ),
    "server_answered": N_("the server answered {status}"),
    # An upload refused by the API's bounds, by its status: the API's own words are
    # English, for programs; the page says the same in the reader's language.
    "refused_413": N_("the file is larger than the limit of {limit}"),
    "refused_429": N_("too many of your uploads are under way at once; try again in a minute"),
    "refused_507": N_("there is no room left for it (your quota or the service's storage is full)"),
    "bytes": N_("{n} bytes"),
    "corrected_text_of": N_("Corrected text of segment {n}"),
    "not_saved": N_("The correction was not saved (the server answered {status})."),
    "found": N_("{n} found"),
    "replaced": N_("Replaced {n}; saving…"),
    "replaced_saved": N_("Replaced {n} and saved."),
    "nothing_found": N_("Nothing found."),
}

# The script's texts with a count `{n}`: each in every plural form of the language, by
# its CLDR category (the script picks one with `Intl.PluralRules`), as Russian says
# "1 сегмент", "2 сегмента", "5 сегментов".
SCRIPT_PLURALS = {
    "undone": NN_("Undone: {n} segment back as it was.", "Undone: {n} segments back as they were."),
    "some_not_saved": NN_("{n} segment was not saved: {why}", "{n} segments were not saved: {why}"),
}


@attrs.frozen
class Lang:
    """One language of the page: its messages and how it writes numbers and dates."""

    code: str
    translations: gettext.NullTranslations
    locale: babel.Locale

    def gettext(self, message: str) -> str:
        return self.translations.gettext(message)

    def pgettext(self, context: str, message: str) -> str:
        return self.translations.pgettext(context, message)

    def ngettext(self, singular: str, plural: str, n: int) -> str:
        return self.translations.ngettext(singular, plural, n)

    def script_words(self) -> dict[str, str | dict[str, str]]:
        words: dict[str, str | dict[str, str]] = {
            k: self.gettext(v) for k, v in SCRIPT_WORDS.items()
        }
        for key, (singular, plural) in SCRIPT_PLURALS.items():
            words[key] = {
                category: self.ngettext(singular, plural, n)
                for category, n in self.plural_samples().items()
            }
        return words

    def plural_samples(self) -> dict[str, int]:
        """A whole number of each plural category of this language that has one (CLDR's,
        as the browser's `Intl.PluralRules` names them): {"one": 1, "other": 0} in English,
        {"many": 0, "one": 1, "few": 2} in Russian."""
        samples: dict[str, int] = {}
        for n in range(200):
            samples.setdefault(self.locale.plural_form(n), n)
        return samples

    # --- numbers, dates, durations in this language --------------------------------------

    def when(self, iso: str | dt.datetime) -> str:
        at = dt.datetime.fromisoformat(iso) if isinstance(iso, str) else iso
        at = at.astimezone(dt.UTC)
        date = babel.dates.format_date(at, "medium", locale=self.locale)
        time = babel.dates.format_time(at, "short", tzinfo=dt.UTC, locale=self.locale)
        both = str(babel.dates.get_datetime_format("medium", locale=self.locale))
        return both.replace("{1}", date).replace("{0}", time) + " UTC"

    def duration(self, seconds: float | None) -> str:
        """Hours, minutes and seconds in words of this language: 1 h 2 min 5 s."""
        if seconds is None:
            return "—"
        h, rest = divmod(round(seconds), 3600)
        m, s = divmod(rest, 60)
        parts = [(h, "duration-hour"), (m, "duration-minute"), (s, "duration-second")]
        shown = [(n, unit) for n, unit in parts if n] or [(0, "duration-second")]
        return " ".join(
            babel.units.format_unit(n, unit, length="short", locale=self.locale)
            for n, unit in shown
        )

    def clock(self, seconds: float) -> str:
        """A segment's start: m:ss.s (h:mm:ss past an hour), the decimal sign of this
        language."""
        if seconds >= 3600:
            whole = round(seconds)
            return f"{whole // 3600}:{whole % 3600 // 60:02d}:{whole % 60:02d}"
        m, s = divmod(seconds, 60)
        return f"{int(m)}:{s:04.1f}".replace(".", self.decimal_sign())

    def number(self, n: float) -> str:
        return babel.numbers.format_decimal(n, locale=self.locale)

    def fixed(self, n: float, digits: int = 1) -> str:
        """`n` with exactly `digits` decimals, the separators of this language."""
        pattern = "#,##0" + ("." + "0" * digits if digits > 0 else "")
        return babel.numbers.format_decimal(n, format=pattern, locale=self.locale)

    def decimal_sign(self) -> str:
        return babel.numbers.get_decimal_symbol(self.locale)

    def size(self, n: int | None) -> str:
        if n is None:
            return "—"
        if n < 1024:
            return babel.units.format_unit(n, "digital-byte", length="long", locale=self.locale)
        value = float(n)
        for unit in ("kilobyte", "megabyte", "gigabyte"):
            value /= 1024
            if value < 1024 or unit == "gigabyte":
                break
        return babel.units.format_unit(
            value, f"digital-{unit}", length="short", format="#,##0.0", locale=self.locale
        )


def catalogue_path(code: str) -> Path:
    return LOCALE_DIR / f"{code}.po"


def read_catalogue(code: str) -> Catalog:
    with catalogue_path(code).open("rb") as f:
        return read_po(f, locale=code)


def load(code: str) -> Lang:
    """The language `code`, its catalogue compiled in memory (fuzzy entries left out, as
    gettext's own tools leave them out)."""
    if code == DEFAULT:
        return Lang(code, gettext.NullTranslations(), babel.Locale.parse(code))
    compiled = io.BytesIO()
    write_mo(compiled, read_catalogue(code), use_fuzzy=False)
    compiled.seek(0)
    return Lang(code, gettext.GNUTranslations(compiled), babel.Locale.parse(code))


LANGS = {code: load(code) for code in LOCALES}


def from_accept_language(header: str) -> str | None:
    """The first of the page's languages the browser asks for (`ru-RU,ru;q=0.9,en;q=0.8`),
    by its weights; None when it asks for none of them."""
    wanted: list[tuple[float, int, str]] = []
    for i, item in enumerate(header.split(",")[:30]):
        tag, _, params = item.strip().partition(";")
        q = 1.0
        params = params.strip()
        if params.startswith("q="):
            try:
                q = float(params[2:])
            except ValueError:
                continue
        primary = tag.strip().split("-")[0].lower()
        if primary in LANGS and q > 0:
            wanted.append((-q, i, primary))
    return min(wanted)[2] if wanted else None


def pick(cookies: dict[str, str], accept_language: str) -> Lang:
    """The request's language: its cookie, else its `Accept-Language`, else English."""
    code = cookies.get(COOKIE)
    if code not in LANGS:
        code = from_accept_language(accept_language) or DEFAULT
    return LANGS[code]


# --- keeping the catalogues up to date ----------------------------------------------------

TEMPLATE_DIRS = tuple(sorted(p for p in HERE.glob("*/templates") if p.is_dir()))
"""The templates of every face with a screen (`<face>/templates/`)."""
SOURCES = (
    *((folder, "*.html", "jinja2.ext:babel_extract") for folder in TEMPLATE_DIRS),
    *((folder.parent, "*.py", "python") for folder in TEMPLATE_DIRS),
    (HERE, "i18n.py", "python"),
    (HERE.parent, "stops.py", "python"),
)
"""Where the messages are: every face with a screen (its templates and its code), this
module's own, and the owner's words of a stop."""
KEYWORDS = {
    "_": None,
    "gettext": None,
    "ngettext": (1, 2),
    "pgettext": ((1, "c"), 2),
    "N_": None,
    "NP_": ((1, "c"), 2),
    "NN_": (1, 2),
}
JINJA_OPTIONS = {"extensions": "jinja2.ext.i18n", "trimmed": "true"}


def extracted() -> Iterator[tuple[str | tuple[str, ...], str | None, str, int]]:
    """Every message of the page's templates and code: (message, context, file, line)."""
    for folder, pattern, method in SOURCES:
        for path in sorted(folder.glob(pattern)):
            options: dict[str, Any] = JINJA_OPTIONS if method != "python" else {}
            for line, message, _comments, context in extract_from_file(
                method, path, keywords=KEYWORDS, options=options, strip_comment_tags=True
            ):
                yield message, context, path.name, line


def template_catalogue() -> Catalog:
    """A catalogue of the extracted messages, without translations."""
    catalog = Catalog(project="transcriber", fuzzy=False)
    for message, context, where, line in extracted():
        catalog.add(message, None, [(where, line)], context=context)
    return catalog


def update() -> None:
    """Each language's catalogue gets the code's new messages (empty) and loses the ones
    gone; its translations stay."""
    fresh = template_catalogue()
    for code in LOCALES:
        if code == DEFAULT:
            continue
        catalog = read_catalogue(code)
        created = catalog.creation_date  # kept: a header that changes on every run conflicts
        catalog.update(fresh, no_fuzzy_matching=True)
        catalog.creation_date = created
        catalog.obsolete.clear()
        write_catalogue(code, catalog)


def write_catalogue(code: str, catalog: Catalog) -> None:
    # Sorted by message and without the places they come from, so two branches adding
    # messages seldom touch the same lines of a catalogue.
    catalog.fuzzy = False
    with catalogue_path(code).open("wb") as f:
        write_po(f, catalog, width=100, no_location=True, sort_output=True)
