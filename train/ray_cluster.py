"""Starting Ray: in this process with this machine's cores, or joining an existing cluster."""

from __future__ import annotations

import os
import socket

from agents.shared.processes import stop_handlers_kept

ADDRESS_ENV = "RAY_ADDRESS"
AUTH_MODE_ENV = "RAY_AUTH_MODE"  # Ray 2.60 clusters started by `ray start` require a token by default
CONNECT_TIMEOUT_S = 5.0
SPECIAL_ADDRESSES = ("auto", "local")  # Ray resolves these itself


class ClusterError(RuntimeError):
    """The Ray cluster asked for cannot be reached."""


def check_reachable(address: str) -> None:
    """Fail within seconds, with a clear message, when nothing listens at ``address``."""
    if address in SPECIAL_ADDRESSES:
        return
    host, sep, port = address.split("://", 1)[-1].rpartition(":")
    if not sep or not host or not port.isdigit():
        raise ClusterError(f"--address must be HOST:PORT of a Ray head (e.g. 10.0.0.5:6379), got {address!r}")
    try:
        with socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT_S):
            pass
    except OSError as err:
        raise ClusterError(
            f"no Ray cluster reachable at {address} ({err}); start its head with `ray start --head` "
            f"and pass the address it prints, or drop --address (and unset {ADDRESS_ENV}) to train on this machine"
        ) from None


def cluster_address(address: str | None) -> str | None:
    """The cluster to join (``address``, else $RAY_ADDRESS), checked reachable; None: a local Ray."""
    address = address or os.environ.get(ADDRESS_ENV) or None
    if address:
        check_reachable(address)
    return address


def start_ray(address: str | None) -> str:
    """``ray.init`` on the cluster at ``address`` (see :func:`cluster_address`), else locally; returns
    where. The command's own handlers for Ctrl-C and SIGTERM stay (Ray's would end it as a crash)."""
    with stop_handlers_kept():
        import ray

        if not address:
            ray.init(num_cpus=os.cpu_count(), include_dashboard=False, log_to_driver=False)
            return f"a local Ray instance ({os.cpu_count()} CPUs)"
        try:
            ray.init(address=address, log_to_driver=False)
        except ConnectionError as err:  # also a cluster with token authentication that refused us
            raise ClusterError(
                f"could not join the Ray cluster at {address}: {str(err).splitlines()[0]}. If its head printed "
                f"'Token authentication is enabled', run with {AUTH_MODE_ENV}=token and the head's token in "
                f"~/.ray/auth_token (or {AUTH_MODE_ENV}=disabled on every node when starting the cluster)"
            ) from None
        return f"the Ray cluster at {address}"
