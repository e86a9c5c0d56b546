"""The diarization benchmark: conversations built here with espeak-ng voices (known
turns of 1–20 s, some quick back-and-forth), diarized, scored by diarization error rate
(missed speech, false alarm, speaker confusion; a 0.25 s collar around each reference
boundary is not scored), speaker-count accuracy, seconds and real-time factor of
diarization beside recognition of the same file, and the peak RSS of each.

    transcriber bench-speakers [--conversations 3] [--turns 16] [--speakers 2 --speakers 4]
    transcriber bench-speakers --long-minutes 60   # one long conversation instead

Needs espeak-ng and sox (Debian's packages). Nothing is downloaded; the audio is made
in a scratch folder and deleted.
"""

from __future__ import annotations

import json
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import wave
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

VOICES = (
    ("en-us+m3", ""),
    ("en-us+f5", ""),
    ("en-us+m3", "pitch -400"),
    ("en+klatt", ""),
    ("en+f2", "pitch 200"),
    ("en-gb+f3", "pitch 300"),
)
"""espeak-ng voices (and a sox pitch shift, which moves the formants too) unlike each other
to CAM++: the conversations' speakers, in order. espeak's own variants of one voice
(+m3, +f3, a regional accent) embed alike (cosine 0.8–0.96); these pairs stay below 0.77."""
SENTENCES = (
    "I think we should look at the numbers again before we decide anything.",
    "Yes.",
    "That makes sense to me.",
    "The train was late again this morning, so I missed the first half of the meeting.",
    "No, not really.",
    "Could you send me the report when it is ready?",
    "We tried that last year and it did not work as well as we hoped.",
    "Right, okay.",
    "The garden needs water every evening while the weather stays this warm.",
    "Let me check my calendar and get back to you tomorrow.",
    "Maybe.",
    "I would rather start early and finish before lunch.",
    "The new version of the program is much faster on the old computers.",
    "Sure, why not.",
    "She said the library will be closed for repairs until the end of the month.",
    "Honestly I have no idea what happened there.",
)
RATE = 16000


def espeak_available() -> bool:
    return shutil.which("espeak-ng") is not None and shutil.which("sox") is not None


def _synthesize(text: str, name: str, speed: int, raw: Path) -> None:
    """`text` said by voice `name` into the wav `raw`, at about `speed` words a minute: an
    espeak-ng variant, or `flite:VOICE` / `festival:VOICE` (voices made from recordings of
    real people; speakers_count_people), whose pace is stretched from their own 175."""
    engine, _, voice = name.partition(":")
    stretch = f"{175 / speed:.3f}"
    if engine == "flite":
        command = ["flite", "-voice", voice, "--setf", f"duration_stretch={stretch}"]
        subprocess.run([*command, "-t", text, "-o", str(raw)], check=True, capture_output=True)
    elif engine == "festival":
        said = raw.with_suffix(".txt")
        # festival 2.5's Italian voices write nothing for some questions ("... when it is
        # ready?"): said again as a statement, the same words.
        for words in (text, text.replace("?", ".")):
            said.write_text(words)
            subprocess.run(
                [
                    "text2wave",
                    "-eval",
                    f"(voice_{voice})",
                    "-eval",
                    f"(Parameter.set 'Duration_Stretch {stretch})",
                    str(said),
                    "-o",
                    str(raw),
                ],
                check=True,
                capture_output=True,
            )
            if raw.stat().st_size > 0:
                return
        raise RuntimeError(f"festival's {voice} said nothing for {text!r}")
    else:
        subprocess.run(
            ["espeak-ng", "-v", name, "-s", str(speed), "-w", str(raw), text],
            check=True,
            capture_output=True,
        )


def _say(text: str, voice: tuple[str, str], speed: int, path: Path) -> np.ndarray[Any, Any]:
    raw = path.with_suffix(".raw.wav")
    _synthesize(text, voice[0], speed, raw)
    subprocess.run(
        [
            "sox",
            str(raw),
            "-r",
            str(RATE),
            "-c",
            "1",
            "-b",
            "16",
            str(path),
            "gain",
            "-3",
            *voice[1].split(),
        ],
        check=True,
        capture_output=True,
    )
    with wave.open(str(path), "rb") as w:
        samples = np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16)
    # espeak pads each utterance with silence: trim it, so the reference turns are speech.
    loud = np.flatnonzero(np.abs(samples) > 300)
    return samples[loud[0] : loud[-1] + 1] if len(loud) else samples[:0]


def make_conversation(
    path: Path,
    speakers: int,
    turns: int,
    seed: int = 0,
    voices: Sequence[tuple[str, str]] = VOICES,
    sentences: int = 4,
) -> list[tuple[float, float, int]]:
    """A 16 kHz mono wav at `path` of `turns` turns among `speakers` of `voices`; answers
    the reference turns (start, end, speaker index). Turns are 1–20 s (one to `sentences`
    sentences), a quarter of them single words in a quick back-and-forth; pauses
    between turns are 0.2–0.8 s."""
    rng = random.Random(seed)
    scratch = Path(tempfile.mkdtemp(prefix="conv-"))
    try:
        joined = Conversation()
        speaker = 0
        for i in range(turns):
            if i > 0:
                speaker = (speaker + rng.randrange(1, speakers)) % speakers if speakers > 1 else 0
            voice = voices[speaker % len(voices)]
            short = rng.random() < 0.25
            count = 1 if short else rng.randint(1, sentences)
            chosen = [
                rng.choice([s for s in SENTENCES if len(s) < 16] if short else SENTENCES)
                for _ in range(count)
            ]
            speech = _say(" ".join(chosen), voice, rng.randint(150, 185), scratch / f"{i}.wav")
            joined.add(rng.uniform(0.2, 0.8), speech[: 20 * RATE], speaker)
        joined.write(path, tail_s=0.5)
        return joined.reference
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


@attrs.define
class Conversation:
    """Turns joined one after another, each after its pause, and the reference turns
    (start, end, who) they make: what every bench conversation is built with."""

    pieces: list[np.ndarray[Any, Any]] = attrs.field(factory=list)
    reference: list[tuple[float, float, Any]] = attrs.field(factory=list)
    t: float = 0.0

    def add(self, gap_s: float, speech: np.ndarray[Any, Any], who: Any) -> None:
        gap = np.zeros(int(gap_s * RATE), dtype=np.int16)
        self.pieces += [gap, speech]
        self.t += len(gap) / RATE
        self.reference.append((round(self.t, 3), round(self.t + len(speech) / RATE, 3), who))
        self.t += len(speech) / RATE

    def write(self, path: Path, tail_s: float = 0.0) -> None:
        """A 16 kHz mono 16-bit wav of the turns and `tail_s` of silence after them."""
        write_wav(path, [*self.pieces, np.zeros(int(tail_s * RATE), dtype=np.int16)])


def write_wav(path: Path, pieces: Sequence[np.ndarray[Any, Any]]) -> None:
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(np.concatenate(pieces).astype(np.int16).tobytes())


def der(
    reference: Sequence[tuple[float, float, int]],
    hypothesis: Sequence[tuple[float, float, int]],
    collar: float = 0.25,
    step: float = 0.01,
) -> dict[str, float]:
    """Diarization error rate on a 10 ms grid: (missed + false alarm + confusion) / scored
    reference speech, with the hypothesis' speakers mapped one-to-one onto the
    reference's to minimise confusion (the usual optimal mapping, by exhaustive search
    for few speakers). Single-speaker references and hypotheses (no overlap)."""
    end = max([e for _, e, _ in reference] + [e for _, e, _ in hypothesis] + [0.0])
    n = int(np.ceil(end / step)) + 1
    ref = np.full(n, -1)
    hyp = np.full(n, -1)
    scored = np.ones(n, dtype=bool)
    for s, e, k in reference:
        ref[round(s / step) : round(e / step)] = k
        for edge in (s, e):
            scored[max(0, round((edge - collar) / step)) : round((edge + collar) / step)] = False
    for s, e, k in hypothesis:
        hyp[round(s / step) : round(e / step)] = k
    ref, hyp = ref[scored], hyp[scored]
    speech = (ref >= 0).sum()
    missed = ((ref >= 0) & (hyp < 0)).sum()
    false_alarm = ((ref < 0) & (hyp >= 0)).sum()
    both = (ref >= 0) & (hyp >= 0)
    r_ids = sorted(set(ref[ref >= 0].tolist()))
    h_ids = sorted(set(hyp[hyp >= 0].tolist()))
    overlap = np.zeros((len(h_ids), len(r_ids)))
    for i, h in enumerate(h_ids):
        for j, r in enumerate(r_ids):
            overlap[i, j] = (both & (hyp == h) & (ref == r)).sum()
    best = _best_mapping(overlap)
    confusion = both.sum() - best
    total = max(1, int(speech))
    return {
        "der": round(float(missed + false_alarm + confusion) / total, 4),
        "missed": round(float(missed) / total, 4),
        "false_alarm": round(float(false_alarm) / total, 4),
        "confusion": round(float(confusion) / total, 4),
    }


def _best_mapping(overlap: np.ndarray[Any, Any]) -> float:
    """The largest total overlap of a one-to-one mapping of rows onto columns."""
    import itertools

    rows, cols = overlap.shape
    if rows == 0 or cols == 0:
        return 0.0
    if rows > cols:
        overlap, rows, cols = overlap.T, cols, rows
    if cols > 8:  # greedy beyond what exhaustive search affords
        total, used = 0.0, set()
        for i in np.argsort(-overlap.max(1)):
            j = max((j for j in range(cols) if j not in used), key=lambda j: overlap[i, j])
            used.add(j)
            total += overlap[i, j]
        return total
    return max(
        float(sum(overlap[i, p[i]] for i in range(rows)))
        for p in itertools.permutations(range(cols), rows)
    )


def _peak_rss_mib(child: bool = False) -> float:
    who = resource.RUSAGE_CHILDREN if child else resource.RUSAGE_SELF
    return resource.getrusage(who).ru_maxrss / 1024


def _measure(kind: str, wav: Path, spec: str) -> dict[str, Any]:
    """Runs one diarization or recognition in a fresh process: its seconds and peak RSS."""
    out = subprocess.run(
        [sys.executable, "-m", "transcriber.bench.speakers", kind, str(wav), spec],
        check=True,
        capture_output=True,
        text=True,
    )
    return dict(json.loads(out.stdout.strip().splitlines()[-1]))


def _child(kind: str, wav: Path, spec: str) -> None:
    from transcriber.audio.speakers import diarize
    from transcriber.speaker_options import SpeakersOption

    started = time.perf_counter()
    if kind == "diarize":
        result = diarize(wav, SpeakersOption.parse(spec))
        answer: dict[str, Any] = {
            "turns": [[t.start, t.end, t.speaker] for t in result.turns],
            "speakers": result.speakers,
        }
    else:
        from transcriber.audio.recognize import WhisperRecognizer
        from transcriber.config import Config

        WhisperRecognizer(Config.from_env()).transcribe(wav, 0.0, "en")
        answer = {}
    answer["seconds"] = round(time.perf_counter() - started, 2)
    answer["peak_rss_mib"] = round(_peak_rss_mib(), 1)
    print(json.dumps(answer))


def bench(
    conversations: int = 3,
    turns: int = 16,
    speaker_counts: Sequence[int] = (2, 4),
    recognition: bool = True,
) -> list[dict[str, Any]]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-speakers-") as tmp:
        for speakers in speaker_counts:
            for c in range(conversations):
                wav = Path(tmp) / f"{speakers}-{c}.wav"
                reference = make_conversation(wav, speakers, turns, seed=1000 * speakers + c)
                with wave.open(str(wav), "rb") as w:
                    duration = w.getnframes() / w.getframerate()
                d = _measure("diarize", wav, "auto")
                score = der(reference, [tuple(t) for t in d["turns"]])
                row = {
                    "speakers": speakers,
                    # A short conversation's turns may leave a voice out: the count to find.
                    "speaking": len({k for _, _, k in reference}),
                    "conversation": c,
                    "audio_s": round(duration, 1),
                    **score,
                    "found": d["speakers"],
                    "diarize_s": d["seconds"],
                    "diarize_rtf": round(d["seconds"] / duration, 3),
                    "diarize_rss_mib": d["peak_rss_mib"],
                }
                if recognition:
                    r = _measure("recognize", wav, "")
                    row |= {
                        "recognize_s": r["seconds"],
                        "recognize_rtf": round(r["seconds"] / duration, 3),
                        "recognize_rss_mib": r["peak_rss_mib"],
                    }
                rows.append(row)
                print(json.dumps(row), file=sys.stderr)
    return rows


RECOGNITION_SAMPLE_S = 300.0
"""Of a long conversation, recognition is timed on its first five minutes only: its memory
is bounded by its batch, not by the audio's length, and its time grows in proportion."""


def long_conversation(minutes: float, speakers: int = 4) -> dict[str, Any]:
    """One conversation of `minutes` (about ten turns a minute): diarization's seconds, peak
    RSS, DER and count; recognition's seconds and peak RSS on its first five minutes, and
    its seconds for the whole estimated from them."""
    with tempfile.TemporaryDirectory(prefix="bench-speakers-long-") as tmp:
        wav = Path(tmp) / "long.wav"
        reference = make_conversation(wav, speakers, max(1, round(minutes * 10)), seed=60)
        with wave.open(str(wav), "rb") as w:
            rate = w.getframerate()
            duration = w.getnframes() / rate
            head = w.readframes(int(RECOGNITION_SAMPLE_S * rate))
        sample = Path(tmp) / "head.wav"
        with wave.open(str(sample), "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(rate)
            w.writeframes(head)
        d = _measure("diarize", wav, "auto")
        r = _measure("recognize", sample, "")
    sample_s = min(duration, RECOGNITION_SAMPLE_S)
    estimated = r["seconds"] * duration / sample_s
    return {
        "speakers": speakers,
        "speaking": len({k for _, _, k in reference}),
        "audio_s": round(duration, 1),
        **der(reference, [tuple(t) for t in d["turns"]]),
        "found": d["speakers"],
        "diarize_s": d["seconds"],
        "diarize_rtf": round(d["seconds"] / duration, 3),
        "diarize_rss_mib": d["peak_rss_mib"],
        "recognize_sample_s": r["seconds"],
        "recognize_est_s": round(estimated, 1),
        "recognize_rss_mib": r["peak_rss_mib"],
        "ratio_est": round(d["seconds"] / estimated, 3),
    }


def table(rows: Sequence[dict[str, Any]]) -> str:
    cols = list(rows[0]) if rows else []
    lines = [" | ".join(cols), " | ".join("---" for _ in cols)]
    lines += [" | ".join(str(r.get(c, "")) for c in cols) for r in rows]
    for speakers in sorted({r["speakers"] for r in rows}):
        mine = [r for r in rows if r["speakers"] == speakers]
        lines.append(
            f"\n{speakers} speakers: mean DER {np.mean([r['der'] for r in mine]):.3f}, "
            f"count right {sum(r['found'] == r['speaking'] for r in mine)}/{len(mine)}"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    _child(sys.argv[1], Path(sys.argv[2]), sys.argv[3])
