"""Rewards from the engine's event log, shared by the AEC env and the single-agent env.

``reward="match"``: the match end pays 1 to the winning team. ``reward="points"``: every award
(kick, give one, high, low, jack, hang jack, game) pays its points to the scoring team. Both
envs are zero-sum: what a team is paid, the other team loses.
"""

from __future__ import annotations

from .engine import AWARD_KINDS, MATCH_END, Event

REWARD_MODES = ("match", "points")


def event_reward(event: Event, mode: str) -> int:
    """What ``event`` pays to its team (``event.team``) under reward ``mode``; 0 for most events."""
    if mode == "points":
        return event.points if event.kind in AWARD_KINDS else 0
    return 1 if event.kind == MATCH_END else 0
