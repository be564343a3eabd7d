"""Duplicate evaluation of All Fours bots (``python -m eval``; library: :func:`evaluate`).

>>> import eval
>>> result = eval.evaluate("random", "random", boards=10)   # -> PairResult
>>> result.win_rate, result.win_rate_ci

Boards (eval/boards.py) are seeds in their own namespace, :data:`EVAL_NAMESPACE`: training must
draw its seeds from another one. Definitions of every statistic: eval/results.py.
:func:`play_board` plays one board's duplicate pair of matches, with a per-decision hook.
"""

from .api import evaluate, round_robin
from .boards import EVAL_NAMESPACE
from .play import BoardRecord, MatchRecord, play_board
from .results import BotStats, PairResult, Rating, TournamentResult

__all__ = [
    "EVAL_NAMESPACE", "BoardRecord", "BotStats", "MatchRecord", "PairResult", "Rating", "TournamentResult",
    "evaluate", "play_board", "round_robin",
]  # fmt: skip
