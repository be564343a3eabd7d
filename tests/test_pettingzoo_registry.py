"""PettingZoo's registry: ``pettingzoo.make("aec", "classic/allfours_v1", **rules)`` is ``allfours_env.env(**rules)``.
"""

from __future__ import annotations

import subprocess
import sys
from functools import partial

import pettingzoo
from pettingzoo.test import api_test, seed_test

import allfours_env
from tests.test_env import play_random

ID = allfours_env.PETTINGZOO_ID
RULES = {"target_score": 7, "undertrump": "forbidden_unless_all_trumps"}


def test_the_id_is_the_envs_versioned_name_in_the_classic_family():
    assert ID == "classic/" + allfours_env.raw_env.metadata["name"]
    assert pettingzoo.spec("aec", ID) is pettingzoo.spec("aec", "classic/allfours-v1")  # PettingZoo's spelling
    assert pettingzoo.spec("aec", "classic/allfours").version == 1  # unversioned: the latest


def test_pettingzoo_api_test_on_the_registered_env():
    api_test(pettingzoo.make("aec", ID), num_cycles=300)


def test_pettingzoo_seed_test_on_the_registered_env():
    seed_test(partial(pettingzoo.make, "aec", ID, **RULES), num_cycles=300)


def test_make_with_rules_plays_the_same_matches_as_env():
    made, direct = pettingzoo.make("aec", ID, **RULES), allfours_env.env(**RULES)
    assert type(made) is type(direct) and made.unwrapped.rules == direct.unwrapped.rules
    made.reset(seed=3)
    direct.reset(seed=3)
    assert play_random(made, 9) == play_random(direct, 9)
    assert made.unwrapped.game.events == direct.unwrapped.game.events


def test_pprint_registry_lists_it_once_the_package_is_imported():
    code = "import pettingzoo, allfours_env; pettingzoo.pprint_registry()"
    listed = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    aec = listed.split("Parallel environments:")[0]
    assert "  classic/allfours-v1\n" in aec
