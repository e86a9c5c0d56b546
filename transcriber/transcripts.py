"""A finished record's transcript as the owner reads it, rendered: the text and segments
with the owner's corrections and speaker names (`owner_parts`), and their bytes as
plain text, SRT, VTT, JSON, Markdown or DOCX (`rendered`). Every way a transcript
leaves the service calls this: the API's and the page's downloads, a link's
(transcriber.http.downloads adds their HTTP answer), and the transcripts a watch writes
beside a file (transcriber.watch) — so the bytes are the same wherever they are read.

Below HTTP and the watch, above the records, audio (speakers) and subtitles it joins."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

import attrs

from transcriber.audio.speakers import Part, Turn, parts
from transcriber.db.database import Database
from transcriber.formats import DocumentHead, render, to_docx, to_markdown
from transcriber.records.archive import transcript
from transcriber.records.cards import owner_card
from transcriber.records.corrections import Corrections, corrected, corrections_of
from transcriber.records.settings import owner_settings
from transcriber.records.speaker_names import default_label, owner_speakers
from transcriber.subtitles import check, cues, profiles

FORMAT_OF = {
    "text": "txt",
    "srt": "srt",
    "vtt": "vtt",
    "json": "json",
    "markdown": "md",
    "docx": "docx",
}
"""The renderings by their API name, and each one's suffix."""

SUBTITLES = ("srt", "vtt")


class BadRendering(ValueError):
    """A rendering that cannot be asked (an unknown profile, a profile of a kind that
    is not subtitles): the message in one line, for the asker."""


def subtitle_profile(kind: str, profile: str | None, report: bool) -> profiles.Profile | None:
    """The profile the rendering of `kind` follows (None: one cue per segment);
    BadRendering for a name no profile has, or a profile or report asked of a kind that
    is not subtitles."""
    if kind not in SUBTITLES:
        if profile is not None or report:
            raise BadRendering("profile and report apply to the srt and vtt transcripts only")
        return None
    try:
        chosen = profiles.profile(profile)
    except profiles.UnknownProfile as e:
        raise BadRendering(str(e)) from None
    if report and chosen is None:
        raise BadRendering("a report needs a profile of rules, not segments")
    return chosen


async def owner_profile(db: Database, owner: int, kind: str, shared: bool) -> str | None:
    """The subtitle profile a rendering of `kind` follows when none is asked: the
    owner's default (their settings), for them only — a link holder gets the service's,
    knowing nothing of the owner's settings. Cancellation: a plain read."""
    if kind in SUBTITLES and not shared:
        return (await owner_settings(db, owner)).subtitle_profile
    return None


@attrs.frozen
class HeadWords:
    """How a document's head says what it holds, in its reader's language (the page's
    downloads and a link's give the reader's; the API's are English)."""

    untitled: str = "Untitled recording"
    duration: str = "duration"
    language: str = "language"


@attrs.frozen
class Rendered:
    """A rendering's body (`str` for the text formats, bytes for DOCX) or, with a
    report asked, the checker's `report` of the subtitles instead."""

    body: str | bytes
    report: dict[str, Any] | None = None

    @property
    def data(self) -> bytes:
        """The body's bytes as an HTTP answer sends them (text in UTF-8)."""
        return self.body.encode() if isinstance(self.body, str) else self.body


async def render_card(
    db: Database,
    owner: int,
    card: dict[str, Any],
    kind: str,
    rules: profiles.Profile | None,
    *,
    machine: bool = False,
    shared: bool = False,
    report: bool = False,
    head_words: HeadWords | None = None,
) -> Rendered:
    """The transcript of the owner's readable record `card` as `kind`, corrected unless
    `machine`; `shared`: as a link shows it to others (`shown_to_others`); SRT and VTT
    by `rules` (None: a cue per segment), or with `report` the checker's report of that
    file. Cancellation: plain reads."""
    t = await transcript(db, owner, card["id"])
    text, segments, labels = await owner_transcript(
        db, owner, card["id"], t, machine=machine and not shared, voices=not shared
    )
    if shared:
        segments = shown_to_others(segments)
    if kind in ("markdown", "docx"):
        head = document_head(card, t, head_words)
        return Rendered(
            to_markdown(head, segments) if kind == "markdown" else to_docx(head, segments)
        )
    if rules is not None:
        body = cues.render(FORMAT_OF[kind], segments, rules)
        if report:
            return Rendered(body, check.report(check.parse(body), rules))
        return Rendered(body)
    extra = (
        {}
        if kind != "json"
        else {
            "id": card["id"],
            "language": t["language"] if t else card["language"],
            "model": t["model"] if t else None,
            "duration_s": card["duration_s"],
            "labels": labels,
        }
    )
    return Rendered(render(FORMAT_OF[kind], text, segments, **extra))


async def owner_rendering(
    db: Database, owner: int, recording_id: uuid.UUID, kind: str
) -> bytes | None:
    """The owner's record's transcript as `kind`, byte for byte what the API's download
    of it answers (corrected, the owner's speaker names, subtitles by the owner's
    default profile); None when the record is not the owner's (deleted) or not yet
    readable. Cancellation: plain reads."""
    rules = subtitle_profile(kind, await owner_profile(db, owner, kind, False), False)
    card = await owner_card(db, owner, recording_id)
    if card is None or not card["readable"]:
        return None
    return (await render_card(db, owner, card, kind, rules)).data


HIDDEN_BEHIND_A_CORRECTION = ("machine_text", "words")


def shown_to_others(segments: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The segments as a link shows them: the owner's text only. A corrected segment
    loses what the recognizer heard there — its `machine_text` and its `words` (the
    recognizer's words, with their times) — so a name the owner corrected away before
    sharing is not shared; it keeps `corrected: true`, its times and speaker."""
    return [
        {k: v for k, v in s.items() if k not in HIDDEN_BEHIND_A_CORRECTION}
        if s.get("corrected")
        else s
        for s in segments
    ]


def document_head(
    card: dict[str, Any], t: dict[str, Any] | None, words: HeadWords | None = None
) -> DocumentHead:
    words = words or HeadWords()
    return DocumentHead(
        title=card["title"] or card["filename"] or words.untitled,
        created_at=dt.datetime.fromisoformat(card["created_at"]),
        duration_s=card["duration_s"],
        language=(t or {}).get("language") or card["language"],
        words=(words.duration, words.language),
    )


async def owner_transcript(
    db: Database,
    owner: int,
    rid: uuid.UUID,
    t: dict[str, Any] | None,
    *,
    machine: bool = False,
    voices: bool = True,
) -> tuple[str, list[dict[str, Any]], dict[str, str]]:
    """The text and segments of the owner's record's transcript `t` as every rendering
    shows them (the page, the downloads, the API's routes): `owner_parts`, without their
    addresses. Cancellation: plain reads."""
    text, shown, labels = await owner_parts(db, owner, rid, t, machine=machine, voices=voices)
    return text, [p.shown for p in shown], labels


async def owner_parts(
    db: Database,
    owner: int,
    rid: uuid.UUID,
    t: dict[str, Any] | None,
    *,
    machine: bool = False,
    voices: bool = True,
) -> tuple[str, list[Part], dict[str, str]]:
    """The text and parts of the owner's record's transcript `t`: corrected unless
    `machine`, and on a diarized record with speakers, named and chosen by the owner and
    split where they change (`transcriber.audio.speakers.parts`, each part addressed by
    its segment and first word, as the owner's moves and corrections of a part are); and
    each shown speaker's found label by its name. `voices`: with the names the owner's
    library of voices gave (False for a link holder: nothing of a voice is shown to
    others). Cancellation: plain reads."""
    text, segments = ("", []) if t is None else (t["text"], t["segments"])
    fixes = Corrections() if machine else await corrections_of(db, owner, rid)
    text, segments = corrected(text, segments, fixes.whole)
    if t is None or t.get("turns") is None:
        return text, [Part(i, 0, True, s) for i, s in enumerate(segments)], {}
    said = await owner_speakers(db, owner, rid, voices=voices)
    turns = [Turn(*turn) for turn in t["turns"]]
    shown = parts(segments, turns, said.names, said.choices, fixes.parts)
    if fixes.parts:
        # A part's text is the owner's: the whole text is the parts' as shown.
        text = " ".join(p.shown["text"].strip() for p in shown if p.shown["text"].strip())
    found = {turn.speaker for turn in turns} | set(said.choices.values())
    labels = {said.names.get(n) or default_label(n): default_label(n) for n in sorted(found)}
    return text, shown, labels
