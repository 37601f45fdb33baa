"""The universal sparse tensor: a format, dimension extents, per-level buffers and values.

Storage layout (the contract every module relies on):
- ``tensor_format``: a :class:`TensorFormat`; ``shape``: dimension extents; ``levels``: level extents
  (``TensorFormat.level_extents``).  Level coordinates run over ``[off, off + extent)`` with ``off`` from
  ``TensorFormat.diagonal_offset`` (negative only for ``j - i`` levels); buffers hold them as they are.
- ``_pos[k]`` / ``_crd[k]``: the positions / coordinates buffer of level ``k`` or ``None`` when the level
  has none (``Level.has_positions`` / ``has_coordinates``).  Index buffers are 1-D and contiguous; every
  ``pos`` has ``index_type`` and every ``crd`` but a delta level's (below) has ``crd_type`` (both int8, int16,
  int32 or int64, as MLIR's ``posWidth``/``crdWidth``; ``crd_type`` is ``index_type`` unless a conversion or
  ``from_buffers`` gave narrower coordinates).  A narrow (int8/int16) ``crd_type`` addresses levels of extent
  up to 128 / 32768 (coordinates stay non-negative: signed and unsigned readings agree).  Per level kind, with ``P`` the
  number of positions of the parent level (1 above level 0) and ``E`` the level extent:
  * dense / batch: no buffers; ``P * E`` positions, position ``p * E + (c - off)``.
  * compressed: ``pos`` has ``P + 1`` entries, ``pos[0] == 0``, non-decreasing, ``pos[-1] == len(crd)``;
    ``crd[pos[p]:pos[p+1]]`` are parent ``p``'s coordinates (strictly increasing for ordered unique
    levels, non-decreasing for ordered nonunique ones).  A nonunique level followed by singleton levels
    (COO) stores one position per distinct coordinate tuple of itself and those singletons.
  * loose_compressed: ``pos`` has ``2 * P`` entries ``[lo0, hi0, lo1, hi1, ...]``; children of ``p`` are
    ``crd[lo_p:hi_p]``; ``len(crd)`` positions.
  * singleton: ``crd`` has one coordinate per parent position (``P`` entries).
  * range (the plain dimension after a diagonal level ``j - i`` / ``i + j``): no buffers; like dense, every
    coordinate ``0..E-1`` of that dimension for each diagonal, so DIA-J is scipy's ``dia.data`` layout;
    entries whose other dimension falls outside the tensor are zero padding (a kernel may skip them).
    ``range(w)``: only coordinates ``0..w-1`` are stored (``w`` slots per parent, ``w <= E``); coordinates
    ``w..E-1`` hold nothing (scipy DIA ``data`` narrower than the column count).
  * delta(b): ``pos`` as compressed; ``crd`` holds gaps in the narrowest unsigned type with ``b`` bits
    (uint8 for b <= 8, uint16 for b <= 16, uint32 above; kernels zero-extend): each stored coordinate is
    the previous stored coordinate of its parent plus gap plus one, the first one is its gap (= its
    coordinate).  Where a gap would exceed ``2**b - 1``, zero-valued padding entries are stored every
    ``2**b`` coordinates.  Padding restarts with every parent.  For b in 1, 2, 4 the gaps are bit-packed,
    ``8 // b`` to a uint8 byte (``frontend.format.delta_packed``): gap ``t`` (``t`` = its position) is bits
    ``t * b % 8`` upwards of byte ``t * b // 8``; ``crd`` has ``ceil(entries * b / 8)`` bytes and the last
    byte's unused bits are 0.
  * structured[n, m]: exactly ``n`` slots per group of ``m`` coordinates (one group per parent for
    ``j % m``, ``ceil(E / m)`` for a plain dimension); ``crd`` holds the in-group coordinate (``0..m-1``),
    strictly increasing within a group; empty slots are zero padding at the smallest free coordinates.
- ``_val``: for formats with a sparse level, the values of the last level's positions (padding included,
  in storage order), 1-D or with trailing axes read in C order (``from_buffers`` accepts e.g. BSR blocks
  ``(nnzb, R, C)``; package views and conversions store them flattened); for all-dense formats an n-D
  C-contiguous array whose axes are the levels (F-ordered dense data is the permuted dense format
  ``(i, j) -> (j : dense, i : dense)`` over ``array.T``).
- Leading batch levels: every buffer of the levels after them carries the batch axes first:
  ``pos[k]`` is ``(*batch, len)``, ``crd[k]`` and ``_val`` ``(*batch, cap)``; each batch is stored like an
  unbatched tensor of the remaining levels; batches with fewer entries leave trailing slots unused
  (positions padded with their last value, coordinates and values with zeros).
- Buffers: views of package objects and conversions hold NumPy arrays on the CPU (torch CPU tensors are
  viewed through ``.numpy()``, sharing memory) and torch/CuPy arrays on a GPU device; ``from_buffers``
  keeps the arrays it is given (NumPy, torch or CuPy), which readers reach through
  ``storage.to_host``.  ``package`` remembers where the tensor came from.
- Validation (``frontend.storage._validate.validate``) is remembered per buffer set (``buffer_key``); index
  buffers are never frozen: one changed through torch (version counter) is validated again before the next
  kernel reads it, and kernels that are not bounds-safe validate NumPy index buffers on every call
  (``frontend.storage._guard``). Values may be changed in place freely.
- Zeros: conversion from a padded format (all-dense, block fill, diagonal fill, delta gaps, structured
  slots) keeps only nonzeros; explicit zeros of unpadded formats (COO, CSR, CSC, DCSR, CSF) are kept;
  ``drop_zeros=True`` drops every zero.  Duplicates are summed when the target format is unique.
"""
from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from frontend.format import NamedFormats, TensorFormat, as_format, is_dimension
from frontend.interop import _package as interop
from frontend.storage import _convert, _lookup
from frontend.storage._buffers import data_pointer, nbytes, numpy_dtype
from frontend.storage._layout import coordinates_type, to_host, value_count
from frontend.storage._validate import mark_valid, validate

from . import _draw, _fileio, _indexing, _operators
from ._display import describe
from ._operators import TABLE as _OPS


class Tensor:
    """A tensor in any format the DSL describes; see the module docstring for the storage layout.

    The methods delegate to :mod:`frontend.storage` (validation, conversion, lookup), :mod:`frontend.interop`
    (package objects), and ``_fileio``, ``_draw``, ``_display``; those never import this class."""

    def __init__(self, tensor_format: TensorFormat | str, shape: Sequence[int], pos: Sequence[Any],
                 crd: Sequence[Any], values: Any, *, index_type: Any = None, package: str = "numpy",
                 device: str = "cpu", source: Any = None) -> None:
        fmt: TensorFormat = tensor_format if isinstance(tensor_format, TensorFormat) else as_format(tensor_format)
        self.tensor_format = fmt  # a name or DSL text parsed above (TypeError for other objects)
        self.shape = tuple(int(s) for s in shape)
        if len(self.shape) != fmt.num_dimensions:
            raise ValueError(f"format {fmt} has {fmt.num_dimensions} dimensions, "
                             f"shape {self.shape} has {len(self.shape)}")
        n = fmt.num_levels
        if len(pos) != n or len(crd) != n:
            raise ValueError(f"expected {n} positions and coordinates entries (one per level, None where "
                             "a level has none)")
        self._fill(list(pos), list(crd), values, None if index_type is None else np.dtype(index_type), package,
                   device, source)

    def _fill(self, pos: list[Any], crd: list[Any], values: Any, index_type: np.dtype | None, package: str,
              device: str, source: Any) -> None:
        """Set the buffers and metadata (after ``tensor_format`` and ``shape``)."""
        self._pos = pos
        self._crd = crd
        self._val = values
        self.index_type = self._infer_index_type() if index_type is None else index_type
        self.package = package
        self.device = device
        self._source = source  # keeps the package object alive and lets to_package() return it
        self._source_key: tuple | None = None  # buffer_key() when viewed from source (from_package)
        self._validated: Any = None  # buffer_key() of the last successful validation (or _validate.Built)
        self._guard: Any = None  # the index buffers' guard of that validation (frontend.storage._guard)
        self._fresh: Any = None  # its buffers and index copies as validate_now last checked them in full

    @classmethod
    def _trusted(cls, tensor_format: TensorFormat, shape: tuple[int, ...], pos: list[Any], crd: list[Any],
                 values: Any, index_type: np.dtype, source: Any = None) -> Tensor:
        """Internal: a CPU numpy tensor over buffers known to match ``tensor_format`` and ``shape`` (a kernel's
        dense result): the constructor without its checks and conversions (on the per-call path)."""
        t = cls.__new__(cls)
        t.tensor_format, t.shape = tensor_format, shape
        t._fill(pos, crd, values, index_type, "numpy", "cpu", source)
        return t

    def _infer_index_type(self) -> np.dtype:
        """The positions' dtype (the first coordinates buffer's when no level has positions; else int64)."""
        for p in self._pos:
            if p is not None:
                return numpy_dtype(p)
        return coordinates_type(self.tensor_format, self._crd, np.int64)

    @property
    def crd_type(self) -> np.dtype:
        """The dtype of the coordinates buffers (a delta level's gaps aside): ``index_type``, or a narrower type
        addressing every level's extent (``convert(crd_type=...)``)."""
        return coordinates_type(self.tensor_format, self._crd, self.index_type)

    # ----- construction -----------------------------------------------------------------------------
    @classmethod
    def from_buffers(cls, tensor_format: TensorFormat | str, shape: Sequence[int], pos: Any = None,
                     crd: Any = None, values: Any = None, index_type: Any = None, **kwargs: Any) -> Tensor:
        """A tensor over raw level buffers, validated (``ValueError``/``TypeError`` naming the level and
        problem).  ``pos``/``crd``: per-level lists with ``None`` where a level has none, or dicts
        ``level -> array``.  Arrays are used as given (no copy); lists become NumPy arrays."""
        if values is None:
            raise TypeError("from_buffers needs values")
        fmt: TensorFormat = as_format(tensor_format)
        n = fmt.num_levels
        t = cls(fmt, shape, [_as_buffer(b) for b in _per_level(pos, n, "pos")],
                [_as_buffer(b) for b in _per_level(crd, n, "crd")], _as_buffer(values),
                index_type=index_type, **kwargs)
        validate(t)
        return t

    @classmethod
    def from_dense(cls, array: Any, tensor_format: TensorFormat | str | None = None, **convert_args: Any) -> Tensor:
        """A dense tensor holding a copy of ``array`` (C order), converted to ``tensor_format`` if given."""
        arr = np.array(array, order="C", copy=True)
        t = cls(NamedFormats.Dense(arr.ndim) if arr.ndim else NamedFormats.Scalar, arr.shape,
                [None] * arr.ndim, [None] * arr.ndim, arr)
        return t if tensor_format is None else t.convert(tensor_format, **convert_args)

    @classmethod
    def from_package(cls, x: Any) -> Tensor:
        """A tensor sharing the buffers of a NumPy/SciPy/torch/CuPy object (see :mod:`frontend.interop`)."""
        return interop.from_package(x, cls)

    @classmethod
    def from_file(cls, path: Any, **kwargs: Any) -> Tensor:
        """A COO tensor read from a Matrix Market ``.mtx`` or FROSTT ``.tns`` file (keywords
        ``sum_duplicates``, ``index_type``, ``shape``: :func:`frontend.tensor._fileio.read`)."""
        return _fileio.read(path, cls, **kwargs)

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
        """Number of stored values (padding and unused batch slots included)."""
        return value_count(self._val, 0)

    @property
    def nbytes(self) -> int:
        """Bytes of every buffer (positions, coordinates, values): the storage a format costs, bit-packed delta
        gaps included as stored."""
        return sum(nbytes(b) for b in self.buffers())

    @property
    def is_sparse(self) -> bool:
        return not self.tensor_format.is_dense

    def buffers(self) -> list[Any]:
        """Every buffer in MLIR sparse-assembler order: per level pos then crd where present, then values."""
        out: list[Any] = []
        for p, c in zip(self._pos, self._crd):
            out += [b for b in (p, c) if b is not None]
        return out + [self._val]

    def buffer_key(self) -> tuple:
        """Identity of the buffer set (id, data pointer, shape, dtype of each buffer; the dtype object itself:
        its ``str`` costs microseconds on the per-call paths)."""
        return (self.tensor_format.structure_key(), self.shape) + tuple(
            (id(b), data_pointer(b), tuple(b.shape), b.dtype) for b in self.buffers())

    # ----- conversion ----------------------------------------------------------------------------------
    def convert(self, tensor_format: TensorFormat | str | None = None, index_type: Any = None, dtype: Any = None,
                drop_zeros: bool = False, max_fill: float | None = _convert.MAX_FILL, crd_type: Any = None) -> Tensor:
        """This tensor in another format / index type / value type (a new tensor, same package and device);
        a padded target storing over ``max(max_fill * entries, entries + 2**20)`` slots is refused (None: no limit).
        ``index_type`` (int8 to int64) sets positions and coordinates, ``crd_type`` the coordinates alone (e.g.
        ``index_type=np.int32, crd_type=np.int16``); types too narrow for an extent or the entries raise ValueError."""
        return _convert.convert(self, tensor_format, index_type=index_type, dtype=dtype, drop_zeros=drop_zeros,
                                max_fill=max_fill, crd_type=crd_type)

    def to_dense(self) -> np.ndarray:
        """A NumPy dense array (C order) of the tensor's contents."""
        dims, vals = _convert.entries(self)
        out = np.zeros(self.shape, dtype=numpy_dtype(self._val))
        if self.ndim == 0:
            return np.asarray(vals.sum(), dtype=out.dtype) if len(vals) else out
        if self.tensor_format.is_unique:
            out[tuple(dims)] = vals
        else:  # duplicates add up
            np.add.at(out, tuple(dims), vals)
        return out

    def get_value(self, index: Sequence[int]) -> Any:
        """The value stored at dimension coordinates ``index`` (padding zeros count as stored), or None."""
        return _lookup.get_value(self, index)

    def clone(self) -> Tensor:
        """A deep copy (same format, package and device; every buffer copied)."""
        def cp(b: Any) -> Any:
            return None if b is None else b.clone() if hasattr(b, "clone") else b.copy()
        t = Tensor(self.tensor_format, self.shape, [cp(p) for p in self._pos], [cp(c) for c in self._crd],
                   cp(self._val), index_type=self.index_type, package=self.package, device=self.device)
        if self._validated is not None:
            mark_valid(t)
        return t

    def copy_(self, src: Tensor) -> Tensor:
        """Copies ``src``'s contents into this tensor (its format, index and value types are kept).  Values
        are written in place when the sparsity structure is unchanged; otherwise the buffers are replaced."""
        if tuple(src.shape) != self.shape:
            raise ValueError(f"copy_: shape {tuple(src.shape)} does not match {self.shape}")
        new = src.convert(self.tensor_format, index_type=self.index_type, crd_type=self.crd_type,
                          dtype=numpy_dtype(self._val))
        same = (np.shape(new.val) == tuple(self._val.shape) and all(
            (a is None and b is None) or (a is not None and b is not None and np.array_equal(a, b))
            for a, b in zip(new._pos + new._crd, self._pos + self._crd)))
        if same:
            to_host(self._val)[...] = new.val.reshape(self._val.shape)
        else:
            ours = [to_host(s) for s in src.buffers() if s is not None]
            # a conversion may share src's unchanged buffers; a copy may not
            if any(any(np.may_share_memory(to_host(b), s) for s in ours) for b in new.buffers()):
                new = new.clone()
            self._pos, self._crd, self._val = new._pos, new._crd, new._val
            self._validated, self._guard = new._validated, new._guard
        return self

    # ----- package objects, files and pictures ---------------------------------------------------------
    def to_package(self, package: str | None = None) -> Any:
        """An object of ``package`` (default: the source's) sharing this tensor's buffers."""
        return interop.to_package(self, package)

    def to_file(self, path: Any, **kwargs: Any) -> None:
        """Writes the tensor as Matrix Market ``.mtx`` or FROSTT ``.tns`` (by extension; keywords ``field``,
        ``symmetry``, ``layout``: :func:`frontend.tensor._fileio.write`)."""
        _fileio.write(self, path, **kwargs)

    def draw(self, path: Any, **kwargs: Any) -> Path:
        """Draws the contents (1-D to 3-D) as a grid, stored entries shaded (:mod:`frontend.tensor._draw`)."""
        return _draw.draw(self, path, **kwargs)

    def draw_storage(self, path: Any, **kwargs: Any) -> Path:
        """Draws the level buffers as rows of cells, padding zeros marked."""
        return _draw.draw_storage(self, path, **kwargs)

    def draw_raw(self, path: Any, **kwargs: Any) -> Path:
        """Draws the nonzero pattern of a large 2-D/3-D tensor as a density image."""
        return _draw.draw_raw(self, path, **kwargs)

    # ----- an array: operators, methods, indexing and NumPy's protocols -------------------------------------
    # The operations behind them are in frontend.ops, reached through the operator table (_operators).
    __array_priority__ = 20.0  # ndarray + Tensor and ndarray @ Tensor come to the Tensor
    __hash__ = object.__hash__  # identity, although == compares values

    def __matmul__(self, other: Any) -> Any:
        return _OPS["matmul"](self, other)

    def __rmatmul__(self, other: Any) -> Any:
        return _OPS["matmul"](other, self)

    def __add__(self, other: Any) -> Any:
        return _OPS["add"](self, other)

    def __radd__(self, other: Any) -> Any:
        return _OPS["add"](other, self)

    def __sub__(self, other: Any) -> Any:
        return _OPS["subtract"](self, other)

    def __rsub__(self, other: Any) -> Any:
        return _OPS["subtract"](other, self)

    def __mul__(self, other: Any) -> Any:
        return _OPS["multiply"](self, other)

    def __rmul__(self, other: Any) -> Any:
        return _OPS["multiply"](other, self)

    def __truediv__(self, other: Any) -> Any:
        return _OPS["divide"](self, other)

    def __rtruediv__(self, other: Any) -> Any:
        return _OPS["divide"](other, self)

    def __floordiv__(self, other: Any) -> Any:
        return _OPS["floor_divide"](self, other)

    def __rfloordiv__(self, other: Any) -> Any:
        return _OPS["floor_divide"](other, self)

    def __mod__(self, other: Any) -> Any:
        return _OPS["remainder"](self, other)

    def __rmod__(self, other: Any) -> Any:
        return _OPS["remainder"](other, self)

    def __pow__(self, other: Any) -> Any:
        return _OPS["power"](self, other)

    def __rpow__(self, other: Any) -> Any:
        return _OPS["power"](other, self)

    def __and__(self, other: Any) -> Any:
        return _OPS["bitwise_and"](self, other)

    def __rand__(self, other: Any) -> Any:
        return _OPS["bitwise_and"](other, self)

    def __or__(self, other: Any) -> Any:
        return _OPS["bitwise_or"](self, other)

    def __ror__(self, other: Any) -> Any:
        return _OPS["bitwise_or"](other, self)

    def __xor__(self, other: Any) -> Any:
        return _OPS["bitwise_xor"](self, other)

    def __rxor__(self, other: Any) -> Any:
        return _OPS["bitwise_xor"](other, self)

    def __invert__(self) -> Any:
        return _OPS["invert"](self)

    def __lshift__(self, other: Any) -> Any:
        return _OPS["left_shift"](self, other)

    def __rlshift__(self, other: Any) -> Any:
        return _OPS["left_shift"](other, self)

    def __rshift__(self, other: Any) -> Any:
        return _OPS["right_shift"](self, other)

    def __rrshift__(self, other: Any) -> Any:
        return _OPS["right_shift"](other, self)

    def __neg__(self) -> Any:
        return _OPS["negative"](self)

    def __pos__(self) -> Any:
        return _OPS["positive"](self)

    def __abs__(self) -> Any:
        return _OPS["absolute"](self)

    def __lt__(self, other: Any) -> Any:
        return _OPS["less"](self, other)

    def __le__(self, other: Any) -> Any:
        return _OPS["less_equal"](self, other)

    def __gt__(self, other: Any) -> Any:
        return _OPS["greater"](self, other)

    def __ge__(self, other: Any) -> Any:
        return _OPS["greater_equal"](self, other)

    def __eq__(self, other: Any) -> Any:
        return _OPS["equal"](self, other)

    def __ne__(self, other: Any) -> Any:
        return _OPS["not_equal"](self, other)

    def _element(self, what: str) -> Any:
        """The one element of a one-element Tensor (Python's ``float(A)``, ``int(A)``, ...)."""
        if math.prod(self.shape) != 1:
            raise TypeError(f"only a Tensor of one element converts to {what}; this one has shape {self.shape}")
        return self.to_dense().reshape(-1)[0]

    def __float__(self) -> float:
        return float(self._element("float"))

    def __int__(self) -> int:
        return int(self._element("int"))

    def __complex__(self) -> complex:
        return complex(self._element("complex"))

    def __index__(self) -> int:
        if np.dtype(self.dtype).kind not in "iub":
            raise TypeError(f"only an integer Tensor is an index; this one is {self.dtype}")
        return int(self._element("an index"))

    def __array_namespace__(self, *, api_version: str | None = None) -> Any:
        """The Array API namespace of Tensors, :mod:`frontend.array_api` (standard 2024.12)."""
        if api_version not in (None, "2021.12", "2022.12", "2023.12", "2024.12"):
            raise ValueError(f"api_version {api_version!r} is not one frontend.array_api implements (2024.12 and "
                             "earlier)")
        return _OPS["array_namespace"]()

    def to_device(self, device: Any, /, *, stream: Any = None) -> Tensor:
        """This tensor on ``device``: itself when it is already there (Array API); moving between devices goes
        through the package objects (``to_package("torch").to(device)``)."""
        if str(device) == str(self.device):
            return self
        raise ValueError(f"to_device: the tensor is on {self.device!r}, not {device!r}; move its package object "
                         "(e.g. Tensor.from_package(A.to_package('torch').to(device)))")

    def __bool__(self) -> bool:
        if math.prod(self.shape) != 1:
            raise ValueError(f"the truth value of a Tensor of shape {self.shape} is ambiguous; use "
                             "frontend.max(A != 0) or A.nnz")
        return bool(self[(0,) * self.ndim])

    # reductions: keepdims/dtype reach the operation only when given
    def sum(self, axis: Any = None, dtype: Any = None, out: None = None, keepdims: bool = False) -> Any:
        """The sum along ``axis`` (``frontend.sum``); implicit zeros take part."""
        return self._reduce("sum", axis, dtype, out, keepdims)

    def max(self, axis: Any = None, out: None = None, keepdims: bool = False) -> Any:
        """The maximum along ``axis`` (``frontend.max``); implicit zeros take part."""
        return self._reduce("max", axis, None, out, keepdims)

    def min(self, axis: Any = None, out: None = None, keepdims: bool = False) -> Any:
        """The minimum along ``axis`` (``frontend.min``); implicit zeros take part."""
        return self._reduce("min", axis, None, out, keepdims)

    def prod(self, axis: Any = None, dtype: Any = None, out: None = None, keepdims: bool = False) -> Any:
        """The product along ``axis`` (``frontend.prod``); implicit zeros take part."""
        return self._reduce("prod", axis, dtype, out, keepdims)

    def mean(self, axis: Any = None, dtype: Any = None, out: None = None, keepdims: bool = False) -> Any:
        """The mean along ``axis``; implicit zeros take part."""
        return self._reduce("mean", axis, dtype, out, keepdims)

    def std(self, axis: Any = None, dtype: Any = None, out: None = None, ddof: float = 0, keepdims: bool = False
            ) -> Any:
        """The standard deviation along ``axis`` (NumPy's ``ddof``); implicit zeros take part."""
        return self._statistic("std", axis, dtype, out, ddof, keepdims)

    def var(self, axis: Any = None, dtype: Any = None, out: None = None, ddof: float = 0, keepdims: bool = False
            ) -> Any:
        """The variance along ``axis`` (NumPy's ``ddof``); implicit zeros take part."""
        return self._statistic("var", axis, dtype, out, ddof, keepdims)

    def any(self, axis: Any = None, out: None = None, keepdims: bool = False) -> Any:
        """Whether any element along ``axis`` is nonzero (a bool Tensor)."""
        self._no_out("any", out)
        return self._xp().any(self, axis=axis, keepdims=keepdims)

    def all(self, axis: Any = None, out: None = None, keepdims: bool = False) -> Any:
        """Whether every element along ``axis`` is nonzero (implicit zeros are zeros)."""
        self._no_out("all", out)
        return self._xp().all(self, axis=axis, keepdims=keepdims)

    def nonzero(self) -> tuple[Any, ...]:
        """The coordinates of the nonzero elements, one array per axis, in row-major order (NumPy's)."""
        return tuple(np.asarray(c.todense()) if isinstance(c, Tensor) else np.asarray(c)
                     for c in self._xp().nonzero(self))

    def round(self, decimals: int = 0, out: None = None) -> Tensor:
        """The values rounded to ``decimals`` decimals (NumPy's ``round``: halves to even); same pattern."""
        self._no_out("round", out)
        return self._with_values(np.round(to_host(self._val), decimals))

    def clip(self, min: Any = None, max: Any = None, out: None = None) -> Any:  # noqa: A002 - NumPy's names
        """The values limited to ``[min, max]`` (``frontend.array_api.clip``: a sparse result while zero stays
        zero, else ``ValueError``, as other operations whose absent entries would become nonzero)."""
        self._no_out("clip", out)
        return self._xp().clip(self, min, max)

    def reshape(self, *shape: Any, copy: bool | None = None) -> Tensor:
        """The tensor with a new shape of the same size (``-1`` once: inferred), entries in row-major order."""
        if len(shape) == 1 and not isinstance(shape[0], (int, np.integer)):
            shape = tuple(shape[0])
        return self._xp().reshape(self, tuple(int(s) for s in shape), copy=copy)

    def flatten(self) -> Tensor:
        """The tensor as one dimension, entries in row-major order (a new tensor)."""
        return self.reshape(-1, copy=True)

    def ravel(self) -> Tensor:
        """The tensor as one dimension, entries in row-major order."""
        return self.reshape(-1)

    def diagonal(self, offset: int = 0) -> Any:
        """The ``offset`` diagonal of a matrix (``frontend.array_api.linalg.diagonal``)."""
        return self._xp().linalg.diagonal(self, offset=offset)

    def _statistic(self, name: str, axis: Any, dtype: Any, out: Any, ddof: float, keepdims: bool) -> Any:
        self._no_out(name, out)
        if dtype is None and np.dtype(self.dtype).kind in "biu":
            dtype = np.float64  # NumPy's: integers give float64 statistics
        t = self if dtype is None else self.astype(dtype)
        return getattr(self._xp(), name)(t, axis=axis, correction=ddof, keepdims=keepdims)

    def _xp(self) -> Any:
        return _OPS["array_namespace"]()

    @staticmethod
    def _no_out(name: str, out: Any) -> None:
        if out is not None:
            raise TypeError(f"Tensor.{name}: out= is not supported (results are new arrays)")

    def _reduce(self, name: str, axis: Any, dtype: Any, out: Any, keepdims: bool) -> Any:
        self._no_out(name, out)
        if dtype is None and not keepdims:
            return _operators.call(name, self, axis)
        extra: dict[str, Any] = {"keepdims": True} if keepdims else {}
        if dtype is not None:
            extra["dtype"] = dtype
        return _operators.call(name, self, axis, **extra)

    # shape, transposes, copies, types
    @property
    def size(self) -> int:
        return math.prod(self.shape)

    @property
    def nnz(self) -> int:
        """Number of stored values (as :attr:`nse`: padding of padded formats included; scipy's ``nnz``)."""
        return self.nse

    @property
    def T(self) -> Tensor:  # noqa: N802 - numpy's name
        """The transpose (all axes reversed), over the same buffers: :meth:`transpose`."""
        return self.transpose()

    @property
    def mT(self) -> Tensor:  # noqa: N802 - numpy's name
        """The last two axes swapped (a batch of matrices transposed), over the same buffers."""
        if self.ndim < 2:
            raise ValueError(f"mT needs at least 2 dimensions, the tensor has {self.ndim}")
        return self.transpose(*range(self.ndim - 2), self.ndim - 1, self.ndim - 2)

    def transpose(self, *axes: Any) -> Tensor:
        """The tensor with its axes permuted (NumPy's ``transpose``: none given reverses them). Zero-copy: the
        same buffers under the permuted format (CSR's transpose is CSC over CSR's buffers); a permutation
        the format DSL rejects (a diagonal ``j - i`` level turned ``i - j``) is a converted copy."""
        perm = tuple(range(self.ndim))[::-1] if not axes or axes == (None,) else tuple(
            axes[0] if len(axes) == 1 and not isinstance(axes[0], (int, np.integer)) else axes)
        if sorted(int(a) % max(self.ndim, 1) for a in perm) != list(range(self.ndim)) or len(perm) != self.ndim:
            raise ValueError(f"axes {perm} are not a permutation of the {self.ndim} axes")
        perm = tuple(int(a) % self.ndim for a in perm)
        if perm == tuple(range(self.ndim)):
            return self
        fmt = self.tensor_format
        shape = [self.shape[p] for p in perm]
        try:
            new = TensorFormat([fmt.dimensions[p] for p in perm], fmt.levels)
        except ValueError:
            return self.convert(NamedFormats.COO(self.ndim)).transpose(perm).convert(fmt)
        t = Tensor(_named_like(new), shape, self._pos, self._crd, self._val, index_type=self.index_type,
                   package=self.package, device=self.device)
        return mark_valid(t) if self._validated is not None else t

    def astype(self, dtype: Any, copy: bool = True) -> Tensor:
        """The tensor with values of ``dtype`` (a conversion; ``copy=False`` returns it when the type matches)."""
        if not copy and np.dtype(dtype) == numpy_dtype(self._val):
            return self
        return self.convert(dtype=dtype)

    def copy(self) -> Tensor:
        """A deep copy (:meth:`clone`)."""
        return self.clone()

    def conj(self) -> Tensor:
        """The complex conjugate (same pattern; real tensors: a copy)."""
        return self._with_values(np.conj(to_host(self._val)))

    conjugate = conj

    def _with_values(self, values: Any) -> Tensor:
        """Internal: a tensor over this one's index buffers with other ``values`` (same shape of buffer; a strided
        view such as ``values.real`` is copied contiguous)."""
        if isinstance(values, np.ndarray) and not values.flags.c_contiguous:
            values = np.ascontiguousarray(values)
        t = Tensor(self.tensor_format, self.shape, self._pos, self._crd, values, index_type=self.index_type,
                   package="numpy", device="cpu")
        return mark_valid(t) if self._validated is not None else t

    def toarray(self) -> np.ndarray:
        """A dense NumPy array (:meth:`to_dense`), scipy's name."""
        return self.to_dense()

    def todense(self) -> np.ndarray:
        """A dense NumPy array (:meth:`to_dense`), pydata/sparse's name."""
        return self.to_dense()

    def tocsr(self) -> Tensor:
        return self.convert(NamedFormats.CSR)

    def tocsc(self) -> Tensor:
        return self.convert(NamedFormats.CSC)

    def tocoo(self) -> Tensor:
        return self.convert(NamedFormats.COO(self.ndim) if self.ndim > 2 else NamedFormats.COO)

    def todia(self) -> Tensor:
        return self.convert(NamedFormats.DIAJ)

    def tobsr(self, blocksize: tuple[int, int] = (2, 2)) -> Tensor:
        return self.convert(NamedFormats.BSR((int(blocksize[0]), int(blocksize[1]))))

    # indexing and iteration
    def __getitem__(self, key: Any) -> Any:
        return _indexing.getitem(self, key, self._dense_view())

    def __setitem__(self, key: Any, value: Any) -> None:
        raise TypeError("Tensor does not support item assignment (its stored pattern is fixed): build a new "
                        "tensor (Tensor.from_dense, frontend.add/multiply/apply, convert) or change stored values "
                        "in place through A.val")

    def __len__(self) -> int:
        if not self.shape:
            raise TypeError("len() of a 0-d Tensor")
        return self.shape[0]

    def __iter__(self) -> Iterator[Any]:
        if not self.shape:
            raise TypeError("iteration over a 0-d Tensor")
        for i in range(self.shape[0]):
            yield self[i]

    # NumPy's protocols
    def _dense_view(self) -> np.ndarray | None:
        """The values of a dense-format CPU tensor as a NumPy view in dimension order; None otherwise."""
        fmt = self.tensor_format
        if not fmt.is_dense or self.device != "cpu" or not all(is_dimension(lv.expr) for lv in fmt.levels):
            return None
        val = np.asarray(to_host(self._val))
        perm = [fmt.dimension_index(lv.expr) for lv in fmt.levels]  # type: ignore[arg-type]
        return val if perm == sorted(perm) else val.transpose(np.argsort(perm))

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        view = self._dense_view()
        if view is None:
            if not _operators.auto_densify():
                raise RuntimeError(_operators.densify_hint(
                    f"NumPy asked for a dense array of a sparse {self.tensor_format.name or 'format'} Tensor "
                    f"of shape {self.shape}"))
            if copy is False:
                raise ValueError("densifying a sparse Tensor copies: copy=False cannot be honoured")
            view = self.to_dense()
        if copy:
            return np.array(view, dtype=dtype, copy=True)
        return view if dtype is None else view.astype(dtype, copy=copy is not False)

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        return _OPS["array_ufunc"](ufunc, method, inputs, kwargs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        return _OPS["array_function"](func, types, args, kwargs)

    def __dlpack__(self, **kwargs: Any) -> Any:
        """DLPack capsule of a dense-format tensor's values (zero-copy); ``BufferError`` for sparse formats."""
        view = self._dense_view()
        if view is not None:
            return view.__dlpack__(**kwargs)
        if self.tensor_format.is_dense and self.tensor_format.is_identity and hasattr(self._val, "__dlpack__"):
            return self._val.__dlpack__(**kwargs)
        raise BufferError(f"DLPack exchanges dense arrays; this Tensor is sparse ({self.tensor_format}): "
                          "use A.todense() first")

    def __dlpack_device__(self) -> tuple[int, int]:
        if self.device == "cpu" or not hasattr(self._val, "__dlpack_device__"):
            return (1, 0)  # kDLCPU
        kind, ordinal = self._val.__dlpack_device__()
        return int(kind), int(ordinal)

    def __repr__(self) -> str:
        return describe(self)


def _named_like(fmt: TensorFormat) -> TensorFormat:
    """``fmt`` with the name of the named format it equals (a transposed CSR is CSC), if any."""
    name = _NAMES.get(fmt)
    if name is None:
        name = _NAMES[fmt] = next((n for n, f in NamedFormats.all().items() if f == fmt), "")
    return fmt.renamed(name) if name else fmt


_NAMES: dict[TensorFormat, str] = {}  # format (structural) -> the name of an equal named format or ""


def _as_buffer(x: Any) -> Any:
    """Arrays (NumPy, torch, CuPy) as they are; Python sequences as NumPy arrays."""
    return x if x is None or (hasattr(x, "dtype") and hasattr(x, "shape")) else np.asarray(x)


def _per_level(bufs: Any, n: int, name: str) -> list[Any]:
    """Per-level buffer list from ``None``, a list (``None`` where absent) or a dict ``level -> array``."""
    if bufs is None:
        return [None] * n
    if isinstance(bufs, dict):
        bad = [k for k in bufs if not isinstance(k, int) or not 0 <= k < n]
        if bad:
            raise ValueError(f"{name}: level {bad[0]!r} is not a level of a {n}-level format")
        return [bufs.get(k) for k in range(n)]
    bufs = list(bufs)
    if len(bufs) != n:
        raise ValueError(f"{name}: expected {n} entries (one per level, None where a level has none), "
                         f"got {len(bufs)}")
    return bufs
