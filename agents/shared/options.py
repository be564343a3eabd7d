"""Command-line options the commands state the same way."""

from __future__ import annotations

import argparse
from collections.abc import Callable


def number_option(parser: argparse.ArgumentParser, flag: str, default: float, help: str) -> None:
    """``flag``, a number of ``default``'s type, its help ending with the default: ``help (default 30)``."""
    shown = f"{default:g}" if isinstance(default, float) else str(default)
    parser.add_argument(flag, type=type(default), default=default, help=f"{help} (default {shown})")


def count(minimum: int, maximum: int) -> Callable[[str], int]:
    """An argparse type: an integer in minimum..maximum (a bad one is the parser's error, exit 2)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text[:40]!r}") from None
        if not minimum <= value <= maximum:
            raise argparse.ArgumentTypeError(f"must be in {minimum:,}..{maximum:,}, got {value}")
        return value

    return parse
