"""Compiled conversion kernels: SciPy's C++ ``sparsetools`` routines (a required dependency) on raw buffers.

Each kernel is one pass over the entries in compiled code: a transpose (counting sort by the minor
coordinate), CSR -> BSR and BSR -> CSR.  They take index buffers of one dtype (int32 or int64) and values
of the dtypes SciPy's sparse module supports (:func:`supports`); the callers fall back to NumPy otherwise.
"""
from __future__ import annotations

import importlib
from typing import Any

import numpy as np

st: Any
try:  # a private SciPy module (scipy is pinned in pyproject.toml); without it the callers take the NumPy paths
    st = importlib.import_module("scipy.sparse._sparsetools")
except ImportError:  # pragma: no cover - depends on the installed SciPy
    st = None

_VALUE_KINDS = frozenset("biufc")
_INDEX = (np.dtype(np.int32), np.dtype(np.int64))


def supports(values: np.dtype, index: np.dtype) -> bool:
    """Whether the kernels take values of dtype ``values`` with indices of dtype ``index``."""
    return st is not None and np.dtype(index) in _INDEX and values.kind in _VALUE_KINDS and values != np.float16


def transpose(n_major: int, n_minor: int, ptr: np.ndarray, idx: np.ndarray, val: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Entries grouped by major coordinate regrouped by minor coordinate (stable: majors stay increasing)."""
    out_ptr = np.empty(n_minor + 1, dtype=ptr.dtype)
    out_idx = np.empty(len(idx), dtype=ptr.dtype)
    out_val = np.empty(len(idx), dtype=val.dtype)
    st.csr_tocsc(n_major, n_minor, ptr, idx, val, out_ptr, out_idx, out_val)
    return out_ptr, out_idx, out_val


def to_blocks(n_rows: int, n_cols: int, r: int, c: int, ptr: np.ndarray, idx: np.ndarray, val: np.ndarray
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(block pointers, block columns, values (nblocks * r * c))`` of sorted rows; ``n_rows``/``n_cols``
    are multiples of the block shape.  Blocks of a block row come in order of first appearance."""
    nblocks = st.csr_count_blocks(n_rows, n_cols, r, c, ptr, idx)
    bptr = np.empty(n_rows // r + 1, dtype=ptr.dtype)
    bidx = np.empty(nblocks, dtype=ptr.dtype)
    bval = np.zeros(nblocks * r * c, dtype=val.dtype)
    st.csr_tobsr(n_rows, n_cols, r, c, ptr, idx, val, bptr, bidx, bval)
    return bptr, bidx, bval


def sort_blocks(n_brows: int, n_bcols: int, r: int, c: int, bptr: np.ndarray, bidx: np.ndarray,
                bval: np.ndarray) -> None:
    """Sorts the blocks of every block row by block column, in place."""
    st.bsr_sort_indices(n_brows, n_bcols, r, c, bptr, bidx, bval)


def from_blocks(n_brows: int, n_bcols: int, r: int, c: int, bptr: np.ndarray, bidx: np.ndarray,
                bval: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows (every slot of every block, zeros included) of sorted blocks: ``(ptr, idx, val)``."""
    n = len(bidx) * r * c
    ptr = np.empty(n_brows * r + 1, dtype=bptr.dtype)
    idx = np.empty(n, dtype=bptr.dtype)
    val = np.empty(n, dtype=bval.dtype)
    st.bsr_tocsr(n_brows, n_bcols, r, c, bptr, bidx, bval, ptr, idx, val)
    return ptr, idx, val
