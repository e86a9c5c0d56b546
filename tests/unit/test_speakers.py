"""Speaker diarization's parts: the numpy CAM++ against torch's numbers, the filter banks
against Kaldi's, the speakers option, speakers put on words and segments, and the DER."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from transcriber.audio.speakers import Turn, assign, speaking_time
from transcriber.audio.speakers_model import CamPlusPlus, fbank
from transcriber.bench.speakers import der
from transcriber.formats import render
from transcriber.speaker_options import BadSpeakers, SpeakersOption


def scenario(title: str) -> pytest.MarkDecorator:
    return pytest.mark.scenario("speakers", title)


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


@scenario("The speakers option is parsed and refused when malformed")
@pytest.mark.parametrize("text", ["", "none", "0", "5-2", "21", "2-", "-3", "1.5"])
def test_bad_speakers_option(text: str) -> None:
    with pytest.raises(BadSpeakers):
        SpeakersOption.parse(text)


def word(start: float, end: float, text: str) -> dict:
    return {"start": start, "end": end, "word": text, "probability": 0.9}


@scenario("A segment is split where its words change speaker")
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


@scenario("The error rate counts what it should")
def test_der_counts_missed_false_alarm_and_confusion() -> None:
    reference = [(0.0, 10.0, 0), (10.0, 20.0, 1)]
    assert der(reference, [(0.0, 10.0, 5), (10.0, 20.0, 7)])["der"] == 0.0
    swapped = der(reference, [(0.0, 20.0, 0)])
    assert 0.45 < swapped["confusion"] < 0.55 and swapped["missed"] == 0.0
    missed = der(reference, [(0.0, 10.0, 0)])
    assert 0.45 < missed["missed"] < 0.55
    alarm = der(reference, [(0.0, 10.0, 0), (10.0, 20.0, 1), (25.0, 30.0, 1)])
    assert 0.2 < alarm["false_alarm"] < 0.3


@scenario("The formats show the speakers")
def test_formats_show_the_speakers() -> None:
    segments = [
        {"start": 0.0, "end": 1.5, "text": "Hello there.", "speaker": "Speaker 1"},
        {"start": 1.6, "end": 2.5, "text": "How are you?", "speaker": "Speaker 1"},
        {"start": 3.0, "end": 4.0, "text": "Fine.", "speaker": "Speaker 2"},
    ]
    text = "Hello there. How are you? Fine."
    assert render("txt", text, segments) == (
        "Speaker 1: Hello there. How are you?\n\nSpeaker 2: Fine.\n"
    )
    srt = render("srt", text, segments)
    assert "00:00:03,000 --> 00:00:04,000\nSpeaker 2: Fine.\n" in srt
    vtt = render("vtt", text, segments)
    assert "00:00:00.000 --> 00:00:01.500\n<v Speaker 1>Hello there.\n" in vtt
    body = json.loads(render("json", text, segments))
    assert body["speakers"] == [
        {"name": "Speaker 1", "speaking_s": 2.4},
        {"name": "Speaker 2", "speaking_s": 1.0},
    ]
    # An undiarized transcript renders as it always did.
    plain = [{k: v for k, v in s.items() if k != "speaker"} for s in segments]
    assert render("txt", text, plain) == text + "\n"
    assert "speakers" not in json.loads(render("json", text, plain))


@scenario("OpenAI's diarized_json answers in the SDK's own shape")
def test_diarized_json_is_the_sdks_shape() -> None:
    from openai.types.audio import TranscriptionDiarized

    from transcriber.http.openai.answers import AudioRequest, answer
    from transcriber.http.openai.requests import parse_request
    from transcriber.options import RecognitionOptions

    asked = parse_request("transcribe", {"response_format": "diarized_json"}, {})
    assert asked.options.speakers == "auto"  # asking the shape asks who spoke
    words = [word(0.0, 0.4, " Hello"), word(0.5, 0.9, " there."), word(1.2, 1.6, " Hi.")]
    t = {
        "text": "Hello there. Hi.",
        "segments": [{"start": 0.0, "end": 1.6, "text": "Hello there. Hi.", "words": words}],
        "turns": [[0.0, 1.0, 0], [1.1, 2.0, 1]],
        "language": "en",
        "model": "whisper-base",
    }
    card = {"duration_s": 2.0}
    response = answer(card, t, asked, {})
    parsed = TranscriptionDiarized.model_validate_json(bytes(response.body))
    assert [(s.speaker, s.text, s.type) for s in parsed.segments] == [
        ("A", "Hello there.", "transcript.text.segment"),
        ("B", "Hi.", "transcript.text.segment"),
    ]
    assert parsed.duration == 2.0 and parsed.task == "transcribe"
    assert (
        isinstance(asked, AudioRequest)
        and RecognitionOptions.from_json(asked.options.to_json()) == asked.options
    )


@scenario("A one-word turn does not make a speaker of its own")
def test_short_windows_do_not_make_a_speaker_of_their_own() -> None:
    from transcriber.audio.speakers_clustering import cluster

    rng = np.random.RandomState(3)
    a, b, c = (v / np.linalg.norm(v) for v in rng.randn(3, 192))

    def voice(centre: np.ndarray, n: int) -> np.ndarray:
        return centre + 0.06 * rng.randn(n, 192)

    # Two voices' full windows, and five short windows of the first voice that embed
    # more like each other (short speech) than like their speaker: cosine ~0.4 to it.
    short = voice(0.45 * a + 0.9 * c, 5)
    embeddings = np.concatenate([voice(a, 30), voice(b, 30), short]).astype(np.float32)
    windows = [(0.75 * i, 0.75 * i + 1.5) for i in range(60)]
    windows += [(50.0 + i, 50.6 + i) for i in range(5)]
    labels = cluster(embeddings, SpeakersOption.parse("auto"), windows)
    assert len(set(labels.tolist())) == 2
    assert set(labels[60:].tolist()) == {labels[0]}
    # Clustered with the others, the short windows would be a third speaker.
    assert len(set(cluster(embeddings, SpeakersOption.parse("auto")).tolist())) == 3


@scenario("A speaker of a few seconds' windows is folded into the most alike")
def test_a_speaker_of_a_few_seconds_is_folded() -> None:
    """A third voice's six windows, their centre 0.75 alike the first voice's (as a
    voice's own windows that embed apart are: not a voice apart, APART_COSINE)."""
    from transcriber.audio.speakers_clustering import APART_COSINE, _cosine, cluster

    rng = np.random.RandomState(4)
    a, b, d = (v / np.linalg.norm(v) for v in rng.randn(3, 192))
    c = 0.75 * a + np.sqrt(1 - 0.75**2) * (d - (d @ a) * a) / np.linalg.norm(d - (d @ a) * a)
    embeddings = np.concatenate(
        [a + 0.06 * rng.randn(30, 192), b + 0.06 * rng.randn(30, 192), c + 0.06 * rng.randn(6, 192)]
    ).astype(np.float32)
    assert (
        _cosine(embeddings[60:].mean(0, keepdims=True), embeddings[:30].mean(0, keepdims=True))
        > APART_COSINE
    )
    steady = [(0.75 * i, 0.75 * i + 1.5) for i in range(60)]
    # The third voice's six windows: over 2.5 s of audio (under MIN_SPEAKER_S), then 8 s.
    brief = [(60.0 + 0.2 * i, 61.5 + 0.2 * i) for i in range(6)]
    longer = [(60.0 + 1.3 * i, 61.5 + 1.3 * i) for i in range(6)]
    assert len(set(cluster(embeddings, SpeakersOption.parse("auto"), steady + brief))) == 2
    assert len(set(cluster(embeddings, SpeakersOption.parse("auto"), steady + longer))) == 3
    # An exact count is kept.
    assert len(set(cluster(embeddings, SpeakersOption.parse("3"), steady + brief))) == 3


def brief_voice(
    voices: int, alike: float, spans: list[tuple[float, float]], seed: int = 11
) -> tuple[np.ndarray, list[tuple[float, float]]]:
    """`voices` voices' windows (30 each, steady), then a brief voice's windows at `spans`
    (seconds after them), its direction `alike` the first voice's; its windows about 0.85
    alike each other (a brief voice's in speakers_count's conversations were 0.81–0.89)."""
    rng = np.random.RandomState(seed)
    base = [v / np.linalg.norm(v) for v in rng.randn(voices + 1, 192)]
    a, d = base[0], base[-1]
    other = (d - (d @ a) * a) / np.linalg.norm(d - (d @ a) * a)
    brief = alike * a + np.sqrt(1 - alike**2) * other
    x = np.concatenate(
        [v + 0.05 * rng.randn(30, 192) for v in base[:voices]]
        + [brief + 0.03 * rng.randn(len(spans), 192)]
    ).astype(np.float32)
    steady = [(0.75 * i, 0.75 * i + 1.5) for i in range(30 * voices)]
    t = 0.75 * 30 * voices + 2.0
    return x, steady + [(t + s, t + e) for s, e in spans]


TWO_TURNS = [(0.0, 1.25), (30.0, 31.25)]
"""A brief voice's two turns ("Yes, I agree." and "Sure." padded), a window each: 2.5 s."""


@scenario("A voice that only says a word or two, unlike every other, is a speaker of its own")
def test_a_brief_voice_unlike_every_other_is_a_speaker() -> None:
    """Three windows over 2.5 s (under MIN_SPEAKER_S, under MIN_CLUSTER windows) of a
    voice unlike both others are a third speaker; the same windows alike the first voice
    (0.8) are folded into it, as they are over 1.5 s (under APART_S) and by the count
    before (speakers_clustering.BARS["second"]). Beside one voice alone (APART_AMONG) the
    bar is APART_LONE_COSINE: a voice unlike it is kept, one between that and
    APART_COSINE is folded (and kept beside two voices); the third round kept none."""
    from transcriber.audio.speakers_clustering import (
        APART_COSINE,
        APART_LONE_COSINE,
        APART_S,
        MIN_SPEAKER_S,
        _cosine,
        _covered,
        cluster,
    )

    auto = SpeakersOption.parse("auto")
    x, windows = brief_voice(2, 0.0, TWO_TURNS)
    assert APART_S <= _covered(np.array(windows[60:])) < MIN_SPEAKER_S
    labels = cluster(x, auto, windows)
    assert len(set(labels.tolist())) == 3
    assert len(set(labels[60:].tolist())) == 1 and labels[60] not in labels[:60]
    assert len(set(cluster(x, auto, windows, "second").tolist())) == 2
    x, windows = brief_voice(2, 0.8, TWO_TURNS)
    labels = cluster(x, auto, windows)
    assert len(set(labels.tolist())) == 2 and set(labels[60:].tolist()) == {labels[0]}
    x, windows = brief_voice(2, 0.0, [(0.0, 1.2), (0.6, 1.8)])  # one turn, 1.8 s
    assert _covered(np.array(windows[60:])) < APART_S
    assert len(set(cluster(x, auto, windows).tolist())) == 2
    x, windows = brief_voice(1, 0.0, TWO_TURNS)
    assert len(set(cluster(x, auto, windows).tolist())) == 2
    assert len(set(cluster(x, auto, windows, "third").tolist())) == 1
    x, windows = brief_voice(1, 0.58, TWO_TURNS)
    centre = x[30:].mean(0, keepdims=True)
    assert APART_LONE_COSINE < _cosine(centre, x[:30].mean(0, keepdims=True))[0, 0] < APART_COSINE
    assert len(set(cluster(x, auto, windows).tolist())) == 1
    x, windows = brief_voice(2, 0.58, TWO_TURNS)
    assert len(set(cluster(x, auto, windows).tolist())) == 3


@scenario("An asked count is honoured on a short recording")
def test_an_asked_count_is_honoured_on_a_short_recording() -> None:
    from transcriber.audio.speakers_clustering import cluster

    rng = np.random.RandomState(6)
    a, b = (v / np.linalg.norm(v) for v in rng.randn(2, 192))

    def talk(first: int, then: int) -> tuple[np.ndarray, list[tuple[float, float]]]:
        x = np.concatenate([a + 0.06 * rng.randn(first, 192), b + 0.06 * rng.randn(then, 192)])
        return x.astype(np.float32), [(0.75 * i, 0.75 * i + 1.5) for i in range(first + then)]

    # Eight windows (6.75 s of speech): too few to find a count, not to make an asked one.
    x, windows = talk(3, 5)
    labels = cluster(x, SpeakersOption.parse("2"), windows)
    assert len(set(labels[:3].tolist())) == 1 and len(set(labels[3:].tolist())) == 1
    assert labels[0] != labels[3]
    assert len(set(cluster(x, SpeakersOption.parse("2-3"), windows).tolist())) == 2
    assert len(set(cluster(x, SpeakersOption.parse("auto"), windows).tolist())) == 1
    # Fourteen windows, one speaker's three of them: a cluster too small to stand on its
    # own when the count is found, the second speaker when two are asked.
    x, windows = talk(3, 11)
    labels = cluster(x, SpeakersOption.parse("2"), windows)
    assert labels[:3].tolist() == [labels[0]] * 3 and set(labels[3:].tolist()) == {labels[3]}
    assert labels[0] != labels[3]
    # Fewer windows than speakers asked: as many as there can be.
    assert len(set(cluster(x[:1], SpeakersOption.parse("2"), windows[:1]).tolist())) == 1


def test_an_hours_windows_are_clustered_as_single_windows() -> None:
    """Past MAX_UNITS windows a sample is clustered: windows, not means of neighbours
    (means are more alike to any other, and an hour of four voices came out as one)."""
    from transcriber.audio.speakers_clustering import MAX_UNITS, cluster

    rng = np.random.RandomState(5)
    common = rng.randn(192)
    voices = [common + rng.randn(192) for _ in range(4)]  # cosine ~0.5 to each other
    turns = [k % 4 for k in range(3 * MAX_UNITS // 5)]
    who = np.repeat(turns, 6)  # turns of six windows each, 3.6x MAX_UNITS in all
    embeddings = np.stack([voices[k] for k in who]) + 1.1 * rng.randn(len(who), 192)
    windows = [(0.75 * i, 0.75 * i + 1.5) for i in range(len(who))]
    labels = cluster(embeddings.astype(np.float32), SpeakersOption.parse("auto"), windows)
    assert len(set(labels.tolist())) == 4
    agree = sum(len(set(labels[who == k].tolist())) == 1 for k in range(4))
    assert agree >= 3


@scenario("A long recording's few seconds of stray windows make no speaker of their own")
def test_a_long_recordings_stray_windows_are_folded() -> None:
    """The fold's bar grows with the speech clustered: in twenty minutes, 6.75 s of
    windows that embed apart are strays, where in two minutes they would be a speaker."""
    from transcriber.audio.speakers_clustering import MIN_SPEAKER_S, cluster

    rng = np.random.RandomState(6)
    voices = [v / np.linalg.norm(v) for v in rng.randn(5, 192)]

    def conversation(turns: int, stray_at: int) -> tuple[np.ndarray, list[tuple[float, float]]]:
        """Turns of eight 1.5 s windows every 0.75 s (6.75 s each) among four voices,
        the turn `stray_at` of windows like none of them."""
        embeddings, windows, t = [], [], 0.0
        for k in range(turns):
            centre = voices[4] if k == stray_at else voices[k % 4]
            embeddings.append(centre + 0.06 * rng.randn(8, 192))
            windows += [(t + 0.75 * i, t + 0.75 * i + 1.5) for i in range(8)]
            t += 7.25
        return np.concatenate(embeddings).astype(np.float32), windows

    auto = SpeakersOption.parse("auto")
    # Twenty minutes of speech (180 turns, 1,440 windows): the stray turn is folded.
    embeddings, windows = conversation(180, stray_at=90)
    labels = cluster(embeddings, auto, windows)
    assert len(set(labels.tolist())) == 4
    assert len({labels[8 * k] for k in range(4)}) == 4
    # Two minutes (16 turns): the same 6.75 s are a speaker's (over MIN_SPEAKER_S).
    assert MIN_SPEAKER_S < 6.75
    embeddings, windows = conversation(16, stray_at=9)
    assert len(set(cluster(embeddings, auto, windows).tolist())) == 5


def voices_alike(k: int, seed: int) -> tuple[np.ndarray, list[tuple[float, float]], np.ndarray]:
    """k voices sharing a common part (their windows ~0.63 alike across, ~0.92 within, as
    two variants of one espeak-ng voice are, only more so), four turns of six windows each."""
    rng = np.random.default_rng(seed)
    common = rng.standard_normal(192)
    voices = [1.5 * common + rng.standard_normal(192) for _ in range(k)]
    who = np.array([t % k for t in range(4 * k) for _ in range(6)])
    x = np.stack([voices[v] for v in who]) + 0.5 * rng.standard_normal((len(who), 192))
    windows = [(0.75 * i, 0.75 * i + 1.5) for i in range(len(x))]
    return x.astype(np.float32), windows, who


@scenario("Voices more alike than the bar, each more alike within, are counted apart")
@pytest.mark.parametrize("k", [1, 2, 3, 4, 5, 6])
def test_k_voices_alike_to_each_other_are_k(k: int) -> None:
    """Above LINK_COSINE across (LINK_COSINE alone made every one of these one speaker),
    yet each voice's windows far more alike within: k speakers, each voice one of them."""
    from transcriber.audio.speakers_clustering import LINK_COSINE, _cosine, cluster

    x, windows, who = voices_alike(k, seed=k)
    if k > 1:
        across = _cosine(x, x)[who[:, None] != who[None]].mean()
        assert across > LINK_COSINE
    labels = cluster(x, SpeakersOption.parse("auto"), windows)
    assert len(set(labels.tolist())) == k
    assert all(len(set(labels[who == v].tolist())) == 1 for v in range(k))
    # An asked range holds the found count where it allows it, and bounds it where not.
    assert len(set(cluster(x, SpeakersOption.parse("1-6"), windows).tolist())) == k
    if k > 2:
        assert len(set(cluster(x, SpeakersOption.parse("1-2"), windows).tolist())) == 2


def voices_near(k: int, across: float) -> tuple[np.ndarray, list[tuple[float, float]], np.ndarray]:
    """k voices `across` alike, four turns of six 1.5 s windows each (every 0.75 s): a
    window is its voice, the two halves of audio it covers (its neighbours share one) and
    a little noise; windows of one voice that share no audio are 0.66 alike, neighbours
    about 0.8. Orthogonal parts, so the likenesses are as said."""
    rng = np.random.default_rng(k)
    turns = 4 * k
    basis = np.linalg.qr(rng.standard_normal((512, 1 + k + 7 * turns)))[0].T
    common, own, halves = basis[0], basis[1 : 1 + k], basis[1 + k :].reshape(turns, 7, 512)
    norm = 1 / 0.66  # voice 1 + halves 2 × 0.2 + noise
    share = across * norm
    voices = np.sqrt(share) * common + np.sqrt(1 - share) * own
    x, windows, who = [], [], []
    for turn in range(turns):
        for i in range(6):
            noise = np.sqrt((norm - 1.4) / 512) * rng.standard_normal(512)
            x.append(voices[turn % k] + np.sqrt(0.2) * halves[turn, i : i + 2].sum(0) + noise)
            windows.append((6.0 * turn + 0.75 * i, 6.0 * turn + 0.75 * i + 1.5))
            who.append(turn % k)
    return np.array(x, dtype=np.float32), windows, np.array(who)


@scenario("Voices just over the former bar are counted apart, on windows that share no audio")
@pytest.mark.parametrize("k", [1, 2, 3])
def test_voices_just_over_the_former_bar_are_apart(k: int) -> None:
    """0.56 alike across: over the former count's 0.55 (over all pairs; one speaker), under
    LINK_COSINE; each voice's turns are more alike than the bar only on the pairs that
    share no audio, and stay one speaker."""
    from transcriber.audio.speakers_clustering import LINK_COSINE, cluster

    assert 0.55 < 0.56 < LINK_COSINE
    x, windows, who = voices_near(k, 0.56)
    labels = cluster(x, SpeakersOption.parse("auto"), windows)
    assert len(set(labels.tolist())) == k
    assert all(len(set(labels[who == v].tolist())) == 1 for v in range(k))
    previous = cluster(x, SpeakersOption.parse("auto"), windows, "previous")
    assert len(set(previous.tolist())) == 1


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5, 6])
def test_k_voices_well_apart_are_k(k: int) -> None:
    rng = np.random.default_rng(10 + k)
    voices = rng.standard_normal((k, 192))
    who = np.array([t % k for t in range(4 * k) for _ in range(6)])
    x = (voices[who] + 0.5 * rng.standard_normal((len(who), 192))).astype(np.float32)
    windows = [(0.75 * i, 0.75 * i + 1.5) for i in range(len(x))]
    from transcriber.audio.speakers_clustering import cluster

    assert len(set(cluster(x, SpeakersOption.parse("auto"), windows).tolist())) == k


@pytest.mark.parametrize("k", [1, 3, 6])
def test_the_normalized_eigengap_counts_voices_well_apart(k: int) -> None:
    """NME-SC, kept for the benchmark's comparison, counts what is plain."""
    from transcriber.audio.speakers_nme import nme_count

    x, _, _ = voices_alike(k, seed=20 + k)
    assert nme_count(x, 1, 8) == k


@scenario("The count's methods are compared on cached conversations")
def test_the_count_is_compared_on_cached_conversations(tmp_path: Path) -> None:
    """A cached conversation (as `bench-speakers --count-cache` keeps them: embeddings,
    windows, speech, reference) is scored by each method without being made again."""
    from transcriber.bench.speakers_count import Spec, compare, methods

    x, windows, who = voices_alike(3, seed=3)
    # Each window's middle 0.75 s is its speaker's (windows overlap by half).
    reference = [(s + 0.375, e - 0.375, int(k)) for (s, e), k in zip(windows, who, strict=True)]
    np.savez(
        tmp_path / "three.npz",
        embeddings=x,
        whole=x,  # the windows' embeddings of every frame (the earlier counts')
        windows=np.array(windows),
        stretches=np.array([(0.0, windows[-1][1])]),
        reference=np.array(reference, dtype=float),
        truth=who,
    )
    rows = {r["method"]: r for r in compare(tmp_path, methods(), [Spec("three", 3)])}
    assert rows["linkage"]["right"] == "1/1"
    assert rows["linkage"]["mean_der"] < 0.05
    assert rows["threshold"]["right"] == "0/1"
    assert "three:1≠3" in rows["threshold"]["wrong"]


def test_the_judge_set_shares_no_voice_nor_seed_with_the_sets_tuned_on() -> None:
    """The judge set is only a judge while nothing in it was tuned on: no espeak-ng voice
    and variant (whatever its shift) and no seed of the tuning or held-out set."""
    from transcriber.bench.speakers_count import held_out_set, judge_set, tuning_set

    tuned = tuning_set() + held_out_set()
    judge = judge_set()
    made = [s for s in judge if not s.real]
    assert {v[0] for s in made for v in s.voices[: s.speakers]}.isdisjoint(
        {v[0] for s in tuned for v in s.voices[: s.speakers]}
    )
    assert {s.seed for s in made}.isdisjoint({s.seed for s in tuned})
    assert {s.speakers for s in judge} == {1, 2, 3, 4, 5, 6}
    assert [s.real for s in judge if s.real] == [("en",), ("ru",), ("en", "ru")]


def test_the_third_judge_set_shares_no_voice_nor_seed_with_the_three_before() -> None:
    """judge3 is judged on after all three earlier sets were tuned on: none of their espeak-
    ng voices and variants (whatever the shift; any case), seeds or shifts, 1–6 voices,
    voices that only say a word or two among them."""
    from transcriber.bench.speakers_count import held_out_set, judge_set, tuning_set
    from transcriber.bench.speakers_count_judge3 import judge3_set

    tuned = tuning_set() + held_out_set() + judge_set()
    judge3 = judge3_set()

    def voices(specs: list[Any]) -> set[str]:
        return {v[0].lower() for s in specs if not s.real for v in s.voices[: s.speakers]}

    def shifts(specs: list[Any]) -> set[str]:
        return {v[1] for s in specs if not s.real for v in s.voices[: s.speakers]} - {""}

    assert voices(judge3).isdisjoint(voices(tuned))
    assert shifts(judge3).isdisjoint(shifts(tuned))
    assert {s.seed for s in judge3}.isdisjoint({s.seed for s in tuned})
    assert {s.speakers for s in judge3} == {1, 2, 3, 4, 5, 6}
    assert sum(s.brief > 0 for s in judge3) >= 8
    assert not any(s.real for s in judge3)


@scenario("A window's silence is left out of its embedding")
def test_a_windows_quiet_frames_are_left_out_of_its_embedding(net: CamPlusPlus) -> None:
    """A one-word turn's window, half of it the silence the VAD pads a stretch with,
    embeds as its sound alone (speakers_windows.QUIET_DB); with every frame, it did not."""
    from transcriber.audio.speakers_windows import embed_windows

    rng = np.random.RandomState(5)
    t = np.arange(12000) / 16000  # 0.75 s of a voiced sound: harmonics of 140 Hz, a tremor
    harmonics = sum(np.sin(2 * np.pi * 140 * k * t) / k for k in range(1, 8))
    sound = 0.1 * harmonics * (1 + 0.5 * np.sin(2 * np.pi * 4 * t)) + 0.003 * rng.randn(len(t))
    sound = sound.astype(np.float32)
    padded = np.concatenate([np.zeros(6000, np.float32), sound, np.zeros(6000, np.float32)])

    def unit(e: np.ndarray) -> np.ndarray:
        return e[0] / np.linalg.norm(e[0])

    alone = unit(embed_windows(net, sound, [(0.0, 0.75)]))
    loud = unit(embed_windows(net, padded, [(0.0, 1.5)]))
    whole = unit(embed_windows(net, padded, [(0.0, 1.5)], loud_only=False))
    # Here 0.94 (the edges' frames), and 0.41 with every frame.
    assert loud @ alone > 0.9
    assert whole @ alone < 0.6
