"""The voice rule on people: the speaker count's people set (fourteen people's flite and
festival voices, none of them tuned on), its diarization given, every conversation's
speakers kept as a library and every other conversation named by the rule as it is
(`transcriber.records.voices.MATCH`, with the run-time cohort).

    python -m transcriber.bench.voices_people CACHE   # CACHE: bench-speakers --count-cache's

Given diarization: each conversation's speakers are its speakers as spoken, their voices the
unit mean of their windows (as `record_voices` keeps a found speaker's), so what is measured
is the rule, not the count.
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path
from typing import Any

import numpy as np

from transcriber.records.voices_match import Voice, match


def conversations(cache: Path) -> dict[str, dict[str, Voice]]:
    """Each people conversation's speakers: {name: {person: voice}} (embedded first where
    the cache lacks them: minutes)."""
    from transcriber.bench.speakers_count import embed
    from transcriber.bench.speakers_count_people import people_set

    out = {}
    for spec in people_set():
        with np.load(embed(spec, cache)) as data:
            windows, truth, vectors = data["windows"], data["truth"], data["embeddings"]
        voices = {}
        for k in sorted(set(truth.tolist()) - {-1}):
            mean = vectors[truth == k].mean(0)
            seconds = float(np.sum(windows[truth == k, 1] - windows[truth == k, 0]))
            unit = mean / np.linalg.norm(mean)
            voices[spec.voices[k][0]] = Voice(tuple(float(x) for x in unit), seconds)
        out[spec.name] = voices
    return out


def measure(found: dict[str, dict[str, Voice]], cohort: list[Voice]) -> dict[str, Any]:
    """Every ordered pair of conversations: the first's speakers the library, the second's
    named. Known: speakers whose person is in the library (named right, and the share of
    their speech; named wrong); strangers: the others (named at all)."""
    from transcriber.records.voices import MATCH

    right = known = wrong = strangers = named_strangers = 0
    speech = speech_right = 0.0
    for first, second in itertools.permutations(found, 2):
        library, speakers = found[first], list(found[second].items())
        named = match(dict(enumerate(v for _, v in speakers)), library, MATCH, cohort)
        for i, (person, v) in enumerate(speakers):
            if person in library:
                known += 1
                speech += v.seconds
                if named.get(i) == person:
                    right += 1
                    speech_right += v.seconds
                elif i in named:
                    wrong += 1
            else:
                strangers += 1
                named_strangers += i in named
    return {
        "known": known,
        "named_right": right,
        "speech_named_right": round(speech_right / max(speech, 1e-9), 3),
        "named_wrong": wrong,
        "strangers": strangers,
        "strangers_named": named_strangers,
    }


def main(cache: Path) -> dict[str, Any]:
    from transcriber.audio.speakers_model import CamPlusPlus
    from transcriber.audio.voice_cohort import made

    cohort = [Voice(tuple(v), 0.0) for v in made(CamPlusPlus.load())]
    return measure(conversations(cache), cohort)


if __name__ == "__main__":
    print(main(Path(sys.argv[1])))
