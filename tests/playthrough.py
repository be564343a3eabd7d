"""A seeded random match written out event by event: the golden playthrough.

``python -m tests.playthrough`` rewrites ``tests/golden/*.txt`` after an intended change of
behaviour; ``tests/test_golden.py`` fails on any other change.
"""

from __future__ import annotations

from collections.abc import Callable
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




# The expert's choice at every decision of seeded matches (the same variant sets as above plus
# the others an expert reads): tests/test_golden.py holds every later version of the expert to it.
EXPERT_GOLDEN = "expert_decisions.txt"
EXPERT_MATCHES = (
    (1, {}),
    (2, {}),
    (3, {"hang_jack_points": 6, "game_points": 2, "game_tie": "dealer"}),
    (4, {"target_score": 7, "give_one_requires_trump": True, "stand_requires_trump": True}),
    (5, {"target_score": 40, "undertrump": "forbidden_when_can_follow"}),
    (6, GOLDEN_MATCHES[1][2]),
    (7, {"give_one_to_reach_target": "allowed", "single_trump_counts_high_and_low": False}),
)
EXPERT_WANDERS = 0.3  # chance the played move is a random legal one instead, to reach odd positions


def expert_decisions(seed: int, rules: dict) -> str:
    """One line per decision of a seeded match: the expert's choice, and the move played (the
    expert's, or with chance EXPERT_WANDERS a random legal one)."""
    return wandering_match(seed, rules, None)


def wandering_match(seed: int, rules: dict, choose: Callable[[dict, int], int] | None) -> str:
    """A seeded match played by ``expert``, with chance EXPERT_WANDERS a random legal move: one line
    per decision, the seat, the choice asked about and the move played. ``choose(observation,
    line)`` makes the choice at each decision with more than one legal action (None: the expert's
    at every decision)."""
    import agents
    from allfours_env.engine import Game
    from allfours_env.observation import encode_with_mask
    from allfours_env.rules import Rules

    rng = np.random.default_rng(seed)
    game = Game(Rules(**rules), np.random.default_rng(seed))
    expert = agents.make("expert")
    lines = [f"seed {seed} rules {rules}"]
    while not game.is_over:
        observation, mask = encode_with_mask(game, game.current)
        asked = {"observation": observation, "action_mask": mask}
        legal = np.flatnonzero(mask)
        played = expert.act(asked)
        if choose is None or len(legal) > 1:
            choice = played if choose is None else choose(asked, len(lines))
            played = int(legal[rng.integers(len(legal))]) if rng.random() < EXPERT_WANDERS else played
            lines.append(f"{game.current} {allfours_env.action_text(choice)} {allfours_env.action_text(played)}")
        game.step(played)
    return "\n".join(lines) + "\n"


# search_v1's choice at every decision with a choice of two seeded matches, each decision searched
# from a seed of its own: tests/test_golden.py holds the frozen reference search to it (issue 41).
SEARCH_V1_GOLDEN = "search_v1_decisions.txt"
SEARCH_V1_MATCHES = ((21, {}), (22, GOLDEN_MATCHES[1][2]))


def search_v1_decisions(seed: int, rules: dict) -> str:
    """:func:`wandering_match`'s lines with search_v1's choice (its seed: the decision's line number)."""
    import agents

    search = agents.make("search_v1")

    def choose(asked: dict, line: int) -> int:
        search.reset(line)
        return search.act(asked)

    return wandering_match(seed, rules, choose)


def write_expert_golden() -> Path:
    path = GOLDEN_DIR / EXPERT_GOLDEN
    path.write_text("".join(expert_decisions(seed, rules) for seed, rules in EXPERT_MATCHES))
    return path


if __name__ == "__main__":
    for name, seed, rules in GOLDEN_MATCHES:
        (GOLDEN_DIR / name).write_text(playthrough(seed, rules))
        print("wrote", GOLDEN_DIR / name)
    print("wrote", write_expert_golden())
    search_golden = GOLDEN_DIR / SEARCH_V1_GOLDEN
    search_golden.write_text("".join(search_v1_decisions(seed, rules) for seed, rules in SEARCH_V1_MATCHES))
    print("wrote", search_golden)
