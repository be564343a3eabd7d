"""Bots that act from their own observation only: ``agents.make("random")`` (see agents.base).

The names below load on first use, so that a command of the project imports
:mod:`agents.shared.processes` (its stops and workers) and answers a Ctrl-C before the engine loads.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["Bot", "known_bots", "make", "player_bots", "single_agent_env", "vector_env"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'agents' has no attribute {name!r}")
    return getattr(importlib.import_module(".base", __name__), name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
