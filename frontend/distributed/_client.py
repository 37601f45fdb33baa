"""Connecting to Dask: the caller's client, the current one, ``UST_MLIR_SCHEDULER``, or an embedded cluster.

Order (:func:`get_client`): a ``client=`` argument; the current ``dask.distributed`` client (the last one
created or entered); ``UST_MLIR_SCHEDULER=tcp://host:port`` (connected once per address); else an embedded
:class:`distributed.LocalCluster` started by :func:`start_local`, announced by a warning log line. Nothing
starts a cluster without saying so.
"""
from __future__ import annotations

import atexit
import logging
import os
import re
import sys
import warnings
from typing import Any

LOG = logging.getLogger("frontend.distributed")
SCHEDULER_ENV = "UST_MLIR_SCHEDULER"
CONNECT_TIMEOUT = 10.0  # seconds to reach a scheduler before ConnectionError

_CONNECTED: dict[str, Any] = {}  # scheduler address -> the Client this module connected to it
_STARTED: list[Any] = []  # clients of the clusters start_local started (closed at exit)
_GUARD = re.compile(r"""^if\s+__name__\s*==\s*['"]__main__['"]\s*:""", re.MULTILINE)


def main_is_guarded() -> bool:
    """Whether worker processes may be started: they import the main script again (Python's ``spawn``), which
    is safe when there is no script (REPL, notebook, ``python -c``) or it guards its work with
    ``if __name__ == "__main__":``."""
    path = getattr(sys.modules.get("__main__"), "__file__", None)
    if not path:
        return True
    try:
        with open(path, encoding="utf-8") as f:
            return bool(_GUARD.search(f.read()))
    except (OSError, UnicodeDecodeError):
        return True


def start_local(n_workers: int | None = None, threads_per_worker: int = 1, processes: bool | None = None,
                **cluster_kwargs: Any) -> Any:
    """Start an embedded ``LocalCluster`` of ``n_workers`` workers (default: one per core) with
    ``threads_per_worker`` threads each and return its ``Client`` (closing the client stops the cluster; a
    cluster still open when Python exits is closed then). ``processes``: worker processes (True) or threads in
    this process (False); default: processes unless the main script lacks an ``if __name__ == "__main__":``
    guard (worker processes import it again and would run it), then threads, with a log line saying so."""
    from distributed import Client
    n = (os.cpu_count() or 1) if n_workers is None else n_workers
    if not (isinstance(n, int) and n >= 1):
        raise ValueError(f"n_workers must be a positive int, got {n_workers!r}")
    if not (isinstance(threads_per_worker, int) and threads_per_worker >= 1):
        raise ValueError(f"threads_per_worker must be a positive int, got {threads_per_worker!r}")
    if processes is None:
        processes = main_is_guarded()
        if not processes:
            LOG.warning("the main script has no `if __name__ == \"__main__\":` guard, so the local Dask cluster "
                        "runs its workers as threads of this process (add the guard for worker processes)")
    cluster_kwargs.setdefault("dashboard_address", None)
    LOG.info("starting a local Dask cluster: %d worker %s x %d threads", n, "processes" if processes else "threads",
             threads_per_worker)
    with warnings.catch_warnings():  # no dashboard here: its HTTP port being taken is no news
        warnings.filterwarnings("ignore", message=r"Port \d+ is already in use")
        client = Client(n_workers=n, threads_per_worker=threads_per_worker, processes=bool(processes),
                        **cluster_kwargs)
    if not _STARTED:
        atexit.register(_close_started)
    _STARTED.append(client)
    return client


def _close_started() -> None:
    """Close the clusters start_local started and the caller left open (at exit, before Dask's own threads
    stop, so nothing is scheduled on a closed executor)."""
    while _STARTED:
        client = _STARTED.pop()
        try:
            if client.status not in ("closed", "closing"):
                cluster = client.cluster
                client.close()
                if cluster is not None:
                    cluster.close()
        except Exception:  # noqa: BLE001 - exiting: a half-closed cluster is not worth a traceback
            pass


def connect(address: str, timeout: float = CONNECT_TIMEOUT) -> Any:
    """A client of the scheduler at ``address`` (``tcp://host:port``), reused per address; ``ConnectionError``
    naming the address when it cannot be reached within ``timeout`` seconds."""
    from distributed import Client
    if not isinstance(address, str) or "://" not in address:
        raise ValueError(f"a scheduler address looks like tcp://host:port, got {address!r}")
    known = _CONNECTED.get(address)
    if known is not None and known.status == "running":
        return known
    try:
        client = Client(address, timeout=timeout, set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise ConnectionError(f"cannot reach the Dask scheduler at {address} within {timeout:g} s: {exc}") from exc
    _CONNECTED[address] = client
    return client


def current_client() -> Any:
    """The current ``dask.distributed`` client, or None."""
    from distributed import default_client
    try:
        client = default_client()
    except ValueError:
        return None
    return client if client.status == "running" else None


def get_client(client: Any = None, timeout: float = CONNECT_TIMEOUT) -> Any:
    """The client to run on: ``client`` itself, the current one, ``UST_MLIR_SCHEDULER``'s, or a new local
    cluster's (with a warning log line saying so)."""
    if client is not None:
        if getattr(client, "status", None) != "running":
            raise ValueError(f"client {client!r} is not running (status {getattr(client, 'status', None)!r})")
        return client
    found = current_client()
    if found is not None:
        return found
    address = os.environ.get(SCHEDULER_ENV)
    if address:
        return connect(address, timeout)
    LOG.warning("no Dask client and no %s: starting a local cluster (frontend.distributed.start_local)",
                SCHEDULER_ENV)
    return start_local()
