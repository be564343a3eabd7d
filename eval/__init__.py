"""Duplicate evaluation of bots (python -m eval)."""
