"""A worker's side of resident operands (:mod:`frontend.distributed._vector`): one Dask actor per worker and
planned product (:class:`ResidentHost`) holding the worker's partitions as one set of vectors
(:class:`frontend.distributed._group.GroupState`, the worker loop's) and the machine that exchanges their
halo entries with the other workers (:class:`frontend.distributed._rank.GroupMachine`: one one-way message
per worker pair and product, on the ``ust_mailbox`` handler). The client's commands arrive on the
``ust_resident`` comm handler, on the worker's event loop, one after the other in the order the client wrote
them; a command that fails stops this worker's machine and the other workers' (they would wait for its
messages), and every later command answers with the first failure, naming the partitions."""
from __future__ import annotations

import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._client import LOG
from ._group import GroupState
from ._plan import Halo
from ._rank import Aborted, GroupMachine, Mailbox
from ._run import frame, frame_header
from ._worker import Part

HANDLER = "ust_resident"  # the workers' comm handler that runs a resident operand's commands
_HOSTS: weakref.WeakValueDictionary[tuple[str, str], ResidentHost] = weakref.WeakValueDictionary()


def coefficient(c: Any, scalars: dict[int, Any]) -> Any:
    """A command's coefficient: ``[number, scalar]`` (``scalar``: a key of ``scalars``, the numbers the workers
    computed, or None), a number being a float or ``[real, imag]``."""
    number, ref = c
    value = complex(*number) if isinstance(number, (list, tuple)) else number
    return value if ref is None else value * scalars[ref]


@dataclass
class Store:
    """A host's arrays (``group.vec``), the scalars its workers computed, and the product buffers of dropped
    arrays (with their blocks' views), reused by later products (no new pages each call)."""

    group: GroupState
    scalars: dict[int, Any] = field(default_factory=dict)
    free: list[tuple[np.ndarray, list[np.ndarray]]] = field(default_factory=list)

    def drop(self, names: Sequence[str], scalars: Sequence[int]) -> None:
        group = self.group
        for name in names:
            group.vec.pop(name, None)
            out = group.outs.pop(name, None)
            views = [blk.outs.pop(name) for blk in group.blocks if name in blk.outs]
            if out is not None and len(views) == len(group.blocks) and len(self.free) < 4:
                self.free.append((out, views))
        for key in scalars:
            self.scalars.pop(key, None)

    def spmv(self, dst: str, src: str, far: np.ndarray | None) -> None:
        group = self.group
        own = group.vec[src]
        dtype = np.result_type(group.blocks[0].part.tensor.dtype, own.dtype)
        if dst not in group.outs:
            for k, (out, views) in enumerate(self.free):
                if out.shape == own.shape and out.dtype == dtype:
                    del self.free[k]
                    group.outs[dst] = out
                    for blk, view in zip(group.blocks, views):
                        blk.outs[dst] = view
                    break
        group.vec[dst] = group.spmv(dst, own, far)


def run_ops(store: Store, ops: Sequence[Sequence[Any]], far: np.ndarray | None,
            dots: np.ndarray | None = None) -> list[complex]:
    """The commands' operations on the worker's arrays, in order; the local dot products they ask for.

    ``("spmv", dst, src)`` (``far``: the halo of ``src``), ``("lin", dst, [[coef, src], ...], dtype)``,
    ``("dot", u, v, conjugate)`` (``sum(conj(u) * v)`` or ``sum(u * v)``), ``("rsqrt", scalar, k)``: the
    scalar ``1 / sqrt(dots[k])`` (the summed dot products of the step just run), ``("drop", names, scalars)``.
    """
    vec, scalars, out = store.group.vec, store.scalars, []
    for op in ops:
        kind = op[0]
        if kind == "spmv":
            store.spmv(op[1], op[2], far)
        elif kind == "lin":
            value = None
            for c, src in op[2]:
                term = coefficient(c, scalars) * vec[src]
                value = term if value is None else value + term
            vec[op[1]] = np.asarray(value).astype(np.dtype(op[3]), copy=False)
        elif kind == "dot":
            u, v = vec[op[1]], vec[op[2]]
            out.append(complex(np.vdot(u, v) if op[3] else np.dot(u.ravel(), v.ravel())))
        elif kind == "rsqrt":
            assert dots is not None
            scalars[op[1]] = 1.0 / np.sqrt(abs(dots[op[2]].real))
        elif kind == "drop":
            store.drop(op[1], op[2])
        else:
            raise ValueError(f"unknown resident operation {kind!r}")
    return out


class HostMachine(GroupMachine):
    """The worker loop's machine running the resident commands' operations."""

    store: Store

    def apply(self, ops: list[tuple], far: np.ndarray | None) -> list[complex]:
        return run_ops(self.store, ops, far)


class ResidentHost:
    """Dask actor: the partitions ``ranks`` held by this worker as one set of vectors, for one planned product
    and its resident operands (see the module docstring)."""

    def __init__(self, key: str, ranks: list[int], parts: list[Part], halos: list[Halo], places: list[str],
                 dtype: str, timeout: float) -> None:
        from distributed import get_worker
        worker = get_worker()
        zeros = [np.zeros(part.rows, dtype=np.dtype(dtype)) for part in parts]
        self.key, self.me, self.ranks = key, worker.address, list(ranks)
        self.group = GroupState(ranks, parts, halos, places, zeros, zeros, jacobi=False)
        self.local = Mailbox(key)
        self.machine = HostMachine(worker, key, self.group, places, self.local, True, timeout, 0, None)
        self.store = self.machine.store = Store(self.group)
        self.failed: str | None = None
        self.origin = False  # whether the failure happened here (else it came from another worker)
        _HOSTS[(key, self.me)] = self
        worker.handlers.setdefault(HANDLER, _command)

    @property
    def partitions(self) -> str:
        return f"partition{'s' if len(self.ranks) > 1 else ''} {', '.join(map(str, self.ranks))}"

    async def run(self, ops: Sequence[Any], step: bool, halo: Sequence[Any], export: Sequence[str],
                  post: Sequence[Any], rows: np.ndarray | None, name: str | None, want: Any) -> dict[str, Any]:
        """One command: ``rows`` kept as vector ``name``, ``ops`` (a step exchanging the halo of ``export``
        with the other workers when ``step``), then ``post`` (which may use the step's summed dot products),
        then what the client ``want``s back: ``["gather", name]`` or ``["dots", [[u, v, conjugate], ...]]``."""
        if self.failed is None:
            try:
                if rows is not None and name is not None:
                    self.group.vec[name] = rows
                if step:
                    if self.machine.peers and not self.machine.comms:
                        await self.machine.connect()
                    terms = [(coefficient(c, self.store.scalars), src, False) for c, src in halo]
                    dots = await self.machine.step(list(ops), terms or None, [(n, False) for n in export])
                else:
                    run_ops(self.store, ops, None)
                    dots = None
                run_ops(self.store, post, None, dots)
                if want is None:
                    return {"status": "OK"}
                if want[0] == "gather":
                    got = np.array(self.group.vec[want[1]], order="C", copy=True)  # its buffer may be reused
                    return {"status": "OK", "result": frame(got, frame_header(got))}
                return {"status": "OK", "result": run_ops(self.store, [("dot", *d) for d in want[1]], None)}
            except Aborted as exc:
                self.failed = self.failed or f"{self.partitions} on worker {self.me} stopped: {exc}"
            except Exception as exc:  # noqa: BLE001 - kept and reported at the client's next synchronisation
                self.failed = f"{self.partitions} on worker {self.me} failed: {type(exc).__name__}: {exc}"
                self.origin = True
                await self._stop_all(self.failed)
        return {"status": "error", "message": self.failed, "origin": self.origin, "partition": self.ranks[0]}

    async def _stop_all(self, reason: str) -> None:
        """Stop this worker's machine and tell the other workers' hosts (whose steps would wait for this
        worker's messages) to stop."""
        self.local.stop(reason)
        for w in self.machine.peers:
            try:
                comm = self.machine.comms.get(w)
                if comm is None:
                    comm = self.machine.comms[w] = await self.machine.worker.rpc.connect(w)
                    self.machine._offload[w] = comm.allow_offload
                await comm.write({"op": HANDLER, "reply": False, "key": self.key, "to": w, "stop": reason})
            except Exception as exc:  # noqa: BLE001 - best effort: a worker that is gone waits for nothing
                LOG.debug("telling %s to stop: %s", w, exc)

    def stop(self, reason: str) -> None:
        """Stop this worker's machine (a wait in it raises); later commands answer with ``reason``."""
        if self.failed is None:
            self.failed = reason
        self.local.stop(reason)

    async def close(self) -> None:
        """Hand the connections to the other workers back to the worker's pool."""
        self.machine.close()


async def _command(key: str, to: str, stop: str | None = None,
                   commands: Sequence[dict[str, Any]] = ()) -> dict[str, Any] | None:
    """The ``ust_resident`` handler: ``commands`` for worker ``to``'s host of the plan ``key``, run one after the
    other (see :meth:`ResidentHost.run`; the answer is the last one's), or ``stop``: stop the host."""
    host = _HOSTS.get((key, to))
    if stop is not None:
        if host is not None:
            host.stop(f"{host.partitions} on worker {host.me} stopped: {stop}")
        return None
    if host is None:
        return {"status": "missing"}
    result = None
    for c in commands:
        result = await host.run(c.get("ops", ()), bool(c.get("step")), c.get("halo", ()), c.get("export", ()),
                                c.get("post", ()), c.get("rows"), c.get("name"), c.get("want"))
    return result
