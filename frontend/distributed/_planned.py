"""Planned distributed products: ``D.plan_matmul(x_like)`` keeps one Dask actor per partition on the worker
holding its block, with the block's ``Matmul`` planned once; each call sends every actor the operand's rows
its columns touch and gathers the row blocks (no task per partition per call, nothing recompiled, nothing
resubmitted). The client calls the workers directly, on the ``ust_product`` comm handler the actors register
on their workers: the rows and the result travel as frames of their own, sent from the arrays' memory
without a copy under headers made once per plan (no serializer run per call); through the actors' own path
(relayed by the scheduler) only when the client cannot reach the workers. A lost worker is noticed while
waiting; the partitions are rebuilt from their recipes, the actors made again and the call repeated."""
from __future__ import annotations

import itertools
import uuid
import weakref
from typing import Any

import numpy as np

from ._client import LOG
from ._run import POLL, DistributedError, WorkerLost, frame, frame_header, wait_all, watch
from ._vector import Resident, ResidentArray
from ._worker import INLINE_NSE, Part, _threads

HANDLER = "ust_product"  # the workers' comm handler that runs a planned block's product
_BLOCKS: weakref.WeakValueDictionary[str, BlockProduct] = weakref.WeakValueDictionary()  # name -> actor


async def _product(name: str, rows: np.ndarray) -> dict[str, Any]:
    """The ``ust_product`` handler: block ``name`` times the operand rows ``rows``, its result as a frame of
    its own; on the worker's event loop for blocks of up to :data:`INLINE_NSE` stored entries, else in the
    worker's actor thread (one call at a time, as the actor's own calls)."""
    block = _BLOCKS.get(name)
    if block is None:
        return {"status": "missing"}
    try:
        if block.nse <= INLINE_NSE:
            return {"status": "OK", "result": block.multiply_frame(rows)}
        import asyncio
        result = await asyncio.get_running_loop().run_in_executor(block.executor, block.multiply_frame, rows)
        return {"status": "OK", "result": result}
    except Exception as exc:  # noqa: BLE001 - reported to the caller, which names the partition
        return {"status": "error", "exception": f"{type(exc).__name__}: {exc}"}


class BlockProduct:
    """Dask actor: one partition and its product with operands of one shape and dtype, planned once."""

    def __init__(self, part: Part, shape: tuple[int, ...], dtype: str, kwargs: dict[str, Any],
                 name: str | None = None) -> None:
        from frontend.ops._api import Matmul
        self.part = part
        self.nse = int(part.tensor.nse)
        self.operand = np.zeros((len(part.cols), *shape[1:]), dtype=np.dtype(dtype))
        options = dict(kwargs)
        options.setdefault("threads", _threads())
        self.plan = Matmul(part.tensor, self.operand, **options).plan()  # reads self.operand in place
        self.out = np.empty((part.rows, *shape[1:]), dtype=np.result_type(part.tensor.dtype, self.operand.dtype))
        self.out_header = frame_header(self.out)
        self.executor: Any = None  # the worker's actor thread
        if name is not None:  # reachable on this worker's ust_product handler
            from distributed import get_worker
            worker = get_worker()
            self.executor = worker.executors.get("actor")
            _BLOCKS[name] = self
            worker.handlers.setdefault(HANDLER, _product)

    @property
    def rows(self) -> int:
        """The block's rows (read through the actor: one round trip, no work)."""
        return self.part.rows

    @property
    def storage(self) -> str:
        """The storage the block's kernel streams (with ``optimize=True``: what the format chooser picked)."""
        choice = self.plan.format_choice
        fmt = self.part.tensor.tensor_format
        return (fmt.name or str(fmt)) if choice is None else choice.chosen.name

    def multiply(self, rows: np.ndarray) -> np.ndarray:
        """The block times the operand whose rows at the block's columns are ``rows``."""
        self.operand[...] = rows
        return self.plan.execute(out=self.out).copy()  # the same out every call: checked once by the plan

    def multiply_frame(self, rows: np.ndarray) -> Any:
        """:meth:`multiply` with the result in a new array of its own (never written again, so it is sent from
        its memory as it is), as a frame under a header made once."""
        self.operand[...] = rows
        out = self.plan.execute(out=np.empty_like(self.out))
        return frame(out, self.out_header)


class DistributedMatmulPlan:
    """``plan(x)`` is ``frontend.matmul(D, x)`` for NumPy ``x`` of the planned shape and dtype, with every
    partition's kernel planned once and kept on its worker (see the module docstring). ``close()`` (or
    ``with``) releases the actors."""

    def __init__(self, a: Any, x_like: Any, retries: int = 2, **kwargs: Any) -> None:
        like = np.asarray(x_like)
        if like.ndim not in (1, 2) or like.shape[0] != a.shape[1]:
            raise ValueError(f"plan_matmul takes a vector or matrix with {a.shape[1]} rows (the "
                             f"DistributedTensor is {a.shape[0]}x{a.shape[1]}), got shape {like.shape}")
        bad = sorted(set(kwargs) - {"alpha", "semiring", "prolog", "epilog", "threads", "optimize"})
        if bad:
            raise ValueError("plan_matmul takes alpha, semiring, prolog, epilog, threads and optimize; not "
                             f"{', '.join(bad)}")
        self.a, self.shape, self.dtype = a, like.shape, like.dtype
        self.kwargs, self.retries = kwargs, retries
        self.calls = 0
        self._direct = True  # the client reaches the workers directly (else the actors' calls are relayed)
        # each partition's touched rows of the operand: a slice (no copy) when they are a contiguous range
        self._rows: list[slice | np.ndarray] = [slice(int(c[0]), int(c[-1]) + 1) if len(c) and
                                                int(c[-1]) - int(c[0]) + 1 == len(c) else c for c in a.cols]
        self._headers = [frame_header(np.empty((len(c), *self.shape[1:]), dtype=self.dtype)) for c in a.cols]
        self._futures: list[Any] = []
        self._actors: list[Any] = []
        self._resident: Resident | None = None
        self._start()

    def _start(self) -> None:
        a = self.a
        a.heal()
        self.places: list[str | None] = a.workers()
        self._names = [f"ust-product-{uuid.uuid4().hex}" for _ in range(a.partitions)]
        self._futures = [a.client.submit(BlockProduct, a.block(p), self.shape, self.dtype.str, self.kwargs,
                                         self._names[p], workers=None if self.places[p] is None else
                                         [self.places[p]], actor=True, pure=False) for p in range(a.partitions)]
        self._actors = wait_all(a.client, self._futures, list(enumerate(self.places)), a.timeout)

    def storages(self) -> list[str]:
        """Each partition's storage as its kernel streams it (``optimize=True``: the format chooser's pick for
        that row block, the same chooser as ``frontend.optimize``), one round trip per partition."""
        return [actor.storage for actor in self._actors]

    def scatter(self, x: Any) -> ResidentArray:
        """``x`` (NumPy, shaped and typed as the plan's operands) as a resident array: its rows sent once to the
        workers holding the matching rows of the (square) ``DistributedTensor``; ``plan(v)`` of a resident
        array is resident too (see :mod:`frontend.distributed._vector`)."""
        if self.a.shape[0] != self.a.shape[1]:
            raise ValueError(f"resident operands need a square DistributedTensor (their rows are partitioned like "
                             f"its rows and its columns at once); this one is {self.a.shape[0]}x{self.a.shape[1]}: "
                             "call the plan with NumPy operands")
        if self.kwargs:  # the hosts' kernels are planned as a solve's: plain products on the worker's threads
            raise ValueError(f"resident operands take plans made without {', '.join(sorted(self.kwargs))}; make "
                             "one with D.plan_matmul(x_like) for them")
        x = np.asarray(x)
        if x.shape != self.shape:
            raise ValueError(f"the plan was made for operands of shape {self.shape}, got {x.shape}")
        if self._resident is None:
            self._resident = Resident(self.a, self.dtype)
        return self._resident.scatter(np.asarray(x, dtype=self.dtype))

    def __call__(self, x: Any, out: np.ndarray | None = None) -> Any:
        if isinstance(x, ResidentArray):
            if out is not None:
                raise TypeError("out= takes NumPy results; plan(v) of a resident array gives a resident array")
            if self._resident is None or x.owner is not self._resident:
                raise ValueError("the resident array belongs to another plan: make it with this plan's scatter")
            return self._resident.matmul(x)
        x = np.asarray(x)
        if x.shape != self.shape:
            raise ValueError(f"the plan was made for operands of shape {self.shape}, got {x.shape}")
        rows = [np.ascontiguousarray(x[cols], dtype=self.dtype) for cols in self._rows]
        for attempt in itertools.count():
            try:
                blocks = self._multiply(rows)
                break
            except WorkerLost as exc:
                if attempt >= self.retries:
                    raise
                LOG.warning("%s; rebuilding the planned product's partitions", exc)
                self._start()
        self.calls += 1
        if out is None:
            return np.concatenate(blocks)
        for p, blk in enumerate(blocks):
            out[self.a.bounds[p]:self.a.bounds[p + 1]] = blk
        return out

    def _multiply(self, rows: list[np.ndarray]) -> list[np.ndarray]:
        """Every block's product at once, straight from the client to the workers holding them (their
        ``ust_product`` handler, one round trip for all partitions); through the actors' own path
        (the scheduler relays it unless the client connects to workers directly) when that fails: a lost
        worker is then noticed, or the workers are not reachable directly and later calls go that way."""
        if self._direct:
            try:
                return self.a.client.sync(self._direct_calls, rows)
            except OSError:
                blocks = self._gather(self._send(rows))
                self._direct = False  # it answered that way: the workers are not reachable directly
                return blocks
            except TimeoutError:
                raise DistributedError(f"timed out after {self.a.timeout:g} s waiting for the planned product on "
                                       f"workers {sorted(set(map(str, self.places)))}") from None
        return self._gather(self._send(rows))

    async def _direct_calls(self, rows: list[np.ndarray]) -> list[np.ndarray]:
        import asyncio

        from distributed.core import send_recv
        client = self.a.client

        async def one(p: int, actor: Any, r: np.ndarray) -> np.ndarray:
            comm = await client.rpc.connect(actor._address)  # a connection of the client's pool
            offload, comm.allow_offload = comm.allow_offload, False  # the frames' size is known: never sized
            try:
                got = await send_recv(comm, op=HANDLER, name=self._names[p], rows=frame(r, self._headers[p]))
            finally:
                comm.allow_offload = offload
                client.rpc.reuse(actor._address, comm)
            if not isinstance(got, dict) or got["status"] == "missing":  # the worker holding it was replaced
                raise WorkerLost(f"partition {p}: its worker {self.places[p]} no longer holds its block", p,
                                 self.places[p])
            if got["status"] != "OK":
                raise DistributedError(f"partition {p} on worker {self.places[p]} failed: {got['exception']}", p,
                                       self.places[p])
            return got["result"]
        calls = [asyncio.ensure_future(one(p, actor, r)) for p, (actor, r) in enumerate(zip(self._actors, rows))]
        return await watch(client, calls, self.places, self.a.timeout,
                           lambda p: WorkerLost(f"partition {p}: its worker {self.places[p]} left the cluster", p,
                                                self.places[p]))

    def _send(self, rows: list[np.ndarray]) -> list[Any]:
        """Every actor's ``multiply`` call (answers pending); :class:`WorkerLost` when an actor's worker is
        known to be gone."""
        futures = []
        for p, (actor, r) in enumerate(zip(self._actors, rows)):
            try:
                futures.append(actor.multiply(r))
            except RuntimeError as exc:  # "Worker holding Actor was lost"
                raise WorkerLost(f"partition {p}: {exc}", p, self.places[p]) from exc
        return futures

    def _gather(self, futures: list[Any]) -> list[np.ndarray]:
        """The actors' answers; :class:`WorkerLost` when a worker holding one leaves, errors naming the
        partition and its worker."""
        import time
        deadline = time.monotonic() + self.a.timeout
        out: list[Any] = [None] * len(futures)
        for p, f in enumerate(futures):
            while True:
                try:
                    out[p] = f.result(timeout=POLL)
                    break
                except TimeoutError:
                    if self.places[p] not in self.a.client.nthreads():
                        raise WorkerLost(f"partition {p}: its worker {self.places[p]} left the cluster", p,
                                         self.places[p]) from None
                    if time.monotonic() > deadline:
                        raise DistributedError(f"timed out after {self.a.timeout:g} s waiting for partition {p} "
                                               f"on worker {self.places[p]}", p, self.places[p]) from None
                except (OSError, RuntimeError) as exc:
                    raise WorkerLost(f"partition {p}: its worker {self.places[p]} was lost ({exc})", p,
                                     self.places[p]) from exc
                except Exception as exc:
                    raise DistributedError(f"partition {p} on worker {self.places[p]} failed: "
                                           f"{type(exc).__name__}: {exc}", p, self.places[p]) from exc
        return out

    def close(self) -> None:
        """Release the actors (and their planned kernels) and the resident arrays' hosts."""
        self._actors, self._futures = [], []
        if self._resident is not None:
            self._resident.close()

    def __enter__(self) -> DistributedMatmulPlan:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
