"""A corpus of bad audio fed through the real pipeline together with good recordings:
each bad one ends stopped at `received` with a reason and no attempt spent; the good
ones are not disturbed."""

from __future__ import annotations

import os
import struct
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

from actors import Wakeup, Worker
from tests.helpers import generated_audio
from tests.helpers.pg_pipeline import state
from transcriber.config import Config
from transcriber.db.database import Database
from transcriber.intake import accept_file
from transcriber.pipeline.audio_steps import audio_steps
from transcriber.pipeline.operator import card
from transcriber.pipeline.pg_queue import PgQueue, Saved

REASONS = {
    "empty_file",
    "undecodable_audio",
    "no_audio_stream",
    "empty_audio",
    "too_long",
    "implausible_rate",
}


def png_named_m4a(folder: Path) -> Path:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return (
            struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
        )

    png = (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
        + chunk(b"IDAT", zlib.compress(b"\x00\xff\x00\x00"))
        + chunk(b"IEND", b"")
    )
    path = folder / "photo.m4a"
    path.write_bytes(png)
    return path


def subtitles_named_ogg(folder: Path) -> Path:
    path = folder / "captions.ogg"
    path.write_text(
        "1\n00:00:01,000 --> 00:00:02,000\nHello there.\n\n"
        "2\n00:00:03,000 --> 00:00:04,000\nGeneral Kenobi.\n"
    )
    return path


def zip_named_flac(folder: Path) -> Path:
    path = folder / "archive.flac"
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("readme.txt", "not audio " * 100)
    return path


def riff_header_then_noise(folder: Path) -> Path:
    path = folder / "broken.wav"
    path.write_bytes(b"RIFF" + struct.pack("<I", 100036) + b"WAVE" + os.urandom(100028))
    return path


def html_named_mp3(folder: Path) -> Path:
    path = folder / "page.mp3"
    path.write_text("<!doctype html><html><body><p>404 Not Found</p></body></html>\n" * 50)
    return path


def ogg_cut_after_headers(folder: Path) -> Path:
    whole = generated_audio.good_file(folder, "ogg-opus")
    path = folder / "cut.ogg"
    path.write_bytes(whole.read_bytes()[:300])
    return path


CORPUS: dict[str, Callable[[Path], Path]] = {
    "zero bytes": generated_audio.zero_bytes,
    "text named .wav": generated_audio.text_as_wav,
    "random bytes named .mp3": generated_audio.random_as_mp3,
    "mp3 frames of noise": generated_audio.mp3_frames_of_noise,
    "m4a without its moov atom": generated_audio.truncated_m4a,
    "video without audio": generated_audio.video_without_audio,
    "wav without frames": generated_audio.wav_without_frames,
    "longer than the limit": generated_audio.five_seconds,
    "png named .m4a": png_named_m4a,
    "subtitles named .ogg": subtitles_named_ogg,
    "zip named .flac": zip_named_flac,
    "RIFF header then noise": riff_header_then_noise,
    "html named .mp3": html_named_mp3,
    "ogg cut after its headers": ogg_cut_after_headers,
    "wav at 1 Hz": lambda folder: generated_audio.wav_at_rate(folder, 1),
    "wav at 768 kHz": lambda folder: generated_audio.wav_at_rate(folder, 768000, 1.0),
}


async def recognized(job: Any, progress: Any) -> Saved:
    # The good recordings are only there to be left undisturbed: no model needed.
    return Saved("save_transcript", ("a tone", [], "en", "test"))


async def test_every_kind_of_bad_audio_stops_and_disturbs_nothing(
    db: Database, owner_id: int, tmp_path: Path
) -> None:
    config = Config(home=tmp_path / "home", max_duration_s=4.0)  # the good tones: 3 s
    media = tmp_path / "media"
    media.mkdir()
    good = [
        await accept_file(db, config, generated_audio.good_file(media, kind), owner_id)
        for kind in ("mp3", "wav")
    ]
    bad = {}
    for name, make in CORPUS.items():
        folder = media / name.replace(" ", "_").replace(".", "")
        folder.mkdir()
        bad[name] = await accept_file(db, config, make(folder), owner_id)

    steps = audio_steps(config)
    steps = steps.replace(recognize=recognized)
    w = Worker("w", PgQueue(db, steps), steps, Wakeup())
    while await w.work_once():
        pass

    outcomes = {}
    for name, rid in bad.items():
        c = await card(db, rid)
        assert c is not None and c["stopped"] is not None, (name, c)
        assert c["milestone"] == "received", name
        assert c["stopped"]["reason"] in REASONS and c["stopped"]["error"], (name, c)
        assert (await state(db, rid))["attempts"] == 1, name  # its one claim: no retry spent
        outcomes[name] = c["stopped"]["reason"]
    assert len(outcomes) >= 12
    assert len(set(outcomes.values())) == len(REASONS)  # every reason shows up
    for rid in good:
        c = await card(db, rid)
        assert c is not None and c["done"] and c["stopped"] is None
    print("bad audio corpus:", outcomes)
