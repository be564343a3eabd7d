"""Every docs/rules.md Part C scenario again, with the vector engine mirroring the scalar one.

The scenario tests of :mod:`tests.test_scenarios` are collected here a second time, with their
``Game`` replaced by :class:`tests.vector_mirror.MirroredGame`: each position they build is also
played by a one-table ``VectorGame``, checked equal after every step.
"""

import pytest

from tests import test_scenarios
from tests.test_scenarios import *  # noqa: F403  (collects the scenario tests again)
from tests.vector_mirror import MirroredGame


@pytest.fixture(autouse=True)
def mirrored_engine(monkeypatch):
    monkeypatch.setattr(test_scenarios, "Game", MirroredGame)
