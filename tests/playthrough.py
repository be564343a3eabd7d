"""A seeded random match written out event by event: the golden playthrough.

``python -m tests.playthrough`` rewrites ``tests/golden/*.txt`` after an intended change of
behaviour; ``tests/test_golden.py`` fails on any other change.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

import allfours_env
from allfours_env.render import describe_event

GOLDEN_DIR = Path(__file__).parent / "golden"
# (file name, env seed, rule variants): the default rules and a variant-heavy table.
GOLDEN_MATCHES = (
    ("match_seed7_default.txt", 7, {}),
    ("match_seed11_variants.txt", 11, {
        "target_score": 7, "kick_points": "tobago", "undertrump": "forbidden_unless_all_trumps",
        "game_tie": "non_dealer", "exhausted_pack": "redeal", "deal_batch": 3,
    }),
)


def playthrough(seed: int, rules: dict) -> str:
    """Play a match with uniformly random legal actions (a generator seeded with ``seed``)."""
    env = allfours_env.env(reward="points", **rules)
    env.reset(seed=seed)
    picker = np.random.default_rng(seed)
    game = env.unwrapped.game
    lines = [f"seed {seed} rules {rules}"]
    shown = 0
    for agent in env.agent_iter():
        obs, _, term, trunc, _ = env.last()
        for event in game.events[shown:]:
            lines.append(describe_event(event))
        shown = len(game.events)
        if term or trunc:
            env.step(None)
            continue
        legal = np.flatnonzero(obs["action_mask"])
        action = int(legal[picker.integers(len(legal))])
        lines.append(f"  {agent} may {' '.join(allfours_env.action_text(int(a)) for a in legal)}")
        env.step(action)
    lines.append(f"final scores {game.scores[0]}-{game.scores[1]}")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    for name, seed, rules in GOLDEN_MATCHES:
        (GOLDEN_DIR / name).write_text(playthrough(seed, rules))
        print("wrote", GOLDEN_DIR / name)
