"""``python -m train --backend rllib``: PPO self-play on Ray RLlib, locally or on a cluster.

    python -m train --backend rllib --config configs/rllib.yaml
    python -m train --backend rllib --run-name r1 --resume                 # continue a run
    python -m train --backend rllib --address 10.0.0.5:6379                # on a running Ray cluster

Importable without Ray: a missing install is one line saying what to install.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

from eval.run_lock import RunInUseError

from ..checkpoints import ResumeError, WriteFailed, saved_config_file
from ..cli import add_run_arguments, rule_options
from ..config import ConfigError, run_folder
from .cluster import ADDRESS_ENV, ClusterError
from .config import RLLIB_CONFIG, RLlibConfig, load_rllib_config

INTERRUPTED_EXIT = 130
PROG = "python -m train --backend rllib"
MISSING_RAY = f"{PROG}: error: Ray RLlib is not installed; install it with: pip install -e '.[rllib]'\n"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog=PROG, description="Self-play PPO for All Fours on Ray RLlib.")
    parser.add_argument("--backend", choices=["rllib"], default="rllib", help=argparse.SUPPRESS)
    add_run_arguments(parser, RLLIB_CONFIG, "environment steps (the learner's decisions) to train for")
    parser.add_argument(
        "--address", help=f"HOST:PORT of a running Ray cluster's head (default: ${ADDRESS_ENV}, else a local Ray)"
    )
    args = parser.parse_args(argv)
    try:
        import ray  # noqa: F401
    except ImportError:
        parser.exit(2, MISSING_RAY)
    rules = rule_options(parser, args)
    config_file = args.config or RLLIB_CONFIG
    try:
        if args.resume and args.config is None:
            run_dir = run_folder(args.run_name, args.output_dir, RLlibConfig)
            config_file = saved_config_file(run_dir)
            if config_file is None:
                parser.exit(2, f"{PROG}: error: nothing to resume: no run in {run_dir}\n")
        config = load_rllib_config(
            config_file, total_steps=args.total_steps, seed=args.seed, run_name=args.run_name,
            output_dir=args.output_dir,
        )  # fmt: skip
        if rules:
            config = dataclasses.replace(config, rules={**config.rules, **rules})
        from .run import train  # Ray and torch load only now, after the arguments are checked

        final = train(
            config, resume=args.resume, progress=not args.quiet, extend=args.total_steps is not None,
            address=args.address,
        )  # fmt: skip
    except (ConfigError, ResumeError, RunInUseError, ClusterError) as err:
        parser.exit(2, f"{PROG}: error: {err}\n")
    except WriteFailed as err:  # a checkpoint the disk refused: no temporary folder left, the previous one kept
        print(f"[train] {err}", file=sys.stderr)
        return err.code
    except KeyboardInterrupt as err:
        print(str(err) or "[train] interrupted before training started; nothing was written", file=sys.stderr)
        return INTERRUPTED_EXIT
    print(f"final policy: {final}; tensorboard --logdir {config.run_dir}")
    return 0
