"""Golden playthroughs: any change in behaviour shows up as a diff against tests/golden/."""

import pytest

from tests.playthrough import (
    EXPERT_GOLDEN,
    EXPERT_MATCHES,
    GOLDEN_DIR,
    GOLDEN_MATCHES,
    SEARCH_V1_GOLDEN,
    SEARCH_V1_MATCHES,
    expert_decisions,
    playthrough,
    search_v1_decisions,
)


@pytest.mark.parametrize("name,seed,rules", GOLDEN_MATCHES, ids=[m[0] for m in GOLDEN_MATCHES])
def test_playthrough_matches_golden_file(name, seed, rules):
    expected = (GOLDEN_DIR / name).read_text()
    assert playthrough(seed, rules) == expected, "behaviour changed; if intended, run python -m tests.playthrough"


def test_expert_decisions_match_golden_file():
    expected = (GOLDEN_DIR / EXPERT_GOLDEN).read_text()
    got = "".join(expert_decisions(seed, rules) for seed, rules in EXPERT_MATCHES)
    assert got == expected, "the expert's choices changed; if intended, run python -m tests.playthrough"


def test_the_frozen_reference_search_plays_as_it_did():
    """search_v1 is the reference every later search and student is measured against (issue 41):
    its choices never change, whatever becomes of search's defaults."""
    expected = (GOLDEN_DIR / SEARCH_V1_GOLDEN).read_text()
    got = "".join(search_v1_decisions(seed, rules) for seed, rules in SEARCH_V1_MATCHES)
    assert got == expected, "search_v1 changed: it must not (it is the frozen reference of docs/results.md)"
