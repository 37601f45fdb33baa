"""The universal sparse tensor: a format, dimension extents, per-level buffers and values.

Storage layout (the contract every module relies on):
- ``tensor_format``: a :class:`TensorFormat`; ``shape``: dimension extents.
- ``_pos[k]`` / ``_crd[k]``: the positions / coordinates buffer of level ``k`` or ``None`` when the level
  has none (``Level.has_positions`` / ``has_coordinates``). All index buffers share ``index_type``.
- ``_val``: for formats with a sparse level, a 1-D buffer of the stored values (padding included, in
  storage order); for all-dense formats, an n-D C-contiguous array whose axes are the levels.
- Buffers are NumPy arrays on the CPU (torch CPU tensors are viewed through ``.numpy()``, sharing memory),
  and torch/CuPy arrays on a GPU device.  ``package`` remembers where the tensor came from.
"""
from __future__ import annotations

from typing import Any, Sequence

from .formats import TensorFormat


class Tensor:
    """A tensor in any format the DSL describes; see the module docstring for the storage layout."""

    def __init__(self, tensor_format: TensorFormat, shape: Sequence[int], pos: Sequence[Any],
                 crd: Sequence[Any], values: Any, *, index_type: Any = None, package: str = "numpy",
                 device: str = "cpu", source: Any = None) -> None:
        if not isinstance(tensor_format, TensorFormat):
            raise TypeError(f"tensor_format must be a TensorFormat, got {type(tensor_format).__name__}")
        self.tensor_format = tensor_format
        self.shape = tuple(int(s) for s in shape)
        if len(self.shape) != tensor_format.num_dimensions:
            raise ValueError(f"format {tensor_format} has {tensor_format.num_dimensions} dimensions, "
                             f"shape {self.shape} has {len(self.shape)}")
        n = tensor_format.num_levels
        if len(pos) != n or len(crd) != n:
            raise ValueError(f"expected {n} positions and coordinates entries (one per level, None where "
                             "a level has none)")
        self._pos = list(pos)
        self._crd = list(crd)
        self._val = values
        self.index_type = index_type
        self.package = package
        self.device = device
        self._source = source  # keeps the package object alive and lets to_package() return it

    # ----- accessors ---------------------------------------------------------------------------------
    def pos(self, level: int) -> Any:
        """Positions buffer of ``level`` (None when the level has none)."""
        return self._pos[level]

    def crd(self, level: int) -> Any:
        """Coordinates buffer of ``level`` (None when the level has none)."""
        return self._crd[level]

    @property
    def val(self) -> Any:
        return self._val

    @property
    def levels(self) -> list[int]:
        """Level extents."""
        return self.tensor_format.level_extents(self.shape)

    @property
    def dtype(self) -> Any:
        return self._val.dtype

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def nse(self) -> int:
        """Number of stored entries (padding included)."""
        v = self._val
        if self.tensor_format.is_dense:
            size = 1
            for s in v.shape:
                size *= int(s)
            return size
        return int(v.shape[0])

    @property
    def is_sparse(self) -> bool:
        return not self.tensor_format.is_dense
