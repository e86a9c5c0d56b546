"""Normalize (`received → normalized`): decode anything FFmpeg reads, streaming, into
16 kHz mono 16-bit WAV, and measure its duration. Input that cannot become audio stops
the record at once with a reason: retrying would not help."""

from __future__ import annotations

import logging
import wave
from pathlib import Path

import attrs
import av

from actors.log import event
from transcriber.audio.threads import Control

RATE = 16000


def decoder_message(e: BaseException) -> str:
    """The decoder's own words, without the store's file path it would add."""
    return getattr(e, "strerror", None) or str(e)


@attrs.frozen
class Rejected(Exception):
    """Input that can never be normalized; `reason` becomes the stop reason."""

    reason: str
    error: str


def decode_to_wav(
    src: Path, dest: Path, *, max_duration_s: float, control: Control | None = None
) -> float:
    """Stream `src` through the decoder into `dest` (16 kHz mono s16 WAV); return the
    duration in seconds. Memory stays bounded: one packet's frames at a time.

    Raises Rejected for input that is not audio. A file that breaks off after some
    audio decoded (a truncated mp3) keeps what decoded.
    """
    size = src.stat().st_size
    if size == 0:
        raise Rejected("empty_file", "the upload has zero bytes")
    try:
        container = av.open(str(src), metadata_errors="ignore")
    except (av.FFmpegError, UnicodeDecodeError) as e:
        raise Rejected("undecodable_audio", decoder_message(e)) from e
    with container:
        if not container.streams.audio:
            kinds = ", ".join(sorted({s.type for s in container.streams})) or "no streams"
            raise Rejected(
                "no_audio_stream", f"{container.format.name} container with {kinds}, no audio"
            )
        stream = container.streams.audio[0]
        if container.duration is not None and container.duration / 1e6 > max_duration_s + 1:
            raise Rejected(
                "too_long",
                f"{container.duration / 1e6:.0f}s of audio, the limit is {max_duration_s:.0f}s",
            )
        resampler = av.AudioResampler(format="s16", layout="mono", rate=RATE)
        limit = int(max_duration_s * RATE)
        written = 0
        with wave.open(str(dest), "wb") as out:
            out.setnchannels(1)
            out.setsampwidth(2)
            out.setframerate(RATE)

            def emit(frames: list[av.AudioFrame]) -> None:
                nonlocal written
                for frame in frames:
                    samples = frame.to_ndarray().reshape(-1)
                    written += len(samples)
                    if written > limit:
                        raise Rejected(
                            "too_long", f"more than {max_duration_s:.0f}s of audio, the limit"
                        )
                    out.writeframes(samples.tobytes())

            bad_packets = 0
            last_error: BaseException | None = None
            try:
                for packet in container.demux(stream):
                    if control is not None:
                        control.check()
                    try:
                        frames = packet.decode()
                    except av.FFmpegError as e:
                        # One damaged packet: skip it, keep the rest of the file.
                        bad_packets += 1
                        last_error = e
                        continue
                    for frame in frames:
                        emit(resampler.resample(frame))
                    if control is not None and size:
                        control.report(min(1.0, (packet.pos or 0) / size))
            except av.FFmpegError as e:  # the container itself breaks off
                last_error = e
            if last_error is not None:
                if written == 0:
                    raise Rejected("undecodable_audio", decoder_message(last_error))
                event(
                    logging.WARNING,
                    "decode_damaged",
                    file=src.name,
                    kept_s=round(written / RATE, 3),
                    bad_packets=bad_packets,
                    error=decoder_message(last_error),
                )
            emit(resampler.resample(None))
        if written == 0:
            raise Rejected("empty_audio", "the audio stream decodes to no samples")
    return written / RATE
