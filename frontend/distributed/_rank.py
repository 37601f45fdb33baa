"""One worker's side of a solve whose loop runs on the workers (no client in the loop).

Every worker holding partitions of the system runs one long-running task (:func:`run_ranks`, seceded from the
worker's thread pool) that holds all of its partitions (its *ranks*) as one set of vectors
(:class:`frontend.distributed._group.GroupState`: a step's vector operations and dot products are one NumPy
operation over the worker's rows, the SpMV one planned kernel per block) and runs the Krylov iteration
(:mod:`frontend.distributed._krylov`) **on the worker's event loop** (:class:`GroupMachine`: the task hands
the loop the whole solve once and waits for its end). A step computes, then sends **one message to every
other worker** (its share of the dot products and the halo entries that worker's blocks need) and awaits
theirs: one cross-process message per worker pair and step (a hierarchical allreduce: blocks reduce in
memory, workers exchange once). Messages are written on the worker's own connections to its peers (Dask's
connection pool) and arrive on the ``ust_mailbox`` comm handler, which runs on the receiving worker's event
loop too, so a message goes from one solve to the other without a thread hand-off at either end. Every worker
sums the shares in the same order, so every worker computes the same scalars and takes the same decisions.
Every ``checkpoint`` iterations each worker puts its blocks of the iterate in a Dask ``Queue`` (kept on the
scheduler), from which the client restarts the solve when a worker is lost.
"""
from __future__ import annotations

import asyncio
import time
import weakref
from typing import Any

import numpy as np

from ._group import GroupState
from ._krylov import Export, Step, Steps, Terms, Ticks, iterations
from ._plan import Halo
from ._worker import INLINE_NSE, Part, apply_ops

REPORT_SECONDS = 1.0  # the worker holding partition 0 reports progress at least this often (a sign of life)
Payload = tuple[np.ndarray, "np.ndarray | None"]  # (the sender's shares of the dot products, its halo entries)
HANDLER = "ust_mailbox"  # the workers' comm handler that delivers a solve's messages
# (solve, worker address) -> that worker's mailbox (workers may be threads of one process)
_MAILBOXES: weakref.WeakValueDictionary[tuple[str, str], Mailbox] = weakref.WeakValueDictionary()


def _deliver(solve: str, to: str, key: list, dots: bytes, halo: bytes, shape: list[int] | None, dtype: str) -> None:
    """The ``ust_mailbox`` handler: a message for worker ``to``'s mailbox of ``solve`` (dropped when the solve
    is over): the sender's shares of the dot products and its halo entries for ``to`` (``shape``: vectors x
    entries, None when it sent none), as raw bytes."""
    box = _MAILBOXES.get((solve, to))
    if box is not None:
        box.put(tuple(key), (np.frombuffer(dots, dtype=complex),
                             None if shape is None else np.frombuffer(halo, dtype=dtype).reshape(shape)))


class Aborted(RuntimeError):
    """The client (or another worker) stopped the solve."""


class Mailbox:
    """Dask actor, one per worker and solve: the messages other workers sent to this worker's loop, keyed by
    ``(step, phase, sender)`` (``phase`` ``"early"``: dot products posted before the SpMV; ``"end"``: the
    step's dot products and halo entries), each read once. Messages arrive one way (no reply) on the worker's
    ``ust_mailbox`` comm handler, on the worker's event loop, where the solve awaits them (:meth:`take`); the
    actor is how the client places the mailbox, stops the solve (:meth:`abort`) and releases it."""

    def __init__(self, solve: str) -> None:
        from distributed import get_worker
        self._items: dict[tuple, Payload] = {}
        self._waiter: asyncio.Future | None = None
        self._aborted: str | None = None
        worker = get_worker()
        self._loop = worker.loop
        _MAILBOXES[(solve, worker.address)] = self
        worker.handlers.setdefault(HANDLER, _deliver)

    def put(self, key: tuple, payload: Payload) -> None:
        """Deliver a message (on this worker's event loop)."""
        self._items[key] = payload
        self._wake()

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    async def abort(self, reason: str) -> None:
        """Stop the loop waiting here (it raises :class:`Aborted`)."""
        self.stop(reason)

    @property
    def stopped(self) -> bool:
        return self._aborted is not None

    def stop(self, reason: str) -> None:
        """Stop the solve (from any thread): its next or current wait raises :class:`Aborted`."""
        self._aborted = reason
        self._loop.add_callback(self._wake)

    async def take(self, keys: list[tuple], timeout: float) -> list[Payload]:
        """The messages ``keys``, waiting for them (on the event loop) up to ``timeout`` seconds."""
        loop = asyncio.get_running_loop()
        deadline = time.monotonic() + timeout
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
            self._waiter = waiter = loop.create_future()
            timer = loop.call_later(min(left, 1.0), self._wake)
            try:
                await waiter
            finally:
                timer.cancel()
                self._waiter = None


class GroupMachine:
    """The machine of one worker's partitions (see the module docstring), run on the worker's event loop:
    ``await step(...)`` computes on all of the worker's blocks at once, sends each other worker its message
    and awaits theirs."""

    def __init__(self, worker: Any, solve: str, group: GroupState, places: list[str], local: Mailbox,
                 linked: bool, timeout: float, checkpoint: int, queue: str | None) -> None:
        self.worker, self.solve = worker, solve
        self.group, self.places, self.local = group, places, local
        self.comms: dict[str, Any] = {}
        self._offload: dict[str, bool] = {}  # the connections' own setting, given back with them
        self.workers = sorted(set(places))  # every worker sums the shares in this order
        self.me, self.peers = group.me, group.peers
        self.linked, self.timeout = linked, timeout
        self.checkpoint, self.queue = checkpoint, queue
        self.first = 0 in group.ranks
        self.inline = sum(int(blk.part.tensor.nse) for blk in group.blocks) <= INLINE_NSE
        self.steps = 0
        self.sent_bytes = 0
        self.last_export: Export = []
        self.received: dict[str, np.ndarray] = {}  # peer -> the entries it last exported for this worker
        self.unread: int | None = None  # the step whose "end" messages from the peers are still to be read
        self.history: list[tuple[int, float]] = []
        self.ticks = Ticks()
        self._reported = time.monotonic()
        self._puts: asyncio.Future | None = None  # the last of the queue puts, which run one after the other

    # ----- the machine's interface -------------------------------------------------------------------------
    def exported(self, name: str, scaled: bool = False) -> bool:
        return not self.linked or (name, scaled) in self.last_export

    def iteration(self, it: int, residual_norm: float) -> None:
        """Residual history (the worker holding partition 0), a checkpoint of the iterate every ``checkpoint``
        iterations, and a sign of life for the client at least every :data:`REPORT_SECONDS` (put in the
        queue in the background, in order)."""
        if self.first:
            self.history.append((it, residual_norm))
            self.ticks.tick(it)
        if self.queue is None:
            return
        if self.checkpoint and it > 0 and it % self.checkpoint == 0:
            for p, x in self.group.blocks_of("x").items():
                self._put(("x", it, p, x.tobytes(), x.dtype.str, residual_norm))
        elif self.first and time.monotonic() - self._reported > REPORT_SECONDS:
            self._put(("r", it, 0, b"", "", residual_norm))
            self._reported = time.monotonic()

    def _put(self, item: tuple) -> None:
        async def put(before: asyncio.Future | None) -> None:
            if before is not None:
                await before
            await self.worker.scheduler.queue_put(name=self.queue, data=item, timeout=None)
        self._puts = asyncio.ensure_future(put(self._puts))

    async def step(self, ops: list[tuple], halo: Terms | None = None, export: Export | None = None) -> np.ndarray:
        step = self.steps
        self.steps += 1
        export = export or []
        kinds = [op[0] for op in ops]
        cut = kinds.index("spmv") if "spmv" in kinds else len(ops)
        has_dots = any(k in ("dot", "dots") for k in kinds)
        early = has_dots and cut < len(ops) and not any(k in ("dot", "dots") for k in kinds[cut:])
        if self.unread is not None:
            await self._read(self.unread, "end")
        far = self.group.halo(halo, self.last_export, self.received)
        if early:  # post the reduction, then the SpMV while it travels
            dots = await self._compute(ops[:cut], far)
            for w in self.peers:
                await self._write(w, (step, "early", self.me), dots, None)
            dots += await self._compute(ops[cut:], far)
        else:
            dots = await self._compute(ops, far)
        outgoing = self.group.exports(export)
        for w in self.peers:
            entries = outgoing.get(w)
            if entries is not None:
                self.sent_bytes += entries.nbytes
            await self._write(w, (step, "end", self.me), [] if early else dots, entries)
        self.unread = step
        self.last_export = export
        if not has_dots:
            return np.zeros(0, dtype=complex)
        shares: dict[str, Any] = {self.me: dots, **(await self._read(step, "early" if early else "end"))}
        return np.sum(np.array([shares[w] for w in self.workers], dtype=complex).reshape(len(self.workers), -1),
                      axis=0)

    async def _compute(self, ops: list[tuple], far: np.ndarray | None) -> list[complex]:
        """``ops`` on the worker's vectors: on the event loop for small blocks, else in a thread (the loop
        kept free to receive meanwhile)."""
        if self.inline or not ops:
            return self.apply(ops, far)
        return await asyncio.get_running_loop().run_in_executor(None, self.apply, ops, far)

    def apply(self, ops: list[tuple], far: np.ndarray | None) -> list[complex]:
        """``ops`` on the worker's vectors (:func:`frontend.distributed._worker.apply_ops`); their dot products."""
        return apply_ops(self.group, ops, far)

    async def run(self, method: str, bnorm: float, tol: float, maxiter: int, dtype: np.dtype, restart: int,
                    first: int) -> tuple[int, float]:
        """The whole iteration (:func:`frontend.distributed._krylov.iterations`), each step awaited; (the
        last iteration, the true residual)."""
        await self.start()
        try:
            result = await self.drive(iterations(self, method, bnorm, tol, maxiter, dtype, restart, first))
            if self._puts is not None:
                await self._puts
            return result
        finally:
            self.close()

    async def drive(self, steps: Steps[tuple[int, float]]) -> tuple[int, float]:
        request: Step
        try:
            request = next(steps)
            while True:
                request = steps.send(await self.step(*request))
        except StopIteration as done:
            return done.value

    async def start(self) -> None:
        """Connect to the other workers and export ``x0``'s halo entries (as step -1), which the first SpMV of
        ``x`` reads."""
        await self.connect()
        self.steps = -1
        await self.step([], export=[("x", False)])

    async def connect(self) -> None:
        """Open this worker's connections to the other workers (from Dask's pool)."""
        try:
            for w in self.peers:
                comm = self.comms[w] = await self.worker.rpc.connect(w)
                self._offload[w], comm.allow_offload = comm.allow_offload, False  # small messages: never sized
        except OSError as exc:
            raise Aborted(f"worker {self.me} cannot reach the other workers: {exc}") from exc

    def close(self) -> None:
        """Hand the connections back to the worker's pool (after the messages already written on them)."""
        for w, comm in self.comms.items():
            comm.allow_offload = self._offload[w]
            self.worker.rpc.reuse(w, comm)
        self.comms = {}

    # ----- the exchange ----------------------------------------------------------------------------------------
    async def _write(self, worker: str, key: tuple, dots: list[complex], halo: np.ndarray | None) -> None:
        """One message, one way, on this worker's connection to ``worker``: the numbers as raw bytes (nothing
        pickled), one frame."""
        try:
            await self.comms[worker].write({
                "op": HANDLER, "reply": False, "solve": self.solve, "to": worker, "key": list(key),
                "dots": np.array(dots, dtype=complex).tobytes(), "halo": b"" if halo is None else halo.tobytes(),
                "shape": None if halo is None else list(halo.shape), "dtype": "" if halo is None else halo.dtype.str})
        except Exception as exc:  # noqa: BLE001 - the peer is gone: stop this worker's loop (it raises Aborted)
            self.local.stop(f"worker {self.me} cannot reach worker {worker}: {type(exc).__name__}: {exc}")

    async def _read(self, step: int, phase: str) -> dict[str, np.ndarray]:
        """The peers' messages of ``step``/``phase``: their halo entries are kept for the next SpMV, their
        shares of the dot products returned (worker -> shares)."""
        keys = [(step, phase, w) for w in self.peers]
        shares: dict[str, np.ndarray] = {}
        for (_, _, w), (dots, halo) in zip(keys, await self.local.take(keys, self.timeout)):
            shares[w] = dots
            if phase == "end" and halo is not None:
                self.received[w] = halo
        if phase == "end":
            self.unread = None
        return shares


def run_ranks(solve: str, ranks: list[int], parts: list[Part], halos: list[Halo], bs: list[np.ndarray],
              x0s: list[np.ndarray], jacobi: bool, places: list[str], boxes: dict[str, Any], linked: bool,
              params: dict[str, Any]) -> dict[str, Any]:
    """The long-running task of one worker, holding partitions ``ranks`` (blocks ``parts``): the whole
    iteration, run on the worker's event loop while this task waits; its blocks of the solution and what it
    counted. ``params``: method, bnorm, tol, maxiter, restart, first (the iteration to count from),
    checkpoint, queue (a Dask ``Queue`` name), timeout."""
    from distributed import get_worker, secede
    from distributed.utils import sync
    worker = get_worker()
    if any(worker.address != places[p] for p in ranks):
        raise RuntimeError(f"partitions {ranks} run on {worker.address}, their blocks are on "
                           f"{sorted({places[p] for p in ranks})}")
    local: Any = worker.state.actors[boxes[worker.address].key]  # this worker's Mailbox itself
    try:
        group = GroupState(ranks, parts, halos, places, bs, x0s, jacobi)
    except Exception as exc:
        _abort_all(boxes, local, f"worker {worker.address} failed: {type(exc).__name__}: {exc}")
        raise
    secede()  # the worker's thread slot is free for other work while the solve runs
    m = GroupMachine(worker, solve, group, places, local, linked, params["timeout"], params["checkpoint"],
                     params["queue"] or None)
    try:
        its, residual = sync(worker.loop, m.run, params["method"], params["bnorm"], params["tol"],
                             params["maxiter"], bs[0].dtype, params["restart"], params["first"])
    except Aborted as exc:
        return {"aborted": str(exc)}
    except Exception as exc:
        if local.stopped:  # the failure came from the solve being stopped (a peer's worker died)
            return {"aborted": f"{type(exc).__name__}: {exc}"}
        _abort_all(boxes, local, f"worker {worker.address} failed: {type(exc).__name__}: {exc}")
        raise
    return {"x": group.blocks_of("x"), "iterations": its, "residual": residual, "steps": m.steps,
            "halo_bytes": m.sent_bytes, "history": m.history, "seconds_per_iteration": m.ticks.per_iteration}


def _abort_all(boxes: dict[str, Any], local: Mailbox, reason: str) -> None:
    """Tell every worker of the solve to stop (a failed one would otherwise leave the others waiting)."""
    local.stop(reason)
    for box in boxes.values():
        try:
            box.abort(reason)
        except Exception:  # noqa: BLE001 - best effort: a dead worker's loop is stopped already
            pass
