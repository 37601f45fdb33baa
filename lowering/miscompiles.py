"""Contractions MLIR's sparsifier compiles into wrong code, so that :func:`lowering.dispatch.choose_path`
sends them to the emitter instead.

- Custom reductions (``sparse_tensor.reduce``: every semiring) are scalarized starting from the
  semiring's identity, not from the output's value, and the scalar is stored back over the output. A
  reduction chain that runs more than once per output element (a parallel loop between two reduction
  loops, as on block formats' demapped views: ``I, K, i, k``) keeps only its last chain.
- Stored padding zeros (``frontend.format.stores_padding``) are entries to the sparsifier: they take part in
  semirings and go through a prolog.
"""
from __future__ import annotations

import re

from frontend.format import is_dimension, stores_padding

from .contraction import Contraction


def reduction_restarts(c: Contraction) -> bool:
    """Whether a stored operand's level order puts an output letter between two reduction letters (or
    maps a level to a compound expression, whose loop order is not known here)."""
    out = set(c.output_subscripts)
    for sub, t in zip(c.subscripts, c.inputs):
        if not t.encoded or t.fmt is None:
            continue
        dims = list(t.fmt.dimensions)
        letters = []
        for lv in t.fmt.levels:
            if not is_dimension(lv.expr):
                return True
            letters.append(sub[dims.index(lv.expr)])
        if re.search("r.*o.*r", "".join("o" if ch in out else "r" for ch in letters)):
            return True
    return False


def miscompiles(c: Contraction) -> bool:
    """Whether the sparsifier's code for ``c`` would be wrong (see the module docstring)."""
    if c.semiring is None and c.prolog is None:
        return False
    if any(t.fmt is not None and t.encoded and stores_padding(t.fmt) for t in c.inputs):
        return True
    return c.semiring is not None and (c.init != "zero" or reduction_restarts(c))
