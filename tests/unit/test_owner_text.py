"""Which characters an owner's text may not hold (transcriber/records/owner_text.py),
over every plane: the domain check the API, the page and the corrections share."""

from __future__ import annotations

import pytest

from transcriber.records.corrections import BadCorrection, check_correction
from transcriber.records.owner_text import RefusedText, check_text, refused
from transcriber.records.speaker_names import BadSpeaker, check_name

NONCHARACTERS = [chr(n) for n in range(0xFDD0, 0xFDF0)] + [
    chr(plane << 16 | low) for plane in range(17) for low in (0xFFFE, 0xFFFF)
]
BIDI_CONTROLS = [chr(n) for n in (*range(0x202A, 0x202F), *range(0x2066, 0x206A))]
ALLOWED = ["\u200e", "\u200f", "\u061c", "\ufffd", "\U0010fffd", "\u05d0", "\u0627", "é", " "]


@pytest.mark.scenario(
    "archive", "Noncharacters and bidi controls in an owner's field are refused, named"
)
def test_every_noncharacter_and_bidi_control_is_refused_everywhere() -> None:
    assert len(NONCHARACTERS) == 66  # Unicode's own count
    for c in NONCHARACTERS + BIDI_CONTROLS:
        assert refused(c) and refused(c, lines=True), hex(ord(c))
        code = f"U+{ord(c):04X}"
        with pytest.raises(RefusedText, match=code.replace("+", r"\+")) as e:
            check_text(f"a{c}b", "title", 100)
        assert e.value.chars == [c]
        with pytest.raises(BadCorrection, match=code.replace("+", r"\+")):
            check_correction(f"a{c}b")
        with pytest.raises(BadSpeaker, match=code.replace("+", r"\+")):
            check_name(f"a{c}b", 0, {})
    for c in ALLOWED:
        assert not refused(c), hex(ord(c))
        assert check_text(f"a{c}b", "title", 100) == f"a{c}b"
    with pytest.raises(RefusedText, match="U\\+202E RIGHT-TO-LEFT OVERRIDE"):
        check_text("\u202e", "title", 100)
    with pytest.raises(RefusedText, match="U\\+FFFE \\(a noncharacter\\)"):
        check_text("\ufffe", "title", 100)
    # Control characters keep their words; line breaks only where the field has lines.
    with pytest.raises(RefusedText, match=r"control characters \(U\+0007\)"):
        check_text("bell\x07", "title", 100)
    assert check_text("two\nlines\tand tabs", "summary", 100, lines=True)
    with pytest.raises(RefusedText, match=r"U\+000A"):
        check_text("two\nlines", "title", 100)
