"""The match-log loader against hostile input: random mutations of a real log's JSON.

Every mutation (a field of the wrong type, a huge or negative number, NaN, deep nesting, a cut
text, an illegal action, a huge list, a flipped byte) is either still a valid log, loaded and
replayed, or refused with a :class:`MatchLogError`; never another exception, never a hang. The
cases are drawn from a seeded generator, so a failure names a case that reproduces.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from agents import make
from agents.apps import match_log
from agents.apps.match_log import MAX_SEED, MatchLog, MatchLogError, Recorder, loads
from allfours_env.cards import N_SEATS
from allfours_env.engine import Game
from allfours_env.match import Match
from allfours_env.rules import Rules

CASES = 700
CASE_SECONDS = 1.0  # the slowest case may take (a log of this size loads in milliseconds)
DEEP = "[" * 100_000 + "]" * 100_000
# Values put in place of a field; text ones are spliced into the JSON text as they are.
BAD_VALUES: list[Any] = [
    None, True, False, 0, -1, 1, 3, 55, 56, 52, 2**31, 2**63, 2**64 + 1, 10**30, -(10**30), 2**128, 1.5, 1e300, -0.0,
    "", "x", "person", "match", "deal", "allfours-match-log", [], {}, [0], [[]], [None] * 52, list(range(52)),
    list(range(51, -1, -1)), [0] * 100_000, "a" * 100_000, {"scores": [0, 0], "winner": -1}, {"target_score": 3},
]  # fmt: skip
BAD_TEXTS = ["NaN", "Infinity", "-Infinity", "1" * 5000, DEEP, "1e999999", '"\\ud800"', "[1,]", "{"]


def real_log() -> MatchLog:
    game = Game(Rules(target_score=10), np.random.default_rng(11))
    recorder = Recorder(game)
    Match(game, [make("rule_based") for _ in range(N_SEATS)], on_event=recorder).run()
    return recorder.log(["rule_based"] * N_SEATS, 11, "test")


BASE = real_log().to_json()


def paths(data: Any, rng: np.random.Generator, prefix: tuple = ()) -> list[tuple]:
    """Paths to fields of ``data``: every key, and a few random items of each list."""
    out = [prefix]
    if isinstance(data, dict):
        for key, value in data.items():
            out += paths(value, rng, (*prefix, key))
    elif isinstance(data, list) and data:
        for index in rng.choice(len(data), size=min(3, len(data)), replace=False):
            out += paths(data[int(index)], rng, (*prefix, int(index)))
    return out


def put(data: Any, path: tuple, value: Any) -> Any:
    """A deep copy of ``data`` with the field at ``path`` set to ``value`` (``data`` itself at ())."""
    if not path:
        return value
    copy = json.loads(json.dumps(data))
    node = copy
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return copy


def replace_field(rng: np.random.Generator) -> str:
    path = paths(BASE, rng)[rng.integers(1, len(paths(BASE, rng)))] if rng.random() < 0.9 else ()
    if rng.random() < 0.25:  # a text that json.dumps cannot make: spliced in
        marker = "__FUZZ__"
        return json.dumps(put(BASE, path, marker)).replace(f'"{marker}"', BAD_TEXTS[rng.integers(len(BAD_TEXTS))])
    return json.dumps(put(BASE, path, BAD_VALUES[rng.integers(len(BAD_VALUES))]), allow_nan=True)


def drop_or_add_key(rng: np.random.Generator) -> str:
    data = json.loads(json.dumps(BASE))
    keys = sorted(data)
    if rng.random() < 0.5:
        del data[keys[rng.integers(len(keys))]]
    else:
        data[f"extra{rng.integers(10)}"] = 1
    return json.dumps(data)


def change_actions(rng: np.random.Generator) -> str:
    data = json.loads(json.dumps(BASE))
    actions = data["actions"]
    i, j = (int(x) for x in rng.integers(len(actions), size=2))
    kind = rng.integers(5)
    if kind == 0:
        actions[i] = int(rng.integers(56))
    elif kind == 1:
        actions[i], actions[j] = actions[j], actions[i]
    elif kind == 2:
        del actions[i]
    elif kind == 3:
        actions.insert(i, int(rng.integers(56)))
    else:
        actions.extend([int(rng.integers(56))] * int(rng.integers(1, 50_000)))
    return json.dumps(data)


def change_decks(rng: np.random.Generator) -> str:
    data = json.loads(json.dumps(BASE))
    decks = data["decks"]
    deck = decks[rng.integers(len(decks))]
    i, j = (int(x) for x in rng.integers(52, size=2))
    kind = rng.integers(4)
    if kind == 0:
        deck[i], deck[j] = deck[j], deck[i]  # still a permutation: replays differently, or not at all
    elif kind == 1:
        deck[i] = deck[j] if i != j else 52
    elif kind == 2:
        decks.append(list(rng.permutation(52).tolist()))
    else:
        decks.extend([deck] * int(rng.integers(1, 5000)))
    return json.dumps(data)


def cut_or_flip(rng: np.random.Generator) -> bytes:
    text = bytearray(json.dumps(BASE).encode())
    if rng.random() < 0.5:
        return bytes(text[: rng.integers(len(text))])
    for _ in range(rng.integers(1, 4)):
        text[rng.integers(len(text))] = int(rng.integers(256))
    return bytes(text)


MUTATIONS: list[Callable[[np.random.Generator], str | bytes]] = [
    replace_field, replace_field, replace_field, drop_or_add_key, change_actions, change_decks, cut_or_flip,
]  # fmt: skip


def test_the_base_log_loads():
    log = loads(json.dumps(BASE))
    assert log.to_json() == BASE and len(log.actions) > 20


@pytest.mark.parametrize("block", range(7))
def test_mutated_logs_load_or_are_refused_clearly(block):
    rng = np.random.default_rng([40, block])
    outcomes = {"loaded": 0, "refused": 0}
    for case in range(CASES // 7):
        mutation = MUTATIONS[rng.integers(len(MUTATIONS))]
        text = mutation(rng)
        start = time.perf_counter()
        try:
            log = loads(text)
        except MatchLogError as error:
            assert str(error), (block, case)
            outcomes["refused"] += 1
        except Exception as error:  # noqa: BLE001 (the point: no other kind may escape)
            pytest.fail(f"block {block} case {case} ({mutation.__name__}): {type(error).__name__}: {error}"[:400])
        else:
            assert loads(log.dumps()) == log, (block, case)  # a loaded log is whole: it writes and reads back
            outcomes["loaded"] += 1
        seconds = time.perf_counter() - start
        assert seconds < CASE_SECONDS, f"block {block} case {case} ({mutation.__name__}) took {seconds:.2f} s"
    assert outcomes["refused"] > outcomes["loaded"] > 0 or outcomes["refused"] == CASES // 7, outcomes


@pytest.mark.parametrize(
    "seed, loads_ok",
    [(None, True), (0, True), (MAX_SEED, True), (-1, False), (MAX_SEED + 1, False), ("7", False), (7.0, False)],
)
def test_seed_is_null_or_128_bits(seed, loads_ok):
    text = json.dumps({**BASE, "seed": seed})
    if loads_ok:
        assert loads(text).seed == seed
    else:
        with pytest.raises(MatchLogError, match="'seed' must be null or an integer 0..2"):
            loads(text)


def test_more_actions_than_asked_refused_before_the_replay(monkeypatch):
    text = json.dumps(BASE)
    assert loads(text, max_actions=len(BASE["actions"])).actions == tuple(BASE["actions"])

    def no_replay(log: MatchLog) -> None:
        pytest.fail("the log was replayed before it was refused")

    monkeypatch.setattr(match_log, "replay", no_replay)
    with pytest.raises(MatchLogError, match=f"holds {len(BASE['actions'])} actions; at most 10 are read here"):
        loads(text, max_actions=10)
    many_decks = json.dumps({**BASE, "decks": BASE["decks"] * 2000})
    with pytest.raises(MatchLogError, match="more than .* actions can deal"):
        loads(many_decks)
