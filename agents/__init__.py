"""Bots that act from their own observation only (see agents.base)."""
