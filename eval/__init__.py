"""Duplicate evaluation of All Fours bots (``python -m eval``; library: :func:`evaluate`).

>>> import eval
>>> result = eval.evaluate("random", "random", boards=10)   # -> PairResult
>>> result.win_rate, result.win_rate_ci

Boards (eval/boards.py) are seeds in their own namespace, :data:`EVAL_NAMESPACE`: training must
draw its seeds from another one. Definitions of every statistic: eval/results.py.
:func:`play_board` plays one board's duplicate pair of matches, with a per-decision hook.

The names below load on first use, so that ``python -m eval`` starts (and answers a Ctrl-C) before
the engine and the bots are imported.
"""

from __future__ import annotations

import importlib
from typing import Any

_HOMES = {
    "evaluate": ".api", "round_robin": ".api", "EVAL_NAMESPACE": ".boards", "BoardRecord": ".play",
    "MatchRecord": ".play", "play_board": ".play", "BotStats": ".results", "PairResult": ".results",
    "Rating": ".results", "TournamentResult": ".results",
}  # fmt: skip
__all__ = sorted(_HOMES)


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'eval' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name], __name__), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
