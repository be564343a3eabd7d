"""Registers the bots that ship with the project under their short names."""

from .base import register
from .random_bot import RandomBot

register("random", RandomBot)
