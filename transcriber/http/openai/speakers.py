"""OpenAI's known speakers: `known_speaker_names[]` with `known_speaker_references[]`
(short clips as data URLs, one for each name) name the speakers a diarized_json answer
finds by their voices, instead of letters.

Bounded: at most KNOWN_MAX names, each clip at most REFERENCE_BYTES_MAX as a data URL
(the form's own bounds, uploads._Form) and REFERENCE_MAX_S of audio. The clips are
decoded and their voices taken (CAM++, as diarization's) before the record is
accepted, so a bad clip is refused at once; the found speakers' voices come from the
record's audio, at most VOICE_SAMPLE_S of each, once it is diarized. Both in a worker
thread of the service (numpy only: nothing native but the decoder, which the upload's
checks already run here)."""

from __future__ import annotations

import base64
import binascii
import functools
import re
import tempfile
import uuid
from pathlib import Path
from typing import Any

import trio

from transcriber.audio.speakers import (
    BadReference,
    Turn,
    match_known,
    reference_voice,
    voices_of,
)
from transcriber.audio.speakers_model import CamPlusPlus
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.records.archive import audio_ref
from transcriber.records.speaker_names import NAME_MAX
from transcriber.storage.configured import blobs_of

NAMES = "known_speaker_names[]"
REFERENCES = "known_speaker_references[]"
KNOWN_MAX = 4
"""Known speakers of one request (OpenAI's own limit)."""
REFERENCE_BYTES_MAX = 2 << 20
"""Bytes of one reference as a data URL: 10 s of 48 kHz 16-bit mono WAV is 960 kB, 1.3 MB
in base64; compressed audio is far less."""
LONG_FIELDS = {REFERENCES: (REFERENCE_BYTES_MAX, KNOWN_MAX)}
"""The form's bounds of the references (uploads._Form): held in memory while the
request is read, 8 MB at most."""

_DATA_URL = re.compile(r"^data:([\w.+-]+/[\w.+-]+)?(?:;[\w.+-]+=[\w.+-]+)*;base64,", re.I)


class BadKnown(ValueError):
    """The known speakers cannot be used; `param` is the field to blame."""

    def __init__(self, param: str, message: str) -> None:
        super().__init__(message)
        self.param = param


def parse_known(lists: dict[str, list[str]]) -> tuple[tuple[str, bytes], ...]:
    """The known speakers' names and clips' bytes, or BadKnown."""
    names, refs = lists.get(NAMES, []), lists.get(REFERENCES, [])
    if len(names) != len(refs):
        raise BadKnown(
            "known_speaker_names",
            f"known_speaker_names has {len(names)} names and known_speaker_references "
            f"{len(refs)} clips; give one clip for each name",
        )
    if len(names) > KNOWN_MAX:
        raise BadKnown("known_speaker_names", f"at most {KNOWN_MAX} known speakers")
    out: list[tuple[str, bytes]] = []
    for name, ref in zip(names, refs, strict=True):
        name = name.strip()
        if not name or len(name) > NAME_MAX or not name.isprintable():
            raise BadKnown(
                "known_speaker_names", f"a name is one line of 1 to {NAME_MAX} characters"
            )
        if name in (n for n, _ in out):
            raise BadKnown("known_speaker_names", f"the name {name!r} is given twice")
        m = _DATA_URL.match(ref)
        if m is None:
            raise BadKnown(
                "known_speaker_references",
                "a reference is a data URL of audio (data:audio/wav;base64,...)",
            )
        try:
            data = base64.b64decode(ref[m.end() :], validate=True)
        except (binascii.Error, ValueError):
            raise BadKnown("known_speaker_references", "a reference is not valid base64") from None
        out.append((name, data))
    return tuple(out)


@functools.cache
def _net() -> CamPlusPlus:
    return CamPlusPlus.load()


async def reference_voices(known: tuple[tuple[str, bytes], ...]) -> list[tuple[str, Any]]:
    """Each known speaker's name and voice; BadKnown for a clip that is not audio, too
    long, or silent; WeightsMissing without the speaker model. Cancellation: waits for
    the thread (a few clips of 10 s: about a second)."""

    def work() -> list[tuple[str, Any]]:
        with tempfile.TemporaryDirectory(prefix="known-speakers-") as scratch:
            try:
                return [
                    (name, reference_voice(data, _net(), Path(scratch))) for name, data in known
                ]
            except BadReference as e:
                raise BadKnown("known_speaker_references", str(e)) from None

    return await trio.to_thread.run_sync(work)


async def known_names(
    db: Database,
    config: Config,
    owner: int,
    rid: uuid.UUID,
    t: dict[str, Any],
    voices: list[tuple[str, Any]],
) -> dict[int, str]:
    """The record's found speakers (by number) that are known voices, by name; empty
    when it is not diarized or its audio is gone. Cancellation: waits for the thread (at
    most VOICE_SAMPLE_S of each speaker: a few seconds), which reads the audio."""
    if not voices or t.get("turns") is None:
        return {}
    ref = await audio_ref(db, owner, rid)
    if ref is None:
        return {}
    turns = [Turn(*turn) for turn in t["turns"]]
    async with blobs_of(config).local_file(ref) as audio:
        found = await trio.to_thread.run_sync(lambda: voices_of(audio, turns, _net()))
    return match_known(found, voices)
