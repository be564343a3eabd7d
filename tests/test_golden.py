"""Golden playthroughs: any change in behaviour shows up as a diff against tests/golden/."""

import pytest

from tests.playthrough import GOLDEN_DIR, GOLDEN_MATCHES, playthrough


@pytest.mark.parametrize("name,seed,rules", GOLDEN_MATCHES, ids=[m[0] for m in GOLDEN_MATCHES])
def test_playthrough_matches_golden_file(name, seed, rules):
    expected = (GOLDEN_DIR / name).read_text()
    assert playthrough(seed, rules) == expected, "behaviour changed; if intended, run python -m tests.playthrough"
