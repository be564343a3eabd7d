"""Command-line options the commands state the same way."""

from __future__ import annotations

import argparse


def number_option(parser: argparse.ArgumentParser, flag: str, default: float, help: str) -> None:
    """``flag``, a number of ``default``'s type, its help ending with the default: ``help (default 30)``."""
    shown = f"{default:g}" if isinstance(default, float) else str(default)
    parser.add_argument(flag, type=type(default), default=default, help=f"{help} (default {shown})")
