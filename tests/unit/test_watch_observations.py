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
    # The ones known longest go first, and never the part just listed.
    assert sorted(seen.seen) == ["b", "c", "d"]
    seen.update(part(["e"], "d", None), now=2)
    assert sorted(seen.seen) == ["c", "d", "e"]
    # "a", forgotten, is seen anew at its next listing and waits a quiet period again.
    seen.update(part(["a", "b"], None, "b"), now=3)
    assert seen.seen["a"].scans == 1
    seen.update(part(["a", "b"], None, "b"), now=4)
    assert [s.entry.name for s in seen.quiet(now=4)] == ["a", "b"]


def test_a_forgotten_file_is_not_offered_and_comes_back_when_listed() -> None:
    seen = Observations(quiet_s=1.0)
    whole = part(["a", "b"], None, None)
    seen.update(whole, now=0)
    seen.update(whole, now=1)
    seen.forget("a")
    assert [s.entry.name for s in seen.quiet(now=1)] == ["b"]
    seen.update(whole, now=2)
    assert seen.seen["a"].scans == 1
