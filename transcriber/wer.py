"""Word error rate, for the tests and the audio benchmark."""

from __future__ import annotations

import unicodedata


def words(text: str) -> list[str]:
    """Lowercase words without punctuation (hyphens and apostrophes split words)."""
    cleaned = "".join(
        ch if ch.isalnum() or ch.isspace() else " "
        for ch in unicodedata.normalize("NFKC", text.lower())
    )
    return cleaned.split()


def word_error_rate(reference: str, hypothesis: str) -> float:
    """(substitutions + deletions + insertions) / reference words: a word-level
    Levenshtein distance, one row at a time."""
    ref, hyp = words(reference), words(hypothesis)
    previous = list(range(len(hyp) + 1))
    for i, r in enumerate(ref, 1):
        current = [i]
        for j, h in enumerate(hyp, 1):
            current.append(min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (r != h)))
        previous = current
    return previous[-1] / max(len(ref), 1)
