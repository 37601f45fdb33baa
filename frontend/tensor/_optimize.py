"""``frontend.optimize``: a matrix of any package converted once to the storage that moves the fewest bytes
for repeated products (the chooser is :mod:`frontend.storage._format_choice`)."""
from __future__ import annotations

from typing import Any

from frontend.storage._format_choice import FormatChoice, optimize as optimize_stored

from ._tensor import Tensor


def optimize(a: Any, for_: str = "spmv", calls: int | None = None, narrow: bool = False) -> tuple[Tensor, FormatChoice]:
    """``(tensor, report)`` for a matrix ``a`` (a Tensor or any package object ``Tensor.from_package`` views)
    multiplied many times (``for_``: ``"spmv"`` or ``"spmm"``; ``calls``: how many, when known).

    It measures ``a`` once (diagonals, block fill at 2x2/4x4/8x8, row lengths, delta gaps), estimates each
    candidate's bytes and kernel cost (CSR with the narrowest indices, DIA-I, BSR, ELL, DELTA(8)), and converts
    once to the best; the report (:class:`frontend.storage._format_choice.FormatChoice`) lists every candidate,
    the choice, its reason, the conversion's cost in calls and the calls after which it pays for itself. CSR
    stays unless another format is estimated at most 90% of its time. ``narrow=True`` also stores the chosen
    storage's coordinates in the narrowest type that fits (int16/int8 for 4-byte values; off by default: slower
    on two threads in the measurements, docs/performance.md)."""
    t = a if isinstance(a, Tensor) else Tensor.from_package(a)
    return optimize_stored(t, for_, calls, narrow)
