"""The system matrix for ``solve``: intake, structure analysis and the buffers each kernel walks.

Formats the substitution kernels walk natively keep their buffers (CSR, CSC, row-sorted COO, BSR with
square blocks); every other format is converted once to CSR. Iterative methods always walk CSR.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from frontend.format import NamedFormats
from frontend.storage._buffers import package_of
from frontend.tensor._tensor import Tensor

FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def as_matrix(a: Any) -> Tensor:
    """``a`` (Tensor, scipy.sparse, numpy or torch) as a square 2-D CPU Tensor, checked."""
    if isinstance(a, Tensor):
        from frontend.storage._validate import validate

        t = validate(a)  # kernels index with these buffers: never let a bad one through (cached)
    else:
        if a is None or isinstance(a, (int, float, complex, str)):
            raise TypeError(f"a must be a sparse matrix, an array or a Tensor, got {type(a).__name__}")
        t = _from_package(a)
    if t.ndim != 2:
        raise ValueError(f"a must be a 2-D matrix, got shape {t.shape}")
    if t.shape[0] != t.shape[1]:
        raise ValueError(f"a must be square, got shape {t.shape}")
    if t.device != "cpu":
        raise ValueError(f"solve runs on the CPU; a is on {t.device}")
    if t.is_sparse:  # the solver kernels are not bounds-safe: index buffers checked now unless torch-watched
        from frontend.storage._validate import validate_now

        validate_now(t)
    kind = np.dtype(t.dtype).kind
    if kind == "c":
        raise TypeError("solve supports real matrices (float32/float64), got a complex one")
    if kind not in "fiub":
        raise TypeError(f"a has unsupported dtype {t.dtype}")
    return t


def _from_package(a: Any) -> Tensor:
    """A view of ``a``; non-canonical scipy matrices (unsorted, duplicates) are canonicalized on a copy."""
    try:
        return Tensor.from_package(a)
    except ValueError:
        if package_of(a) != "scipy":
            raise
        import scipy.sparse as sp

        c = sp.csr_matrix(a)
        c.sum_duplicates()
        c.sort_indices()
        return Tensor.from_package(c)


_WORKING: dict[tuple[Any, Any], np.dtype] = {}  # (a's dtype, b's dtype) -> working_dtype (on every solve)


def working_dtype(a_dtype: Any, b_dtype: Any) -> np.dtype:
    """float32 when both are float32 (or smaller), else float64."""
    got = _WORKING.get((a_dtype, b_dtype))
    if got is not None:
        return got
    dt = np.result_type(np.dtype(a_dtype), np.dtype(b_dtype))
    if dt.kind == "c":
        raise TypeError("solve supports real right-hand sides, got a complex one")
    got = np.dtype(np.float32) if dt == np.float32 or (dt.kind == "f" and dt.itemsize < 4) else np.dtype(np.float64)
    if len(_WORKING) < 256:
        _WORKING[(a_dtype, b_dtype)] = got
    return got


def _index_dtype(n: int, nnz: int) -> np.dtype:
    return np.dtype(np.int32) if max(n, nnz) < 2**31 - 1 else np.dtype(np.int64)


@dataclass(frozen=True)
class Structure:
    """What ``method="auto"`` looks at (structural zeros and explicit zeros both ignored)."""

    lower: bool
    upper: bool
    symmetric: bool
    positive_diagonal: bool


def _coo(t: Tensor) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    from frontend.storage._convert import coordinates

    dims, vals = coordinates(t)
    vals = np.asarray(vals)
    if vals.size and not np.isfinite(vals).all():
        raise ValueError("a has NaN or Inf entries")
    return dims[0], dims[1], vals


def analyze(t: Tensor) -> Structure:
    """Triangularity, symmetry and diagonal sign of ``t``."""
    import scipy.sparse as sp

    r, c, v = _coo(t)
    nz = v != 0
    r, c, v = r[nz], c[nz], v[nz]
    lower, upper = bool(np.all(r >= c)), bool(np.all(r <= c))
    n = t.shape[0]
    diag = np.zeros(n, dtype=np.float64)
    d = r == c
    np.add.at(diag, r[d], v[d])
    symmetric = lower and upper
    if not symmetric:
        m = sp.csr_matrix((v.astype(np.float64), (r, c)), shape=t.shape)
        diff = abs(m - m.T)
        scale = float(abs(v).max()) if v.size else 0.0
        symmetric = diff.nnz == 0 or float(diff.max()) <= 1e-12 * scale
    return Structure(lower, upper, symmetric, bool(n == 0 or np.all(diag > 0)))


@dataclass(frozen=True)
class TriangularOperands:
    """Buffers of one substitution kernel: ``layout`` ("rows"/"cols"/"coo"), ``block``, p, q, val, diag."""

    layout: str
    block: int
    p: np.ndarray
    q: np.ndarray
    val: np.ndarray
    diag: np.ndarray
    walked: str  # the format walked, for SolveInfo


def _buf(x: Any, dtype: np.dtype) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(x), dtype=dtype)


def triangular_operands(t: Tensor, lower: bool, unit: bool, dtype: np.dtype) -> TriangularOperands:
    """The substitution kernel's buffers for ``t``; ValueError when a needed diagonal entry is zero."""
    fmt, n = t.tensor_format, t.shape[0]
    ext = fmt.level_extents(t.shape) if fmt.num_levels == 4 else None
    if fmt == NamedFormats.CSR or fmt == NamedFormats.CSC:
        layout, block, p, q = ("rows" if fmt == NamedFormats.CSR else "cols"), 1, t.pos(1), t.crd(1)
    elif fmt == NamedFormats.COO:
        layout, block, p, q = "coo", 1, t.crd(0), t.crd(1)
    elif ext is not None and ext[2] == ext[3] and fmt == NamedFormats.BSR((ext[2], ext[3])) and n % ext[2] == 0:
        layout, block, p, q = "rows", ext[2], t.pos(1), t.crd(1)
    else:
        c = t.convert(NamedFormats.CSR, index_type=_index_dtype(n, t.nse))
        return triangular_operands(c, lower, unit, dtype)
    it = _index_dtype(n, t.nse)
    p, q, val = _buf(p, it), _buf(q, it), _buf(t.val, dtype).reshape(-1)
    nb = n // block
    diag = np.zeros((nb, block, block), dtype=dtype)
    if layout == "coo":
        rows_of = p
        cols_of = q
    elif layout == "rows":
        rows_of, cols_of = np.repeat(np.arange(nb), np.diff(p)), q
    else:
        rows_of, cols_of = q, np.repeat(np.arange(n), np.diff(p))
    on = rows_of == cols_of
    if block == 1:
        np.add.at(diag.reshape(-1), rows_of[on], val[on])
    else:
        np.add.at(diag, rows_of[on], val.reshape(-1, block, block)[on])
    if not unit:
        d = np.einsum("kii->ki", diag).reshape(-1)
        zero = np.flatnonzero(d == 0)
        if zero.size:
            raise ValueError(f"triangular matrix is singular: zero on the diagonal at row {int(zero[0])}"
                             f"{f' (and {zero.size - 1} more)' if zero.size > 1 else ''}; "
                             "pass unit_diagonal=True if its diagonal is implicitly 1")
    if layout == "coo" and p.size > 1 and np.any(np.diff(p) < 0):
        c = t.convert(NamedFormats.CSR, index_type=it)
        return triangular_operands(c, lower, unit, dtype)
    if block == 1:
        with np.errstate(divide="ignore"):
            diag = 1 / diag  # the kernels multiply by the inverse diagonal (unused when unit)
    if layout == "rows" and block == 1:
        layout, p = "ranges", _strict_ranges(p, q, lower)
    name = fmt.name or str(fmt)
    return TriangularOperands(layout, block, p, q, val, np.ascontiguousarray(diag.reshape(-1)), name)


def _strict_ranges(pos: np.ndarray, crd: np.ndarray, lower: bool) -> np.ndarray:
    """``[lo0, hi0, lo1, hi1, ...]``: each row's entries strictly below (above) the diagonal (sorted CSR)."""
    n = pos.size - 1
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(pos))
    key = rows * max(n, 1) + crd
    diag_key = np.arange(n, dtype=np.int64) * (max(n, 1) + 1)
    out = np.empty((n, 2), dtype=pos.dtype)
    if lower:
        out[:, 0], out[:, 1] = pos[:-1], np.searchsorted(key, diag_key, side="left")
    else:
        out[:, 0], out[:, 1] = np.searchsorted(key, diag_key, side="right"), pos[1:]
    return out.reshape(-1)


@dataclass(frozen=True)
class CsrOperands:
    """Sorted CSR buffers with each row's diagonal position (``dptr``, -1 where none is stored)."""

    pos: np.ndarray
    crd: np.ndarray
    val: np.ndarray
    dptr: np.ndarray
    diag: np.ndarray


def csr_operands(t: Tensor, dtype: np.dtype) -> CsrOperands:
    """``t`` as sorted, duplicate-free CSR (converted when it is in another format)."""
    n = t.shape[0]
    it = _index_dtype(n, t.nse)
    if t.tensor_format != NamedFormats.CSR:
        t = t.convert(NamedFormats.CSR, index_type=it)
    pos, crd, val = _buf(t.pos(1), it), _buf(t.crd(1), it), _buf(t.val, dtype)
    if val.size and not np.isfinite(val).all():
        raise ValueError("a has NaN or Inf entries")
    rows = np.repeat(np.arange(n, dtype=it), np.diff(pos))
    on = np.flatnonzero(crd == rows)
    dptr = np.full(n, -1, dtype=it)
    dptr[rows[on]] = on
    diag = np.zeros(n, dtype=dtype)
    diag[rows[on]] = val[on]
    return CsrOperands(pos, crd, val, dptr, diag)
