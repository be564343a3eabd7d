"""The oracle: a search that sees every hand, seated by evaluation and refused where a person plays."""

from __future__ import annotations

import numpy as np
import pytest

import agents
import eval as ev
from agents.apps.play import make_bot
from allfours_env.engine import Game
from allfours_env.match import Match
from allfours_env.observation import encode_with_mask
from allfours_env.rules import Rules

starlette = pytest.importorskip("starlette")
from starlette.testclient import TestClient  # noqa: E402

from agents.apps.web.app import create_app  # noqa: E402


class Peeker:
    """Records what it is shown and plays the lowest legal action; sighted or not."""

    def __init__(self, sighted: bool) -> None:
        self.name = "peeker"
        self.sees_hands = sighted

    def reset(self, seed: int | None = None) -> None:
        pass

    def act(self, observation: dict) -> int:
        return int(np.flatnonzero(observation["action_mask"])[0])


def test_match_shows_the_hands_to_a_sighted_bot_only():
    game = Game(Rules(target_score=3), np.random.default_rng(3))
    seen: list[tuple[int, bool, list[int] | None]] = []

    class Watcher(Peeker):
        def act(self, observation: dict) -> int:
            seat = game.current
            hands = observation.get("hands")
            truth = [game.hands[(seat + r) % 4] for r in range(4)]
            seen.append((seat, self.sees_hands, None if hands is None else [int(h) for h in hands] == truth))
            assert set(observation) == ({"observation", "action_mask", "hands"} if self.sees_hands else
                                        {"observation", "action_mask"})
            return super().act(observation)

    Match(game, [Watcher(True), Watcher(False), Watcher(False), Watcher(False)]).run()
    assert any(s for _, s, _ in seen) and any(not s for _, s, _ in seen)
    assert all(ok for seat, sighted, ok in seen if sighted) and all(ok is None for _, s, ok in seen if not s)


def test_oracle_without_the_hands_says_it_is_no_player():
    game = Game(rng=np.random.default_rng(1))
    observation, mask = encode_with_mask(game, game.current)
    with pytest.raises(ValueError, match="sees every hand.*not a player"):
        agents.make("oracle").act({"observation": observation, "action_mask": mask})


def test_oracle_beats_expert_in_evaluation():
    result = ev.evaluate("oracle", "expert", boards=12, episode="deal")  # the arena shows it the hands
    assert result.point_diff_ci[0] > 0


def test_oracle_cannot_be_seated_where_a_person_plays():
    with pytest.raises(ValueError, match="sees every hand"):
        make_bot("oracle")
    assert "oracle" in agents.known_bots() and "oracle" not in agents.player_bots()
    client = TestClient(create_app())
    assert "oracle" not in client.get("/api/options").json()["bots"]["names"]
    for mode, players in (("play", [None, "oracle", "random", "random"]), ("watch", ["oracle"] + ["random"] * 3)):
        response = client.post("/api/matches", json={"mode": mode, "seat": 0, "players": players, "seed": 1})
        assert response.status_code == 400 and "unknown bot 'oracle'" in response.text
    with pytest.raises(ValueError, match="opponents must be a bot"):
        agents.make("search:opponents=oracle")
