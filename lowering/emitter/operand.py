"""The stored operand an emitted kernel walks: its format, shape and level buffers as arguments.

Argument order (the same as ``sparse-assembler{direct-out=true}`` gives MLIR-encodable formats): for
each level in order its positions buffer (if ``has_positions``), then its coordinates buffer (if
``has_coordinates``); then the values, flattened to 1-D. Element types:

- leading batch levels: every later buffer carries the batch axes first, ``(*batch, len)``, walked per
  batch (values: trailing axes flattened).
- positions: ``i32``/``i64`` after the width (0 = ``index``), coordinates the same, except
- delta levels, whose stored gaps are unsigned and as narrow as their bit width (``uint8`` up to 8
  bits, ``uint16`` up to 16, else ``uint32``; ``frontend.storage.delta_crd_dtype``): passed as the
  same-width signed type (a view) and zero-extended in the kernel.

Range levels keep no buffers: their coordinates are the valid ones for the diagonal level before them
(padding outside the matrix is never read), and each parent entry owns ``extent`` value slots.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from frontend.format import INDEX_WIDTH_TYPES, TensorFormat, num_batch_levels

from ..contraction import TensorSpec
from .builder import Value


def delta_gap_type(bits: int) -> str:
    """MLIR element type of a delta level's gap buffer (unsigned, read with ``arith.extui``)."""
    return "i8" if bits <= 8 else "i16" if bits <= 16 else "i32"


@dataclass(frozen=True)
class LevelArgs:
    """The buffers of one level as function arguments (``None`` where the level has none)."""

    pos: Value | None
    crd: Value | None
    crd_unsigned: bool = False


@dataclass(frozen=True, eq=False)
class WalkedOperand(TensorSpec):
    """A stored (non row-major) operand: format, static shape, element type, index widths."""

    fmt: TensorFormat

    def params(self, prefix: str) -> tuple[list[Value], list[LevelArgs], Value]:
        """Function parameters (in order), per-level buffer arguments and the values argument."""
        for label, w in (("pos_width", self.pos_width), ("crd_width", self.crd_width)):
            if w not in INDEX_WIDTH_TYPES:
                raise ValueError(f"{label} must be one of {sorted(INDEX_WIDTH_TYPES)}, got {w!r}")
        params: list[Value] = []
        levels: list[LevelArgs] = []
        lead = "?x" * self.num_batch
        for k, lv in enumerate(self.fmt.levels):
            pos = crd = None
            if lv.has_positions:
                pos = Value(f"%{prefix}_pos{k}", f"memref<{lead}?x{INDEX_WIDTH_TYPES[self.pos_width]}>")
                params.append(pos)
            unsigned = lv.format.value == "delta"
            if lv.has_coordinates:
                width = INDEX_WIDTH_TYPES[self.crd_width]
                elem = delta_gap_type(lv.bits) if unsigned else width  # type: ignore[arg-type]  # delta: bits set
                crd = Value(f"%{prefix}_crd{k}", f"memref<{lead}?x{elem}>")
                params.append(crd)
            levels.append(LevelArgs(pos, crd, unsigned))
        val = Value(f"%{prefix}_val", f"memref<{lead}?x{self.elem}>")
        params.append(val)
        return params, levels, val

    @property
    def num_batch(self) -> int:
        """Leading batch levels (their buffers carry the batch axes first)."""
        return num_batch_levels(self.fmt)

    def key(self) -> tuple:
        return (self.fmt.structure_key(), self.shape, self.elem, self.pos_width, self.crd_width)


def operand_buffers(tensor: Any) -> list[Any]:
    """The arrays a kernel takes for a stored tensor (duck-typed ``frontend.Tensor``), in the order
    of :meth:`WalkedOperand.params`: zero-copy views (values flattened, unsigned gaps as signed)."""
    import numpy as np

    out: list[Any] = []
    fmt = tensor.tensor_format
    nb = num_batch_levels(fmt)
    lead = tuple(int(s) for s in fmt.level_extents(tensor.shape)[:nb])
    flat = lambda a: a.reshape(lead + (-1,))  # noqa: E731
    for k, lv in enumerate(fmt.levels):
        if lv.has_positions:
            out.append(flat(_contiguous(tensor.pos(k))))
        if lv.has_coordinates:
            c = _contiguous(tensor.crd(k))
            if c.dtype.kind == "u":
                c = c.view(np.dtype(f"i{c.dtype.itemsize}"))
            out.append(flat(c))
    out.append(flat(_contiguous(tensor.val)))
    return out


def _contiguous(a: Any) -> Any:
    import numpy as np

    if hasattr(a, "detach") and hasattr(a, "numpy"):
        a = a.detach().numpy()
    return np.ascontiguousarray(a)
