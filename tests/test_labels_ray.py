"""Search labels made on a Ray cluster (train.rounds.labels_ray) equal the labels one machine makes.

Run where Ray is installed (the rllib extra's environment, as tests/test_rllib.py): a two-node
cluster on loopback, started by ``ray start`` as a user would, one CPU a node.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("ray")

from allfours_env.rules import DEFAULT_RULES  # noqa: E402
from train.rounds import label_set, labels  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SETTINGS = label_set.LabelSettings(
    count=36, worlds=4, margin=0.01, rollout="expert", player="expert", seed=11, shard_rows=12, tables=4,
    rules=DEFAULT_RULES, confirm=0,
)  # fmt: skip
PART = 6  # rows a task: 6 tasks, spread over both nodes


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def cluster():
    """HOST:PORT of a two-node Ray cluster on this machine (a head and a worker node, one CPU each)."""
    ray_cli = shutil.which("ray", path=os.path.dirname(sys.executable)) or shutil.which("ray")
    env = {**os.environ, "RAY_AUTH_MODE": "disabled", "RAY_USAGE_STATS_ENABLED": "0"}  # no token on loopback
    address = f"127.0.0.1:{free_port()}"

    def ray(*args: str) -> None:
        subprocess.run([ray_cli, *args], env=env, check=True, capture_output=True, timeout=180, cwd=ROOT)

    try:
        ray("start", "--head", "--num-cpus=1", f"--port={address.split(':')[1]}", "--include-dashboard=false")
        ray("start", f"--address={address}", "--num-cpus=1")
        yield address
    finally:
        subprocess.run([ray_cli, "stop", "--force"], env=env, capture_output=True, timeout=120)


def columns(folder: Path) -> list[dict[str, np.ndarray]]:
    return [label_set.read_shard(folder, shard, SETTINGS) for shard in range(SETTINGS.shards())]


def test_labels_made_on_a_two_node_cluster_equal_the_local_ones(tmp_path, cluster):
    import ray

    labels.make_labels(SETTINGS, tmp_path / "local", workers=1, rows=PART)
    labels.make_labels(SETTINGS, tmp_path / "cluster", workers=1, rows=PART, address=cluster)
    local, remote = columns(tmp_path / "local"), columns(tmp_path / "cluster")
    assert len(local) == SETTINGS.shards() == 3
    for mine, theirs in zip(local, remote):
        assert mine.keys() == theirs.keys()
        for key in mine:
            np.testing.assert_array_equal(mine[key], theirs[key], err_msg=key)
    assert not list((tmp_path / "cluster").glob("*part*"))  # every shard whole, its parts removed
    ray.init(address=cluster, log_to_driver=False)
    try:
        assert sum(node["Alive"] for node in ray.nodes()) == 2  # two nodes served the tasks
    finally:
        ray.shutdown()


def test_the_command_labels_on_the_cluster(tmp_path, cluster):
    args = ["--count", "24", "--worlds", "4", "--seed", "5", "--shard-rows", "12", "--tables", "4", "--quiet"]
    assert labels.main(["--out", str(tmp_path / "local"), "--workers", "1", *args]) == 0
    assert labels.main(["--out", str(tmp_path / "cluster"), "--address", cluster, *args]) == 0
    settings = label_set.read_meta(tmp_path / "local")
    assert label_set.read_meta(tmp_path / "cluster") == settings
    for shard in range(settings.shards()):
        mine = label_set.read_shard(tmp_path / "local", shard, settings)
        theirs = label_set.read_shard(tmp_path / "cluster", shard, settings)
        for key in mine:
            np.testing.assert_array_equal(mine[key], theirs[key], err_msg=key)


def test_an_unreachable_cluster_is_a_usage_error_before_any_work(tmp_path, capsys):
    out = tmp_path / "labels"
    assert labels.main(["--out", str(out), "--count", "12", "--address", "127.0.0.1:9", "--quiet"]) == 2
    assert "no Ray cluster reachable at 127.0.0.1:9" in capsys.readouterr().err
    assert not out.exists()


def test_sigterm_stops_cluster_labelling_with_one_line_and_keeps_the_finished_parts(tmp_path, cluster):
    """Ray's own SIGTERM handler would end the command as a crash (exit 1 or an abort)."""
    import signal
    import time

    out = tmp_path / "labels"
    command = [sys.executable, "-m", "train.labels", "--out", str(out), "--count", "2400", "--worlds", "4",
               "--shard-rows", "600", "--tables", "4", "--address", cluster]  # fmt: skip
    env = {**os.environ, "RAY_AUTH_MODE": "disabled"}
    process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not list(out.glob("shard_*.npz")) and process.poll() is None and time.monotonic() < deadline:
        time.sleep(0.2)
    assert list(out.glob("shard_*.npz")), process.stderr.read() if process.poll() is not None else "no part in 120 s"
    process.send_signal(signal.SIGTERM)
    err = process.communicate(timeout=120)[1]
    assert process.returncode == 143 and "Traceback" not in err and "received" not in err, err
    assert err.strip().splitlines()[-1] == (
        "terminated (SIGTERM): stopped; the finished shards and parts are kept, the same command goes on"
    ), err
    assert list(out.glob("shard_*.npz"))  # (a part, or a shard its parts made)
