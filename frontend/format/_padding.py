"""Which formats store zeros as padding, and so what a stored entry is.

A *stored entry* of a tensor is a value slot its format keeps for a coordinate inside the shape, with one
exception: formats that store zeros they need only for their layout (the fill of BSR/BSC blocks, of DIA
and skew-DIA diagonals, DELTA's gap entries, n:m's empty slots, any dense level below a sparse one, a
singleton level right below a dense one: one slot per parent) cannot
tell such padding from a zero the caller meant, so in them **every stored zero is padding, not an entry**.
Unpadded sparse formats (CSR, CSC, COO, DCSR, CSF, ...) keep explicitly stored zeros as entries; in a
dense operand every element is an entry. Conversion, semirings and prologs follow this rule.
"""
from __future__ import annotations

from ._formats import TensorFormat
from ._levels import LevelFormat

_PADDING_LEVELS = (LevelFormat.RANGE, LevelFormat.DELTA, LevelFormat.STRUCTURED)
_PADS: dict[TensorFormat, bool] = {}  # format -> stores_padding(format); one per format seen


def stores_padding(fmt: TensorFormat) -> bool:
    """Whether ``fmt`` is sparse and stores padding zeros (a range, delta or structured level, a dense level
    below a sparse one, or a singleton level below a dense one): its stored zeros are not entries."""
    got = _PADS.get(fmt)
    if got is None:
        got = False
        seen_sparse = False
        parent_dense = True
        for lv in fmt.levels:
            if (lv.format in _PADDING_LEVELS or (lv.is_dense_like and seen_sparse)
                    or (lv.format == LevelFormat.SINGLETON and parent_dense)):
                got = True
                break
            seen_sparse = seen_sparse or not lv.is_dense_like
            parent_dense = lv.is_dense_like
        _PADS[fmt] = got
    return got
