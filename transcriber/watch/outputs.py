"""What a watch writes beside a file it took: the record's transcript in the watch's
formats — the very bytes the API hands out for that record (both render it with
`transcriber.transcripts`: the owner's corrections and speaker names, subtitles by the
owner's default profile) — or a note of why there is none.

Where: beside the file, as `STEM.srt`, `STEM.txt` … (the file's name without its
suffix). Video players (VLC, mpv, Plex, Jellyfin) load `STEM.srt` beside `STEM.mp4` by
themselves, and the owner finds the text where they put the recording; a `transcripts/`
subfolder would hide both from them. Two recordings of one stem (`a.mp3`, `a.wav`) want
the same names: the second finds them taken by other bytes and leaves them (`kept`)."""

from __future__ import annotations

import uuid
from pathlib import Path

from transcriber.db.database import Database
from transcriber.stops import stop_message
from transcriber.transcripts import owner_rendering

KIND = {"txt": "text", "srt": "srt", "vtt": "vtt", "json": "json", "md": "markdown", "docx": "docx"}
"""The formats a watch writes (the file's suffix) and the API's name of each."""
FORMATS = tuple(KIND)
DEFAULT_FORMATS = ("txt", "srt")

STOPPED_SUFFIX = ".stopped.txt"
REFUSED_SUFFIX = ".refused.txt"


class BadFormats(ValueError):
    """A format list no watch writes: one line for the operator."""


def parse_formats(text: str) -> tuple[str, ...]:
    """`txt,srt,…` as a watch's formats (in order, once each); BadFormats otherwise."""
    asked = [f.strip().lower().lstrip(".") for f in text.split(",") if f.strip()]
    if not asked:
        raise BadFormats(f"no format named; choose from {','.join(FORMATS)}")
    unknown = [f for f in asked if f not in KIND]
    if unknown:
        raise BadFormats(f"unknown format {unknown[0]!r}; choose from {','.join(FORMATS)}")
    return tuple(dict.fromkeys(asked))


def stem(name: str) -> str:
    """The file's name without its suffix (`talk.mp3` → `talk`)."""
    base, dot, _ = name.rpartition(".")
    return base if dot and base else name


def beside(folder: str, name: str, suffix: str) -> Path:
    """Where an output of the file `name` in `folder` goes: `STEM` + `suffix`."""
    return Path(folder) / f"{stem(name)}{suffix}"


async def rendered(db: Database, owner: int, recording_id: uuid.UUID, fmt: str) -> bytes | None:
    """The owner's record's transcript as `fmt`, as the API's download of it answers;
    None when the record is gone (its owner deleted it) or not yet readable.
    Cancellation: plain reads."""
    return await owner_rendering(db, owner, recording_id, KIND[fmt])


def stopped_note(reason: str | None, recording_id: object) -> bytes:
    """NAME.stopped.txt: the stop in the owner's words (never the operator's error
    text), and the record's id for whoever resumes it."""
    return f"{stop_message(reason)}\n\n{recording_id}\n".encode()


def refused_note(message: str) -> bytes:
    """NAME.refused.txt: why the intake did not take the file, in its words for the
    sender. While it is there the file is not tried again; removing it asks for that."""
    return f"{message}\n".encode()
