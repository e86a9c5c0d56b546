"""The waveform's peaks, from a real 16-bit mono WAV written by the standard library
(as transcriber.audio.normalize writes the normalized audio), read in small chunks."""

from __future__ import annotations

import io
import wave
from collections.abc import AsyncIterator

import numpy as np
import pytest

from transcriber.http.page.audio import Audio, peaks, wav_data


def wav_bytes(samples: np.ndarray, rate: int = 16000) -> bytes:
    out = io.BytesIO()
    with wave.open(out, "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(rate)
        w.writeframes(samples.astype("<i2").tobytes())
    return out.getvalue()


def audio_of(body: bytes, chunk: int = 777) -> Audio:
    async def read(start: int, end: int) -> AsyncIterator[bytes]:
        for at in range(start, end + 1, chunk):
            yield body[at : min(at + chunk, end + 1)]

    return Audio(len(body), "audio/wav", read)


def scenario(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("page", title)


@scenario("The waveform's peaks come from the normalized audio, bounded")
async def test_a_loud_second_stands_out_where_it_is() -> None:
    # 10 s: quiet, then a loud second from 6 s to 7 s, then quiet.
    signal = np.full(160000, 100, dtype=np.int32)
    signal[96000:112000] = 30000
    body = wav_bytes(signal)
    found = await peaks(audio_of(body), ("test", 1), buckets=100)
    assert found is not None
    assert found["duration_s"] == 10.0
    p = found["peaks"]
    assert len(p) == 100
    loud = [i for i, v in enumerate(p) if v > 500]
    assert loud == list(range(60, 70))
    assert max(p[:60] + p[70:]) == round(100 * 1000 / 32767)


@scenario("The waveform's peaks come from the normalized audio, bounded")
async def test_a_length_not_divisible_keeps_its_last_stretch() -> None:
    signal = np.zeros(1003, dtype=np.int32)
    signal[-1] = -32768
    found = await peaks(audio_of(wav_bytes(signal), chunk=5), ("test", 2), buckets=10)
    assert found is not None
    assert len(found["peaks"]) == 10 and found["peaks"][-1] == 1000


@scenario("The waveform's peaks come from the normalized audio, bounded")
async def test_what_is_not_the_normalized_wav_has_no_peaks() -> None:
    assert await peaks(audio_of(b"OggS" + bytes(100)), ("test", 3)) is None
    stereo = io.BytesIO()
    with wave.open(stereo, "wb") as w:
        w.setnchannels(2)
        w.setsampwidth(2)
        w.setframerate(16000)
        w.writeframes(bytes(400))
    assert wav_data(stereo.getvalue()) is None
    assert wav_data(wav_bytes(np.zeros(10))) == (16000, 44, 20)
