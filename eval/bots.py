"""Bot sources: what ``evaluate`` accepts as a bot, turned into factories and display names.

A bot source is one of

* a spec string for :func:`agents.make` (``"random"``, ``"rule_based"``, a checkpoint path);
  the only kind that worker processes are guaranteed to receive, being picklable;
* a bot factory: a class or zero-argument callable returning a new bot;
* a bot instance (e.g. a training policy passed in-process with ``workers=1``): it then plays
  both seats of its team, so it must not keep per-seat state between ``act`` calls.

Each seat gets its own instance where the source can build one, and every instance is
``reset(seed)`` at the start of each match, so results depend only on the boards.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial

import agents
from agents import Bot

BotSource = str | Callable[[], Bot] | Bot
BotFactory = Callable[[], Bot]


def _same_instance(bot: Bot) -> Bot:
    return bot


def bot_factory(source: BotSource) -> BotFactory:
    """A zero-argument callable building the bot of ``source``; raises TypeError for anything else."""
    if isinstance(source, str):
        return partial(agents.make, source)
    if isinstance(source, type):
        return source
    if isinstance(source, Bot):
        return partial(_same_instance, source)
    if callable(source):
        return source
    raise TypeError(f"a bot must be a spec string, a bot factory or a bot instance, got {source!r}")


def check_bots(sources: Sequence[BotSource]) -> tuple[list[BotFactory], list[str]]:
    """Factories and unique display names for ``sources``, building each bot once to validate it.

    Unknown specs raise ValueError and missing checkpoint files FileNotFoundError (from
    :func:`agents.make`). Repeated names get a ``#2``, ``#3`` ... suffix.
    """
    factories = [bot_factory(s) for s in sources]
    names: list[str] = []
    for source, factory in zip(sources, factories):
        bot = factory()
        name = source if isinstance(source, str) else str(getattr(bot, "name", type(bot).__name__))
        unique, k = name, 1
        while unique in names:
            k += 1
            unique = f"{name}#{k}"
        names.append(unique)
    return factories, names
