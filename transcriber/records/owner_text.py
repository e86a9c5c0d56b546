"""What an owner's text may hold: the characters every owner field refuses (titles,
summaries, topics, corrections, speaker names, share notes, prompts), named in the
refusal so the owner can find them.

An owner's text ends up in subtitle files, Word documents, terminals, the journal and the
logs, so it refuses what would break or disguise it there:

- control characters (C0, C1, DEL; line breaks and tabs only where a field has lines),
  and the line and paragraph separators: they end a cue or a line, or drive a terminal;
- surrogates (PostgreSQL cannot store them) and the noncharacters (U+FDD0–U+FDEF and the
  last two code points of every plane, U+FFFE, U+FFFF, U+1FFFE … U+10FFFF): Unicode keeps
  them for a program's own use, and XML (DOCX) forbids U+FFFE and U+FFFF;
- the bidirectional embeddings, overrides and isolates (U+202A–U+202E, U+2066–U+2069):
  they reorder everything after them up to the end of the paragraph, so a title or name
  holding one shows another text than it holds (in a terminal, a journal line, a
  subtitle) — the "Trojan Source" trick. The marks U+200E LEFT-TO-RIGHT MARK, U+200F
  RIGHT-TO-LEFT MARK and U+061C ARABIC LETTER MARK stay allowed: they open no state (they
  act as one strong letter where they stand, nothing after them is reordered), and
  Hebrew, Arabic and Persian keyboards type them to place punctuation beside Latin text.

Below HTTP, so the API, the page and any later face refuse alike; each face words the
refusal in its own way from `RefusedText.chars`.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

LINE_BREAKS = frozenset("\n\r\t")
"""The control characters a text of several lines (a summary, a prompt) may hold."""

BIDI_CONTROLS = frozenset("\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
"""The embeddings, overrides and isolates, and their ends (PDF, PDI)."""

NAMED_SHOWN = 3
"""The refused characters a message names (the first ones, in code point order)."""


def is_noncharacter(c: str) -> bool:
    n = ord(c)
    return 0xFDD0 <= n <= 0xFDEF or (n & 0xFFFE) == 0xFFFE


def refused(c: str, *, lines: bool = False) -> bool:
    """Whether an owner's text may not hold `c` (line breaks and tabs where `lines`)."""
    if c in BIDI_CONTROLS or is_noncharacter(c):
        return True
    if unicodedata.category(c) in ("Cc", "Cs", "Zl", "Zp"):
        return not (lines and c in LINE_BREAKS)
    return False


def refused_in(text: str, *, lines: bool = False) -> list[str]:
    """The characters of `text` an owner's text may not hold, each once, in order."""
    return sorted({c for c in text if refused(c, lines=lines)})


def is_control(c: str) -> bool:
    return unicodedata.category(c) in ("Cc", "Cs", "Zl", "Zp")


def describe(c: str) -> str:
    """`U+202E RIGHT-TO-LEFT OVERRIDE`, `U+FFFE (a noncharacter)`, `U+0007`: the code
    point, and its name where Unicode gives it one."""
    code = f"U+{ord(c):04X}"
    if is_noncharacter(c):
        return f"{code} (a noncharacter)"
    name = unicodedata.name(c, "")
    return f"{code} {name}" if name else code


def described(chars: Iterable[str]) -> str:
    """The first NAMED_SHOWN of `chars`, described, for a message."""
    return ", ".join(describe(c) for c in list(chars)[:NAMED_SHOWN])


def what_is_held(chars: list[str]) -> str:
    """`control characters (U+0007)` as such refusals always said (a client may look
    for the words), or `characters it may not hold: U+202E RIGHT-TO-LEFT OVERRIDE`."""
    if all(is_control(c) for c in chars):
        return f"control characters ({', '.join(f'U+{ord(c):04X}' for c in chars[:NAMED_SHOWN])})"
    return f"characters it may not hold ({described(chars)})"


class RefusedText(ValueError):
    """An owner's text refused: too long, or holding `chars` it may not hold; the
    message says which, for the client (English; a face may word it from the fields)."""

    def __init__(
        self, message: str, *, what: str, chars: list[str] | None = None, too_long: bool = False
    ) -> None:
        super().__init__(message)
        self.what = what
        self.chars = chars or []
        self.too_long = too_long


def refusal(what: str, chars: list[str], *, lines: bool = False) -> RefusedText:
    """The refusal of `what` for holding `chars`."""
    allowed = " (line breaks and tabs are fine)" if lines else ""
    return RefusedText(f"{what} contains {what_is_held(chars)}{allowed}", what=what, chars=chars)


def check_text(value: str, what: str, max_chars: int, *, lines: bool = False) -> str:
    """`value` if it is not too long and holds no character an owner's text may not
    (`refused`; line breaks and tabs where `lines`); else RefusedText (a ValueError) with
    a message for the client naming the characters."""
    if len(value) > max_chars:
        raise RefusedText(f"{what} is longer than {max_chars} characters", what=what, too_long=True)
    if "\x00" in value:
        raise RefusedText(f"{what} contains a NUL character", what=what, chars=["\x00"])
    if bad := refused_in(value, lines=lines):
        raise refusal(what, bad, lines=lines)
    return value
