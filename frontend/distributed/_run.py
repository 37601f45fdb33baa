"""Waiting on workers without hanging: every wait has a deadline, a dead worker is noticed while waiting,
and a failure names the partition and the worker it ran on."""
from __future__ import annotations

import asyncio
import concurrent.futures
import time
import uuid
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

SCATTER_BYTES = 1 << 20  # operands above this go to their worker directly (client.scatter), not in the task
DEFAULT_TIMEOUT = 300.0  # seconds one distributed call may wait for its tasks
POLL = 0.25  # seconds between checks of the live workers while waiting


class DistributedError(RuntimeError):
    """A distributed call failed; the message names the partition and the worker."""

    def __init__(self, message: str, partition: int | None = None, worker: str | None = None) -> None:
        super().__init__(message)
        self.partition, self.worker = partition, worker


class WorkerLost(DistributedError):
    """A worker holding a partition died (the call may be retried after rebuilding the partition)."""


def is_distributed(x: Any) -> bool:
    """Whether ``x`` is a DistributedTensor (by its marker, without importing the class)."""
    return bool(getattr(type(x), "__ust_distributed__", False))


def _lost(exc: BaseException | None) -> bool:
    """Whether a task error means its worker died rather than its code failed."""
    if exc is None:
        return True
    name = type(exc).__name__
    return name in ("KilledWorker", "CancelledError", "FutureCancelledError", "CommClosedError") or isinstance(
        exc, (ConnectionError, EOFError))


def wait_all(client: Any, futures: Sequence[Any], where: Sequence[tuple[int, str | None]],
             timeout: float = DEFAULT_TIMEOUT, on_poll: Callable[[], Any] | None = None) -> list[Any]:
    """The results of ``futures`` (``where[k]``: the partition and worker of ``futures[k]``); ``on_poll`` is
    called between checks.

    Raises :class:`WorkerLost` when a worker named in ``where`` leaves or a task is lost with its worker,
    :class:`DistributedError` naming the partition and worker when a task fails, and
    :class:`DistributedError` when ``timeout`` seconds pass.
    """
    from distributed import wait
    deadline = time.monotonic() + timeout
    gathering: concurrent.futures.Future | None = None  # the gather of finished results, on the client's loop
    try:
        while True:
            pending = _wait(wait, futures, POLL)
            if on_poll is not None:
                on_poll()
            for k, f in enumerate(futures):
                if f.status in ("error", "cancelled", "lost"):
                    p, w = where[k]
                    exc = f.exception() if f.status == "error" else None
                    if _lost(exc):
                        raise WorkerLost(f"partition {p}: its worker {w} was lost ({f.status}: {exc})", p, w)
                    raise DistributedError(f"partition {p} on worker {w} failed: {type(exc).__name__}: {exc}", p,
                                           w) from exc
            if not pending:
                # a slow gather is left running (cutting it would close the workers' connections mid-transfer,
                # which they log as errors); it is given up only when a worker dying after its task finished
                # sent the task back to "pending"
                if gathering is None:
                    gathering = asyncio.run_coroutine_threadsafe(client._gather(list(futures), direct=True),
                                                                 client.loop.asyncio_loop)
                try:
                    return gathering.result(timeout=POLL)
                except concurrent.futures.TimeoutError:
                    pending = {f for f in futures if f.status != "finished"}
                    if pending:
                        gathering.cancel()
                        gathering = None
            live = set(client.nthreads())
            for k, f in enumerate(futures):
                p, w = where[k]
                if f in pending and w is not None and w not in live:
                    raise WorkerLost(f"partition {p}: its worker {w} left the cluster", p, w)
            if time.monotonic() > deadline:
                stuck = [f"partition {where[k][0]} on worker {where[k][1]}" for k, f in enumerate(futures)
                         if f in pending] or ["the gather of the results"]
                raise DistributedError(f"timed out after {timeout:g} s waiting for {', '.join(stuck)}",
                                       where[0][0], where[0][1])
    finally:
        if gathering is not None and not gathering.done():
            gathering.cancel()


def _wait(wait: Any, futures: Sequence[Any], poll: float) -> set:
    """The futures still pending after waiting up to ``poll`` seconds."""
    try:
        return set(wait(list(futures), timeout=poll).not_done)
    except TimeoutError:
        return {f for f in futures if f.status == "pending"}


def submit(client: Any, fn: Callable, *args: Any, key: str | None = None, worker: str | None = None,
           strict: bool = False) -> Any:
    """``client.submit`` of a task that is not pure (a fresh key), preferring (or, ``strict``, requiring)
    ``worker``; Dask's warning about large arguments is silenced (blocks travel as task arguments, so that
    Dask can recompute them from the graph)."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*[Ll]arge.*")
        return client.submit(fn, *args, key=key or f"ust-{fn.__name__}-{uuid.uuid4().hex}", pure=False,
                             workers=None if worker is None else [worker],
                             allow_other_workers=not strict and worker is not None)


def send(client: Any, value: Any, worker: str | None) -> Any:
    """``value`` as a task argument: large arrays are scattered straight to ``worker`` (a future; one hop
    instead of through the scheduler), small ones travel in the task."""
    if worker is None or getattr(value, "nbytes", 0) < SCATTER_BYTES:
        return value
    return client.scatter(value, workers=[worker], direct=True, hash=False)


def frame_header(like: np.ndarray) -> dict[str, Any]:
    """Dask's serialization header of arrays shaped like the C-ordered ``like`` (made once, reused per call)."""
    from distributed.protocol.serialize import serialize_and_split
    header, _ = serialize_and_split(like, serializers=("dask",))
    return header


def frame(a: np.ndarray, header: dict[str, Any]) -> Any:
    """The C-ordered array ``a`` as an already serialized Dask object: one frame sent from its memory, no
    serializer run."""
    from distributed.protocol import Serialized
    return Serialized(dict(header), [a.data.cast("B")])


async def watch(client: Any, calls: Sequence[asyncio.Future], places: Sequence[str | None], timeout: float,
                lost: Callable[[int], WorkerLost]) -> list[Any]:
    """The results of the calls ``calls`` (``calls[k]`` answered by the worker ``places[k]``), awaited on the
    client's event loop: the first failure is raised; ``lost(k)`` when ``places[k]`` leaves the cluster (a
    dead address is retried, so a lost worker is noticed in the scheduler's worker list); ``TimeoutError``
    after ``timeout`` seconds. Nothing is left running or unretrieved."""
    deadline = time.monotonic() + timeout
    try:
        while True:
            _, pending = await asyncio.wait(calls, timeout=POLL, return_when=asyncio.FIRST_EXCEPTION)
            failed = [c for c in calls if c.done() and c.exception() is not None]
            if failed:
                failed[0].result()  # raises the failure of the first call that failed
            if not pending:
                return [c.result() for c in calls]
            live = await client.scheduler.ncores()
            gone = [k for k, w in enumerate(places) if w not in live]
            if gone:
                raise lost(gone[0])
            if time.monotonic() > deadline:
                raise TimeoutError
    finally:
        for c in calls:
            if not c.done():
                c.cancel()
                c.add_done_callback(lambda f: f.cancelled() or f.exception())
