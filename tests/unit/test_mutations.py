"""`just mutate`'s list (tests/mutate.py) still applies to the current files: each
mutant's text is found exactly once, so no mutant silently stops mutating anything."""

from __future__ import annotations

import pytest

from tests.mutate import MUTANT_TESTS, MUTANTS, ROOT, apply


@pytest.mark.parametrize("mutant", MUTANTS, ids=[m.name for m in MUTANTS])
def test_each_mutant_applies_once(mutant: object) -> None:
    from tests.mutate import Mutant

    assert isinstance(mutant, Mutant)
    text = (ROOT / mutant.path).read_text()
    assert apply(text, mutant) != text


def test_mutants_and_their_tests_exist() -> None:
    assert len({m.name for m in MUTANTS}) == len(MUTANTS)
    for path in MUTANT_TESTS:
        assert (ROOT / path).is_file(), path


def test_each_mutants_own_test_exists() -> None:
    for m in MUTANTS:
        path, _, name = m.first.partition("::")
        assert (ROOT / path).is_file(), m.name
        if name:
            assert f"def {name.partition('[')[0]}(" in (ROOT / path).read_text(), m.name
