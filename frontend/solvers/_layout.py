"""Which storage the iterative kernels walk: CSR, or DIA for large banded matrices (chosen at plan time).

An iteration of CG streams the matrix once and about ten vectors. CSR moves ``nnz * (value + index)``
bytes of matrix; DIA moves ``ndiag * n * value`` bytes (no indices, zeros where a diagonal is short or
has holes). On 2-D/3-D Poisson and other stencil or banded matrices DIA is about 0.6x CSR's bytes, and
its interior rows run as contiguous SIMD loads with every diagonal summed in registers.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from frontend.solvers._operands import CsrOperands
from frontend.storage._format_choice import MAX_FILL, SWITCH_SHARE, estimate_against_csr

LAYOUTS = ("auto", "csr", "dia")
#: ``layout="auto"`` walks DIA only from this many rows: below it the matrix and vectors stay in cache,
#: where bytes matter less than the checked rows at both ends of the band.
DIA_MIN_ROWS = 1 << 16
#: ``layout="dia"`` refuses matrices whose diagonals would hold more than this many values per stored entry.
DIA_MAX_FILL = 8
#: DIA preconditioners: ILU(0) walks the CSR pattern.
DIA_PRECONDITIONERS = (None, "jacobi")


@dataclass(frozen=True)
class DiaOperands:
    """``off`` (int64, sorted ``column - row`` of each stored diagonal) and ``val`` (``len(off) * n``:
    ``val[d * n + i] = A[i, i + off[d]]``, zero elsewhere)."""

    off: np.ndarray
    val: np.ndarray


def check_layout(layout: object) -> str:
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, got {layout!r}")
    return str(layout)


def _rows(csr: CsrOperands) -> np.ndarray:
    n = csr.pos.size - 1
    return np.repeat(np.arange(n, dtype=np.int64), np.diff(csr.pos))


def diagonals(csr: CsrOperands) -> np.ndarray:
    """The sorted offsets ``column - row`` that hold at least one stored entry."""
    n = csr.pos.size - 1
    if csr.crd.size == 0:
        return np.zeros(0, dtype=np.int64)
    counts = np.bincount(csr.crd.astype(np.int64) - _rows(csr) + (n - 1), minlength=2 * n - 1)
    return np.flatnonzero(counts).astype(np.int64) - (n - 1)


def choose_layout(layout: str, csr: CsrOperands, preconditioner: str | None) -> tuple[str, str]:
    """``("csr" | "dia", why)`` for ``layout`` (``"auto"`` decides from the matrix's diagonals)."""
    n, nnz = csr.pos.size - 1, csr.crd.size
    if layout == "csr":
        return "csr", "layout='csr'"
    if layout == "dia":
        if preconditioner not in DIA_PRECONDITIONERS:
            raise ValueError(f"layout='dia' takes preconditioner None or 'jacobi', not {preconditioner!r}")
        if nnz == 0:
            raise ValueError("layout='dia' needs at least one stored entry")
        ndiag = diagonals(csr).size
        if ndiag * n > DIA_MAX_FILL * nnz:
            raise ValueError(f"layout='dia' would store {ndiag} diagonals x {n} rows for {nnz} entries "
                             f"(more than {DIA_MAX_FILL} per entry); use layout='csr'")
        return "dia", f"layout='dia' ({ndiag} diagonals)"
    if preconditioner not in DIA_PRECONDITIONERS or n < DIA_MIN_ROWS or nnz == 0:
        return "csr", "CSR"
    ndiag = diagonals(csr).size
    item, idx = csr.val.dtype.itemsize, csr.crd.dtype.itemsize
    dia_bytes, csr_bytes = ndiag * n * item, nnz * (item + idx) + (n + 1) * idx
    share = dia_bytes / csr_bytes
    # the shared format chooser's rule (frontend.optimize): DIA-I's estimated SpMV time against CSR's
    estimate = estimate_against_csr("DIAI", dia_bytes, csr_bytes, 2 * n * item)
    if ndiag * n > MAX_FILL * nnz or estimate is None or estimate > SWITCH_SHARE:
        return "csr", f"CSR ({ndiag} diagonals: DIA would move {share:.0%} of CSR's bytes)"
    return "dia", f"DIA ({ndiag} diagonals, {share:.0%} of CSR's bytes)"


def dia_operands(csr: CsrOperands) -> DiaOperands:
    """``csr`` (sorted, duplicate-free, at least one entry) in DIA storage."""
    n = csr.pos.size - 1
    off = diagonals(csr)
    rows = _rows(csr)
    k = np.searchsorted(off, csr.crd.astype(np.int64) - rows)
    val = np.zeros(off.size * n, dtype=csr.val.dtype)
    val[k * n + rows] = csr.val
    return DiaOperands(np.ascontiguousarray(off), val)
