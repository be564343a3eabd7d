"""The seal on RLlib's pickled checkpoints (train/run_folder/seal.py) covers the tree as RLlib reads it: no
link, FIFO, device or unsealed folder passes, and the key is this account's alone. Plain Python:
these run without Ray."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.fuzz import hang_fails
from train.run_folder import seal as seal_module
from train.run_folder.seal import KEY_ENV, SealError, seal, verify

HANG_SECONDS = 5


@pytest.fixture(autouse=True)
def no_hang() -> Iterator[None]:
    """A check that blocks (on a FIFO) fails the test instead of hanging it."""
    with hang_fails(HANG_SECONDS, "the seal check blocked"):
        yield


@pytest.fixture
def key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "keys" / "mine.key"
    monkeypatch.setenv(KEY_ENV, str(path))
    return path


@pytest.fixture
def sealed(tmp_path: Path, key: Path) -> Path:
    """A sealed checkpoint: pickles in a sub-folder, a JSON file, and an empty folder RLlib made."""
    folder = tmp_path / "step_0000001000"
    (folder / "learner").mkdir(parents=True)
    (folder / "learner" / "state.pkl").write_bytes(b"pickled by RLlib")
    (folder / "empty_by_rllib").mkdir()
    (folder / "progress.json").write_text('{"steps": 1000}')
    seal(folder)
    verify(folder)
    return folder


def test_a_sealed_tree_with_an_empty_folder_verifies_and_the_key_is_private(sealed: Path, key: Path) -> None:
    assert key.stat().st_mode & 0o777 == 0o600
    assert key.parent.stat().st_mode & 0o077 == 0
    entries = json.loads((sealed / "seal.json").read_text())["entries"]
    assert entries["empty_by_rllib"] == "folder" and entries["learner"] == "folder"


def test_a_symlinked_folder_holding_a_pickle_is_refused(sealed: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "payload.pkl").write_bytes(b"someone else's pickle")
    (sealed / "learner" / "more").symlink_to(elsewhere, target_is_directory=True)
    with pytest.raises(SealError, match="holds a symbolic link, learner/more"):
        verify(sealed)


def test_a_file_replaced_by_a_link_to_an_identical_copy_is_refused(sealed: Path, tmp_path: Path) -> None:
    copy = tmp_path / "copy.pkl"
    shutil.copy(sealed / "learner" / "state.pkl", copy)
    (sealed / "learner" / "state.pkl").unlink()
    (sealed / "learner" / "state.pkl").symlink_to(copy)
    with pytest.raises(SealError, match="holds a symbolic link, learner/state.pkl"):
        verify(sealed)


def test_an_unsealed_empty_folder_is_refused(sealed: Path) -> None:
    (sealed / "learner" / "new").mkdir()
    with pytest.raises(SealError, match="was changed after it was sealed"):
        verify(sealed)


def test_a_removed_empty_folder_is_refused(sealed: Path) -> None:
    (sealed / "empty_by_rllib").rmdir()
    with pytest.raises(SealError, match="was changed after it was sealed"):
        verify(sealed)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_a_fifo_is_refused_without_blocking(sealed: Path) -> None:
    os.mkfifo(sealed / "learner" / "pipe.pkl")
    with pytest.raises(SealError, match="learner/pipe.pkl, which is not a regular file"):
        verify(sealed)
    with pytest.raises(SealError, match="not a regular file"):
        seal(sealed)  # nor sealed


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_a_fifo_or_link_as_the_seal_file_is_refused_without_blocking(sealed: Path, tmp_path: Path) -> None:
    real = tmp_path / "seal.json"
    shutil.move(sealed / "seal.json", real)
    os.mkfifo(sealed / "seal.json")
    with pytest.raises(SealError, match="has no readable seal.json"):
        verify(sealed)
    (sealed / "seal.json").unlink()
    (sealed / "seal.json").symlink_to(real)
    with pytest.raises(SealError, match="has no readable seal.json"):
        verify(sealed)


def test_a_checkpoint_folder_that_is_a_link_is_refused(sealed: Path, tmp_path: Path) -> None:
    link = tmp_path / "step_0000002000"
    link.symlink_to(sealed, target_is_directory=True)
    with pytest.raises(SealError, match="not a folder"):
        verify(link)


def test_a_changed_file_or_another_accounts_key_is_refused(sealed: Path, tmp_path: Path, monkeypatch) -> None:
    (sealed / "learner" / "state.pkl").write_bytes(b"pickled by someone else")
    with pytest.raises(SealError, match="was changed after it was sealed"):
        verify(sealed)
    seal(sealed)
    monkeypatch.setenv(KEY_ENV, str(tmp_path / "theirs.key"))
    with pytest.raises(SealError, match="was not sealed by this account"):
        verify(sealed)


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o660])
def test_a_key_others_can_read_is_refused_with_the_fix(sealed: Path, key: Path, mode: int) -> None:
    key.chmod(mode)
    with pytest.raises(SealError, match=f"mode {mode:03o}\\): make it yours alone with: chmod 600 {key}"):
        verify(sealed)
    with pytest.raises(SealError, match="chmod 600"):
        seal(sealed)
    key.chmod(0o600)
    verify(sealed)


def test_a_key_owned_by_another_account_is_refused(sealed: Path, monkeypatch) -> None:
    monkeypatch.setattr(seal_module.os, "getuid", lambda: os.geteuid() + 1)
    with pytest.raises(SealError, match="belongs to another account"):
        verify(sealed)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_a_key_that_is_a_fifo_is_refused_without_blocking(sealed: Path, key: Path) -> None:
    key.unlink()
    os.mkfifo(key, 0o600)
    with pytest.raises(SealError, match="cannot be read as a plain file: a FIFO, not a regular file"):
        verify(sealed)


def test_a_seal_of_the_old_version_is_refused_with_the_reason(sealed: Path) -> None:
    (sealed / "seal.json").write_text(json.dumps({"files": {}, "hmac": "00"}))
    with pytest.raises(SealError, match="a seal of another version \\(1; this one reads 2"):
        verify(sealed)


@pytest.mark.parametrize("text", ["[]", "{}", '{"version": 2, "entries": {}, "hmac": 5}', "[" * 100_000, "\0\xff"])
def test_a_damaged_seal_file_is_refused(sealed: Path, text: str) -> None:
    (sealed / "seal.json").write_text(text, errors="surrogateescape")
    with pytest.raises(SealError, match="has no readable seal.json|was not sealed|seal of another version \\(None"):
        verify(sealed)
