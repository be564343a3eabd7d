"""Utilities every command of the project uses (agents' apps, eval and train alike): files written
whole or not at all, safe ``.npz`` reading, stops, workers and exit codes. Nothing here imports
the engine, so a command can load them before it."""
