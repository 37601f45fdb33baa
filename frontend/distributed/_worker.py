"""What runs on the workers: building a partition (a row block as a UST ``Tensor`` over the columns it
touches), local products through the ordinary frontend API, and the vectors of a distributed solve.

A partition's tensor keeps only the columns its rows touch (``Part.cols``, sorted global indices), so an
operand's rows are sent per partition and a solve exchanges only those entries. Local products call
``frontend.matmul``/``einsum``, whose plans and compiled kernels are cached per process (and on the shared
disk cache), so a worker plans each partition's kernel once and reuses it.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import scipy.sparse as sp

from frontend.format import NamedFormats, TensorFormat
from frontend.tensor._tensor import Tensor

from ._plan import Halo

INLINE_NSE = 1 << 20  # work on up to this many stored entries runs on the worker's event loop, more in a thread


@dataclass
class Part:
    """One row block on a worker: ``tensor`` is rows ``row0 .. row0 + rows`` of the matrix restricted to the
    global columns ``cols`` (its local columns, in order)."""

    tensor: Tensor
    cols: np.ndarray
    row0: int
    ncols: int  # the full matrix's columns

    @property
    def rows(self) -> int:
        return int(self.tensor.shape[0])


def _threads() -> int:
    """This worker's thread count (the local kernels' ``threads``), 1 outside a worker."""
    try:
        from distributed import get_worker
        return max(1, int(get_worker().state.nthreads))
    except (ImportError, ValueError, AttributeError):
        return 1


def as_csr(x: Any) -> sp.csr_array:
    """A SciPy CSR array of a 2-D package object or Tensor (a copy only when the format is not CSR)."""
    if sp.issparse(x):
        return sp.csr_array(x)
    t = x if isinstance(x, Tensor) else Tensor.from_package(x)
    if t.ndim != 2:
        raise ValueError(f"a distributed tensor is a matrix; got {t.ndim} dimensions")
    return sp.csr_array(t.convert(tensor_format=NamedFormats.CSR).to_package("scipy"))


def part_from_csr(block: sp.csr_array, row0: int, tensor_format: TensorFormat | None) -> Part:
    """The partition of a CSR row block: its touched columns renumbered 0.., converted to ``tensor_format``."""
    block = sp.csr_array(block)
    indices = np.asarray(block.indices)
    cols = np.unique(indices)
    if len(cols) == 0:
        cols = np.zeros(1, dtype=np.int64) if block.shape[1] else cols
    local = sp.csr_array((block.data, np.searchsorted(cols, indices).astype(indices.dtype, copy=False),
                          block.indptr), shape=(block.shape[0], len(cols)))
    t = Tensor.from_package(local)
    if tensor_format is not None and tensor_format != NamedFormats.CSR:
        t = t.convert(tensor_format=tensor_format)
    return Part(t, cols.astype(np.int64), int(row0), int(block.shape[1]))


def build_from_csr(data: np.ndarray, indices: np.ndarray, indptr: np.ndarray, shape: tuple[int, int], row0: int,
                   tensor_format: TensorFormat | None) -> Part:
    """A partition from the CSR buffers of its rows (what ``from_package`` sends)."""
    return part_from_csr(sp.csr_array((data, indices, indptr), shape=shape), row0, tensor_format)


_FILES: dict[tuple[str, float], sp.csr_array] = {}  # the last file read on this worker


def read_csr(path: str) -> sp.csr_array:
    """The matrix in ``path`` as CSR (the last file read is kept per worker)."""
    key = (path, os.path.getmtime(path))
    if key not in _FILES:
        _FILES.clear()
        _FILES[key] = as_csr(Tensor.from_file(path))
    return _FILES[key]


def build_from_file(path: str, row0: int, row1: int, tensor_format: TensorFormat | None) -> Part:
    """A partition read from a Matrix Market / FROSTT file (what ``from_file`` records as its source)."""
    return part_from_csr(read_csr(path)[row0:row1], row0, tensor_format)


def build_from_piece(piece: Any, row0: int, ncols: int, tensor_format: TensorFormat | None) -> Part:
    """A partition from a worker-side piece (a Tensor or package matrix holding rows ``row0..``)."""
    block = as_csr(piece)
    if block.shape[1] != ncols:
        raise ValueError(f"the piece starting at row {row0} has {block.shape[1]} columns, the others {ncols}")
    return part_from_csr(block, row0, tensor_format if tensor_format is not None else _format_of(piece))


def _format_of(piece: Any) -> TensorFormat | None:
    return piece.tensor_format if isinstance(piece, Tensor) else None


def convert_part(part: Part, tensor_format: TensorFormat) -> Part:
    """The same block in another format."""
    return Part(part.tensor.convert(tensor_format=tensor_format), part.cols, part.row0, part.ncols)


def meta(part: Part) -> tuple[tuple[int, ...], int, Any, TensorFormat, np.ndarray]:
    """(local shape, stored entries, dtype, format, global columns): what the client plans with."""
    t = part.tensor
    return tuple(t.shape), int(t.nse), np.dtype(t.dtype), t.tensor_format, part.cols


def to_global_csr(part: Part) -> sp.csr_array:
    """The block as CSR over all the matrix's columns (gathering)."""
    local = as_csr(part.tensor)
    return sp.csr_array((local.data, part.cols[local.indices], local.indptr), shape=(part.rows, part.ncols))


# ----- products ---------------------------------------------------------------------------------------------
def local_matmul(part: Part, b: np.ndarray, c: Any, kwargs: dict[str, Any]) -> np.ndarray:
    """``frontend.matmul`` of the block with ``b`` (its rows at the block's columns), dense result."""
    from frontend.ops._api import matmul
    kwargs = dict(kwargs)
    kwargs.setdefault("threads", _threads())
    if c is not None:
        return matmul(part.tensor, b, c, **kwargs)
    out = np.empty((part.rows, *b.shape[1:]), dtype=np.result_type(part.tensor.dtype, b.dtype))
    return matmul(part.tensor, b, out=out, **kwargs)


def local_spgemm(part: Part, b: sp.csr_array, out_format: TensorFormat | None) -> Part:
    """The block times the sparse rows ``b`` (the block's columns' rows): a partition of the product."""
    from frontend.ops._api import matmul
    product = matmul(part.tensor, Tensor.from_package(b))
    return part_from_csr(as_csr(product), part.row0, out_format or _sparse_family(part.tensor.tensor_format))


def _sparse_family(fmt: TensorFormat) -> TensorFormat | None:
    """Products keep CSR-like results (the single-process rule: block formats give their unblocked family)."""
    return None if fmt.is_dense else NamedFormats.CSR


def local_einsum(part: Part, subscripts: str, operands: list[Any], kwargs: dict[str, Any]) -> Any:
    """``frontend.einsum`` with the block first; a sparse result comes back as a partition (same columns)."""
    from frontend.ops._api import einsum
    result = einsum(subscripts, part.tensor, *operands, **kwargs)
    if isinstance(result, Tensor) and not result.tensor_format.is_dense:
        return Part(result, part.cols, part.row0, part.ncols)
    return result.to_dense() if isinstance(result, Tensor) else np.asarray(result)


# ----- solves: vectors kept on the worker between steps --------------------------------------------------------
@dataclass
class SolveState:
    """The vectors of one block of a distributed solve (``vec``), its halo and Jacobi scaling."""

    part: Part
    halo: Halo
    dinv: np.ndarray | None
    vec: dict[str, np.ndarray] = field(default_factory=dict)
    needed: np.ndarray | None = None  # the SpMV's input (own and received entries at the block's columns)
    plan: Any = None  # its Matmul, planned on the first SpMV and reused (it reads ``needed`` in place)
    outs: dict[str, np.ndarray] = field(default_factory=dict)  # the SpMV's result buffer per destination vector

    def spmv(self, dst: str, own: np.ndarray, halos: list[np.ndarray]) -> np.ndarray:
        """The block's rows times the vector whose own entries are ``own`` (see :func:`_spmv`)."""
        return _spmv(self, dst, own, halos)


_SOLVES: dict[str, SolveState] = {}  # solve key -> this worker's block state


def solve_state(part: Part, halo: Halo, b: np.ndarray, x0: np.ndarray, jacobi: bool) -> SolveState:
    """Block ``part``'s vectors of a solve: ``b``, ``x`` and the Jacobi scaling."""
    dinv = None
    if jacobi:
        diag = _diagonal(part)
        if np.any(diag == 0):
            raise ValueError(f"Jacobi needs a nonzero diagonal; row {part.row0 + int(np.argmin(diag != 0))} has "
                             "none")
        dinv = 1.0 / diag
    return SolveState(part, halo, dinv, {"b": b, "x": np.array(x0, dtype=b.dtype)})


def solve_setup(part: Part, key: str, halo: Halo, b: np.ndarray, x0: np.ndarray, jacobi: bool) -> int:
    """Keep block ``part``'s vectors for the solve ``key`` (driven step by step from the client)."""
    _SOLVES[key] = solve_state(part, halo, b, x0, jacobi)
    return 0


def _diagonal(part: Part) -> np.ndarray:
    local = as_csr(part.tensor)
    rows = part.row0 + np.arange(part.rows)
    at = np.searchsorted(part.cols, rows).clip(0, len(part.cols) - 1)
    diag = np.asarray(local[np.arange(part.rows), at]).ravel()
    return np.where(part.cols[at] == rows, diag, 0).astype(local.dtype)


def _combine(s: Vectors, terms: list[tuple[Any, str, bool]], idx: Any = slice(None)) -> np.ndarray:
    out: np.ndarray | None = None
    for coef, name, scaled in terms:
        v = s.vec[name][idx]
        if scaled and s.dinv is not None:
            v = s.dinv[idx] * v
        v = coef * v
        out = v if out is None else out + v
    assert out is not None
    return out


def _state(key: str) -> SolveState:
    s = _SOLVES.get(key)
    if s is None:
        raise LookupError(f"this worker holds no state of solve {key} (the worker was restarted)")
    return s


def solve_step(key: str, ops: list[tuple], halos: list[np.ndarray],
               export: list[tuple[str, bool]]) -> tuple[list[complex], dict[int, np.ndarray]]:
    """One client-driven step of the solve ``key``: :func:`apply_ops` on this worker's block state."""
    s = _state(key)
    return apply_ops(s, ops, halos), exports(s, export)


class Vectors(Protocol):
    """Vectors a step runs on: one block's (:class:`SolveState`) or all of a worker's blocks' at once
    (:class:`frontend.distributed._group.GroupState`)."""

    vec: dict[str, np.ndarray]
    dinv: np.ndarray | None

    def spmv(self, dst: str, own: np.ndarray, halos: Any) -> np.ndarray: ...


def apply_ops(s: Vectors, ops: list[tuple], halos: Any) -> list[complex]:
    """Run ``ops`` on the vectors in order; return the local dot products they ask for.

    ``("lincomb", dst, [(coef, name, scaled), ...])``, ``("precond", dst, src)`` (Jacobi, or a copy),
    ``("spmv", dst, src)`` (``halos``: the entries of ``src`` other blocks hold, as ``s.spmv`` takes them),
    ``("dot", u, v)`` (``u^H v``), ``("dots", w, [names])``, ``("zero", dst)``.
    """
    dots: list[complex] = []
    for op in ops:
        kind = op[0]
        if kind == "lincomb":
            s.vec[op[1]] = _combine(s, op[2])
        elif kind == "precond":
            src = s.vec[op[2]]
            s.vec[op[1]] = s.dinv * src if s.dinv is not None else src.copy()
        elif kind == "spmv":
            s.vec[op[1]] = s.spmv(op[1], s.vec[op[2]], halos)
        elif kind == "dot":
            dots.append(complex(np.vdot(s.vec[op[1]], s.vec[op[2]])))
        elif kind == "dots":
            w = s.vec[op[1]]
            dots.extend(complex(np.vdot(s.vec[n], w)) for n in op[2])
        elif kind == "zero":
            s.vec[op[1]] = np.zeros_like(s.vec["b"])
        else:
            raise ValueError(f"unknown solve step {kind!r}")
    return dots


def exports(s: SolveState, export: list[tuple[str, bool]]) -> dict[int, np.ndarray]:
    """Per block that needs some of this block's entries, the vectors ``export`` names (``(name,
    Jacobi-scaled)``) at those entries, stacked (from which the next step's halo is formed)."""
    if not export:
        return {}
    return {dest: np.stack([_combine(s, [(1, name, scaled)], idx) for name, scaled in export])
            for dest, idx in s.halo.send.items()}


def _spmv(s: SolveState, dst: str, own: np.ndarray, halos: list[np.ndarray]) -> np.ndarray:
    """The block's rows times the vector whose own entries are ``own`` and others came in ``halos``, written
    into the buffer kept for the vector ``dst`` (which the product replaces; the plan checks a buffer it has
    seen before without scanning the operands again)."""
    if s.needed is None or s.needed.dtype != own.dtype:
        from frontend.ops._api import Matmul
        s.needed = np.zeros(len(s.part.cols), dtype=own.dtype)
        s.plan = Matmul(s.part.tensor, s.needed, threads=_threads()).plan()
    needed = s.needed
    needed[s.halo.own_pos] = own[s.halo.own_src]
    for (_, pos), values in zip(s.halo.recv, halos):
        needed[pos] = values
    out = s.outs.get(dst)
    if out is None or out.dtype != np.result_type(s.part.tensor.dtype, own.dtype):
        out = s.outs[dst] = np.empty(s.part.rows, dtype=np.result_type(s.part.tensor.dtype, own.dtype))
    return s.plan.execute(out=out)


def solve_vector(key: str, name: str) -> np.ndarray:
    """The block's vector ``name`` (the solution at the end)."""
    return _state(key).vec[name]


def solve_forget(key: str) -> int:
    """Drop the solve's state on this worker."""
    _SOLVES.pop(key, None)
    return 0
