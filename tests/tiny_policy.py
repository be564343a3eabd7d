"""A tiny, untrained MaskablePPO checkpoint (.zip) for tests that need a real SB3 file."""

from __future__ import annotations

from pathlib import Path

TINY_NET = [8]


def save_tiny_checkpoint(path: Path) -> Path:
    """Save an untrained MaskablePPO model with one hidden layer of 8 units to ``path``."""
    from train.config import config_from_dict
    from train.ppo.trainer import make_vec_env, new_model

    config = config_from_dict(
        {"run_name": "tiny", "output_dir": str(path.parent), "n_envs": 1, "net_arch": TINY_NET, "imitate": "",
         "n_steps": 64, "batch_size": 64, "critic_arch": [], "critic_sees_hands": False}
    )  # fmt: skip
    model = new_model(config, make_vec_env(config))
    model.save(path)
    return path
