"""The client's side of a solve whose loop runs on the workers (:mod:`frontend.distributed._rank`): start one
long-running task and one mailbox actor per worker holding partitions, watch (worker loss, failures, the
checkpoints and progress the ranks put in a Dask ``Queue``), and restart from the last complete checkpoint
when a worker is lost."""
from __future__ import annotations

import itertools
import time
import uuid
from collections.abc import Callable
from typing import Any

import numpy as np

from . import _rank
from ._client import LOG
from ._run import POLL, DistributedError, WorkerLost, send, submit, wait_all

Progress = Callable[[int, float], Any]  # (iteration, residual norm) on the client


class Attempt:
    """One run of the ranks from iterate ``x0`` at iteration ``first``."""

    def __init__(self, a: Any, b: np.ndarray, x0: np.ndarray, jacobi: bool, params: dict[str, Any]) -> None:
        from distributed import Queue
        self.a, self.client = a, a.client
        self.n, self.bounds = a.partitions, a.bounds
        halo = a.halo()
        a.heal()
        self.places: list[str] = a.workers()
        if None in self.places:
            raise WorkerLost(f"partition {self.places.index(None)} has no worker", self.places.index(None), None)
        key = uuid.uuid4().hex
        self.queue_name = f"ust-solve-{key}"
        self.queue = Queue(self.queue_name, client=self.client)
        self.box_futures = {w: self.client.submit(_rank.Mailbox, key, workers=[w], actor=True, pure=False,
                                                  key=f"ust-mailbox-{key}-{k}")
                            for k, w in enumerate(sorted(set(self.places)))}
        self.boxes = dict(zip(self.box_futures, wait_all(self.client, list(self.box_futures.values()),
                                                         [(-1, w) for w in self.box_futures], a.timeout)))
        linked = any(h.send for h in halo)
        params = dict(params, queue=self.queue_name)
        self.groups = {w: [p for p in range(self.n) if self.places[p] == w] for w in self.boxes}
        self.futures = [submit(self.client, _rank.run_ranks, key, ranks, [a.block(p) for p in ranks],
                               [halo[p] for p in ranks], [self._send(b, p) for p in ranks],
                               [self._send(x0, p) for p in ranks], jacobi, self.places, self.boxes, linked, params,
                               worker=w, strict=True, key=f"ust-ranks-{key}-{k}")
                        for k, (w, ranks) in enumerate(self.groups.items())]
        self.where = [(ranks[0], w) for w, ranks in self.groups.items()]
        self.parts: dict[int, dict[int, np.ndarray]] = {}
        self.checkpoint: tuple[int, np.ndarray] | None = None
        self.heard = time.monotonic()  # when the ranks last reported

    def _send(self, v: np.ndarray, p: int) -> Any:
        """Partition ``p``'s block of the vector ``v``, as a task argument for its worker."""
        return send(self.client, v[self.bounds[p]:self.bounds[p + 1]], self.places[p])

    def drain(self, progress: Progress | None) -> bool:
        """Read what the ranks put in the queue: complete checkpoints are kept (the latest), ``progress`` is
        called with each reported residual; whether anything came."""
        items = self.queue.get(batch=True)
        if items:
            self.heard = time.monotonic()
        for kind, it, p, data, dtype, residual in items:
            if kind == "x":
                got = self.parts.setdefault(it, {})
                got[p] = np.frombuffer(data, dtype=np.dtype(dtype)).copy()
                if len(got) < self.n:
                    continue
                self.checkpoint = (it, np.concatenate([got[q] for q in range(self.n)]))
                self.parts = {k: v for k, v in self.parts.items() if k > it}
            if progress is not None and (kind == "r" or self.checkpoint and self.checkpoint[0] == it):
                progress(int(it), float(residual))
        return bool(items)

    def wait(self, progress: Progress | None) -> list[dict[str, Any]]:
        """The ranks' results; raises :class:`WorkerLost` or :class:`DistributedError` as ``wait_all``; no
        timeout while the ranks report progress."""
        while True:
            try:
                return wait_all(self.client, self.futures, self.where, self.a.timeout,
                                on_poll=lambda: self.drain(progress))
            except DistributedError as exc:
                quiet = time.monotonic() - self.heard
                if isinstance(exc, WorkerLost):
                    raise
                if "timed out" in str(exc) and quiet < self.a.timeout:
                    continue
                gone = sorted(set(self.places) - set(self.client.nthreads()))
                if gone:  # a rank failed because a peer's worker died: that loss is the news
                    raise WorkerLost(f"worker {gone[0]} left the cluster during the solve ({exc})", None,
                                     gone[0]) from exc
                raise

    def stop(self, reason: str) -> None:
        """Stop the ranks (they return when they next wait), keep a last checkpoint, release everything."""
        live = set(self.client.nthreads())
        for w, box in self.boxes.items():
            if w in live:
                try:
                    box.abort(reason)
                except Exception:  # noqa: BLE001 - a worker lost meanwhile took its mailbox with it
                    pass
        try:
            self.drain(None)
        except Exception:  # noqa: BLE001 - the queue is only read for a last checkpoint
            pass
        deadline = time.monotonic() + 5 * POLL  # let the stopped ranks return before their mailboxes go
        while any(f.status == "pending" for f in self.futures) and time.monotonic() < deadline:
            time.sleep(POLL / 5)
        self.release()

    def release(self) -> None:
        """Drop the rank futures, the mailbox actors and the queue."""
        self.client.cancel(self.futures)
        self.boxes.clear()
        self.box_futures.clear()


def solve(a: Any, b: np.ndarray, x0: np.ndarray, method: str, tol: float, maxiter: int, jacobi: bool,
          restart: int, checkpoint: int, progress: Progress | None, retries: int) -> tuple[np.ndarray, dict]:
    """``a x = b`` with the loop on the workers; the solution and the solve's info."""
    bnorm = float(np.linalg.norm(b))
    first, start = 0, x0
    restarts: list[int] = []
    for attempt in itertools.count():
        params = {"method": method, "bnorm": bnorm, "tol": tol, "maxiter": maxiter, "restart": restart,
                  "first": first, "checkpoint": checkpoint, "timeout": a.timeout}
        run = Attempt(a, b, start, jacobi, params)
        try:
            results = run.wait(progress)
            run.drain(progress)
        except WorkerLost as exc:
            run.stop(f"a worker was lost: {exc}")
            if attempt >= retries:
                raise
            if run.checkpoint is not None:
                first, start = run.checkpoint
            restarts.append(first)
            LOG.warning("%s during the %s solve; rebuilding and restarting from iteration %d", exc, method, first)
            _settle(a)
            continue
        except BaseException:
            run.stop("the solve failed")
            raise
        run.release()
        aborted = [r["aborted"] for r in results if "aborted" in r]
        if aborted:
            raise DistributedError(f"the {method} solve stopped: {aborted[0]}")
        head = next(r for r in results if 0 in r["x"])  # the worker holding partition 0 kept the history
        blocks = {p: x for r in results for p, x in r["x"].items()}
        info = {"method": method, "iterations": head["iterations"], "residual": head["residual"] / bnorm,
                "steps": head["steps"], "halo_bytes": sum(r["halo_bytes"] for r in results), "loop": "workers",
                "restarts": len(restarts), "restarted_from": restarts, "checkpoint": checkpoint,
                "history": head["history"], "seconds_per_iteration": head["seconds_per_iteration"],
                "workers": len(results)}
        return np.concatenate([blocks[p] for p in range(len(blocks))]), info
    raise AssertionError("unreachable")


def _settle(a: Any) -> None:
    """Give the scheduler a moment to notice the loss before the partitions are rebuilt."""
    time.sleep(POLL)
    a.heal()
