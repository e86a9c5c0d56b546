"""Speaker diarization's parts: the numpy CAM++ against torch's numbers, the filter banks
against Kaldi's, the speakers option, speakers put on words and segments, and the DER."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from transcriber.audio.speakers import Turn, assign, speaking_time
from transcriber.audio.speakers_model import CamPlusPlus, fbank
from transcriber.bench.speakers import der
from transcriber.speaker_options import BadSpeakers, SpeakersOption

REFERENCE = json.loads(
    (Path(__file__).parents[1] / "fixtures" / "campplus_reference.json").read_text()
)


@pytest.fixture(scope="module")
def net() -> CamPlusPlus:
    return CamPlusPlus.load()


def reference_signal() -> np.ndarray:
    """The chirp and noise the reference numbers were made from."""
    t = np.arange(48000) / 16000
    noise = 0.05 * np.random.RandomState(1).randn(48000)
    return (0.3 * np.sin(2 * np.pi * (200 + 300 * t) * t) + noise).astype(np.float32)


def test_the_network_gives_torchs_embeddings(net: CamPlusPlus) -> None:
    x = np.random.RandomState(REFERENCE["random_input_seed"]).randn(3, 150, 80)
    got = net(x.astype(np.float32))
    want = np.array(REFERENCE["random_embeddings"])
    assert got.shape == (3, 192)
    assert np.abs(got - want).max() < 1e-4


def test_filter_banks_are_kaldis() -> None:
    f = fbank(reference_signal()[:24000])
    assert len(f) == REFERENCE["signal_fbank_frames"]
    want = np.array(REFERENCE["signal_fbank_rows_0_5_10"])
    assert np.abs(f[[0, 5, 10]] - want).max() < 1e-3


def test_features_to_embedding_end_to_end(net: CamPlusPlus) -> None:
    f = fbank(reference_signal()[:24000])
    got = net((f - f.mean(0))[None])[0]
    want = np.array(REFERENCE["signal_embedding"])
    assert np.abs(got - want).max() < 1e-3


@pytest.mark.parametrize(
    ("text", "low", "high", "off"),
    [("off", 1, 8, True), ("auto", 1, 8, False), ("3", 3, 3, False), ("2-5", 2, 5, False)],
)
def test_speakers_option(text: str, low: int, high: int, off: bool) -> None:
    option = SpeakersOption.parse(text)
    assert (option.min_count, option.max_count, option.off) == (low, high, off)
    assert SpeakersOption.parse(option.text) == option


@pytest.mark.parametrize("text", ["", "none", "0", "5-2", "21", "2-", "-3", "1.5"])
def test_bad_speakers_option(text: str) -> None:
    with pytest.raises(BadSpeakers):
        SpeakersOption.parse(text)


def word(start: float, end: float, text: str) -> dict:
    return {"start": start, "end": end, "word": text, "probability": 0.9}


def test_a_segment_is_split_where_its_words_change_speaker() -> None:
    words = [
        word(0.0, 0.4, " Hello"),
        word(0.5, 0.9, " there."),
        word(1.2, 1.6, " Hi"),
        word(1.7, 2.0, " back."),
    ]
    segments = [{"start": 0.0, "end": 2.0, "text": "Hello there. Hi back.", "words": words}]
    turns = [Turn(0.0, 1.0, 0), Turn(1.1, 2.1, 1)]
    out = assign(segments, turns)
    assert [(s["speaker"], s["text"], s["start"], s["end"]) for s in out] == [
        ("Speaker 1", "Hello there.", 0.0, 0.9),
        ("Speaker 2", "Hi back.", 1.2, 2.0),
    ]
    assert [w["speaker"] for w in out[1]["words"]] == ["Speaker 2", "Speaker 2"]
    assert speaking_time(out) == {"Speaker 1": 0.9, "Speaker 2": 0.8}


def test_one_stray_word_does_not_split_a_segment() -> None:
    words = [word(0.0, 0.4, " one"), word(0.5, 0.9, " two"), word(1.0, 1.4, " three")]
    segments = [{"start": 0.0, "end": 1.4, "text": "one two three", "words": words}]
    turns = [Turn(0.0, 0.45, 0), Turn(0.45, 0.95, 1), Turn(0.95, 1.5, 0)]
    out = assign(segments, turns)
    assert len(out) == 1
    assert out[0]["speaker"] == "Speaker 1"
    assert {w["speaker"] for w in out[0]["words"]} == {"Speaker 1"}


def test_a_segment_without_words_takes_the_speaker_it_overlaps_most() -> None:
    segments = [{"start": 0.0, "end": 3.0, "text": "x", "words": []}]
    out = assign(segments, [Turn(0.0, 1.0, 0), Turn(1.0, 3.0, 1)])
    assert out[0]["speaker"] == "Speaker 2"


def test_der_counts_missed_false_alarm_and_confusion() -> None:
    reference = [(0.0, 10.0, 0), (10.0, 20.0, 1)]
    assert der(reference, [(0.0, 10.0, 5), (10.0, 20.0, 7)])["der"] == 0.0
    swapped = der(reference, [(0.0, 20.0, 0)])
    assert 0.45 < swapped["confusion"] < 0.55 and swapped["missed"] == 0.0
    missed = der(reference, [(0.0, 10.0, 0)])
    assert 0.45 < missed["missed"] < 0.55
    alarm = der(reference, [(0.0, 10.0, 0), (10.0, 20.0, 1), (25.0, 30.0, 1)])
    assert 0.2 < alarm["false_alarm"] < 0.3
