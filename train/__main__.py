"""``python -m train``: self-play training from a YAML config (default: configs/default.yaml).

    python -m train                                   # the real run, into runs/default/
    python -m train --config configs/quick.yaml       # a one-minute smoke run
    python -m train --run-name try1 --total-steps 500000 --seed 3
    python -m train --run-name try1 --resume          # continue an interrupted run (its own config)
    python -m train --run-name try1 --resume --total-steps 4000000   # extend it
    python -m train --rule target_score=7 --rule kick_points=tobago   # a rule variant
    python -m train --backend rllib --config configs/rllib.yaml       # on Ray RLlib (train/rllib/cli.py)
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys

from .checkpoints import ResumeError
from .cli import add_run_arguments, rule_options
from .config import DEFAULT_CONFIG, ConfigError, load_config, run_config_file
from .lock import RunInUseError

INTERRUPTED_EXIT = 130  # the shell's code for a process ended by SIGINT
BACKENDS = ("sb3", "rllib")


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    backend = argparse.ArgumentParser(add_help=False)
    backend.add_argument("--backend", choices=BACKENDS, default="sb3")
    known, _ = backend.parse_known_args(argv)
    if known.backend == "rllib":
        from .rllib.cli import main as rllib_main  # imports Ray only when it runs

        return rllib_main(argv)
    parser = argparse.ArgumentParser(prog="python -m train", description="Self-play MaskablePPO training for All Fours.")
    parser.add_argument("--backend", choices=BACKENDS, default="sb3", help="sb3 (default) or rllib (Ray RLlib)")
    add_run_arguments(parser, DEFAULT_CONFIG, "environment steps to train for")
    args = parser.parse_args(argv)
    rules = rule_options(parser, args)
    config_file = args.config or DEFAULT_CONFIG
    if args.resume and args.config is None:
        config_file = run_config_file(args.run_name, args.output_dir)
        if not config_file.is_file():
            parser.exit(2, f"python -m train: error: nothing to resume: no run in {config_file.parent}\n")
    try:
        config = load_config(
            config_file, total_steps=args.total_steps, seed=args.seed, run_name=args.run_name, output_dir=args.output_dir
        )
        if rules:
            config = dataclasses.replace(config, rules={**config.rules, **rules})
        from .run import train  # imported here so that config errors come fast, before torch loads

        final = train(config, resume=args.resume, progress=not args.quiet, extend=args.total_steps is not None)
    except (ConfigError, ResumeError, RunInUseError) as err:
        parser.exit(2, f"python -m train: error: {err}\n")
    except KeyboardInterrupt as err:
        print(str(err) or "[train] interrupted before training started; nothing was written", file=sys.stderr)
        return INTERRUPTED_EXIT
    print(f"final policy: {final} (and {final.with_suffix('.npz')}); tensorboard --logdir {config.run_dir}")
    return 0


if __name__ == "__main__":
    code = main()
    if code == INTERRUPTED_EXIT:  # all is saved and closed: skip the second or two of torch's teardown
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)
