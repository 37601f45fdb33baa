"""``DistributedTensor``: a matrix split into row blocks balanced by stored entries, each block a UST ``Tensor``
on a Dask worker (:class:`frontend.distributed._worker.Part`).

Every block remembers how it was made (its *recipe*: a task over its source, the CSR rows of a package
object, a file and a row range, a worker-side piece, or a parent block and an operation). Blocks are Dask
futures of those tasks, so when a worker dies Dask recomputes the lost ones from their recipe; a block whose
task failed or was cancelled is resubmitted from its recipe by :meth:`DistributedTensor.heal`.
"""
from __future__ import annotations

import itertools
import uuid
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp

from frontend.format import TensorFormat
from frontend.tensor._tensor import Tensor

from . import _ops, _planned, _solve, _worker
from ._client import LOG, get_client
from ._plan import Halo, halo_plan
from ._run import DEFAULT_TIMEOUT, WorkerLost, submit, wait_all

Recipe = Callable[[str], Any]  # task key -> a future of the block
_BROKEN = ("error", "cancelled", "lost")


class DistributedTensor:
    """A row-partitioned matrix on a Dask cluster. Build one with :func:`from_package`, :func:`from_file` or
    :func:`from_partitions`; ``frontend.matmul``, ``frontend.einsum`` and ``frontend.solve`` take it."""

    def __init__(self, client: Any, recipes: Sequence[Recipe], bounds: Sequence[int], ncols: int,
                 source: tuple[str, Any], timeout: float = DEFAULT_TIMEOUT, name: str = "") -> None:
        self.client, self.timeout = client, float(timeout)
        self._recipes = list(recipes)
        self._name = name or uuid.uuid4().hex[:12]
        self._gen = itertools.count()
        self.bounds = tuple(int(b) for b in bounds)
        self._ncols = int(ncols)
        self._source = source  # (package kind, format) to_package gives back
        self._futures = [self._make(p) for p in range(len(self._recipes))]
        self._halo: list[Halo] | None = None
        self._places: list[str | None] | None = None
        metas = self.map(lambda p, part: submit(client, _worker.meta, part))
        self._nse = [m[1] for m in metas]
        self._dtype = metas[0][2]
        self._format: TensorFormat = metas[0][3]
        self.cols: list[np.ndarray] = [m[4] for m in metas]
        self.solve_info: dict[str, Any] | None = None

    # ----- metadata ------------------------------------------------------------------------------------------
    __ust_distributed__ = True

    @property
    def shape(self) -> tuple[int, int]:
        return (self.bounds[-1], self._ncols)

    @property
    def nse(self) -> int:
        """Stored entries over all partitions."""
        return int(sum(self._nse))

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self._dtype)

    @property
    def tensor_format(self) -> TensorFormat:
        """The partitions' format."""
        return self._format

    @property
    def partitions(self) -> int:
        return len(self._recipes)

    @property
    def ndim(self) -> int:
        return 2

    def workers(self) -> list[str | None]:
        """The address of the worker holding each partition (None while one is being rebuilt)."""
        who = self.client.who_has(self._futures)
        places = [next(iter(who.get(f.key, ())), None) for f in self._futures]
        self._places = places
        return places

    def halo(self) -> list[Halo]:
        """Which vector entries each partition exchanges in a solve (square matrices; planned once)."""
        if self.shape[0] != self.shape[1]:
            raise ValueError(f"a solve needs a square matrix, got shape {self.shape}")
        if self._halo is None:
            self._halo = halo_plan(self.bounds, self.cols)
        return self._halo

    def __repr__(self) -> str:
        name = f" ({self._format.name})" if self._format.name else ""
        places = self._places or [None] * self.partitions
        blocks = "\n".join(f"  partition {p}: rows [{self.bounds[p]}, {self.bounds[p + 1]}), nse {self._nse[p]}, "
                           f"{len(self.cols[p])} columns touched, worker {places[p] or '?'}"
                           for p in range(self.partitions))
        return (f"DistributedTensor(shape={self.shape}, nse={self.nse}, dtype={self.dtype}, partitions="
                f"{self.partitions},\n  format={self._format}{name}\n{blocks})")

    # ----- blocks and their recipes -------------------------------------------------------------------------
    def _make(self, p: int) -> Any:
        return self._recipes[p](f"ust-part-{self._name}-{p}-{next(self._gen)}")

    def block(self, p: int) -> Any:
        """The future of partition ``p``, resubmitted from its recipe if its task failed or was cancelled."""
        f = self._futures[p]
        if f.status in _BROKEN:
            LOG.warning("rebuilding partition %d of %s from its source (%s)", p, self._name, f.status)
            self._futures[p] = f = self._make(p)
        return f

    def heal(self) -> None:
        """Rebuild lost partitions from their recipes and wait until every partition is in memory."""
        futures = [self.block(p) for p in range(self.partitions)]
        try:
            wait_all(self.client, futures, [(p, None) for p in range(self.partitions)], self.timeout)
        except WorkerLost:
            futures = [self.block(p) for p in range(self.partitions)]
            wait_all(self.client, futures, [(p, None) for p in range(self.partitions)], self.timeout)
        self._places = None

    def map(self, task: Callable[[int, Any], Any], retries: int = 2) -> list[Any]:
        """``task(p, block_future)`` for every partition (each returns a future); their results, in order.
        A lost worker rebuilds the partitions and runs the tasks again (``retries`` times)."""
        for attempt in itertools.count():
            futures = [task(p, self.block(p)) for p in range(self.partitions)]
            places = self._places or [None] * self.partitions
            try:
                return wait_all(self.client, futures, list(enumerate(places)), self.timeout)
            except WorkerLost as exc:
                if attempt >= retries:
                    raise
                LOG.warning("%s; rebuilding partitions and running again", exc)
                self.heal()
        raise AssertionError("unreachable")

    def derived(self, make: Callable[[int, Any, str], Any], source: tuple[str, Any] | None = None,
                ncols: int | None = None) -> DistributedTensor:
        """A tensor whose partition p is ``make(p, this tensor's block p, key)`` (same row blocks; its recipe
        rebuilds this tensor's block first)."""
        def recipe(p: int) -> Recipe:
            return lambda key: make(p, self.block(p), key)
        return DistributedTensor(self.client, [recipe(p) for p in range(self.partitions)], self.bounds,
                                 self._ncols if ncols is None else ncols, source or self._source, self.timeout)

    # ----- conversions --------------------------------------------------------------------------------------
    def convert(self, tensor_format: TensorFormat) -> DistributedTensor:
        """The same matrix with every partition converted to ``tensor_format`` (on its worker)."""
        if not isinstance(tensor_format, TensorFormat):
            raise TypeError(f"tensor_format must be a TensorFormat, got {type(tensor_format).__name__}")
        if tensor_format.num_dimensions != 2:
            raise ValueError(f"a distributed tensor is a matrix; {tensor_format} has "
                             f"{tensor_format.num_dimensions} dimensions")
        return self.derived(lambda p, part, key: submit(self.client, _worker.convert_part, part, tensor_format,
                                                        key=key))

    def to_scipy(self) -> sp.csr_array:
        """The whole matrix gathered on the client as a SciPy CSR array."""
        blocks = self.map(lambda p, part: submit(self.client, _worker.to_global_csr, part))
        return sp.csr_array(sp.vstack(blocks, format="csr")) if blocks else sp.csr_array(self.shape)

    def to_package(self, package: str | None = None) -> Any:
        """The matrix gathered back into its source's package and format (``package``: another one, as in
        ``Tensor.to_package``; ``"tensor"`` gives a ``Tensor``)."""
        csr = self.to_scipy()
        kind, fmt = self._source
        t = Tensor.from_package(csr)
        if fmt is not None and fmt != t.tensor_format:
            t = t.convert(tensor_format=fmt)
        target = package or kind
        if target == "tensor":
            return t
        if target == "scipy-matrix":  # the source was a scipy.sparse matrix (not an array): give one back
            obj = t.to_package("scipy")
            return getattr(sp, f"{obj.format}_matrix")(obj)
        return t.to_package(target)

    def plan_matmul(self, x_like: Any, **kwargs: Any) -> _planned.DistributedMatmulPlan:
        """A planned product for repeated ``frontend.matmul(self, x)`` with NumPy ``x`` shaped like ``x_like``:
        every partition's kernel planned once and kept on its worker (a Dask actor); ``plan(x)`` sends only the
        rows of ``x`` each partition's columns touch (``kwargs``: ``alpha``, ``semiring``, ``prolog``,
        ``epilog``, ``threads``, ``optimize``: each row block stored as ``frontend.optimize`` picks for the
        product, see ``plan.storages()``)."""
        return _planned.DistributedMatmulPlan(self, x_like, **kwargs)

    def __ust_function__(self, op: str, args: tuple, kwargs: dict[str, Any]) -> Any:
        """``frontend.matmul``/``einsum``/``solve`` with a distributed operand land here."""
        if op == "matmul":
            return _ops.matmul(*args, **kwargs)
        if op == "einsum":
            return _ops.einsum(*args, **kwargs)
        if op == "solve":
            return _solve.solve(*args, **kwargs)
        raise TypeError(f"{op} does not take a DistributedTensor")


def source_of(x: Any) -> tuple[str, TensorFormat | None]:
    """What ``to_package`` gives back for an object ``x``: its package kind and format."""
    if isinstance(x, Tensor):
        return "tensor", x.tensor_format
    if sp.issparse(x):
        return ("scipy" if isinstance(x, sp.sparray) else "scipy-matrix"), Tensor.from_package(x).tensor_format
    t = Tensor.from_package(x)
    return t.package, t.tensor_format


def home(p: int, partitions: int, workers: Sequence[str]) -> str | None:
    """The worker partition ``p`` is first placed on: consecutive row blocks share a worker (``partitions``
    split into contiguous runs, one per worker), so a banded matrix's halo mostly stays inside a process."""
    return workers[p * len(workers) // partitions] if workers else None


def from_package(x: Any, partitions: int | None = None, client: Any = None, *,
                 tensor_format: TensorFormat | None = None, timeout: float = DEFAULT_TIMEOUT) -> DistributedTensor:
    """``x`` (a SciPy/NumPy/torch matrix or a ``Tensor``) split into ``partitions`` row blocks (default: one per
    worker) of near-equal stored entries, each a ``Tensor`` in ``tensor_format`` (default: ``x``'s) on a worker."""
    from ._plan import row_bounds
    client = get_client(client)
    kind, fmt = source_of(x)
    csr = _worker.as_csr(x)
    parts = (len(client.nthreads()) or 1) if partitions is None else partitions
    bounds = row_bounds(csr.indptr, parts)
    target = tensor_format or fmt
    addrs = sorted(client.nthreads())

    def recipe(p: int) -> Recipe:
        r0, r1 = bounds[p], bounds[p + 1]
        lo, hi = int(csr.indptr[r0]), int(csr.indptr[r1])
        data, indices, indptr = csr.data[lo:hi], csr.indices[lo:hi], csr.indptr[r0:r1 + 1] - lo
        worker = home(p, len(bounds) - 1, addrs)
        return lambda key: submit(client, _worker.build_from_csr, data, indices, indptr, (r1 - r0, csr.shape[1]),
                                  r0, target, key=key, worker=worker)
    return DistributedTensor(client, [recipe(p) for p in range(len(bounds) - 1)], bounds, csr.shape[1],
                             (kind, fmt), timeout)


def from_file(path: Any, partitions: int | None = None, client: Any = None, *,
              tensor_format: TensorFormat | None = None, timeout: float = DEFAULT_TIMEOUT) -> DistributedTensor:
    """A Matrix Market / FROSTT matrix file in row blocks; each worker reads its rows from ``path`` (the file
    must be on a filesystem the workers share). ``to_package`` gives the ``Tensor`` ``Tensor.from_file`` would."""
    import os

    from ._plan import row_bounds
    client = get_client(client)
    path = os.path.abspath(os.fspath(path))
    whole = Tensor.from_file(path)
    if whole.ndim != 2:
        raise ValueError(f"{path}: a distributed tensor is a matrix, the file holds {whole.ndim} dimensions")
    csr = _worker.as_csr(whole)
    parts = (len(client.nthreads()) or 1) if partitions is None else partitions
    bounds = row_bounds(csr.indptr, parts)
    addrs = sorted(client.nthreads())

    def recipe(p: int) -> Recipe:
        worker = home(p, len(bounds) - 1, addrs)
        return lambda key: submit(client, _worker.build_from_file, path, bounds[p], bounds[p + 1], tensor_format,
                                  key=key, worker=worker)
    return DistributedTensor(client, [recipe(p) for p in range(len(bounds) - 1)], bounds, csr.shape[1],
                             ("tensor", whole.tensor_format), timeout)


def from_partitions(pieces: Sequence[Any], client: Any = None, *, tensor_format: TensorFormat | None = None,
                    timeout: float = DEFAULT_TIMEOUT) -> DistributedTensor:
    """A tensor from row blocks made on the workers: ``pieces`` are Dask futures (or ``dask.delayed``
    objects) of Tensors or package matrices, in row order, all with the same number of columns."""
    client = get_client(client)
    if not pieces:
        raise ValueError("from_partitions needs at least one piece")
    futures = [client.compute(pc) if _is_delayed(pc) else pc for pc in pieces]
    for k, f in enumerate(futures):
        if not hasattr(f, "key") or not hasattr(f, "status"):
            raise TypeError(f"piece {k} is a {type(f).__name__}; from_partitions takes Dask futures or delayed "
                            "objects (use from_package for objects on the client)")
    shapes = wait_all(client, [submit(client, _piece_shape, f) for f in futures],
                      [(k, None) for k in range(len(futures))], timeout)
    ncols = {s[1] for s in shapes}
    if len(ncols) != 1:
        raise ValueError(f"pieces must have the same number of columns, got {sorted(ncols)}")
    bounds = [0, *(int(v) for v in np.cumsum([s[0] for s in shapes]))]
    if any(s[0] == 0 for s in shapes):
        raise ValueError("a piece has no rows")
    kind, fmt = shapes[0][2]

    def recipe(p: int) -> Recipe:
        return lambda key: submit(client, _worker.build_from_piece, futures[p], int(bounds[p]), shapes[p][1],
                                  tensor_format, key=key)
    return DistributedTensor(client, [recipe(p) for p in range(len(futures))], bounds, shapes[0][1], (kind, fmt),
                             timeout)


def _is_delayed(x: Any) -> bool:
    try:
        from dask.delayed import Delayed
    except ImportError:
        return False
    return isinstance(x, Delayed)


def _piece_shape(piece: Any) -> tuple[int, int, tuple[str, TensorFormat | None]]:
    if not hasattr(piece, "shape") or len(piece.shape) != 2:
        raise ValueError(f"a piece must be a matrix, got {type(piece).__name__}")
    return int(piece.shape[0]), int(piece.shape[1]), source_of(piece)
