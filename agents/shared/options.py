"""Command-line options the commands and the benchmark scripts state the same way, and how a script ends on a stop."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any


def number_option(parser: argparse.ArgumentParser, flag: str, default: float, help: str) -> None:
    """``flag``, a number of ``default``'s type, its help ending with the default: ``help (default 30)``."""
    shown = f"{default:g}" if isinstance(default, float) else str(default)
    parser.add_argument(flag, type=type(default), default=default, help=f"{help} (default {shown})")


def count(minimum: int, maximum: int) -> Callable[[str], int]:
    """An argparse type: an integer in minimum..maximum (a bad one is the parser's error, exit 2)."""
    return _within(int, "an integer", minimum, maximum, f"{minimum:,}..{maximum:,}")


def number(minimum: float, maximum: float) -> Callable[[str], float]:
    """An argparse type: a finite number in minimum..maximum (a bad one is the parser's error, exit 2)."""
    return _within(float, "a number", minimum, maximum, f"{minimum:g}..{maximum:g}")


def _within(
    convert: Callable[[str], Any], kind: str, minimum: float, maximum: float, span: str
) -> Callable[[str], Any]:
    def parse(text: str) -> Any:
        try:
            value = convert(text)
        except ValueError:  # (an integer of over 4,300 digits too)
            raise argparse.ArgumentTypeError(f"expected {kind}, got {text[:40]!r}") from None
        if not minimum <= value <= maximum:  # (NaN is in no range)
            raise argparse.ArgumentTypeError(f"must be in {span}, got {text[:40]}")
        return value

    return parse


def run_script(main: Callable[[], int | None], prog: str) -> int:
    """A script's exit code: ``main()``'s (0 for None); Ctrl-C or SIGTERM ends it with one line
    (exit code 130 or 143), not a traceback."""
    from .processes import exit_on_stop, handle_stops

    handle_stops()
    try:
        return main() or 0
    except (KeyboardInterrupt, SystemError) as error:
        return exit_on_stop(error, f"{prog}: {{stop}}")
