"""``python -m train``: self-play training from a YAML config (default: configs/default.yaml).

    python -m train                                   # the real run, into runs/default/
    python -m train --config configs/quick.yaml       # a one-minute smoke run
    python -m train --run-name try1 --total-steps 500000 --seed 3
    python -m train --run-name try1 --resume          # continue an interrupted run
    python -m train --rule target_score=7 --rule kick_points=tobago   # a rule variant
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

from allfours_env.rules import parse_rule_options

from .checkpoints import ResumeError
from .config import DEFAULT_CONFIG, ConfigError, load_config


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m train", description="Self-play MaskablePPO training for All Fours.")
    parser.add_argument("--config", default=str(DEFAULT_CONFIG), help="YAML config file (default: %(default)s)")
    parser.add_argument("--total-steps", type=int, help="environment steps to train for")
    parser.add_argument("--seed", type=int, help="seed of the run")
    parser.add_argument("--run-name", help="folder name of the run under the output folder")
    parser.add_argument("--output-dir", help="where runs are written (default: runs)")
    parser.add_argument("--resume", action="store_true", help="continue the run from its last checkpoint")
    parser.add_argument("--quiet", action="store_true", help="no progress lines")
    parser.add_argument(
        "--rule", action="append", default=[], metavar="KEY=VALUE",
        help="rule variant (README, Rule variants), repeatable, merged into the config's rules, "
        "e.g. --rule target_score=7",
    )  # fmt: skip
    args = parser.parse_args(argv)
    if args.rule and args.resume:
        parser.error("--rule cannot change a resumed run: it keeps the rules it started with")
    try:
        rules = parse_rule_options(args.rule)
    except ValueError as err:
        parser.error(str(err))
    try:
        config = load_config(
            args.config, total_steps=args.total_steps, seed=args.seed, run_name=args.run_name, output_dir=args.output_dir
        )
        if rules:
            config = dataclasses.replace(config, rules={**config.rules, **rules})
        from .run import train  # imported here so that config errors come fast, before torch loads

        final = train(config, resume=args.resume, progress=not args.quiet)
    except (ConfigError, ResumeError) as err:
        parser.exit(2, f"python -m train: error: {err}\n")
    print(f"final policy: {final} (and {final.with_suffix('.npz')}); tensorboard --logdir {config.run_dir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
