"""Match logs of an evaluation's first boards (``python -m eval ... --logs DIR --log-boards N``).

After the evaluation, the first ``N`` boards of every pair are played again in this process, each
match exactly as :func:`eval.play.play_board` plays it (the board's decks, first dealer and bot
seeds, bot A on team 0 then on team 1), with a :class:`agents.apps.match_log.Recorder` on the match
loop, and each match is written as a match log (docs/match_log.md): ``DIR/A_vs_B_board7_a0.json``
(``a0``: A on team 0, ``a1``: on team 1). Every bot that does not depend on the clock plays them
exactly as in the evaluation; a search with a time budget (``search``, ``ms`` > 0) may choose
otherwise where the machine is slower or faster than it was then.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from agents.apps.match_log import Recorder, write
from allfours_env.cards import N_SEATS
from allfours_env.match import Match

from .api import Plan
from .boards import make_board
from .play import board_games

SEATS_PER_TEAM = 2


def log_name(names: Sequence[str], board: int, a_team: int) -> str:
    """``A_vs_B_board7_a0.json``, bot names made safe as file names (a policy path has slashes)."""
    a, b = (re.sub(r"[^A-Za-z0-9_.=,#-]+", "_", name).strip("._") or "bot" for name in names)
    return f"{a}_vs_{b}_board{board}_a{a_team}.json"


def write_match_logs(plan: Plan, folder: Path, boards: int) -> list[Path]:
    """Play and log both matches of the first ``boards`` boards of every pair; the files written."""
    written = []
    for a, b in plan.pairs:
        a_bots = [plan.factories[a]() for _ in range(SEATS_PER_TEAM)]
        b_bots = [plan.factories[b]() for _ in range(SEATS_PER_TEAM)]
        for board_id in list(plan.boards)[:boards]:
            board = make_board(board_id, plan.rules)
            for a_team, seat_bots, game in board_games(board, a_bots, b_bots, plan.rules, plan.episode):
                recorder = Recorder(game)
                Match(game, seat_bots, on_event=recorder).run()
                players = [plan.names[a] if seat % 2 == a_team else plan.names[b] for seat in range(N_SEATS)]
                path = folder / log_name((plan.names[a], plan.names[b]), board_id, a_team)
                write(recorder.log(players, None, f"eval board {board_id}"), path)
                written.append(path)
    return written
