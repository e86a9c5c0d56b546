"""A cue's words broken into lines: one line when they fit, else the break that keeps
the lines within the profile and reads best.

Where a break reads best, in order: after a sentence's end, after other punctuation,
before a conjunction or preposition (English and Russian lists below), anywhere else;
and never after an article (English a/an/the: an article stays with its noun), between
two capitalized words (a first and last name, a place's name), or after a preposition
or conjunction (it belongs to what follows), unless nothing else fits.
Among equally good breaks the balanced one wins. The lists are short on purpose: the
words a subtitler names first, not a grammar.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from functools import cache

SENTENCE_END = ".!?…"
PAUSE_MARKS = ",;:—–"

ARTICLES = frozenset({"a", "an", "the"})
CONJUNCTIONS = frozenset(
    {
        # English
        "and", "but", "or", "nor", "so", "yet", "because", "although", "though", "while",
        "if", "unless", "until", "when", "whereas", "that", "which", "who",
        # Russian
        "и", "а", "но", "или", "либо", "да", "что", "чтобы", "потому", "поэтому", "если",
        "когда", "хотя", "пока", "как", "который", "которая", "которое", "которые",
    }
)  # fmt: skip
PREPOSITIONS = frozenset(
    {
        # English
        "about", "above", "across", "after", "against", "along", "among", "around", "at",
        "before", "behind", "below", "beneath", "beside", "between", "beyond", "by",
        "during", "for", "from", "in", "inside", "into", "near", "of", "off", "on", "onto",
        "over", "since", "through", "to", "toward", "towards", "under", "upon", "with",
        "within", "without",
        # Russian
        "в", "во", "на", "с", "со", "к", "ко", "о", "об", "обо", "у", "из", "от", "до",
        "по", "за", "для", "без", "при", "про", "над", "под", "перед", "через", "между",
        "после", "около", "вокруг",
    }
)  # fmt: skip

NEVER = 100.0
"""A break's cost that any other feasible layout beats."""


def bare(word: str) -> str:
    """The word as the lists hold it: lower case, without the punctuation around it."""
    return word.strip("\"'“”«»()[]¿¡.,;:!?…—–-").lower()


def break_cost(before: str, after: str) -> float:
    """What a break between the words `before` and `after` costs: 0 after a sentence's
    end, up to NEVER after an article or inside a name."""
    if before.endswith(tuple(SENTENCE_END)) or before.rstrip("\"'”»)").endswith(
        tuple(SENTENCE_END)
    ):
        return 0.0
    if before.endswith(tuple(PAUSE_MARKS)) or after in ("—", "–", "-"):
        return 0.2
    b = bare(before)
    if b in ARTICLES or (_capitalized(before) and _capitalized(after)):
        # An article stays with its noun; two capitalized words in a row, no mark
        # between them, are taken for one name ("Anna Petrova", "New York").
        return NEVER
    if b in PREPOSITIONS or b in CONJUNCTIONS:
        return 3.0
    if bare(after) in CONJUNCTIONS or bare(after) in PREPOSITIONS:
        return 0.4
    return 1.0


def _capitalized(word: str) -> bool:
    letters = word.lstrip("\"'“«(¿¡")
    return letters[:1].isupper()


def width(words: Sequence[str]) -> int:
    return sum(len(w) for w in words) + max(0, len(words) - 1)


def layout(
    words: Sequence[str], max_chars: int, max_lines: int, lead: int = 0
) -> tuple[list[str], float] | None:
    """`words` as at most `max_lines` lines of at most `max_chars` characters (the
    first `lead` characters shorter: a speaker's name before it), and the layout's
    cost; None if they do not fit. One word longer than a line is a line of its own
    (a rule the checker reports, not a word dropped)."""
    if not words:
        return [], 0.0
    if len(words) == 1:
        return [words[0]], 0.0
    found = _cheapest(tuple(words), max_chars, max_lines, lead)
    if found is None:
        return None
    cost, cuts = found
    bounds = [0, *cuts, len(words)]
    return [" ".join(words[a:b]) for a, b in itertools.pairwise(bounds)], cost


def _cheapest(
    words: tuple[str, ...], max_chars: int, max_lines: int, lead: int
) -> tuple[float, tuple[int, ...]] | None:
    """The cheapest layout of `words` in at most `max_lines` lines: its cost (the breaks'
    costs, and how unbalanced the lines are) and the indexes where lines begin."""

    # A memo of this call only: a process-wide cache would keep every cue ever laid out.
    @cache
    def best(start: int, lines_left: int, lead: int) -> tuple[float, tuple[int, ...]] | None:
        if width(words[start:]) + lead <= max_chars:
            return 0.0, ()
        if lines_left <= 1:
            return None
        found: tuple[float, tuple[int, ...]] | None = None
        for cut in range(start + 1, len(words)):
            first = width(words[start:cut]) + lead
            if first > max_chars:
                break
            tail = best(cut, lines_left - 1, 0)
            if tail is None:
                continue
            imbalance = abs(first - width(words[cut:])) / max_chars if lines_left == 2 else 0.0
            cost = break_cost(words[cut - 1], words[cut]) + imbalance + tail[0]
            if found is None or cost < found[0]:
                found = (cost, (cut, *tail[1]))
        return found

    return best(0, max_lines, lead)
