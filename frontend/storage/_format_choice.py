"""The format that moves the fewest bytes for repeated products: measure a matrix once, estimate each
candidate's bytes and kernel cost, convert to the best (``frontend.optimize``, ``Matmul(optimize=True)``).

A sparse x dense product streams the stored matrix once per call, so its time follows the matrix's bytes:
CSR costs ``nnz * (value + index) + (rows + 1) * index``, DIA-I ``diagonals * rows * value`` (no index per
entry, zeros where a diagonal is short), BSR ``blocks * b * b * value`` plus one index per block, ELL
``rows * K * (value + index)``, DELTA(8) one byte per gap plus padding entries where a gap passes 255. Each
kernel reaches its byte bound to a different degree; ``KERNEL_FACTOR`` scales the bytes by what was
measured (``docs/performance.md``, "Choosing a format"). A candidate wins only when its estimate is at most
``SWITCH_SHARE`` of CSR's; a candidate that would store more than ``MAX_FILL`` slots per stored entry is never
built (no conversion allocates more than that multiple of the input).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from frontend.format import NamedFormats, TensorFormat

from ._buffers import numpy_dtype
from ._convert import convert, fitting_crd_type
from ._fill import DELTA_MAX_FILL
from ._layout import to_host

#: Measured time over byte-bound time of each kernel, relative to CSR's, per product (SpMV: DIA-I 0.35-0.55x
#: CSR's time at 0.68-0.70x its bytes and BSR 4x4 0.28-0.44x at 0.70x since their kernels write each output
#: row once (lowering.emitter.diagonal / blocked): taken as 1.0, as good as CSR at reaching the bound; ELL
#: 0.83-1.20x at 0.8-1.0x; DELTA(8) 1.19-1.55x at 0.63x on the pruned float32 weights (its gap decoding, not
#: the bytes, bounds it), so 2.5: chosen only where it would move under 0.4x CSR's bytes. SpMM: the dense
#: operand's rows dominate; DIA-I and BSR reach about their byte ratio (0.84-1.08x CSR's time at 0.81-0.88x
#: its bytes with 8 columns), within the estimate's margin, so only CSR's index width is chosen there;
#: docs/performance.md, "Choosing a format").
KERNEL_FACTOR = {"spmv": {"CSR": 1.0, "DIAI": 1.0, "BSR": 1.0, "ELL": 1.3, "DELTA(8)": 2.5},
                 "spmm": {"CSR": 1.0}}
#: Switch from CSR only when the estimate is at most this share of CSR's (the estimate's error margin: the
#: kernels above were measured 0.71-0.91x CSR's time where this model gives them 0.82-0.88).
SWITCH_SHARE = 0.9
#: No candidate stores more than this many slots (values, padding included) per stored entry.
MAX_FILL = 4.0
#: A conversion reads the source and writes the target about this many times over (the conversion kernels'
#: passes and scratch), in units of one product's streaming of the same bytes.
CONVERSION_PASSES = 3.0
BLOCKS = (2, 4, 8)
PURPOSES = ("spmv", "spmm")


@dataclass(frozen=True)
class Candidate:
    """One storage a product could stream: its name, format, index type, matrix bytes, stored slots and the
    estimated time of a call relative to CSR's (1.0)."""

    name: str
    fmt: TensorFormat
    index_type: np.dtype
    bytes: int
    slots: int
    estimate: float


@dataclass(frozen=True)
class FormatChoice:
    """What :func:`optimize` chose and why: every candidate measured, the chosen one, the conversion's cost in
    product calls and the number of calls after which the conversion has paid for itself."""

    chosen: Candidate
    candidates: tuple[Candidate, ...]
    reason: str
    conversion_calls: float
    break_even_calls: float | None

    def __str__(self) -> str:
        rows = [f"{'candidate':<12} {'bytes':>12} {'slots':>10} {'estimate':>9}"]
        rows += [f"{c.name:<12} {c.bytes:>12,} {c.slots:>10,} {c.estimate:>9.2f}" for c in self.candidates]
        even = "never" if self.break_even_calls is None else f"{self.break_even_calls:.1f} calls"
        return "\n".join(rows + [f"chosen: {self.chosen.name} ({self.reason}); conversion ~ "
                                 f"{self.conversion_calls:.1f} calls, pays for itself after {even}"])


def _rows(pos: np.ndarray) -> np.ndarray:
    return np.repeat(np.arange(pos.size - 1, dtype=np.int64), np.diff(pos))


def _narrowest_index(extent: int, given: np.dtype) -> np.dtype:
    """int32 where every position and coordinate fits, else the given type (the positions' type; the
    coordinates are narrowed further once a storage is chosen, :func:`narrow_coordinates`)."""
    return np.dtype(np.int32) if extent < 2**31 and given.itemsize > 4 else given


def candidates(t: Any, for_: str = "spmv") -> tuple[Candidate, ...]:
    """Every candidate storage of the 2-D matrix ``t`` (any format) within ``MAX_FILL`` for ``for_`` products."""
    factors = KERNEL_FACTOR[for_]
    if len(t.shape) != 2:
        raise ValueError(f"optimize takes a 2-D matrix, got shape {tuple(t.shape)}")
    csr = convert(t, NamedFormats.CSR)
    pos = to_host(csr.pos(1)).astype(np.int64)
    crd = to_host(csr.crd(1)).astype(np.int64)
    m, n = (int(s) for s in t.shape)
    nnz = int(crd.size)
    value = numpy_dtype(csr.val).itemsize
    index = _narrowest_index(max(m, n, nnz) + 1, np.dtype(csr.index_type))
    vectors = (m + n) * value  # x read and y written: the same for every candidate
    base_bytes = nnz * (value + index.itemsize) + (m + 1) * index.itemsize
    found: list[Candidate] = []

    def add(name: str, fmt: TensorFormat, nbytes: int, slots: int, kind: str) -> None:
        estimate = estimate_against_csr(kind, nbytes, base_bytes, vectors, for_)
        if estimate is None or slots > MAX_FILL * max(nnz, 1):
            return
        found.append(Candidate(name, fmt, index, int(nbytes), int(slots), round(estimate, 4)))

    add("CSR", NamedFormats.CSR, base_bytes, nnz, "CSR")
    if nnz == 0 or m == 0 or n == 0 or len(factors) == 1:
        return tuple(found)
    rows = _rows(pos)
    ndiag = int(np.unique(crd - rows).size)
    add("DIAI", NamedFormats.DIAI, ndiag * m * value + (ndiag + 2) * index.itemsize, ndiag * m, "DIAI")
    for b in BLOCKS:
        if m % b == 0 and n % b == 0:
            blocks = int(np.unique((rows // b) * (n // b) + crd // b).size)
            add(f"BSR(({b}, {b}))", NamedFormats.BSR((b, b)), blocks * (b * b * value + index.itemsize)
                + (m // b + 1) * index.itemsize, blocks * b * b, "BSR")
    k = int(np.diff(pos).max())
    add("ELL", NamedFormats.ELL, m * k * (value + index.itemsize) + 2 * m * index.itemsize, m * k, "ELL")
    first = np.zeros(nnz, dtype=bool)
    first[pos[:-1][np.diff(pos) > 0]] = True
    gaps = np.where(first, crd, crd - np.concatenate(([0], crd[:-1])) - 1)
    padding = int((gaps >> 8).sum())
    if nnz + padding > DELTA_MAX_FILL * nnz:  # more padding than entries: not built (``_fill.DELTA_MAX_FILL``)
        return tuple(found)
    add("DELTA(8)", NamedFormats.DELTA(8), (nnz + padding) * (value + 1) + (m + 1) * index.itemsize, nnz + padding,
        "DELTA(8)")
    return tuple(found)


def choose(t: Any, for_: str = "spmv", calls: int | None = None) -> FormatChoice:
    """The candidate with the lowest estimate (CSR unless another is at most ``SWITCH_SHARE`` of it, and, when
    ``calls`` is given, pays for its conversion within that many calls)."""
    if for_ not in PURPOSES:
        raise ValueError(f"optimize: for_ must be one of {PURPOSES}, got {for_!r}")
    if calls is not None and (not isinstance(calls, int) or calls < 1):
        raise ValueError(f"optimize: calls must be a positive int or None, got {calls!r}")
    found = candidates(t, for_)
    csr = found[0]
    best = min(found, key=lambda c: c.estimate)
    source_bytes = sum(int(b.nbytes) for b in t.buffers())
    conversion = CONVERSION_PASSES * (source_bytes + best.bytes) / max(csr.bytes, 1)
    gain = csr.estimate - best.estimate
    break_even = conversion / gain if gain > 0 else None
    narrowed = np.dtype(t.index_type).itemsize > csr.index_type.itemsize
    keep = (f"CSR with {csr.index_type} indices, {csr.bytes / max(source_bytes, 1):.0%} of the source's bytes"
            if narrowed else "CSR")
    if best is csr or best.estimate > SWITCH_SHARE * csr.estimate:
        reason = f"{keep}: no other candidate within {SWITCH_SHARE:.0%} of CSR's estimate"
        return FormatChoice(csr, found, reason, CONVERSION_PASSES * (source_bytes + csr.bytes) / max(csr.bytes, 1),
                            None)
    if calls is not None and break_even is not None and calls < break_even:
        reason = f"{keep}: {best.name} would pay for its conversion after {break_even:.1f} calls, more than {calls}"
        return FormatChoice(csr, found, reason, conversion, break_even)
    reason = f"{best.estimate / csr.estimate:.0%} of CSR's estimated time ({best.bytes / csr.bytes:.0%} of its bytes)"
    return FormatChoice(best, found, reason, conversion, break_even)


def narrow_coordinates(fmt: TensorFormat, shape: Any, index_type: np.dtype, value: np.dtype) -> np.dtype:
    """The coordinates type of the chosen storage: for values of at most 4 bytes, the narrowest addressing every
    level of ``fmt`` (int16 up to 32768 columns), never wider than the positions ``index_type``. Measured on CSR
    SpMV (docs/performance.md, "Narrow coordinates"): pruned float32 4096^2 weights took 0.88-0.97x the CPU time
    of int32 columns, float64 rows of 8 entries 1.02-1.04x (the bytes saved are a smaller share there)."""
    if value.itemsize > 4:
        return index_type
    narrow = fitting_crd_type(fmt, shape)
    return narrow if narrow.itemsize < index_type.itemsize else index_type


def optimize(t: Any, for_: str = "spmv", calls: int | None = None, narrow: bool = False) -> tuple[Any, FormatChoice]:
    """``(tensor, report)``: ``t`` converted once to the storage :func:`choose` picks for repeated ``for_``
    products (``"spmv"``, ``"spmm"``), and the :class:`FormatChoice` saying what and why. ``narrow=True`` also
    narrows its coordinates to the narrowest type that fits (:func:`narrow_coordinates`): off by default, since
    int16 columns saved 3-12% of one thread's time on the pruned float32 weights but cost 13-23% on two threads
    (SpMV; SpMM about even; docs/performance.md, "Narrow coordinates")."""
    choice = choose(t, for_, calls)
    c = choice.chosen
    crd_type = narrow_coordinates(c.fmt, t.shape, c.index_type, numpy_dtype(t.val)) if narrow else c.index_type
    same = (t.tensor_format == c.fmt and np.dtype(t.index_type) == c.index_type
            and np.dtype(getattr(t, "crd_type", t.index_type)) == crd_type)
    return (t if same else convert(t, c.fmt, index_type=c.index_type, crd_type=crd_type)), choice


def estimate_against_csr(kind: str, nbytes: int, csr_bytes: int, vector_bytes: int, for_: str = "spmv") -> float | None:
    """The estimated time of a ``for_`` product streaming ``nbytes`` of matrix in ``kind``'s kernel (a key of
    ``KERNEL_FACTOR``), relative to CSR's at ``csr_bytes``, both plus ``vector_bytes`` of dense operands; None
    when ``kind`` is no candidate for ``for_``. A storage is worth switching to when this is at most
    ``SWITCH_SHARE`` (the rule :func:`choose` applies; ``Solve(layout="auto")`` asks it about DIA)."""
    factor = KERNEL_FACTOR[for_].get(kind)
    return None if factor is None else factor * (nbytes + vector_bytes) / max(csr_bytes + vector_bytes, 1)
