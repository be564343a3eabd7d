"""agents.shared.atomic_file: the one way the project writes a file whole or not at all."""

from pathlib import Path

import numpy as np
import pytest

from agents.shared.atomic_file import atomic_path, write_text


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "policy.npz"
    write_text(target, "old")
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("stopped mid-write")
    assert target.read_text() == "old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["policy.npz"]


def test_the_temporary_keeps_the_suffix_for_writers_that_choose_the_format_by_it(tmp_path: Path) -> None:
    target = tmp_path / "shard.npz"
    with atomic_path(target) as tmp:
        assert tmp.suffix == ".npz" and tmp.parent == tmp_path
        np.savez_compressed(tmp, x=np.arange(3))  # numpy adds ".npz" to a path without it
    assert np.load(target)["x"].tolist() == [0, 1, 2]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["shard.npz"]
