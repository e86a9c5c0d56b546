"""The owner's defaults: what an upload that does not say uses (its language, its
speakers, its vocabulary), the subtitle profile of an SRT or VTT download that names
none, and whether the owner's voices are remembered (opt-in; transcriber.records.voices).

Owner fields: only the owner reads and writes them (the API's /v1/settings, the page's
settings screen); operators and link holders never see them, and they go with the owner
(sql/0025_owner_settings.sql). The intake applies them (`with_defaults`), the one place
every way in passes through.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from transcriber.db.database import Database
from transcriber.languages import UnknownLanguage, language_hint
from transcriber.options import BadOptions, RecognitionOptions, check_vocabulary
from transcriber.records.owner_text import refused_in, what_is_held
from transcriber.speaker_options import BadSpeakers, SpeakersOption

FIELDS = ("language", "speakers", "vocabulary", "subtitle_profile", "remember_voices")


class BadSettings(ValueError):
    """A setting that cannot be kept; `field` names it, the message says why."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


@attrs.frozen
class Settings:
    """The owner's defaults; None (or empty): not set, the service's own applies."""

    language: str | None = None
    speakers: str | None = None
    vocabulary: tuple[str, ...] = ()
    subtitle_profile: str | None = None
    remember_voices: bool = False
    updated_at: dt.datetime | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "language": self.language,
            "speakers": self.speakers,
            "vocabulary": list(self.vocabulary),
            "subtitle_profile": self.subtitle_profile,
            "remember_voices": self.remember_voices,
            "updated_at": None if self.updated_at is None else self.updated_at.isoformat(),
        }

    def changed(self, given: Mapping[str, Any], profiles: Sequence[str]) -> Settings:
        """These settings with the fields `given` (a PATCH: absent fields stay, null
        clears one) checked and changed; BadSettings names the first bad one.
        `profiles`: the subtitle profiles' names (transcriber.subtitles, a layer this
        one does not import)."""
        unknown = set(given) - set(FIELDS)
        if unknown:
            raise BadSettings(sorted(unknown)[0], f"no setting {sorted(unknown)[0]!r}")
        out: dict[str, Any] = {}
        for name, value in given.items():
            out[name] = (
                _profile(value, profiles) if name == "subtitle_profile" else _CHECKS[name](value)
            )
        return attrs.evolve(self, **out)


def _language(value: Any) -> str | None:
    if value is not None and not isinstance(value, str):
        raise BadSettings("language", "language is a language code such as en or ru, or null")
    try:
        return language_hint(value)
    except UnknownLanguage:
        raise BadSettings(
            "language", f"no language {value!r}: give a code such as en or ru, or null"
        ) from None


def _speakers(value: Any) -> str | None:
    if value is None:
        return None
    try:
        if not isinstance(value, str):
            raise BadSpeakers("")
        return SpeakersOption.parse(value).text
    except BadSpeakers:
        raise BadSettings(
            "speakers",
            f"speakers is off, auto, a count or a range such as 2-4, or null; not {value!r}",
        ) from None


def _vocabulary(value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise BadSettings("vocabulary", "vocabulary is a list of words and names")
    terms: list[str] = []
    for v in value:
        term = " ".join(v.split())
        if bad := refused_in(v):
            raise BadSettings(
                "vocabulary", f"a vocabulary entry contains {what_is_held(bad)}; one line each"
            )
        if term and term not in terms:
            terms.append(term)
    # The bounds of a record's own vocabulary: a default every upload takes must be one
    # an upload could ask for.
    try:
        check_vocabulary(terms)
    except BadOptions as e:
        raise BadSettings("vocabulary", str(e)) from None
    return tuple(terms)


def _profile(value: Any, profiles: Sequence[str]) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or value not in profiles:
        raise BadSettings(
            "subtitle_profile",
            f"subtitle_profile is one of {', '.join(profiles)}, or null; not {value!r}",
        )
    return value


def _remember(value: Any) -> bool:
    if not isinstance(value, bool):
        raise BadSettings("remember_voices", "remember_voices is true or false")
    return value


_CHECKS: dict[str, Callable[[Any], Any]] = {
    "language": _language,
    "speakers": _speakers,
    "vocabulary": _vocabulary,
    "remember_voices": _remember,
}


async def owner_settings(db: Database, owner: int) -> Settings:
    """The owner's settings (none set: the empty ones). Cancellation: a plain read."""
    row = await db.fetchrow("owner_settings", owner)
    return Settings() if row is None else _settings(row)


async def change_settings(
    db: Database, owner: int, given: Mapping[str, Any], profiles: Sequence[str]
) -> Settings:
    """The owner's settings with `given` changed (BadSettings: nothing changed). Turning
    `remember_voices` off forgets the voices kept of their records and the names they
    gave. Cancellation: one read, then one statement; a PATCH is whole or not at all,
    and two at once: the later one's fields win (what it did not name stays as read)."""
    new = (await owner_settings(db, owner)).changed(given, profiles)
    row = await db.fetchrow(
        "owner_settings_put",
        owner,
        new.language,
        new.speakers,
        list(new.vocabulary),
        new.subtitle_profile,
        new.remember_voices,
    )
    assert row is not None  # an upsert always returns its row
    return _settings(row)


def _settings(row: Mapping[str, Any]) -> Settings:
    return Settings(
        row["language"],
        row["speakers"],
        tuple(row["vocabulary"]),
        row["subtitle_profile"],
        row["remember_voices"],
        row["updated_at"],
    )


def with_defaults(
    settings: Settings, language: str | None, options: RecognitionOptions
) -> tuple[str | None, RecognitionOptions, tuple[str, ...]]:
    """A request's language and options with what it did not say taken from the
    owner's `settings`, and the names of the settings that were used (for the card).
    The one place the defaults apply: the intake calls it for every way in."""
    used: list[str] = []
    if language is None and settings.language is not None:
        language, used = settings.language, [*used, "language"]
    if options.speakers is None and settings.speakers is not None:
        options = attrs.evolve(options, speakers=settings.speakers)
        used.append("speakers")
    if options.vocabulary is None and settings.vocabulary:
        options = attrs.evolve(options, vocabulary=settings.vocabulary)
        used.append("vocabulary")
    return language, options, tuple(used)
