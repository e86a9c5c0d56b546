"""Normalize (`received → normalized`): decode anything FFmpeg reads, streaming, into
16 kHz mono 16-bit WAV, and measure its duration. Input that cannot become audio stops
the record at once with a reason: retrying would not help."""

from __future__ import annotations

import logging
import math
import wave
from collections.abc import Callable
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


MIN_RATE = 4000
MAX_RATE = 384000
"""The sample rates a recording may have. Below 4 kHz no speech codec or recorder
writes (telephony is 8 kHz) and resampling to 16 kHz multiplies the bytes: a 1 Hz WAV
of 3,644 bytes was an hour of audio, 115 MB normalized. Above 384 kHz no converter
records (352.8 kHz DXD is the highest in use)."""

MIN_BYTES_PER_S = 32
"""The fewest upload bytes a second of real audio takes (256 bit/s): below every speech
codec FFmpeg reads (codec2 at 450 bit/s is 56 B/s, opus at 6 kbit/s 750 B/s) and below
digital silence as encoders write it (flac 135-190 B/s, opus 380 B/s). A file that
decodes to more than its bytes allow is built to amplify: a flac of silence in
32768-sample frames is 5 B/s, 6,000 times smaller than its normalized audio."""

GRACE_S = 30.0
"""Audio any upload may decode to whatever its size: a tiny file of a few seconds needs
no ratio, and 30 s is at most 1 MB of normalized audio."""

WRITE_CHUNK = 1 << 20
"""Normalized bytes gathered before one write (about 33 s of audio): the disk reserve is
checked before each."""


def probed_seconds(src: Path) -> float | None:
    """The length the container of `src` tells without decoding (its header, index or
    last timestamp), or None when it tells none or is not audio FFmpeg reads: a cheap
    early look, for an upload's answer; normalization measures."""
    try:
        with av.open(str(src), metadata_errors="ignore") as container:
            if not container.streams.audio or container.duration is None:
                return None
            return float(container.duration / 1e6)
    except (av.FFmpegError, UnicodeDecodeError):
        return None


def plausible_seconds(size: int) -> float:
    """The most audio `size` upload bytes can carry (see MIN_BYTES_PER_S)."""
    return GRACE_S + size / MIN_BYTES_PER_S


def decode_to_wav(
    src: Path,
    dest: Path,
    *,
    max_duration_s: float,
    quota_room_s: float = math.inf,
    before_write: Callable[[int], None] | None = None,
    control: Control | None = None,
) -> float:
    """Stream `src` through the decoder into `dest` (16 kHz mono s16 WAV); return the
    duration in seconds. Memory stays bounded: one packet's frames and one write chunk
    at a time.

    Raises Rejected for input that is not audio, or audio past a bound: longer than
    `max_duration_s` (`too_long`), than the owner's `quota_room_s` (`audio_quota`), than
    the upload's bytes can carry (`implausible_duration`), or at an implausible sample
    rate (`implausible_rate`). Each is refused before decoding when the container says
    so, and while decoding as soon as it is passed. `before_write(n)` is called before
    `n` more bytes go into `dest` (the header first): it raises to stop writing (the
    disk's reserve); `dest` is then the caller's to remove. A file that breaks off after
    some audio decoded (a truncated mp3) keeps what decoded.
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
        check_rate(stream.sample_rate)
        bounds = [
            Bound("too_long", max_duration_s, f"the limit is {max_duration_s:.0f}s"),
            Bound(
                "audio_quota",
                quota_room_s,
                f"the owner's quota has {max(quota_room_s, 0):.0f}s of audio left",
            ),
            Bound(
                "implausible_duration",
                plausible_seconds(size),
                f"{size} bytes carry at most {plausible_seconds(size):.0f}s of audio "
                f"({MIN_BYTES_PER_S} bytes a second at the least)",
            ),
        ]
        for bound in bounds:
            if bound.limit_s <= 0:
                raise Rejected(bound.reason, f"no audio fits: {bound.why}")
        if container.duration is not None:
            for bound in bounds:
                if container.duration / 1e6 > bound.limit_s + 1:
                    raise Rejected(
                        bound.reason, f"{container.duration / 1e6:.0f}s of audio, {bound.why}"
                    )
        resampler = av.AudioResampler(format="s16", layout="mono", rate=RATE)
        limit = min(bounds, key=lambda b: b.limit_s)
        limit_samples = int(limit.limit_s * RATE)
        written = 0
        pending = bytearray()
        if before_write is not None:
            before_write(WAV_HEADER_BYTES)
        with wave.open(str(dest), "wb") as out:
            out.setnchannels(1)
            out.setsampwidth(2)
            out.setframerate(RATE)

            def flush() -> None:
                if pending:
                    if before_write is not None:
                        before_write(len(pending))
                    out.writeframes(bytes(pending))
                    pending.clear()

            def emit(frames: list[av.AudioFrame]) -> None:
                nonlocal written
                for frame in frames:
                    samples = frame.to_ndarray().reshape(-1)
                    written += len(samples)
                    if written > limit_samples:
                        raise Rejected(
                            limit.reason, f"more than {limit.limit_s:.0f}s of audio, {limit.why}"
                        )
                    pending.extend(samples.tobytes())
                    if len(pending) >= WRITE_CHUNK:
                        flush()

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
                        # A stream may change its rate midway (chained ogg, mp3 frames
                        # of another rate): each frame is held to the same bounds.
                        check_rate(frame.sample_rate)
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
            flush()
        if written == 0:
            raise Rejected("empty_audio", "the audio stream decodes to no samples")
    return written / RATE


WAV_HEADER_BYTES = 44


@attrs.frozen
class Bound:
    """One bound on the decoded duration: the stop reason past it and why it is there."""

    reason: str
    limit_s: float
    why: str


def check_rate(rate: int | None) -> None:
    """Rejected (`implausible_rate`) unless `rate` is one a recording may have."""
    if rate is None or not MIN_RATE <= rate <= MAX_RATE:
        raise Rejected(
            "implausible_rate",
            f"a sample rate of {rate} Hz; recordings have {MIN_RATE}-{MAX_RATE} Hz",
        )
