"""Contractions MLIR's sparsifier compiles into wrong code, so that :func:`lowering.dispatch.choose_path`
sends them to the emitter instead.

- Custom reductions (``sparse_tensor.reduce``: every semiring) are scalarized starting from the
  semiring's identity, not from the output's value, and the scalar is stored back over the output. A
  reduction chain that runs more than once per output element (a parallel loop between two reduction
  loops, as on block formats' demapped views: ``I, K, i, k``) keeps only its last chain.
- Formats it encodes but cannot compile (it aborts): a non-unique level not followed by a singleton
  level, a singleton level under a unique one, or an array-of-structs singleton (without
  ``soa``) in a multi-operand contraction (:func:`unsupported_levels`).
- Stored padding zeros (``frontend.format.stores_padding``) are entries to the sparsifier: they take part in
  semirings and go through a prolog.
"""
from __future__ import annotations

import re
from typing import Any

from frontend.format import TensorFormat, is_dimension, stores_padding

from .contraction import Contraction

_UNSUPPORTED: dict[TensorFormat, bool] = {}  # format -> unsupported_levels(format); one per format seen


def reduction_restarts(c: Contraction) -> bool:
    """Whether a stored operand's level order puts an output letter between two reduction letters (or
    maps a level to a compound expression, whose loop order is not known here)."""
    out = set(c.output_subscripts)
    for sub, t in zip(c.subscripts, c.inputs):
        if not t.encoded or t.fmt is None:
            continue
        dims: list[Any] = list(t.fmt.dimensions)
        letters = []
        for lv in t.fmt.levels:
            if not is_dimension(lv.expr):
                return True
            letters.append(sub[dims.index(lv.expr)])
        if re.search("r.*o.*r", "".join("o" if ch in out else "r" for ch in letters)):
            return True
    return False


def unsupported_levels(fmt: TensorFormat) -> bool:
    """Whether ``fmt`` has a non-unique level not followed by a singleton level, a singleton level whose
    parent is unique, or a singleton without ``soa``: level sequences MLIR's sparsifier accepts in an
    encoding but aborts on (or, for array-of-structs COO, fails to assemble next to other operands)."""
    got = _UNSUPPORTED.get(fmt)
    if got is None:
        got = _UNSUPPORTED[fmt] = _unsupported(fmt.levels)
    return got


def _unsupported(levels: tuple) -> bool:
    for k, lv in enumerate(levels):
        fmt_k = lv.format.value
        if fmt_k == "singleton" and (k == 0 or levels[k - 1].unique or not lv.soa):
            return True
        if not lv.unique and (k + 1 == len(levels) or levels[k + 1].format.value != "singleton"):
            return True
    return False


def miscompiles(c: Contraction) -> bool:
    """Whether the sparsifier's code for ``c`` would be wrong (see the module docstring)."""
    if any(t.fmt is not None and t.encoded and unsupported_levels(t.fmt) for t in c.inputs):
        return True
    if c.semiring is None and c.prolog is None:
        return False
    if any(t.fmt is not None and t.encoded and stores_padding(t.fmt) for t in c.inputs):
        return True
    return c.semiring is not None and (c.init != "zero" or reduction_restarts(c))
