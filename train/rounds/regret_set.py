"""``python -m train.regret_set LABELS OUT.npz``: a decision set of ``python -m eval.regret`` from a label set.

A label set (:mod:`train.rounds.label_set`) made with ``--margin 0`` holds what a decision set needs: each
decision's observation, legal mask and every legal action's searched value. This keeps those three
columns and the settings that say how they were made (the player whose play reached the positions,
the worlds and rollouts of the search, the seed), and writes them as one compressed file
(:func:`eval.regret.write_set`). The shipped sets were made so (docs/results.md, "The regret
benchmark").
"""

from __future__ import annotations

import argparse
from dataclasses import asdict
from pathlib import Path

import numpy as np

from eval.regret import write_set

from train.rounds.label_set import LabelSetError, iter_shards, read_meta


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m train.regret_set", description=__doc__.splitlines()[0])
    parser.add_argument("labels", type=Path, help="a complete label set's folder (python -m train.labels --margin 0)")
    parser.add_argument("out", type=Path, help="the decision set's file (.npz)")
    args = parser.parse_args(argv)
    if args.out.suffix != ".npz":
        parser.error(f"the decision set's file ends in .npz, got {str(args.out)!r}")
    try:
        settings = read_meta(args.labels)
        if settings.margin:
            parser.error(f"{args.labels} was labelled with margin {settings.margin}: a decision set needs --margin 0")
        shards = list(iter_shards(args.labels))
    except (LabelSetError, OSError) as err:
        parser.error(str(err))
    columns = {key: np.concatenate([shard[key] for shard in shards]) for key in ("observation", "action_mask", "values")}
    try:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        write_set(args.out, columns["observation"], columns["action_mask"], columns["values"], asdict(settings))
    except OSError as err:
        parser.error(f"cannot write {str(args.out)!r}: {err.strerror or err}")
    print(f"{args.out}: {len(columns['values']):,} decisions, {args.out.stat().st_size / 1e6:.2f} MB")
    return 0

