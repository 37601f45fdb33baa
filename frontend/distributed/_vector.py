"""Resident operands of a planned product: arrays that stay on the workers, row-partitioned like the
``DistributedTensor``'s rows (:class:`ResidentArray`, made by ``plan.scatter(x)``; ``plan(v)`` of one gives
another). Each worker holding partitions has one host (:mod:`frontend.distributed._host`) with its rows of
every resident array; a product's operand takes its halo entries from the other workers (the worker loop's
exchange, one one-way message per worker pair and product), never through the client.

Calls are **asynchronous**: the client records each product or scalar operation in a command it writes to
every host one way (the previous command when the next product comes, so that ``plan(v).normalized()`` and
``plan(v) / s`` travel as one command), and returns a handle at once; ``numpy()``, ``norm()``, ``vdot()`` and
``dot()`` send the pending command with a request and wait for the answers (one round trip). The workers run
the commands in the order written. An error on a worker stops every host of the plan and is raised at the
next synchronisation, naming the partitions and the worker; a worker lost takes the resident arrays with it
(:class:`WorkerLost` at the next synchronisation): ``plan.scatter`` makes new hosts."""
from __future__ import annotations

import asyncio
import itertools
import threading
import uuid
import weakref
from dataclasses import dataclass, field
from numbers import Number
from typing import Any

import numpy as np

from ._client import LOG
from ._host import HANDLER, ResidentHost
from ._run import DistributedError, WorkerLost, frame, frame_header, wait_all, watch

Term = tuple[Any, "Scalar | None", "ResidentArray | None"]  # (number, a scalar the workers computed, an exported
# array: None for the array itself, so that no handle refers to itself and each is freed when dropped)


class Scalar:
    """A number the workers computed (the inverse norm of :meth:`ResidentArray.normalized`), kept on them
    while a handle's halo refers to it."""

    def __init__(self, hosts: Hosts) -> None:
        self.key = next(hosts.counter)
        weakref.finalize(self, hosts.dropped_scalars.append, self.key)


def _number(c: Any) -> Any:
    """A coefficient as a message carries it (a float, or ``[real, imag]``)."""
    c = complex(c)
    return c.real if c.imag == 0 else [c.real, c.imag]


@dataclass
class Command:
    """What the hosts run next (see :meth:`frontend.distributed._host.ResidentHost.run`)."""

    ops: list[Any] = field(default_factory=list)
    step: bool = False
    halo: list[Any] = field(default_factory=list)
    export: list[ResidentArray] = field(default_factory=list)
    post: list[Any] = field(default_factory=list)
    made_after: set[str] = field(default_factory=set)  # arrays made in ``post`` (after the step's exchange)
    rows: dict[str, np.ndarray] | None = None
    name: str | None = None


class Hosts:
    """The hosts of one plan (one actor per worker holding partitions) and the client's connection to each,
    on which commands are written in order (see the module docstring)."""

    def __init__(self, a: Any, dtype: np.dtype) -> None:
        self.a, self.client = a, a.client
        halo = a.halo()
        a.heal()
        places = a.workers()
        if None in places:
            raise WorkerLost(f"partition {places.index(None)} has no worker", places.index(None), None)
        self.key = f"ust-resident-{uuid.uuid4().hex}"
        self.workers: list[str] = sorted(set(places))
        self.ranks = {w: [p for p in range(a.partitions) if places[p] == w] for w in self.workers}
        self.futures = [a.client.submit(ResidentHost, self.key, ranks, [a.block(p) for p in ranks],
                                        [halo[p] for p in ranks], places, dtype.str, a.timeout, workers=[w],
                                        actor=True, pure=False) for w, ranks in self.ranks.items()]
        self.actors = wait_all(a.client, self.futures, [(r[0], w) for w, r in self.ranks.items()], a.timeout)
        self.counter = itertools.count()
        self.dropped: list[str] = []
        self.dropped_scalars: list[int] = []
        self.comms: dict[str, Any] = {}
        self.queued: list[dict[str, dict[str, Any]]] = []  # commands not written yet (per worker)
        self.queued_lock = threading.Lock()
        self.lock: asyncio.Lock | None = None
        self.broken: BaseException | None = None  # a write that failed
        self.lost: DistributedError | None = None  # why the hosts are gone (their arrays with them)

    def name(self) -> str:
        return f"r{next(self.counter)}"

    def rows(self, x: np.ndarray) -> dict[str, np.ndarray]:
        """Each worker's rows of ``x`` (its partitions' rows in order), copied: they are sent after the call
        returns, and the caller may change ``x`` meanwhile."""
        b = self.a.bounds
        out = {}
        for w, ranks in self.ranks.items():
            if ranks == list(range(ranks[0], ranks[-1] + 1)):
                out[w] = np.array(x[b[ranks[0]]:b[ranks[-1] + 1]], order="C", copy=True)
            else:
                out[w] = np.concatenate([x[b[p]:b[p + 1]] for p in ranks])
        return out

    def messages(self, cmd: Command, want: Any) -> dict[str, dict[str, Any]]:
        """The command as each host takes it (the arrays and scalars dropped since the last one first)."""
        names, self.dropped = self.dropped, []
        scalars, self.dropped_scalars = self.dropped_scalars, []
        ops = ([("drop", names, scalars)] if names or scalars else []) + cmd.ops
        base = {"ops": ops, "step": cmd.step, "halo": cmd.halo, "export": [h.name for h in cmd.export],
                "post": cmd.post, "name": cmd.name, "want": want}
        out = {}
        for w in self.workers:
            msg = dict(base)
            if cmd.rows is not None:
                r = cmd.rows[w]
                msg["rows"] = frame(r, frame_header(r))
            out[w] = msg
        return out

    # ----- the connections (on the client's event loop) -------------------------------------------------------
    async def _comm(self, w: str) -> Any:
        comm = self.comms.get(w)
        if comm is None:
            comm = self.comms[w] = await self.client.rpc.connect(w)
            comm.allow_offload = False  # the messages' sizes are known: never sized in a thread
        return comm

    def _lock(self) -> asyncio.Lock:
        if self.lock is None:
            self.lock = asyncio.Lock()
        return self.lock

    async def _send(self, last: dict[str, dict[str, Any]] | None = None) -> None:
        """Write the commands queued so far, in order, as one message to each host (with ``last``, the command
        whose answer the message asks for)."""
        with self.queued_lock:
            batch, self.queued = self.queued, []
        if last is not None:
            batch.append(last)
        if not batch:
            return
        for w in self.workers:
            await (await self._comm(w)).write({"op": HANDLER, "reply": last is not None, "key": self.key, "to": w,
                                               "commands": [msgs[w] for msgs in batch]})

    async def _write(self) -> None:
        async with self._lock():  # the lock is fair: batches go out in the order queued
            if self.broken is not None:
                return
            try:
                await self._send()
            except Exception as exc:  # noqa: BLE001 - raised at the next synchronisation
                self.broken = exc

    async def _call(self, msgs: dict[str, dict[str, Any]]) -> list[Any]:
        async with self._lock():
            if self.broken is not None:
                raise OSError(f"{type(self.broken).__name__}: {self.broken}")
            await self._send(msgs)
            reads = [asyncio.ensure_future(self.comms[w].read()) for w in self.workers]
            try:
                return await watch(self.client, reads, self.workers, self.a.timeout, self._lost)
            except BaseException:
                self._abort_comms()
                raise

    def _abort_comms(self) -> None:
        for comm in self.comms.values():
            comm.abort()
        self.comms = {}

    def _lost(self, k: int) -> WorkerLost:
        w = self.workers[k]
        p = self.ranks[w][0]
        return WorkerLost(f"partition {p}: its worker {w} left the cluster; the plan's resident arrays were lost "
                          "with it (plan.scatter makes them again)", p, w)

    # ----- what the plan asks -----------------------------------------------------------------------------------
    def post(self, cmd: Command) -> None:
        """Queue the command for every host and return: the client's event loop writes what is queued, one way,
        in one message per host (the commands queued while it wrote the last one)."""
        msgs = self.messages(cmd, None)
        with self.queued_lock:
            self.queued.append(msgs)
            if len(self.queued) > 1:  # a write is scheduled, which takes this one too
                return
        asyncio.run_coroutine_threadsafe(self._write(), self.client.loop.asyncio_loop)

    def call(self, cmd: Command, want: Any) -> list[Any]:
        """Write the command with a request to every host and wait for the answers (in ``workers`` order);
        a failure on any host, or a lost worker, raises and ends the hosts."""
        try:
            replies = self.client.sync(self._call, self.messages(cmd, want))
        except WorkerLost as lost:
            self.end(lost)
            raise
        except TimeoutError:
            timeout = DistributedError(f"timed out after {self.a.timeout:g} s waiting for the resident arrays' "
                                       f"workers {self.workers}")
            self.end(timeout)
            raise timeout from None
        except OSError as exc:
            gone = [k for k, w in enumerate(self.workers) if w not in self.client.nthreads()]
            unreachable = self._lost(gone[0]) if gone else WorkerLost(f"the resident arrays' workers cannot be "
                                                                      f"reached: {exc}", None, None)
            self.end(unreachable)
            raise unreachable from exc
        errors = [(k, r) for k, r in enumerate(replies) if not isinstance(r, dict) or r.get("status") != "OK"]
        if not errors:
            return [r.get("result") for r in replies]
        k, r = next(((k, r) for k, r in errors if isinstance(r, dict) and r.get("origin")), errors[0])
        failure = self._lost(k) if not isinstance(r, dict) or r.get("status") == "missing" else DistributedError(
            f"{r['message']}; the plan's resident arrays are lost (plan.scatter makes them again)", r["partition"],
            self.workers[k])
        self.end(failure)
        raise failure

    def end(self, why: DistributedError) -> None:
        """Release the hosts (their arrays with them) after a failure; later uses of their arrays raise ``why``."""
        if self.lost is not None:
            return
        self.lost = why

        async def stop() -> None:
            live = await self.client.scheduler.ncores()
            for w in self.workers:  # on a connection of their own: the plan's may be busy with a command
                if w in live:
                    try:  # stop a host waiting for a lost worker's messages
                        comm = await self.client.rpc.connect(w)
                        await comm.write({"op": HANDLER, "key": self.key, "to": w, "reply": False, "stop": str(why)})
                        self.client.rpc.reuse(w, comm)
                    except Exception as exc:  # noqa: BLE001 - best effort: the worker may be going away
                        LOG.debug("stopping the resident host on %s: %s", w, exc)
            async with self._lock():
                self._abort_comms()
        self._release(stop)

    def close(self) -> None:
        """Hand the connections back after the commands written, release the hosts."""
        if self.lost is not None:
            return
        self.lost = DistributedError("the plan was closed; its resident arrays with it")

        async def hand_back() -> None:
            async with self._lock():
                for w, comm in self.comms.items():
                    self.client.rpc.reuse(w, comm)
                self.comms = {}
        self._release(hand_back)

    def _release(self, on_loop: Any) -> None:
        """Run ``on_loop`` on the client's event loop, let the hosts on live workers hand their connections to
        the other workers back, drop the actors."""
        try:
            self.client.sync(on_loop)
            live = self.client.nthreads()
            for w, actor in zip(self.workers, self.actors):
                if w in live:
                    actor.close().result(timeout=self.a.timeout)
        except Exception as exc:  # noqa: BLE001 - the cluster may be going away
            LOG.debug("releasing the resident hosts: %s", exc)
        self.actors, self.futures = [], []


class Resident:
    """A plan's resident arrays: the hosts, the command being gathered, and which arrays' halo entries the
    last exchange sent (``exported``: a handle's halo is a combination of theirs, see :class:`ResidentArray`)."""

    def __init__(self, a: Any, dtype: np.dtype) -> None:
        self.a, self.dtype = a, dtype
        self.hosts: Hosts | None = None
        self.pending: Command | None = None
        self.exported: list[ResidentArray] = []

    def _new(self, shape: tuple[int, ...], dtype: np.dtype) -> ResidentArray:
        assert self.hosts is not None
        return ResidentArray(self, self.hosts, self.hosts.name(), shape, np.dtype(dtype))

    def check(self, v: Any) -> ResidentArray:
        if not isinstance(v, ResidentArray) or v.owner is not self:
            raise TypeError(f"expected a resident array of this plan, got {type(v).__name__}")
        if v.hosts.lost is not None:
            raise DistributedError(f"this resident array is gone: {v.hosts.lost}")
        return v

    def flush(self, want: Any = None) -> list[Any] | None:
        """Send the pending command (with ``want``: and wait for the answers)."""
        assert self.hosts is not None
        cmd, self.pending = self.pending, None
        if want is not None:
            return self.hosts.call(cmd or Command(), want)
        if cmd is not None:
            self.hosts.post(cmd)
        return None

    def _valid(self, v: ResidentArray) -> bool:
        if v.terms is None:
            return False
        return all(any((v if base is None else base) is e for e in self.exported) for _, _, base in v.terms)

    def _export(self, v: ResidentArray) -> None:
        """Make sure the last exchange before the next product sends ``v``'s halo entries."""
        if self._valid(v):
            return
        cmd = self.pending
        if cmd is None or v.name in cmd.made_after:
            self.flush()
            cmd = self.pending = Command(step=True)
        if not cmd.step:
            cmd.step, cmd.export = True, []
        cmd.export.append(v)
        self.exported = cmd.export
        v.terms = [(1.0, None, None)]

    # ----- operations ---------------------------------------------------------------------------------------
    def scatter(self, x: np.ndarray) -> ResidentArray:
        if self.hosts is None or self.hosts.lost is not None:
            self.hosts, self.pending, self.exported = Hosts(self.a, self.dtype), None, []
        self.flush()
        v = self._new(x.shape, x.dtype)
        self.pending = Command(step=True, export=[v], rows=self.hosts.rows(x), name=v.name)
        self.exported, v.terms = self.pending.export, [(1.0, None, None)]
        return v

    def matmul(self, v: ResidentArray) -> ResidentArray:
        v = self.check(v)
        if v.shape[0] != self.a.shape[1]:
            raise ValueError(f"the operand has {v.shape[0]} rows, the DistributedTensor {self.a.shape[1]} columns")
        self._export(v)
        halo = [[[_number(num), None if s is None else s.key], (v if base is None else base).name]
                for num, s, base in v.terms or ()]
        self.flush()
        y = self._new((self.a.shape[0], *v.shape[1:]), np.result_type(self.a.dtype, v.dtype))
        self.pending = Command(ops=[("spmv", y.name, v.name)], step=True, halo=halo, export=[y])
        self.exported, y.terms = self.pending.export, [(1.0, None, None)]
        return y

    def combine(self, terms: list[tuple[Any, ResidentArray]], dtype: np.dtype) -> ResidentArray:
        """``sum(c * v)`` on the workers (no exchange); its halo from its terms' when they are exported."""
        for _, v in terms:
            self.check(v)
        z = self._new(terms[0][1].shape, dtype)
        op = ("lin", z.name, [[[_number(c), None], v.name] for c, v in terms], z.dtype.str)
        cmd = self.pending = self.pending or Command()
        if cmd.post:
            cmd.post.append(op)
            cmd.made_after.add(z.name)
        else:
            cmd.ops.append(op)
        if all(self._valid(v) for _, v in terms):
            z.terms = [(c * num, s, v if base is None else base) for c, v in terms for num, s, base in v.terms or ()]
        return z

    def normalized(self, v: ResidentArray) -> ResidentArray:
        """``v / norm(v)`` with the norm summed among the workers (no round trip to the client)."""
        v = self.check(v)
        cmd = self.pending
        if cmd is None or not cmd.step or v.name in cmd.made_after:
            self.flush()
            cmd = self.pending = Command(step=True, export=list(self.exported))
        if not any(v is e for e in cmd.export):
            cmd.export.append(v)
            self.exported = cmd.export
        assert self.hosts is not None
        s = Scalar(self.hosts)
        z = self._new(v.shape, v.dtype)
        k = sum(op[0] == "dot" for op in cmd.ops)
        cmd.ops.append(("dot", v.name, v.name, True))
        cmd.post += [("rsqrt", s.key, k), ("lin", z.name, [[[1.0, s.key], v.name]], z.dtype.str)]
        cmd.made_after.add(z.name)
        z.terms = [(1.0, s, v)]
        return z

    def gather(self, v: ResidentArray) -> np.ndarray:
        v = self.check(v)
        blocks = self.flush(["gather", v.name])
        assert blocks is not None and self.hosts is not None
        out = np.empty(v.shape, dtype=v.dtype)
        b = self.a.bounds
        for w, got in zip(self.hosts.workers, blocks):
            at = 0
            for p in self.hosts.ranks[w]:
                rows = b[p + 1] - b[p]
                out[b[p]:b[p + 1]] = got[at:at + rows]
                at += rows
        return out

    def dots(self, pairs: list[tuple[ResidentArray, ResidentArray, bool]]) -> list[complex]:
        for u, v, _ in pairs:
            self.check(u)
            self.check(v)
        shares = self.flush(["dots", [[u.name, v.name, conj] for u, v, conj in pairs]])
        assert shares is not None
        return [complex(sum(s[k] for s in shares)) for k in range(len(pairs))]

    def close(self) -> None:
        """Wait for the commands written (a failure is logged), release the hosts."""
        if self.hosts is not None:
            if self.hosts.lost is None:
                try:
                    self.flush(["dots", []])
                except DistributedError as exc:
                    LOG.warning("closing the planned product: %s", exc)
            self.hosts.close()
        self.pending, self.exported = None, []


class ResidentArray:
    """A vector or matrix resident on the workers, row-partitioned like the plan's ``DistributedTensor``
    (``plan.scatter(x)``, ``plan(v)``). ``numpy()`` / ``np.asarray`` gather it; ``norm()``, ``vdot()`` and
    ``dot()`` give a number (one round trip); ``v * s``, ``v / s``, ``v + w``, ``v - w``, ``-v`` and
    ``normalized()`` stay on the workers. Operations are asynchronous (see :mod:`frontend.distributed._vector`).

    ``terms``: the array's entries at other workers' halo positions as ``sum(number * scalar * base)`` over
    arrays whose halo entries the last exchange sent (None: not known, sent before the next product)."""

    __array_ufunc__ = None  # NumPy's operators defer to this class (a scalar times it stays on the workers)

    def __init__(self, owner: Resident, hosts: Hosts, name: str, shape: tuple[int, ...], dtype: np.dtype) -> None:
        self.owner, self.hosts, self.name = owner, hosts, name
        self.shape, self.dtype = tuple(int(n) for n in shape), np.dtype(dtype)
        self.terms: list[Term] | None = None
        weakref.finalize(self, hosts.dropped.append, name)

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def size(self) -> int:
        return int(np.prod(self.shape))

    def __len__(self) -> int:
        return self.shape[0]

    def __repr__(self) -> str:
        return f"ResidentArray(shape={self.shape}, dtype={self.dtype}, partitions={self.owner.a.partitions})"

    def numpy(self) -> np.ndarray:
        """The array gathered on the client (waits for the operations before it)."""
        return self.owner.gather(self)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        out = self.numpy()
        return out if dtype is None else out.astype(dtype, copy=False)

    def norm(self) -> float:
        """The 2-norm (Frobenius for a matrix), as ``np.linalg.norm``: one round trip."""
        return float(np.sqrt(abs(self.owner.dots([(self, self, True)])[0].real)))

    def _scalar(self, value: complex, other: ResidentArray) -> Any:
        dtype = np.result_type(self.dtype, other.dtype)
        return dtype.type(value if np.issubdtype(dtype, np.complexfloating) else value.real)

    def vdot(self, other: ResidentArray) -> Any:
        """``np.vdot(self, other)``: the conjugated dot product of the flattened arrays (one round trip)."""
        self._same_shape(other)
        return self._scalar(self.owner.dots([(self, other, True)])[0], other)

    def dot(self, other: ResidentArray) -> Any:
        """``np.dot(self, other)`` of two vectors (one round trip)."""
        self._same_shape(other)
        if self.ndim != 1:
            raise ValueError(f"dot takes two vectors, got shape {self.shape}; vdot takes matrices")
        return self._scalar(self.owner.dots([(self, other, False)])[0], other)

    def normalized(self) -> ResidentArray:
        """``self / self.norm()`` computed on the workers, the norm summed among them (no round trip to the
        client; fused with the product that made ``self``)."""
        return self.owner.normalized(self)

    def _same_shape(self, other: Any) -> ResidentArray:
        other = self.owner.check(other)
        if other.shape != self.shape:
            raise ValueError(f"shapes {self.shape} and {other.shape} differ")
        return other

    def _scaled(self, s: Any) -> ResidentArray:
        if not isinstance(s, (Number, np.number)) or isinstance(s, (bool, np.bool_)):
            return NotImplemented
        return self.owner.combine([(s, self)], (np.zeros(0, self.dtype) * s).dtype)

    def __mul__(self, s: Any) -> ResidentArray:
        return self._scaled(s)

    __rmul__ = __mul__

    def __truediv__(self, s: Any) -> ResidentArray:
        if not isinstance(s, (Number, np.number)) or isinstance(s, (bool, np.bool_)):
            return NotImplemented
        dtype = (np.zeros(0, self.dtype) / s).dtype
        value: Any = s
        return self.owner.combine([(1 / complex(value) if np.iscomplexobj(value) else 1 / float(value), self)], dtype)

    def __neg__(self) -> ResidentArray:
        return self.owner.combine([(-1.0, self)], self.dtype)

    def __add__(self, other: Any) -> ResidentArray:
        if not isinstance(other, ResidentArray):
            return NotImplemented
        other = self._same_shape(other)
        return self.owner.combine([(1.0, self), (1.0, other)], np.result_type(self.dtype, other.dtype))

    def __sub__(self, other: Any) -> ResidentArray:
        if not isinstance(other, ResidentArray):
            return NotImplemented
        other = self._same_shape(other)
        return self.owner.combine([(1.0, self), (-1.0, other)], np.result_type(self.dtype, other.dtype))
