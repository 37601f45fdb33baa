"""One worker's side of a solve whose loop runs on the workers (no client in the loop).

Every worker holding partitions of the system runs one long-running task (:func:`run_ranks`, seceded from the
worker's thread pool) that holds all of its partitions (its *ranks*) and runs the Krylov iteration
(:mod:`frontend.distributed._krylov`) against a :class:`GroupMachine`. A step applies the vector operations to
each local block in turn; halo entries between blocks of the same worker are handed over in memory, and the
dot products of the local blocks are kept per partition. Then the worker sends **one message to every other
worker** (its blocks' shares of the dot products and the halo entries that worker's blocks need) and waits
for theirs: one cross-process message per worker pair and step (a hierarchical allreduce: blocks reduce in
memory, workers exchange once). Every worker sums the shares in partition order, so every worker computes
the same scalars and takes the same decisions as the one-process solver. Messages travel through one Dask
actor per worker (:class:`Mailbox`, an asynchronous method run on the receiving worker's event loop: worker
to worker, no scheduler, no task per step) and wake the waiting loop through a condition variable (no
polling). Every ``checkpoint`` iterations each worker puts its blocks of the iterate in a Dask ``Queue``
(kept on the scheduler), from which the client restarts the solve when a worker is lost.
"""
from __future__ import annotations

import pickle
import threading
import time
import weakref
from typing import Any

import numpy as np

from ._krylov import Terms, Ticks, run
from ._plan import Halo
from ._worker import Part, SolveState, apply_ops, exports, solve_state

REPORT_SECONDS = 1.0  # the worker holding partition 0 reports progress at least this often (a sign of life)
Payload = dict[str, dict]  # {"dots": {partition: [shares]}, "halo": {(sender, receiver): stacked entries}}
HANDLER = "ust_mailbox"  # the workers' comm handler that delivers a solve's messages
# (solve, worker address) -> that worker's mailbox (workers may be threads of one process)
_MAILBOXES: weakref.WeakValueDictionary[tuple[str, str], Mailbox] = weakref.WeakValueDictionary()


def _deliver(solve: str, to: str, key: list, payload: bytes) -> None:
    """The ``ust_mailbox`` handler: a message for worker ``to``'s mailbox of ``solve`` (dropped when the solve
    is over)."""
    box = _MAILBOXES.get((solve, to))
    if box is not None:
        box.put(tuple(key), pickle.loads(payload))


class Aborted(RuntimeError):
    """The client (or another worker) stopped the solve."""


class Mailbox:
    """Dask actor, one per worker and solve: the messages other workers sent to this worker's loop, keyed by
    ``(step, phase, sender)`` (``phase`` ``"early"``: dot products posted before the SpMV; ``"end"``: the
    step's dot products and halo entries), each read once. Messages arrive one way (no reply) on the worker's
    ``ust_mailbox`` comm handler, which hands them to the solve's mailbox on the worker's event loop; the actor
    is how the client places the mailbox, stops the solve (:meth:`abort`) and releases it."""

    def __init__(self, solve: str) -> None:
        from distributed import get_worker
        self._items: dict[tuple, Payload] = {}
        self._cond = threading.Condition()
        self._aborted: str | None = None
        worker = get_worker()
        _MAILBOXES[(solve, worker.address)] = self
        worker.handlers.setdefault(HANDLER, _deliver)

    def put(self, key: tuple, payload: Payload) -> None:
        """Deliver a message (on this worker's event loop)."""
        with self._cond:
            self._items[key] = payload
            self._cond.notify_all()

    async def abort(self, reason: str) -> None:
        """Stop the loop waiting here (it raises :class:`Aborted`)."""
        self.stop(reason)

    @property
    def stopped(self) -> bool:
        return self._aborted is not None

    def stop(self, reason: str) -> None:
        with self._cond:
            self._aborted = reason
            self._cond.notify_all()

    def take(self, keys: list[tuple], timeout: float) -> list[Payload]:
        """The messages ``keys``, waiting for them up to ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                if self._aborted is not None:
                    raise Aborted(self._aborted)
                if all(k in self._items for k in keys):
                    return [self._items.pop(k) for k in keys]
                left = deadline - time.monotonic()
                if left <= 0:
                    missing = [k for k in keys if k not in self._items]
                    raise TimeoutError(f"no message of step {missing[0][0]} from worker {missing[0][2]} within "
                                       f"{timeout:g} s")
                self._cond.wait(min(left, 1.0))


class GroupMachine:
    """The machine of one worker's partitions (see the module docstring): the same ``step``/``exported``/
    ``iteration`` as the client's, with the exchange done in memory among the local blocks and in one message
    per other worker."""

    def __init__(self, worker: Any, solve: str, states: dict[int, SolveState], places: list[str], local: Mailbox,
                 linked: bool, timeout: float, checkpoint: int, queue: Any) -> None:
        self.worker, self.solve = worker, solve
        self.states, self.n = states, len(places)
        self.places, self.local = places, local
        self.comms: dict[str, Any] = {}
        self.workers = sorted(set(places))
        self.me = places[min(states)]
        self.peers = [w for w in self.workers if w != self.me]
        self.linked, self.timeout = linked, timeout
        self.checkpoint, self.queue = checkpoint, queue
        self.steps = 0
        self.sent_bytes = 0
        self.last_export: list[tuple[str, bool]] = []
        self.received: dict[tuple[int, int], np.ndarray] = {}  # (sender, receiver) -> the last exported entries
        self.unread: int | None = None  # the step whose "end" messages from the peers are still to be read
        self.history: list[tuple[int, float]] = []
        self.ticks = Ticks()
        self._reported = time.monotonic()

    # ----- the machine's interface -------------------------------------------------------------------------
    def exported(self, name: str, scaled: bool = False) -> bool:
        return not self.linked or (name, scaled) in self.last_export

    def iteration(self, it: int, residual_norm: float) -> None:
        """Residual history (the worker holding partition 0), a checkpoint of the iterate every ``checkpoint``
        iterations, and a sign of life for the client at least every :data:`REPORT_SECONDS`."""
        first = 0 in self.states
        if first:
            self.history.append((it, residual_norm))
            self.ticks.tick(it)
        if self.queue is None:
            return
        if self.checkpoint and it > 0 and it % self.checkpoint == 0:
            for p, s in self.states.items():
                x = s.vec["x"]
                self.queue.put(("x", it, p, x.tobytes(), x.dtype.str, residual_norm))
        elif first and time.monotonic() - self._reported > REPORT_SECONDS:
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
        if self.unread is not None:
            self._read(self.unread, "end")
        halos = {p: self._halos(p, halo) for p in self.states}
        if early:  # post the reduction, then the SpMV while it travels
            dots = {p: apply_ops(s, ops[:cut], []) for p, s in self.states.items()}
            self._send(step, "early", {"dots": dots, "halo": {}})
            for p, s in self.states.items():
                dots[p] += apply_ops(s, ops[cut:], halos[p])
        else:
            dots = {p: apply_ops(s, ops, halos[p]) for p, s in self.states.items()}
        received: dict[tuple[int, int], np.ndarray] = {}
        outgoing: dict[str, dict[tuple[int, int], np.ndarray]] = {w: {} for w in self.peers}
        for p, s in self.states.items():
            for dest, stacked in exports(s, export).items():
                where = self.places[dest]
                (received if where == self.me else outgoing[where])[(p, dest)] = stacked
                self.sent_bytes += stacked.nbytes
        for w in self.peers:
            self._send_to(w, (step, "end", self.me), {"dots": {} if early or not has_dots else dots,
                                                      "halo": outgoing[w]})
        self.received, self.unread = received, step
        self.last_export = export
        if not has_dots:
            return np.zeros(0, dtype=complex)
        if early:
            dots.update(self._read(step, "early"))
        else:
            dots.update(self._read(step, "end"))
        return np.sum(np.array([dots[q] for q in range(self.n)], dtype=complex).reshape(self.n, -1), axis=0)

    def start(self) -> None:
        """Connect to the other workers and export ``x0``'s halo entries (as step -1), which the first SpMV of
        ``x`` reads."""
        from distributed.utils import sync

        async def connect() -> dict[str, Any]:
            return {w: await self.worker.rpc.connect(w) for w in self.peers}
        try:
            self.comms = sync(self.worker.loop, connect)
        except OSError as exc:
            raise Aborted(f"worker {self.me} cannot reach the other workers: {exc}") from exc
        self.steps = -1
        self.step([], export=[("x", False)])

    def close(self) -> None:
        """Hand the connections back to the worker's pool (after the messages already queued on them)."""
        def reuse() -> None:
            for w, comm in self.comms.items():
                self.worker.rpc.reuse(w, comm)
        if self.comms:
            self.worker.loop.add_callback(reuse)

    # ----- the exchange ----------------------------------------------------------------------------------------
    def _send(self, step: int, phase: str, payload: Payload) -> None:
        for w in self.peers:
            self._send_to(w, (step, phase, self.me), payload)

    def _send_to(self, worker: str, key: tuple, payload: Payload) -> None:
        """One message, one way, written by this worker's event loop on its connection to ``worker``."""
        self.worker.loop.add_callback(self._write, worker, key, payload)

    async def _write(self, worker: str, key: tuple, payload: Payload) -> None:
        try:  # the payload pickled in-band: one frame, however many small arrays it holds
            await self.comms[worker].write({"op": HANDLER, "reply": False, "solve": self.solve, "to": worker,
                                            "key": list(key),
                                            "payload": pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)})
        except Exception as exc:  # noqa: BLE001 - the peer is gone: stop this worker's loop (it raises Aborted)
            self.local.stop(f"worker {self.me} cannot reach worker {worker}: {type(exc).__name__}: {exc}")

    def _read(self, step: int, phase: str) -> dict[int, list[complex]]:
        """The peers' messages of ``step``/``phase``: their halo entries are kept for the next SpMV, their
        dot products returned (partition -> shares)."""
        dots: dict[int, list[complex]] = {}
        for message in self.local.take([(step, phase, w) for w in self.peers], self.timeout):
            dots.update(message["dots"])
            self.received.update(message["halo"])
        if phase == "end":
            self.unread = None
        return dots

    def _halos(self, p: int, halo: Terms | None) -> list[np.ndarray]:
        """Block ``p``'s SpMV operand's entries other blocks hold, formed from what they exported in the
        previous step."""
        s = self.states[p]
        if halo is None or not self.last_export or not s.halo.recv:
            return []
        names = self.last_export
        received = []
        for q, _ in s.halo.recv:
            stacked = self.received[(q, p)]
            got = {key: stacked[k] for k, key in enumerate(names)}
            received.append(sum(coef * got[(name, scaled)] for coef, name, scaled in halo))
        return received


def run_ranks(solve: str, ranks: list[int], parts: list[Part], halos: list[Halo], bs: list[np.ndarray],
              x0s: list[np.ndarray], jacobi: bool, places: list[str], boxes: dict[str, Any], linked: bool,
              params: dict[str, Any]) -> dict[str, Any]:
    """The long-running task of one worker, holding partitions ``ranks`` (blocks ``parts``): the whole
    iteration; its blocks of the solution and what it counted. ``params``: method, bnorm, tol, maxiter,
    restart, first (the iteration to count from), checkpoint, queue (a Dask ``Queue`` name), timeout."""
    from distributed import Queue, get_worker, secede
    worker = get_worker()
    if any(worker.address != places[p] for p in ranks):
        raise RuntimeError(f"partitions {ranks} run on {worker.address}, their blocks are on "
                           f"{sorted({places[p] for p in ranks})}")
    local: Any = worker.state.actors[boxes[worker.address].key]  # this worker's Mailbox itself
    try:
        states = {p: solve_state(part, halo, b, x0, jacobi) for p, part, halo, b, x0 in zip(ranks, parts, halos, bs,
                                                                                           x0s)}
    except Exception as exc:
        _abort_all(boxes, local, f"worker {worker.address} failed: {type(exc).__name__}: {exc}")
        raise
    secede()  # the worker's thread slot is free for other work while the solve runs
    queue = Queue(params["queue"]) if params["queue"] else None
    m = GroupMachine(worker, solve, states, places, local, linked, params["timeout"], params["checkpoint"], queue)
    dtype = bs[0].dtype
    try:
        m.start()
        its, residual = run(m, params["method"], params["bnorm"], params["tol"], params["maxiter"], dtype,
                            params["restart"], params["first"])
    except Aborted as exc:
        return {"aborted": str(exc)}
    except Exception as exc:
        m.close()
        if local.stopped:  # the failure came from the solve being stopped (a peer's worker died)
            return {"aborted": f"{type(exc).__name__}: {exc}"}
        _abort_all(boxes, local, f"worker {worker.address} failed: {type(exc).__name__}: {exc}")
        raise
    m.close()
    return {"x": {p: s.vec["x"] for p, s in states.items()}, "iterations": its, "residual": residual,
            "steps": m.steps, "halo_bytes": m.sent_bytes, "history": m.history,
            "seconds_per_iteration": m.ticks.per_iteration}


def _abort_all(boxes: dict[str, Any], local: Mailbox, reason: str) -> None:
    """Tell every worker of the solve to stop (a failed one would otherwise leave the others waiting)."""
    local.stop(reason)
    for box in boxes.values():
        try:
            box.abort(reason)
        except Exception:  # noqa: BLE001 - best effort: a dead worker's loop is stopped already
            pass
