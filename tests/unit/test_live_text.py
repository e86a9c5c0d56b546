"""The pure parts of live text: LocalAgreement-2 and its trimming
(transcriber.audio.agreement), a session's pace budget and its server VAD settings
(transcriber.http.live.turns), and the VAD's judges on real speech
(transcriber.audio.voice: espeak-ng sentences with a pause between them)."""

from __future__ import annotations

import base64
import shutil
import subprocess
import wave
from pathlib import Path

import numpy as np
import pytest

from transcriber.audio.agreement import Agreement, Word, joined
from transcriber.audio.voice import (
    EnergyVoice,
    ServerVad,
    SileroVoice,
    Started,
    Stopped,
    TurnDetector,
)
from transcriber.http.live.turns import RATE, LiveLimits, Refused, Turns


def said(*texts: str, start: float = 0.0, each: float = 0.5) -> list[Word]:
    return [Word(start + i * each, start + (i + 1) * each, f" {t}") for i, t in enumerate(texts)]


def test_a_word_is_confirmed_when_two_passes_agree_and_never_again() -> None:
    agreement = Agreement()
    assert agreement.insert(said("the", "quart")) == []
    assert joined(agreement.insert(said("the", "quarterly", "meet"))) == "the"
    # Case and punctuation do not hold a word back; the newest spelling is sent.
    assert joined(agreement.insert(said("The", "quarterly,", "meeting"))) == "quarterly,"
    # A pass that hears the confirmed words again does not confirm them twice.
    assert joined(agreement.insert(said("the", "quarterly", "meeting", "started."))) == ("meeting")
    assert joined(agreement.finish(said("the", "quarterly", "meeting", "started.", "Sales"))) == (
        "started. Sales"
    )
    assert joined(agreement.confirmed) == "the quarterly, meeting started. Sales"


def test_the_buffer_is_trimmed_at_a_confirmed_sentence_end() -> None:
    agreement = Agreement(trim_s=2.0, max_buffer_s=4.0)
    words = said("one.", "two", "three.", "four")
    agreement.insert(words)
    agreement.insert(words)  # all four confirmed
    assert agreement.trim_at(1.9) is None  # short buffers are kept whole
    assert agreement.trim_at(2.5) == 1.5  # after "three."
    agreement.trimmed(1.5)
    assert agreement.prompt() == "one. two three."
    # The next pass's times are from the trimmed buffer's start; "four" is heard again.
    assert joined(agreement.insert(said("four", "five", start=0.0))) == ""
    assert joined(agreement.insert(said("four", "five", "six", start=0.0))) == "five"


def test_a_buffer_nothing_confirms_is_cut_before_whispers_window() -> None:
    agreement = Agreement(max_buffer_s=24.0)
    agreement.insert(said("la", "la", each=2.0))
    assert agreement.overflow(27.0) is None
    cut = agreement.overflow(30.0)
    assert cut == 6.0
    assert joined(agreement.confirmed) == "la la"  # heard before the cut: taken as heard


def test_appends_past_real_time_are_refused_and_the_budget_refills() -> None:
    turns = Turns(LiveLimits(burst_s=1.0))
    second = base64.b64encode(b"\0\0" * RATE).decode()
    half = base64.b64encode(b"\0\0" * (RATE // 2)).decode()
    turns.append(second, now=0.0)
    with pytest.raises(Refused) as refused:
        turns.append(half, now=0.2)
    assert refused.value.code == "rate_limit_exceeded"
    assert turns.session_bytes == RATE * 2  # the refused one is not counted
    turns.append(half, now=0.5)  # half a second of the clock gave it back
    with pytest.raises(Refused):
        turns.append(half, now=0.6)
    for n in range(20):  # real time goes on for ever
        turns.append(half, now=1.0 + n * 0.5)


def test_server_vad_is_taken_with_openais_fields_and_checked() -> None:
    turns = Turns(LiveLimits())
    turns.update({"type": "transcription", "audio": {"input": {"turn_detection": {
        "type": "server_vad", "threshold": 0.6, "prefix_padding_ms": 100,
        "silence_duration_ms": 700, "create_response": False}}}})  # fmt: skip
    assert turns.vad == ServerVad(0.6, 100, 700)
    described = turns.described()["audio"]["input"]["turn_detection"]
    assert described == {
        "type": "server_vad", "threshold": 0.6, "prefix_padding_ms": 100,
        "silence_duration_ms": 700}  # fmt: skip
    for bad, param in (
        ({"type": "semantic_vad"}, "turn_detection"),
        ({"type": "server_vad", "threshold": 2}, "turn_detection.threshold"),
        ({"type": "server_vad", "silence_duration_ms": -1}, "turn_detection.silence_duration_ms"),
        ({"type": "server_vad", "prefix_padding_ms": "x"}, "turn_detection.prefix_padding_ms"),
    ):
        with pytest.raises(Refused) as refused:
            turns.update({"type": "transcription", "audio": {"input": {"turn_detection": bad}}})
        assert refused.value.param == f"session.audio.input.{param}"
        assert turns.vad == ServerVad(0.6, 100, 700)  # as it was
    turns.update({"type": "transcription", "audio": {"input": {"turn_detection": None}}})
    assert turns.vad is None


def _espeak(text: str, path: Path) -> np.ndarray:
    subprocess.run(["espeak-ng", "-v", "en-us", "-w", str(path), text], check=True)
    out = path.with_suffix(".16k.wav")
    subprocess.run(["sox", str(path), "-r", "16000", "-c", "1", "-b", "16", str(out)], check=True)
    with wave.open(str(out), "rb") as w:
        pcm = np.frombuffer(w.readframes(w.getnframes()), dtype="<i2")
    return pcm.astype(np.float32) / 32768.0


@pytest.mark.skipif(shutil.which("espeak-ng") is None, reason="espeak-ng is not installed")
@pytest.mark.parametrize("judge", [SileroVoice, EnergyVoice])
def test_the_vad_hears_two_sentences_with_a_pause(judge: type, tmp_path: Path) -> None:
    first = _espeak("The library opens at nine in the morning.", tmp_path / "a.wav")
    second = _espeak("Nobody lost a page.", tmp_path / "b.wav")
    quiet = np.zeros(16000, np.float32)
    rng = np.random.default_rng(0)
    audio = np.concatenate([quiet, first, quiet, second, quiet])
    audio = audio + rng.normal(0, 0.003, audio.size).astype(np.float32)  # a quiet room
    detector = TurnDetector(ServerVad(), judge())
    found = []
    for at in range(0, audio.size, 1600):  # 100 ms appends
        found += detector.feed(audio[at : at + 1600])
    kinds = [type(f) for f in found]
    assert kinds == [Started, Stopped, Started, Stopped], found
    # Each start within 0.4 s before its speech (300 ms of padding), each stop after it.
    speech = [(1.0, 1.0 + first.size / 16000)]
    speech.append((speech[0][1] + 1.0, speech[0][1] + 1.0 + second.size / 16000))
    for (begin, end), (start, stop) in zip(
        speech, zip(found[::2], found[1::2], strict=True), strict=True
    ):
        assert begin - 0.45 <= start.at_ms / 1000 <= begin + 0.1, (begin, start)
        assert end <= stop.at_ms / 1000 <= end + 0.9, (end, stop)
