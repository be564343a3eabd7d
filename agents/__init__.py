"""Bots that act from their own observation only: ``agents.make("random")`` (see agents.base)."""

from .base import Bot, known_bots, make, single_agent_env, vector_env

__all__ = ["Bot", "known_bots", "make", "single_agent_env", "vector_env"]
