"""One partition's side of a solve whose loop runs on the workers (no client in the loop).

Every partition runs one long-running task on the worker holding its block (:func:`run_rank`, seceded from
the worker's thread pool, so partitions sharing a worker run side by side). Each rank runs the same Krylov
iteration (:mod:`frontend.distributed._krylov`) against a :class:`RankMachine`: a step applies the vector
operations to the rank's block, sends the halo entries its neighbours' next SpMV needs and its share of the
dot products straight to the other workers, and sums every rank's shares in partition order, so every rank
computes the same scalars and takes the same decisions. Messages travel through one Dask actor per worker
(:class:`Mailbox`, asynchronous methods on the worker's event loop: worker to worker, no scheduler, no task
per step); ranks on the same worker hand messages over in memory. Every ``checkpoint`` iterations each rank
puts its block of the iterate in a Dask ``Queue`` (kept on the scheduler), from which the client restarts the
solve when a worker is lost.
"""
from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np

from ._krylov import Terms, Ticks, run
from ._plan import Halo
from ._worker import Part, SolveState, apply_ops, exports, solve_state

REPORT_SECONDS = 1.0  # rank 0 reports its progress at least this often (the client's sign of life)
Message = tuple[tuple, Any, int]  # (key, payload, how many ranks on the receiving worker read it)


class Aborted(RuntimeError):
    """The client (or another rank) stopped the solve."""


class Mailbox:
    """Dask actor, one per worker and solve: messages for the ranks on its worker, keyed by
    ``("d", step, sender)`` (dot products, read by every other rank on the worker) or
    ``("h", step, sender, receiver)`` (halo entries, read once)."""

    def __init__(self) -> None:
        self._items: dict[tuple, list[Any]] = {}
        self._cond = threading.Condition()
        self._aborted: str | None = None
        self._outbox: dict[tuple[int, str], tuple[int, dict[str, list[Message]]]] = {}

    def post(self, when: tuple[int, str], outgoing: dict[str, list[Message]], ranks: int
             ) -> dict[str, list[Message]] | None:
        """Collect what this worker's ``ranks`` send at point ``when`` of a step; the last one to post gets
        the whole batch (one message per receiving worker instead of one per rank), the others None."""
        with self._cond:
            count, batch = self._outbox.pop(when, (0, {}))
            for w, messages in outgoing.items():
                batch.setdefault(w, []).extend(messages)
            if count + 1 < ranks:
                self._outbox[when] = (count + 1, batch)
                return None
            return batch

    async def put(self, messages: list[Message]) -> None:
        """Deliver ``messages`` (called by ranks on other workers; runs on this worker's event loop)."""
        self.deliver(messages)

    async def abort(self, reason: str) -> None:
        """Stop every rank waiting here (they raise :class:`Aborted`)."""
        self.stop(reason)

    def deliver(self, messages: list[Message]) -> None:
        with self._cond:
            for key, payload, readers in messages:
                self._items[key] = [payload, readers]
            self._cond.notify_all()

    @property
    def stopped(self) -> bool:
        return self._aborted is not None

    def stop(self, reason: str) -> None:
        with self._cond:
            self._aborted = reason
            self._cond.notify_all()

    def take(self, keys: list[tuple], timeout: float) -> list[Any]:
        """The payloads of ``keys``, waiting for them up to ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                if self._aborted is not None:
                    raise Aborted(self._aborted)
                if all(k in self._items for k in keys):
                    break
                left = deadline - time.monotonic()
                if left <= 0:
                    missing = [k for k in keys if k not in self._items]
                    raise TimeoutError(f"no message {missing[0]} from partition {missing[0][2]} within {timeout:g} s")
                self._cond.wait(min(left, 1.0))
            out = []
            for k in keys:
                entry = self._items[k]
                entry[1] -= 1
                if entry[1] <= 0:
                    del self._items[k]
                out.append(entry[0])
            return out


class RankMachine:
    """Partition ``p``'s machine (see the module docstring): the same ``step``/``exported``/``iteration``
    as the client's, with the exchange done among the workers."""

    def __init__(self, p: int, state: SolveState, places: list[str], boxes: dict[str, Any], local: Mailbox,
                 linked: bool, timeout: float, checkpoint: int, queue: Any) -> None:
        self.p, self.s, self.n = p, state, len(places)
        self.places, self.boxes, self.local = places, boxes, local
        self.me = places[p]
        self.ranks_on = {w: [q for q in range(self.n) if places[q] == w] for w in set(places)}
        self.linked, self.timeout = linked, timeout
        self.checkpoint, self.queue = checkpoint, queue
        self.steps = 0
        self.sent_bytes = 0
        self.last_export: list[tuple[str, bool]] = []
        self.history: list[tuple[int, float]] = []
        self.ticks = Ticks()
        self._reported = time.monotonic()

    # ----- the machine's interface -------------------------------------------------------------------------
    def exported(self, name: str, scaled: bool = False) -> bool:
        return not self.linked or (name, scaled) in self.last_export

    def iteration(self, it: int, residual_norm: float) -> None:
        """Residual history (rank 0), a checkpoint of the iterate every ``checkpoint`` iterations, and a sign
        of life for the client at least every :data:`REPORT_SECONDS`."""
        if self.p == 0:
            self.history.append((it, residual_norm))
            self.ticks.tick(it)
        if self.queue is None:
            return
        x = self.s.vec["x"]
        if self.checkpoint and it > 0 and it % self.checkpoint == 0:
            self.queue.put(("x", it, self.p, x.tobytes(), x.dtype.str, residual_norm))
        elif self.p == 0 and time.monotonic() - self._reported > REPORT_SECONDS:
            self.queue.put(("r", it, 0, b"", "", residual_norm))
            self._reported = time.monotonic()

    def step(self, ops: list[tuple], halo: Terms | None = None,
             export: list[tuple[str, bool]] | None = None) -> np.ndarray:
        step = self.steps
        self.steps += 1
        export = export or []
        kinds = [op[0] for op in ops]
        cut = kinds.index("spmv") if "spmv" in kinds else len(ops)
        has_dots = any(k in ("dot", "dots") for k in kinds)
        early = has_dots and cut < len(ops) and not any(k in ("dot", "dots") for k in kinds[cut:])
        outgoing: dict[str, list[Message]] = {}
        if early:  # post the reduction, then the SpMV while it travels
            dots = apply_ops(self.s, ops[:cut], [])
            self._send((step, "early"), self._dot_messages(step, dots, {}))
            dots += apply_ops(self.s, ops[cut:], self._halos(step, halo))
        else:
            dots = apply_ops(self.s, ops, self._halos(step, halo))
            if has_dots:
                outgoing = self._dot_messages(step, dots, outgoing)
        for dest, stacked in exports(self.s, export).items():
            outgoing.setdefault(self.places[dest], []).append((("h", step, self.p, dest), stacked, 1))
            self.sent_bytes += stacked.nbytes
        self._send((step, "end"), outgoing)
        self.last_export = export
        if not has_dots:
            return np.zeros(0, dtype=complex)
        peers = [q for q in range(self.n) if q != self.p]
        got = dict(zip(peers, self.local.take([("d", step, q) for q in peers], self.timeout)))
        got[self.p] = dots
        return np.sum(np.array([got[q] for q in range(self.n)], dtype=complex).reshape(self.n, -1), axis=0)

    def start(self) -> None:
        """Export ``x0``'s halo entries (as step -1), which the first SpMV of ``x`` reads."""
        outgoing: dict[str, list[Message]] = {}
        for dest, stacked in exports(self.s, [("x", False)]).items():
            outgoing.setdefault(self.places[dest], []).append((("h", -1, self.p, dest), stacked, 1))
        self._send((-1, "end"), outgoing)
        self.last_export = [("x", False)]

    # ----- the exchange ----------------------------------------------------------------------------------------
    def _dot_messages(self, step: int, dots: list[complex], out: dict[str, list[Message]]
                      ) -> dict[str, list[Message]]:
        for w, ranks in self.ranks_on.items():
            readers = sum(1 for q in ranks if q != self.p)
            if readers:
                out.setdefault(w, []).append((("d", step, self.p), dots, readers))
        return out

    def _send(self, when: tuple[int, str], outgoing: dict[str, list[Message]]) -> None:
        """Hand ``outgoing`` to this worker's ranks at once; what goes to other workers leaves in one actor call
        per worker, made by the last rank here to post at this point of the step."""
        local = outgoing.pop(self.me, None)
        if local:
            self.local.deliver(local)
        batch = self.local.post(when, outgoing, len(self.ranks_on[self.me]))
        for w, messages in (batch or {}).items():
            try:
                self.boxes[w].put(messages)  # an actor call: returns at once, delivered by the event loop
            except RuntimeError as exc:  # the worker holding that mailbox is gone
                raise Aborted(f"partition {self.p} cannot reach worker {w}: {exc}") from exc

    def _halos(self, step: int, halo: Terms | None) -> list[np.ndarray]:
        """The SpMV operand's entries other ranks hold, from what they exported in the previous step (taken
        even when unused, so the mailbox holds nothing stale)."""
        if not self.last_export or not self.s.halo.recv:
            return []
        senders = [q for q, _ in self.s.halo.recv]
        stacks = self.local.take([("h", step - 1, q, self.p) for q in senders], self.timeout)
        if halo is None:
            return []
        names = self.last_export
        received = []
        for stacked in stacks:
            got = {key: stacked[k] for k, key in enumerate(names)}
            received.append(sum(coef * got[(name, scaled)] for coef, name, scaled in halo))
        return received


def run_rank(p: int, part: Part, halo: Halo, b: np.ndarray, x0: np.ndarray, jacobi: bool, places: list[str],
             boxes: dict[str, Any], linked: bool, params: dict[str, Any]) -> dict[str, Any]:
    """The long-running task of partition ``p`` (placed on ``places[p]``, which holds ``part``): the whole
    iteration; its block of the solution and what it counted. ``params``: method, bnorm, tol, maxiter,
    restart, first (the iteration to count from), checkpoint, queue (a Dask ``Queue`` name), timeout."""
    from distributed import Queue, get_worker, secede
    worker = get_worker()
    if worker.address != places[p]:
        raise RuntimeError(f"partition {p} runs on {worker.address}, its block is on {places[p]}")
    local: Any = worker.state.actors[boxes[worker.address].key]  # this worker's Mailbox itself
    try:
        state = solve_state(part, halo, b, x0, jacobi)
    except Exception as exc:
        _abort_all(boxes, local, f"partition {p} failed: {type(exc).__name__}: {exc}")
        raise
    secede()  # the worker's thread slot goes to the next rank: every rank of the solve runs at once
    queue = Queue(params["queue"]) if params["queue"] else None
    m = RankMachine(p, state, places, boxes, local, linked, params["timeout"], params["checkpoint"], queue)
    try:
        m.start()
        its, residual = run(m, params["method"], params["bnorm"], params["tol"], params["maxiter"], b.dtype,
                            params["restart"], params["first"])
    except Aborted as exc:
        return {"aborted": str(exc)}
    except Exception as exc:
        if local.stopped:  # the failure came from the solve being stopped (a peer's worker died)
            return {"aborted": f"{type(exc).__name__}: {exc}"}
        _abort_all(boxes, local, f"partition {p} failed: {type(exc).__name__}: {exc}")
        raise
    return {"x": state.vec["x"], "iterations": its, "residual": residual, "steps": m.steps,
            "halo_bytes": m.sent_bytes, "history": m.history, "seconds_per_iteration": m.ticks.per_iteration}


def _abort_all(boxes: dict[str, Any], local: Mailbox, reason: str) -> None:
    """Tell every rank of the solve to stop (a failed rank would otherwise leave the others waiting)."""
    local.stop(reason)
    for box in boxes.values():
        try:
            box.abort(reason)
        except Exception:  # noqa: BLE001 - best effort: a dead worker's ranks are stopped already
            pass
