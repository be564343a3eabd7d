"""When a bot's move reaches the page in play mode: on a schedule its hand cannot change.

A bot's decision takes longer the more legal actions it weighs: a search with one legal action
answers at once, with two or more in milliseconds, more with each (``search:ms=0,worlds=64``: 13 ms
at two, 90 ms at nine). Were a move sent as soon as it is made, the time a response takes would
tell the person how many cards the bot could play, and a forced follow that it holds no other card
of the suit led, which the rules hide. So in play mode each bot move is released
``release_seconds(bot)`` after the server began the request (the bot's decision, the move, the new
table: all of it inside), whatever the decision took; the time depends on the bot's settings, which
the page chose, and on nothing the bot holds. The move's response carries no time either (a watch,
where nothing is hidden from the page, has ``think_ms`` and ``server_ms``), and its fields are the
person's view of the table and the move played.

The release time is the bot's worst decision with a margin (``MARGIN`` times, for a machine under
load), plus ``FLOOR_SECONDS``: for a bot that decides in about a millisecond (all but search) the
floor alone, 20 ms; for a search, the worlds it searches at most (``worlds``, or ``confirm``) at
``SECONDS_PER_WORLD`` (a plain search's world among the most legal actions, measured 1.4 ms at
nine) times what its options cost a world (:func:`agents.apps.web.players.world_cost`), or, under
a time budget, the budget and one batch of ``BATCH_WORLDS`` worlds if that is less: the default
``search`` (64 worlds, 100 ms) is released after 0.21 s, ``search_v1`` (64 worlds, no budget)
after 0.21 s, the costliest search the page takes after about 3 s. The page's own pause between
bot moves (0.8 s at its normal pace) is longer than most of these.

A decision that overruns its release time anyway (a machine far busier than the margin, which a
client can make it by loading the server, or a bot's first decision in the process, which loads
its compiled code) is released at the next multiple of the release time, and that bot's release
time doubles for the rest of the match (up to ``MAX_SECONDS``, short of the wait of another
request of the match for its lock): the person may learn that one decision was slow, a few times
a match at most (five doublings take a search from 0.21 s to the most), never its time.

What the schedule does not hide: the load a decision puts on the server while it is made. The
bots think in the server's process, so a client that times other requests meanwhile (many small
ones, on a second connection) sees them a little slower while a bot weighs several actions than
while it waits out a forced one: against ``search:ms=0,worlds=64``, over 132 moves, the slowest
of about 110 concurrent ``GET /api/options`` took 18 ms (median over the moves) during a choice
and 13 ms during a forced move, their mean 2.7 ms and 2.5 ms. Closing that needs the bots to
think outside the server's process.
"""

from __future__ import annotations

import math

from ...base import Bot
from ...search import SearchBot
from .players import world_cost

FLOOR_SECONDS = 0.02
SECONDS_PER_WORLD = 0.002
BATCH_WORLDS = 12  # the most worlds a search's batch under a budget holds among nine legal actions or more
MARGIN = 1.5
MAX_SECONDS = 8.0  # the longest an overrun makes a release time (a request waits 10 s for a match's lock)


def release_seconds(bot: Bot | None) -> float:
    """How long after a request begins ``bot``'s move is released in play mode (the module docstring)."""
    if not isinstance(bot, SearchBot):
        return FLOOR_SECONDS
    per_world = SECONDS_PER_WORLD * world_cost(bot)
    worst = max(bot.worlds, bot.confirm) * per_world
    if bot.ms:
        worst = min(worst, bot.ms / 1000 + BATCH_WORLDS * per_world)
    return FLOOR_SECONDS + MARGIN * worst


class ReleaseSchedule:
    """Each seat's release time in one match (None for the person's seat)."""

    def __init__(self, bots: list[Bot | None]) -> None:
        self.seconds = [None if bot is None else release_seconds(bot) for bot in bots]

    def release_after(self, seat: int, elapsed: float) -> float:
        """When, in seconds after its request began, to release the move of ``seat`` that took
        ``elapsed`` seconds to make: its release time, or past an overrun the next multiple of it."""
        release = self.seconds[seat]
        assert release is not None, "the person's seat has no bot to release"
        if elapsed <= release:
            return release
        self.seconds[seat] = max(release, min(2 * release, MAX_SECONDS))  # (overrun: see the module docstring)
        return release * math.ceil(elapsed / release)
