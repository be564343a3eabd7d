"""The run, top to bottom: the warm start, the rounds of expert iteration, the last step and PPO
(:mod:`train.run.pipeline`), with its plan and time left (``plan``, ``rates``, ``calibration``)
and the command's entry (``command``). Torch and SB3 load only when a name below is first used."""

from importlib import import_module
from typing import Any

_EXPORTS = {  # name -> the module that defines it
    "train": "train.run.pipeline", "train_in_held_run": "train.run.pipeline",
    "make_vec_env": "train.ppo.trainer", "new_model": "train.ppo.trainer",
}


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'train.run' has no attribute {name!r}")
    return getattr(import_module(_EXPORTS[name]), name)
