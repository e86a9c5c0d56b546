"""The subtitles benchmark (`transcriber bench-subtitles`): on minutes of speech made
here (the English sample and espeak-ng sentences with pauses between, never committed),
recognized once by the bundled model:

- per subtitle profile, the share of cues that break each rule of the profile (the
  checker's, on the SRT the service writes) and the words the cues keep, for the
  recognized transcript and for the reference text aligned to it (task `align`);
  reading speed is counted apart where the speech itself is faster than the profile;
- alignment's word-start error: the reference text aligned to the recognizer's words,
  then again with a share of the recognized words taken away (as if the recognizer had
  missed them), so those words are placed from their neighbours; their starts against
  the recognizer's own on the same audio;
- the vocabulary's effect on clips with rare names (transcriber.bench.vocabulary), on
  the set the hotwords' form was chosen on and on a held-out one.
"""

from __future__ import annotations

import random
import statistics
import tempfile
import wave
from pathlib import Path
from typing import Any

import numpy as np

from transcriber.audio.alignment import GUESSED, HEARD, UNPLACED, align
from transcriber.audio.normalize import decode_to_wav
from transcriber.audio.recognize import Transcript, WhisperRecognizer
from transcriber.bench import vocabulary
from transcriber.config import Config
from transcriber.options import RecognitionOptions
from transcriber.subtitles import check, cues
from transcriber.subtitles.profiles import PROFILES, Profile

SAMPLES = Path(__file__).resolve().parents[2] / "samples"
RATE = 16000
WHO = ["The new manager", "Our team", "The committee", "My neighbour", "The engineer"]
DID = ["reviewed", "approved", "rejected", "postponed", "rewrote", "presented"]
WHAT = [
    "the budget for next year",
    "the plan to open an office in Lisbon",
    "a long report about water quality",
    "the schedule of the autumn conference",
    "three proposals from the design group",
    "the contract with the printing company",
]
WHEN = ["on Monday morning", "after a short discussion", "before the holidays", "last week", ""]
THEN = [
    "Everyone agreed that it was a good decision.",
    "Nobody expected such a quick answer.",
    "The details will be published tomorrow.",
    "Questions can be sent by email.",
    "It took longer than anyone had hoped, but the result was worth the wait.",
    "Yes.",
    "Several people asked whether the numbers were final, and the answer was no.",
]


def make_speech(path: Path, minutes: float, seed: int = 0) -> str:
    """A 16 kHz mono wav of at least `minutes`: the English sample, then espeak-ng
    paragraphs (two to five sentences, at 150-190 words a minute) with pauses of 0.3-1.5 s;
    answers the reference text."""
    rng = random.Random(seed)
    scratch = path.parent
    decode_to_wav(SAMPLES / "en.ogg", scratch / "sample.wav", max_duration_s=600)
    pieces = [_samples(scratch / "sample.wav")]
    texts = [(SAMPLES / "en.txt").read_text().strip()]
    total = len(pieces[0]) / RATE
    i = 0
    while total < minutes * 60:
        sentences = []
        for _ in range(rng.randint(2, 5)):
            when = rng.choice(WHEN)
            sentences.append(
                f"{rng.choice(WHO)} {rng.choice(DID)} {rng.choice(WHAT)}"
                + (f" {when}." if when else ".")
            )
            if rng.random() < 0.5:
                sentences.append(rng.choice(THEN))
        text = " ".join(sentences)
        wav = scratch / f"p{i}.wav"
        vocabulary.make_clip(text, wav, speed=rng.randint(150, 190))
        pieces += [np.zeros(int(rng.uniform(0.3, 1.5) * RATE), np.int16), _samples(wav)]
        texts.append(text)
        total += len(pieces[-1]) / RATE + len(pieces[-2]) / RATE
        i += 1
    with wave.open(str(path), "wb") as w:
        w.setnchannels(1)
        w.setsampwidth(2)
        w.setframerate(RATE)
        w.writeframes(np.concatenate(pieces).tobytes())
    return " ".join(texts)


def _samples(wav: Path) -> np.ndarray[Any, Any]:
    with wave.open(str(wav), "rb") as w:
        return np.frombuffer(w.readframes(w.getnframes()), dtype=np.int16)


def rule_shares(transcript: Transcript, profile: Profile) -> dict[str, Any]:
    """The share of cues breaking each rule, words kept, reading speed where the speech
    itself is faster."""
    built = cues.build(transcript.segments, profile)
    parsed = check.parse(cues.to_srt(built))
    broken = check.check(parsed, profile)
    n = max(len(parsed), 1)
    shares = {rule: len({b.cue for b in broken if b.rule == rule}) / n for rule in check.RULES}
    said = [w for s in transcript.segments for w in str(s["text"]).split()]
    kept = [w for c in built for w in c.words]
    fast = 0
    for b in broken:
        if b.rule == "reading_speed":
            c = built[b.cue - 1]
            chars = sum(len(line) for line in c.lines)
            words = [w for s in transcript.segments for w in cues.timed_words(s)]
            inside = [w for w in words if c.start - 0.01 <= w.start and w.end <= c.end + 0.01]
            span = (inside[-1].end - inside[0].start) if inside else 0.0
            fast += bool(profile.max_cps and span > 0 and chars / span > profile.max_cps)
    return {
        "cues": len(parsed),
        **shares,
        "speech_faster": fast / n,
        "words_kept": (len(kept) / max(len(said), 1)) if kept == said else -1.0,
    }


def without_some(transcript: Transcript, share: float, seed: int) -> Transcript:
    """The transcript with `share` of its words taken away at random (as if missed)."""
    rng = random.Random(seed)
    segments = []
    for s in transcript.segments:
        kept = [w for w in s.get("words") or () if rng.random() >= share]
        segments.append({**s, "words": kept, "text": "".join(w["word"] for w in kept).strip()})
    return Transcript(transcript.text, segments, transcript.language, transcript.model)


def starts(t: Transcript) -> list[tuple[float, str]]:
    return [(float(w["start"]), str(w["timing"])) for s in t.segments for w in s["words"]]


def alignment_errors(recognized: Transcript, reference: str) -> list[dict[str, Any]]:
    """Start errors of the aligned words against the recognizer's own times: the words
    timed from the audio (heard) in the full alignment are the truth; with a share of
    the recognized words taken away, the words that lose their twin are placed from their
    neighbours, and their starts are compared."""
    full = starts(align(recognized, reference))
    rows = []
    for share in (0.0, 0.1, 0.3):
        got = starts(align(without_some(recognized, share, seed=1), reference))
        errors = [abs(g[0] - f[0]) for f, g in zip(full, got, strict=True) if f[1] == HEARD]
        placed = [
            abs(g[0] - f[0])
            for f, g in zip(full, got, strict=True)
            if f[1] == HEARD and g[1] != HEARD
        ]
        rows.append(
            {
                "taken_away": share,
                "words": len(full),
                "heard": sum(g[1] == HEARD for g in got),
                "guessed": sum(g[1] == GUESSED for g in got),
                "unplaced": sum(g[1] == UNPLACED for g in got),
                "median_all": statistics.median(errors) if errors else 0.0,
                "median_placed": statistics.median(placed) if placed else 0.0,
                "p90_placed": _p90(placed),
            }
        )
    return rows


def _p90(values: list[float]) -> float:
    return sorted(values)[int(0.9 * (len(values) - 1))] if values else 0.0


def main(minutes: float = 5.0, vocabulary_clips: bool = True) -> int:
    config = Config.from_env()
    recognizer = WhisperRecognizer(config)
    with tempfile.TemporaryDirectory(prefix="bench-subtitles-") as tmp:
        scratch = Path(tmp)
        wav = scratch / "speech.wav"
        reference = make_speech(wav, minutes)
        with wave.open(str(wav), "rb") as w:
            duration = w.getnframes() / RATE
        recognized = recognizer.transcribe(wav, duration, "en", None, RecognitionOptions())
        aligned = align(recognized, reference)
        print(f"## Speech: {duration / 60:.1f} min, {len(reference.split())} words\n")
        print("| profile | transcript | cues | " + " | ".join(check.RULES) + " | of which "
              "speech faster | words kept |")  # fmt: skip
        print("|" + "---|" * (len(check.RULES) + 5))
        for name, profile in PROFILES.items():
            for label, t in (("recognized", recognized), ("aligned", aligned)):
                r = rule_shares(t, profile)
                cells = " | ".join(f"{100 * r[rule]:.1f} %" for rule in check.RULES)
                kept = f"{100 * r['words_kept']:.0f} %" if r["words_kept"] >= 0 else "NO"
                print(
                    f"| {name} | {label} | {r['cues']} | {cells} | "
                    f"{100 * r['speech_faster']:.1f} % | {kept} |"
                )
        print("\n## Alignment: word starts against the recognizer's (seconds)\n")
        print("| recognized words taken away | words | heard | guessed | unplaced | "
              "median, all | median, placed | p90, placed |")  # fmt: skip
        print("|---|---|---|---|---|---|---|---|")
        for a in alignment_errors(recognized, reference):
            print(
                f"| {100 * a['taken_away']:.0f} % | {a['words']} | {a['heard']} | "
                f"{a['guessed']} | {a['unplaced']} | {a['median_all']:.3f} | "
                f"{a['median_placed']:.3f} | {a['p90_placed']:.3f} |"
            )
        if vocabulary_clips:
            print("\n## Vocabulary: names written right, plain → told\n")
            print("| set | clip | terms | plain | told | WER plain | WER told |")
            print("|---|---|---|---|---|---|---|")
            for label, clips in (("tuned", vocabulary.TUNED), ("held out", vocabulary.HELD_OUT)):
                for row in vocabulary.measure(recognizer, clips, scratch):
                    print(
                        f"| {label} | {row['clip']} → {row['told']} | {row['terms']} | "
                        f"{row['plain_right']} | {row['told_right']} | "
                        f"{row['plain_wer']:.2f} | {row['told_wer']:.2f} |"
                    )
            _no_harm(recognizer, scratch)
    return 0


def _no_harm(recognizer: WhisperRecognizer, scratch: Path) -> None:
    """The English sample with an unrelated vocabulary: its word error rate should stay."""
    from transcriber.wer import word_error_rate

    wav = scratch / "sample.wav"
    ref = (SAMPLES / "en.txt").read_text()
    terms = tuple(t for c in vocabulary.TUNED for t in c.terms)
    plain = recognizer.transcribe(wav, 15.0, "en", None, RecognitionOptions()).text
    told = recognizer.transcribe(wav, 15.0, "en", None, RecognitionOptions(vocabulary=terms))
    print(
        f"\nThe English sample told the tuned set's {len(terms)} terms (none of them in it): "
        f"WER {word_error_rate(ref, plain):.3f} → {word_error_rate(ref, told.text):.3f}"
    )
