"""What one process remembers of a watched prefix listed in parts (folder.Observations):
bounded, and what it forgets is seen anew, never lost."""

from __future__ import annotations

import pytest

from transcriber.watch import folder
from transcriber.watch.folder import Entry, Listing, Observations


def part(names: list[str], after: str | None, through: str | None) -> Listing:
    media = tuple(Entry(n, 10, 1, 0, "etag") for n in names)
    return Listing(media, frozenset(names), after=after, through=through)


def test_what_lies_outside_the_listed_part_is_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(folder, "MAX_REMEMBERED", 3)
    seen = Observations(quiet_s=1.0)
    seen.update(part(["a", "b"], None, "b"), now=0)
    seen.update(part(["c", "d"], "b", "d"), now=1)
    # Full: "a" and "b" wait for their second sighting and are kept; of the files
    # seen for the first time, as many as fit ("d" is seen anew at its next listing).
    assert sorted(seen.seen) == ["a", "b", "c"]
    assert seen.listed == ("c",)
    seen.update(part(["e"], "d", None), now=2)
    assert sorted(seen.seen) == ["a", "b", "c"]
    seen.update(part(["a", "b"], None, "b"), now=3)
    assert [s.entry.name for s in seen.quiet(now=3)] == ["a", "b"]  # their turn
    # Not taken (resting): outside the part listed, they go first, the longest known
    # first, to make room for "d".
    seen.update(part(["c", "d"], "b", "d"), now=4)
    assert sorted(seen.seen) == ["b", "c", "d"]
    assert seen.seen["d"].scans == 1


def test_a_forgotten_file_is_not_offered_and_comes_back_when_listed() -> None:
    seen = Observations(quiet_s=1.0)
    whole = part(["a", "b"], None, None)
    seen.update(whole, now=0)
    seen.update(whole, now=1)
    seen.forget("a")
    assert [s.entry.name for s in seen.quiet(now=1)] == ["b"]
    seen.update(whole, now=2)
    assert seen.seen["a"].scans == 1
