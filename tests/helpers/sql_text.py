"""Reading SQL text in tests."""

from __future__ import annotations

import re


def code_only(sql: str) -> str:
    """The SQL with comments removed and string literals blanked, so neither can look
    like a keyword, a comma or a parenthesis."""
    # One pass, leftmost first: a quote inside a comment (the step's …) opens no
    # literal, and `--` inside a literal starts no comment.
    return re.sub(
        r"'(?:[^']|'')*'|--[^\n]*", lambda m: "''" if m.group(0).startswith("'") else "", sql
    )
