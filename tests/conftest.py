"""Session-wide settings for the tests."""

import os

import pytest


@pytest.fixture(autouse=True, scope="session")
def sb3_logs_in_pytest_tmp(tmp_path_factory: pytest.TempPathFactory) -> None:
    """stable-baselines3 makes an empty ``SB3-<time>`` folder in the system's temporary folder for each
    ``learn()`` without a tensorboard folder (the tests' small models, the SB3 example run as a
    subprocess): send them to pytest's own temporary folders, which pytest prunes."""
    os.environ.setdefault("SB3_LOGDIR", str(tmp_path_factory.mktemp("sb3")))
