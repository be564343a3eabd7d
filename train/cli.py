"""The command-line flags that ``python -m train`` takes with either backend (SB3 or RLlib) and
``python -m train.exploit`` with it, the one config they make, and :func:`run_command`, their
exit code with a stop at any moment one line. Light to import: a stop during start-up is caught."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from train.config import Adjust


def add_run_arguments(parser: argparse.ArgumentParser, default_config: Path, steps_help: str) -> None:
    """``--config``, ``--total-steps``, ``--seed``, ``--run-name``, ``--output-dir``, ``--resume``,
    ``--quiet`` and ``--rule``."""
    from agents.shared.options import count

    from train.config import MAX_SEED, MAX_STEPS, shipped_configs

    parser.add_argument(
        "--config", help=f"YAML config file, or a shipped config's name: {shipped_configs()} (default: "
        f"{default_config.stem}; with --resume: the run's own config.yaml)",
    )
    parser.add_argument("--total-steps", type=count(1, MAX_STEPS), help=steps_help)
    parser.add_argument("--seed", type=count(0, MAX_SEED), help="seed of the run")
    parser.add_argument("--run-name", help="folder name of the run under the output folder")
    parser.add_argument("--output-dir", help="where runs are written (default: runs)")
    parser.add_argument("--resume", action="store_true", help="continue the run from its last checkpoint")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    parser.add_argument(
        "--rule", action="append", default=[], metavar="KEY=VALUE",
        help="rule variant (README, Rule variants), repeatable, merged into the config's rules, "
        "e.g. --rule target_score=7",
    )  # fmt: skip


def config_from_args(
    parser: argparse.ArgumentParser, args: argparse.Namespace, cls: type, adjust: Adjust | None = None
) -> tuple[Any, Path]:  # fmt: skip
    """The run's config (of class ``cls``, either backend's) and its file, from
    :func:`add_run_arguments`' flags (resuming without ``--config``: the run's own saved config) and
    ``adjust``'s changes, made and checked once. A usage error for a malformed ``--rule`` or one with
    ``--resume`` (a resumed run keeps the rules it started with); ConfigError or ResumeError say what
    else is wrong."""
    from train.run_folder.checkpoints import ResumeError, candidates, saved_config_file
    from allfours_env.rules import rule_values
    from train.config import read_config, run_folder

    if args.rule and args.resume:
        parser.error("--rule cannot change a resumed run: it keeps the rules it started with")
    try:
        rules = rule_values(args.rule)
    except ValueError as err:
        parser.error(str(err))
    saved_run = args.resume and args.config is None
    config_file = args.config or cls.DEFAULTS_FILE
    if saved_run:
        run_dir = run_folder(args.run_name, args.output_dir, cls)
        config_file = saved_config_file(run_dir)
        if config_file is None:
            raise ResumeError(
                f"{run_dir} has no config.yaml and its checkpoints hold no copy; resume with --config naming the "
                "config the run was started with" if candidates(run_dir) else f"nothing to resume: no run in {run_dir}"
            )
    overrides = {name: getattr(args, name) for name in ("total_steps", "seed", "run_name", "output_dir")}  # None: unset
    return read_config(cls, config_file, saved_run, rules, adjust, **overrides), config_file


def run_command(body: Callable[[list[str]], int], argv: list[str]) -> int:
    """``body(argv)``'s exit code; Ctrl-C or SIGTERM anywhere, imports included, ends it with one
    line and exit code 130 (143 for SIGTERM)."""
    from agents.shared.processes import caught_stop, exit_code, handle_stops, stop_name

    handle_stops()
    try:
        return body(argv)
    except (KeyboardInterrupt, SystemError) as error:
        stop = caught_stop(error)
        if stop is None:
            raise
        print(str(stop) or f"[train] {stop_name(stop)} before training started: start it again with the same command",
              file=sys.stderr)  # fmt: skip
        return getattr(stop, "code", exit_code(stop))
