"""``python -m train --backend rllib``: PPO self-play on Ray RLlib, locally or on a cluster.

    python -m train --backend rllib --config configs/rllib.yaml
    python -m train --backend rllib --run-name r1 --resume                 # continue a run
    python -m train --backend rllib --address 10.0.0.5:6379                # on a running Ray cluster

Importable without Ray: a missing install is one line saying what to install.
"""

from __future__ import annotations

import argparse
import sys

from eval.run_lock import RunInUseError

from train.cli import add_run_arguments, config_from_args
from train.config import ConfigError
from train.ray_cluster import ADDRESS_ENV, ClusterError
from train.rllib.config import RLLIB_CONFIG, RLlibConfig
from train.run_folder.checkpoints import ResumeError, WriteFailed

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
    try:
        config, _ = config_from_args(parser, args, RLlibConfig)
        from train.rllib.run import train  # Ray and torch load only now, after the arguments are checked

        final = train(
            config, resume=args.resume, progress=not args.quiet, extend=args.total_steps is not None,
            address=args.address,
        )  # fmt: skip
    except (ConfigError, ResumeError, RunInUseError, ClusterError) as err:
        parser.exit(2, f"{PROG}: error: {err}\n")
    except WriteFailed as err:  # a checkpoint the disk refused: no temporary folder left, the previous one kept
        print(f"[train] {err}", file=sys.stderr)
        return err.code
    print(f"final policy: {final}; tensorboard --logdir {config.run_dir}")
    return 0
