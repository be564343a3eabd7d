"""Labelling on a Ray cluster: ``python -m train.labels --address HOST:PORT`` (and ``python -m train
--address HOST:PORT`` for the rounds' labels).

The parts of a label set (:mod:`train.rounds.labels`) become Ray tasks of one CPU each, which the
cluster's workers make from the settings, shard and part a local worker would get: a part depends
on its seed alone, so every column of every shard is the one a single machine makes. This process
writes the parts and shards as they come back, exactly as it writes a local worker's, so a stop
keeps the finished ones and the same command goes on (on the cluster or not). Ray comes with the
``rllib`` extra (``pip install -e '.[rllib]'``), and the project must sit at the same path on
every node, as for ``python -m train --backend rllib`` (docs/rllib.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

MISSING_RAY = "--address needs Ray, which is not installed; install it with: pip install -e '.[rllib]'"
WAIT_SECONDS = 1.0  # progress lines come at least this often
RETRIES = 3  # a task whose worker died (a node lost) is made again elsewhere, this many times


def check_address(address: str) -> None:
    """A ValueError saying what is missing (the ClusterError's words) unless Ray is installed and a
    cluster listens at ``address``: before any work."""
    try:
        import ray  # noqa: F401
    except ImportError:
        raise ValueError(MISSING_RAY) from None
    from train.ray_cluster import ClusterError, check_reachable

    try:
        check_reachable(address)
    except ClusterError as err:
        raise ValueError(str(err)) from None


def make_parts_on_ray(
    address: str,
    make_part: Callable[..., tuple[int, int, dict[str, np.ndarray]]],
    arguments: list[tuple[Any, ...]],
    keep: Callable[[int, int, dict[str, np.ndarray]], None],
    advance: Callable[[int], None],
) -> None:
    """``make_part(*a)`` for each ``a`` of ``arguments`` on the cluster at ``address``, each
    result passed to ``keep`` as it comes back, then the rows made so far to ``advance``; on a
    stop or a failure the tasks not finished are cancelled and Ray is left."""
    import ray

    from agents.shared.processes import interrupts_deferred

    from train.ray_cluster import start_ray

    start_ray(address)
    pending: list[Any] = []
    made = 0
    try:
        remote = ray.remote(num_cpus=1, max_retries=RETRIES)(make_part)
        pending = [remote.remote(*a) for a in arguments]
        while pending:
            finished, pending = ray.wait(pending, num_returns=1, timeout=WAIT_SECONDS)
            for ref in finished:
                shard, part, columns = ray.get(ref)
                keep(shard, part, columns)
                made += len(columns["search_seed"])
                advance(made)
    finally:
        with interrupts_deferred(reraise=False):  # a stop repeated meanwhile does not cut Ray's shutdown
            for ref in pending:  # a stop or a failed part: the rest is not waited for
                ray.cancel(ref, force=True)
            ray.shutdown()
