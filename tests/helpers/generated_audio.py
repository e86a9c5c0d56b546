"""Test media, generated at test time with PyAV into a temporary folder.

Nothing here is committed as a binary: every file is encoded from a tone or from
samples/en.ogg when a test asks for it, so the formats under test are exactly what
this machine's FFmpeg writes, and a broken input is broken in a known way.
"""

from __future__ import annotations

import fractions
import random
import wave
from pathlib import Path

import attrs
import av
import numpy as np

ROOT = Path(__file__).resolve().parents[2]
SAMPLES = ROOT / "samples"

TONE_S = 3.0
"""Length of the generated good files: long enough for every codec's framing."""


# --- Sources -----------------------------------------------------------------------------


def tone(seconds: float, rate: int, channels: int, hz: float = 440.0) -> np.ndarray:
    """A sine, float32, shaped (channels, samples) as planar frames want it."""
    t = np.arange(round(seconds * rate)) / rate
    wave_ = (0.3 * np.sin(2 * np.pi * hz * t)).astype(np.float32)
    return np.tile(wave_, (channels, 1))


def decode_mono(path: Path, rate: int = 16000) -> np.ndarray:
    """All of `path` as mono s16 at `rate`, decoded here with PyAV (not with the code
    under test, so a broken normalize cannot hide behind its own fixture)."""
    resampler = av.AudioResampler(format="s16", layout="mono", rate=rate)
    parts = []
    with av.open(str(path)) as c:
        for frame in c.decode(audio=0):
            parts.extend(f.to_ndarray().reshape(-1) for f in resampler.resample(frame))
    parts.extend(f.to_ndarray().reshape(-1) for f in resampler.resample(None))
    return np.concatenate(parts)


def write_wav(path: Path, samples: np.ndarray, rate: int = 16000) -> float:
    """Mono s16 WAV; returns its duration in seconds."""
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(samples.astype(np.int16).tobytes())
    return len(samples) / rate


def long_speech_wav(path: Path, windows: int = 3) -> float:
    """samples/en.ogg once every 30 s, silence between, `windows` times (3: 90 s), as
    the 16 kHz mono WAV that normalize would store; returns the duration.

    One sentence a 30 s window on purpose: back-to-back repeats put the same text twice
    in a window Whisper decodes, its compression-ratio check takes that for a loop, and
    every fallback temperature runs, tripling the CPU time of each window."""
    once = decode_mono(SAMPLES / "en.ogg")
    window = np.zeros(30 * 16000, np.int16)
    window[: len(once)] = once
    return write_wav(path, np.tile(window, windows))


# --- Encoding ----------------------------------------------------------------------------


@attrs.frozen
class Encoding:
    suffix: str
    container: str
    """FFmpeg's muxer name."""
    audio: str | None
    rate: int = 44100
    channels: int = 2
    video: str | None = None
    options: dict[str, str] = attrs.field(factory=dict)
    """Codec options (the native vorbis encoder wants strict=experimental)."""


GOOD: dict[str, Encoding] = {
    "mp3": Encoding(".mp3", "mp3", "libmp3lame"),
    "m4a": Encoding(".m4a", "ipod", "aac"),
    "ogg-opus": Encoding(".ogg", "ogg", "libopus", rate=48000),
    "ogg-vorbis": Encoding(".ogg", "ogg", "vorbis", options={"strict": "experimental"}),
    "flac": Encoding(".flac", "flac", "flac", rate=22050, channels=1),
    "wav": Encoding(".wav", "wav", "pcm_s16le", rate=8000, channels=1),
    "webm": Encoding(".webm", "webm", "libopus", rate=48000, channels=1),
    "mp4-video": Encoding(".mp4", "mp4", "aac", video="mpeg4"),
    "mkv-video": Encoding(".mkv", "matroska", "aac", rate=48000, video="libx264"),
}
"""Everything normalize must read: audio formats and videos with an audio track, at
rates and channel counts other than 16 kHz mono so the resampling is exercised."""

VIDEO_FPS = 10


def encode(path: Path, enc: Encoding, seconds: float = TONE_S) -> Path:
    """A tone of `seconds` (and, for a video, as many small frames) encoded as `enc`."""
    with av.open(str(path), "w", format=enc.container) as out:
        video = None
        if enc.video:
            video = out.add_stream(enc.video, rate=VIDEO_FPS)
            video.width, video.height, video.pix_fmt = 64, 48, "yuv420p"
        audio = None
        if enc.audio:
            audio = out.add_stream(
                enc.audio, rate=enc.rate, layout="mono" if enc.channels == 1 else "stereo"
            )
            if enc.options:
                audio.codec_context.options = dict(enc.options)
            samples = tone(seconds, enc.rate, enc.channels)
            step = enc.rate // 10  # PyAV re-frames to the encoder's frame size
            for i in range(0, samples.shape[1], step):
                frame = av.AudioFrame.from_ndarray(
                    np.ascontiguousarray(samples[:, i : i + step]),
                    format="fltp",
                    layout=audio.layout.name,
                )
                frame.rate, frame.pts = enc.rate, i
                frame.time_base = fractions.Fraction(1, enc.rate)
                for packet in audio.encode(frame):
                    out.mux(packet)
            for packet in audio.encode(None):
                out.mux(packet)
        if video is not None:
            for i in range(int(seconds * VIDEO_FPS)):
                image = np.full((48, 64, 3), (i * 8) % 256, np.uint8)
                frame = av.VideoFrame.from_ndarray(image, format="rgb24")
                frame.pts = i
                for packet in video.encode(frame):
                    out.mux(packet)
            for packet in video.encode(None):
                out.mux(packet)
    return path


def good_file(folder: Path, kind: str, seconds: float = TONE_S) -> Path:
    enc = GOOD[kind]
    return encode(folder / f"{kind}{enc.suffix}", enc, seconds)


# --- Bad inputs ----------------------------------------------------------------------------


def zero_bytes(folder: Path) -> Path:
    path = folder / "empty.mp3"
    path.write_bytes(b"")
    return path


def text_as_wav(folder: Path) -> Path:
    path = folder / "notes.wav"
    path.write_text("Minutes of the meeting: this is a text file, renamed to .wav.\n" * 20)
    return path


def random_as_mp3(folder: Path) -> Path:
    """Random bytes named .mp3: FFmpeg's probe recognises nothing, so opening fails."""
    path = folder / "noise.mp3"
    path.write_bytes(random.Random(3).randbytes(64 * 1024))
    return path


def mp3_frames_of_noise(folder: Path) -> Path:
    """Valid MPEG-1 layer III frame headers (128 kbit/s, 44.1 kHz: 417-byte frames)
    over random payloads: PyAV opens it as mp3, and the first packet fails to decode."""
    rng = random.Random(7)
    header = b"\xff\xfb\x90\x64"
    path = folder / "garbled.mp3"
    path.write_bytes(b"".join(header + rng.randbytes(413) for _ in range(20)))
    return path


def truncated_m4a(folder: Path) -> Path:
    """The mp4 muxer writes the moov atom (the index) last: the first half has none."""
    whole = encode(folder / "whole.m4a", GOOD["m4a"])
    path = folder / "truncated.m4a"
    data = whole.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    whole.unlink()
    return path


def video_without_audio(folder: Path) -> Path:
    return encode(folder / "silent-film.mp4", Encoding(".mp4", "mp4", None, video="mpeg4"))


def wav_without_frames(folder: Path) -> Path:
    """A correct WAV header announcing zero frames: audio that decodes to nothing."""
    return _wav(folder / "nothing.wav", np.zeros(0, np.int16))


def five_seconds(folder: Path) -> Path:
    """Well over a 2 s limit."""
    return _wav(folder / "five-seconds.wav", tone(5.0, 16000, 1)[0] * 32767)


def two_and_a_half_seconds(folder: Path) -> Path:
    """Just over a 2 s limit."""
    return _wav(folder / "two-and-a-half-seconds.wav", tone(2.5, 16000, 1)[0] * 32767)


def truncated_mp3(folder: Path) -> Path:
    """The first half of an mp3: frames stand alone, so what is there decodes."""
    whole = good_file(folder, "mp3")
    path = folder / "truncated.mp3"
    data = whole.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    whole.unlink()
    return path


def glitched(folder: Path, kind: str, seconds: float = 10.0) -> Path:
    """A good file with 300 random bytes a third of the way in: one damaged packet in
    the middle, as a flaky transfer or disk leaves it; the rest decodes."""
    whole = good_file(folder, kind, seconds)
    data = bytearray(whole.read_bytes())
    at = len(data) // 3
    data[at : at + 300] = random.Random(1).randbytes(300)
    path = folder / f"glitched-{whole.name}"
    path.write_bytes(bytes(data))
    whole.unlink()
    return path


def _wav(path: Path, samples: np.ndarray) -> Path:
    write_wav(path, samples)
    return path


# --- Amplifying inputs: a few bytes that decode to a lot of audio ---------------------------


def wav_at_rate(folder: Path, rate: int, seconds: float = 3600.0) -> Path:
    """Unsigned 8-bit mono PCM at `rate` Hz, `seconds` long. At 1 Hz an hour is 3,644
    bytes, and 115 MB once resampled to 16 kHz s16 (the issue's file)."""
    path = folder / f"at-{rate}-hz.wav"
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(1)
        w.setframerate(rate)
        w.writeframes(bytes([128]) * round(rate * seconds))
    return path


def flac_of_silence(folder: Path, seconds: float, *, known_length: bool = True) -> Path:
    """Digital silence at 8 kHz in 32768-sample frames, each a constant subframe: about
    5 bytes a second, 6,000 times smaller than its normalized audio. Without
    `known_length` its STREAMINFO says "total samples unknown" (allowed for a stream), so
    the container cannot tell the length before it is decoded."""
    rate = 8000
    path = folder / ("silence.flac" if known_length else "silence-unknown-length.flac")
    with av.open(str(path), "w", format="flac") as out:
        stream = out.add_stream("flac", rate=rate, layout="mono")
        stream.codec_context.options = {"frame_size": "32768"}
        block = np.zeros((1, rate * 10), np.float32)
        for i in range(round(seconds / 10)):
            frame = av.AudioFrame.from_ndarray(block, format="fltp", layout="mono")
            frame.rate, frame.pts = rate, i * block.shape[1]
            frame.time_base = fractions.Fraction(1, rate)
            for packet in stream.encode(frame):
                out.mux(packet)
        for packet in stream.encode(None):
            out.mux(packet)
    return path if known_length else flac_without_length(path)


def flac_without_length(path: Path) -> Path:
    """`path`, a flac file, with its STREAMINFO's total samples set to 0 ("unknown", as
    a stream may write it): the container no longer tells the length up front."""
    # "fLaC", the block header (4), min/max block (4), min/max frame (6): then 20 bits
    # of rate, 3 of channels, 5 of bits per sample and 36 of total samples.
    data = bytearray(path.read_bytes())
    data[21] &= 0xF0
    data[22:26] = bytes(4)
    path.write_bytes(bytes(data))
    return path
