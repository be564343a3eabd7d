"""``python -m train``: train an All Fours policy from a YAML config (default: configs/default.yaml):
expert iteration (search labels the decisions, a network is fitted to them, for a few rounds),
then MaskablePPO self-play from that network; or Ray RLlib's PPO (``--backend rllib``).

    python -m train                                   # the real run, into runs/default/
    python -m train --config quick                    # a one-minute smoke run (configs/quick.yaml, by name or path)
    python -m train --run-name try1 --total-steps 500000 --seed 3
    python -m train --run-name try1 --resume          # continue an interrupted run (its own config)
    python -m train --run-name try1 --resume --total-steps 4000000   # extend it
    python -m train --rule target_score=7 --rule kick_points=tobago   # a rule variant
    python -m train --backend rllib --config configs/rllib.yaml       # on Ray RLlib (train/rllib/cli.py)

The config, the output folder and the run lock are checked before torch is imported, so a bad
value or a second run of the same folder is refused at once. Stops (exit 130, 143 for SIGTERM) and
a disk that refuses a write (exit 74) are one line saying what was kept and how to go on (README,
"Reliability"); progress lines: train/run_folder/progress.py, train/run/plan.py.
"""

from __future__ import annotations

import os
import sys
BACKENDS = ("sb3", "rllib")


def main(argv: list[str] | None = None) -> int:
    from train.cli import run_command

    return run_command(_main, sys.argv[1:] if argv is None else argv)


def _main(argv: list[str]) -> int:
    import argparse

    backend = argparse.ArgumentParser(add_help=False)
    backend.add_argument("--backend", choices=BACKENDS, default="sb3")
    known, _ = backend.parse_known_args(argv)
    if known.backend == "rllib":
        from train.rllib.cli import main as rllib_main  # imports Ray only when it runs

        return rllib_main(argv)

    from agents.shared.processes import USAGE_EXIT

    from train.cli import add_run_arguments, config_from_args
    from train.config import DEFAULT_CONFIG, ConfigError, TrainConfig
    from train.run_folder.checkpoints import ResumeError

    parser = argparse.ArgumentParser(
        prog="python -m train",
        description="Train an All Fours policy: expert iteration (search labels, a distilled student), then "
        "MaskablePPO self-play; or Ray RLlib's PPO (--backend rllib).",
    )
    parser.add_argument("--backend", choices=BACKENDS, default="sb3", help="sb3 (default) or rllib (Ray RLlib)")
    add_run_arguments(parser, DEFAULT_CONFIG, "environment steps to train for")
    parser.add_argument(
        "--address", help="HOST:PORT of a Ray cluster whose workers make the rounds' search labels (the same labels; "
        "needs the rllib extra)",
    )  # fmt: skip
    args = parser.parse_args(argv)
    try:
        config, config_file = config_from_args(parser, args, TrainConfig)
        if args.address:
            from train.rounds.labels_ray import check_address

            check_address(args.address)
    except (ConfigError, ResumeError, ValueError) as err:
        parser.exit(USAGE_EXIT, f"python -m train: error: {err}\n")
    from train.run.command import train_config

    return train_config(
        config, args.resume, args.quiet, config_file, extend=args.total_steps is not None, address=args.address
    )


if __name__ == "__main__":
    code = main()
    if code in (130, 143):  # stopped by a signal, all saved and closed: skip the second or two of torch's teardown
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)
