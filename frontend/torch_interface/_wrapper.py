"""``TensorWrapper``: a ``torch.Tensor`` wrapper subclass over a :class:`~frontend.tensor.Tensor`.

The wrapper reports the logical shape, dtype and device; its storage is the wrapped Tensor, whose values
buffer is the memory of ``.values()`` (a 1-D torch tensor for sparse formats).  ``.values()`` is what autograd
and optimizers see: gradients of products with a wrapper land there, restricted to the stored entries.

This module holds the storage and the methods; :class:`~frontend.torch_interface.TorchUST` (its only
subclass) adds the routing of torch functions to the handlers.  Products and handlers work on
``TensorWrapper`` and build results with the class of their operand, so they never import ``TorchUST``.
Aten operations reaching a wrapper are refused (or densified under
:func:`~frontend.torch_interface.allow_dense_fallback`).
"""
from __future__ import annotations

import copy
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
import torch
from torch.utils._pytree import tree_map

from frontend.format import TensorFormat, as_format, stores_padding
from frontend.storage._buffers import torch_buffer
from frontend.storage._convert import coordinates
from frontend.tensor._tensor import Tensor

from . import _storage as torch_storage
from ._fallback import refuse_or_warn

WrapperT = TypeVar("WrapperT", bound="TensorWrapper")
_LAYOUTS: dict[Any, torch.layout] = {}  # (structure key, ndim) -> torch's layout of that format


def format_name(fmt: TensorFormat) -> str:
    """The display name of a format (its DSL text when unnamed)."""
    return fmt.name or str(fmt)


def transposed_format(fmt: TensorFormat) -> TensorFormat:
    """The format storing the transpose of a 2-D tensor in the same buffers (dimensions swapped)."""
    name = fmt.name
    if name and name.endswith("^T"):
        name = name[:-2]
    elif name:
        name = f"{name}^T"
    return TensorFormat(tuple(reversed(fmt.dimensions)), fmt.levels, name=name)


class ValuesMethod:
    """What ``W.values`` gives: call it (``W.values()``, torch's spelling) for the stored values; attribute
    access (``W.values.grad``, the spelling before ``values`` became a method) is forwarded to them with a
    ``DeprecationWarning``."""

    __slots__ = ("_values",)

    def __init__(self, values: torch.Tensor) -> None:
        self._values = values

    def __call__(self) -> torch.Tensor:
        return self._values

    def __getattr__(self, name: str) -> Any:
        warnings.warn("W.values is a method like torch's: use W.values() for the stored values",
                      DeprecationWarning, stacklevel=2)
        return getattr(self._values, name)

    def __repr__(self) -> str:
        return f"<method values of a TorchUST: {self._values!r}>"


class TensorWrapper(torch.Tensor):
    """A torch tensor stored in any format of the DSL; see the module docstring."""

    _ust: Tensor
    _shape: tuple[int, ...]
    _stored: torch.Tensor
    _pattern: Tensor | None
    _positions: torch.Tensor | None
    _entries: tuple[torch.Tensor, torch.Tensor] | None
    _plans: dict[tuple, Any]
    _transpose_base: TensorWrapper | None
    _grad_wrapper: TensorWrapper | None

    @staticmethod
    def __new__(cls: type[WrapperT], ust: Tensor, values: torch.Tensor) -> WrapperT:
        if not isinstance(ust, Tensor):
            raise TypeError(f"{cls.__name__} wraps a frontend Tensor, got {type(ust).__name__}")
        r = torch.Tensor._make_wrapper_subclass(cls, ust.shape, dtype=values.dtype, device=values.device,
                                                requires_grad=False)
        r._ust = ust
        r._shape = tuple(ust.shape)  # plain Python: no __torch_function__ round trip on hot paths
        r._stored = values
        r._pattern = None
        r._positions = None
        r._entries = None
        r._plans = {}
        r._transpose_base = None
        r._grad_wrapper = None
        return r

    # ----- construction --------------------------------------------------------------------------
    @classmethod
    def from_torch(cls: type[WrapperT], t: torch.Tensor, tensor_format: TensorFormat | str | None = None) -> WrapperT:
        """Wrap ``t`` (any torch layout, zero-copy); with ``tensor_format``, converted to that format.

        ``requires_grad`` of ``t`` carries over to ``.values()`` (a new leaf)."""
        if isinstance(t, cls):
            return t if tensor_format is None else t.convert(tensor_format)
        if not isinstance(t, torch.Tensor):
            raise TypeError(f"from_torch needs a torch.Tensor, got {type(t).__name__}")
        tensor_format = as_format(tensor_format)
        grad = t.requires_grad
        ust = Tensor.from_package(t.detach())
        if tensor_format is not None and ust.tensor_format != tensor_format:
            ust = ust.convert(tensor_format=tensor_format)
        out = cls.from_ust(ust)
        if grad:
            out._stored.requires_grad_(True)
        return out

    @classmethod
    def from_ust(cls: type[WrapperT], ust: Tensor) -> WrapperT:
        """Wrap a Tensor; ``.values()`` views its values buffer."""
        values = torch_storage.as_torch(ust.val)
        if torch_buffer(values) is not ust.val and not torch_storage.same_memory(ust, values):
            ust = torch_storage.with_values(ust, values)  # a read-only NumPy buffer was copied
        return cls(ust, values)

    @classmethod
    def with_values(cls: type[WrapperT], template: TensorWrapper, values: torch.Tensor) -> WrapperT:
        """``template``'s indices with other ``values`` (autograd history of ``values`` is kept)."""
        return cls(torch_storage.with_values(template._ust, values), values)

    # ----- access --------------------------------------------------------------------------------
    @property
    def ust(self) -> Tensor:
        """The wrapped Tensor (its values buffer is ``.values()``'s current memory)."""
        if not torch_storage.same_memory(self._ust, self._stored):
            self._ust = torch_storage.with_values(self._ust, self._stored)
            self._pattern = None
            self._positions = None
            self._entries = None
            self._plans = {}
        return self._ust

    @property
    def values(self) -> ValuesMethod:  # torch's method, reached as W.values()
        """``W.values()``: the stored values (zero-copy; the tensor autograd and optimizers update), as
        torch's ``values()``.  The older attribute spelling ``W.values.grad`` still works, with a
        ``DeprecationWarning``."""
        return ValuesMethod(self._stored)

    # ----- autograd in torch's terms -------------------------------------------------------------------
    @property
    def requires_grad(self) -> bool:  # torch's attribute, mirrored on the values
        """Whether the stored values require gradients (``W.requires_grad_()`` sets it)."""
        return self._stored.requires_grad

    @requires_grad.setter
    def requires_grad(self, flag: bool) -> None:
        self._stored.requires_grad_(flag)

    @property
    def is_leaf(self) -> bool:  # type: ignore[override]
        return self._stored.is_leaf

    @property
    def grad_fn(self) -> Any:  # type: ignore[override]
        return self._stored.grad_fn

    @property
    def grad(self) -> Any:  # a wrapper of this class, or None
        """The gradient after ``backward()``: a wrapper of the same pattern over the values' gradient (what
        torch gives a sparse leaf), None before."""
        g = self._stored.grad
        if g is None:
            return None
        cached = self._grad_wrapper
        if cached is None or cached._stored is not g:
            cached = self._grad_wrapper = self.with_values(self, g)  # one per gradient tensor
        return cached

    @grad.setter
    def grad(self, g: Any) -> None:
        self._stored.grad = None if g is None else self.values_like(g, "grad")

    def values_like(self, x: Any, what: str) -> torch.Tensor:
        """``x`` (a wrapper of this pattern, or dense of this shape with nothing outside the pattern) as
        a tensor shaped like the stored values."""
        if isinstance(x, TensorWrapper):
            if x is self or x.same_pattern(self):
                return x._stored
            x = x.dense()
        if not isinstance(x, torch.Tensor) or tuple(x.shape) != self._shape:
            raise TypeError(f"{what} of a {type(self).__name__} of shape {self._shape} must be one of the same "
                            f"pattern or a dense tensor of that shape, got {type(x).__name__}")
        stored = self.gather_stored(x.reshape(-1))
        outside = x.detach().reshape(-1).clone()
        pos = self.storage_positions()
        outside[pos[pos >= 0].to(outside.device)] = 0
        if bool(outside.ne(0).any()):
            raise ValueError(f"{what} has nonzeros outside the stored pattern of this {self.format_name} "
                             f"{type(self).__name__}; in-place updates keep the pattern")
        return stored

    def same_pattern(self, other: TensorWrapper) -> bool:
        """Whether ``other`` stores the same entries in the same order (same format, shape and indices)."""
        a, b = self._ust, other._ust
        if a.tensor_format != b.tensor_format or tuple(a.shape) != tuple(b.shape) \
                or self._stored.shape != other._stored.shape:
            return False
        for x, y in zip(a._pos + a._crd, b._pos + b._crd):
            if x is y:
                continue
            if x is None or y is None:
                return False
            tx, ty = torch_storage.as_torch(x), torch_storage.as_torch(y)
            if tx.shape != ty.shape or not bool(torch.equal(tx.cpu(), ty.cpu().to(tx.dtype))):
                return False
        return True

    @property
    def layout(self) -> torch.layout:  # type: ignore[override]
        """torch's layout of the format (CSR, CSC, COO, BSR, BSC); ``torch.strided`` (what torch's dispatcher
        sees) for formats torch has no layout for."""
        key = (self._ust.tensor_format.structure_key(), len(self._shape))
        found = _LAYOUTS.get(key)
        if found is None:
            found = _LAYOUTS[key] = self.to_torch().layout if self.dense_layout_known() else torch.strided
        return found

    @property
    def is_sparse(self) -> bool:  # type: ignore[override]
        """As torch: True for the COO layout."""
        return self.layout == torch.sparse_coo

    @property
    def is_sparse_csr(self) -> bool:  # type: ignore[override]
        """As torch: True for the CSR layout."""
        return self.layout == torch.sparse_csr

    @property
    def tensor_format(self) -> TensorFormat:
        return self._ust.tensor_format

    @property
    def format_name(self) -> str:
        return format_name(self._ust.tensor_format)

    @property
    def storage_bytes(self) -> int:
        """Bytes of the index and value buffers."""
        return torch_storage.storage_bytes(self._ust)

    def pattern(self) -> Tensor:
        """The stored pattern with every value 1 (same index buffers; cached)."""
        ust = self.ust
        if self._pattern is None:
            self._pattern = torch_storage.with_values(ust, torch.ones_like(self._stored.detach()))
        return self._pattern

    def plans(self) -> dict[tuple, Any]:
        """Planned products on this tensor (see :func:`._products.planned_product`), dropped when the
        values get new memory."""
        self.ust  # noqa: B018 - refreshes the Tensor (and drops stale plans) if the values moved
        return self._plans

    def storage_positions(self) -> torch.Tensor:
        """For each stored value (storage order), its flat index in the dense tensor (cached); -1 for a
        padding slot that holds no entry (the unused slots of a fixed-stride ELL row)."""
        if self._positions is None:
            ust = self.ust
            n = ust.nse
            labels = torch.arange(1, n + 1, dtype=torch.float64).reshape(self._stored.shape)
            tagged = torch_storage.with_values(ust, labels)
            flat = np.asarray(tagged.to_dense()).reshape(-1)
            where = np.flatnonzero(flat)
            if where.size != n and not ust.tensor_format.is_unique:
                raise RuntimeError(f"{self.format_name}: {n} stored entries map to {where.size} distinct "
                                   "coordinates")
            pos = np.full(n, -1, dtype=np.int64)
            pos[flat[where].astype(np.int64) - 1] = where
            self._positions = torch.from_numpy(pos)
        return self._positions

    def entry_coordinates(self) -> tuple[torch.Tensor, torch.Tensor]:
        """``(index, dims)``: the storage positions (into the flattened ``.values()``) of the stored values
        inside the shape and their ``(ndim, n)`` dimension coordinates, int64 on the values' device (cached;
        block and diagonal slots outside the shape are left out)."""
        if self._entries is None:
            ust = self.ust
            labels = torch.arange(1, self._stored.numel() + 1, dtype=torch.float64).reshape(self._stored.shape)
            dims, labs = coordinates(torch_storage.with_values(ust, labels))
            index = torch.from_numpy(np.asarray(labs, dtype=np.int64) - 1)
            self._entries = (index.to(self.device), torch.from_numpy(np.ascontiguousarray(dims)).to(self.device))
        return self._entries

    def entries(self) -> tuple[torch.Tensor, torch.Tensor]:
        """:meth:`entry_coordinates` after the padding rule: in formats that store padding (blocks,
        diagonals, delta gaps) a stored zero is not an entry (the set depends on the current values)."""
        index, dims = self.entry_coordinates()
        if not stores_padding(self._ust.tensor_format):
            return index, dims
        keep = self._stored.detach().reshape(-1)[index] != 0
        return index[keep], dims[:, keep]

    def gather_stored(self, flat: torch.Tensor) -> torch.Tensor:
        """The entries of a flat dense tensor at the stored values' coordinates, in storage order and the
        shape of ``.values()`` (zero/False at padding slots; differentiable in ``flat``)."""
        pos = self.storage_positions().to(flat.device)
        out = flat[pos.clamp(min=0)]
        if bool((pos < 0).any()):
            out = torch.where(pos >= 0, out, torch.zeros((), dtype=flat.dtype, device=flat.device))
        return out.reshape(self._stored.shape)

    def to_torch(self) -> torch.Tensor:
        """The plain torch tensor: the package object for formats torch has (zero-copy where it can),
        a dense tensor otherwise."""
        ust = self.ust
        try:
            out = ust.to_package("torch")
        except TypeError:
            out = self.dense()
        return out

    def dense(self) -> torch.Tensor:
        """A dense (strided) copy."""
        return torch_storage.as_torch(self.ust.to_dense()).to(self.device)

    def convert(self: WrapperT, tensor_format: TensorFormat | str) -> WrapperT:
        """This tensor in another format (a new wrapper of the same class)."""
        return self.from_ust(self.ust.convert(tensor_format=tensor_format))

    def transposed(self: WrapperT) -> WrapperT:
        """The transpose of a 2-D wrapper, sharing buffers (and ``.values()``)."""
        if self.dim() != 2:
            raise ValueError(f"transpose of a {self.dim()}-D {type(self).__name__} is not supported (2-D only)")
        ust = self.ust
        t = Tensor(transposed_format(ust.tensor_format), ust.shape[::-1], list(ust._pos), list(ust._crd),
                   ust.val, index_type=ust.index_type, package=ust.package, device=ust.device)
        out = type(self)(t, self._stored)
        out._transpose_base = self if self._transpose_base is None else None
        return out

    @property
    def transpose_base(self) -> TensorWrapper | None:
        """For a wrapper made by transposing another, that one (None otherwise)."""
        base = self._transpose_base
        if base is not None and base._stored is not self._stored:
            return None
        return base

    def map(self: WrapperT, values_fn: Callable[[torch.Tensor], torch.Tensor],
            index_fn: Callable[[torch.Tensor], torch.Tensor] | None = None) -> WrapperT:
        """A wrapper with ``values_fn(values)`` and (optionally) ``index_fn`` applied to index buffers."""
        values = values_fn(self._stored)
        if index_fn is None:
            return self.with_values(self, values)
        return type(self)(torch_storage.map_buffers(self.ust, index_fn, values), values)

    def __repr__(self, *, tensor_contents: Any = None) -> str:  # type: ignore[override]  # torch's own signature
        head = (f"{type(self).__name__}(shape={tuple(self.shape)}, dtype={self.dtype}, device={self.device}, "
                f"format={self.format_name}, nse={self._ust.nse}"
                f"{', requires_grad=True' if self._stored.requires_grad else ''})")
        return f"{head}\n{self.ust}" if type(self._ust).__repr__ is not object.__repr__ else head

    def __deepcopy__(self: WrapperT, memo: dict) -> WrapperT:
        values = copy.deepcopy(self._stored, memo)
        return type(self)(torch_storage.map_buffers(self.ust, torch.clone, values), values)

    def __reduce_ex__(self, protocol: Any) -> Any:
        return (_rebuild, (type(self), self.to_torch() if self.dense_layout_known() else self.dense(),
                           self._ust.tensor_format))

    def dense_layout_known(self) -> bool:
        try:
            self.ust.to_package("torch")
        except TypeError:
            return False
        return True

    @classmethod
    def __torch_dispatch__(cls, func: Any, types: Any, args: tuple = (),  # type: ignore[override]
                           kwargs: dict | None = None) -> Any:  # torch declares it a plain function
        return densified_call(func, args, kwargs or {})


def first_wrapper(args: Any) -> TensorWrapper | None:
    """The first wrapper in a nest of arguments."""
    found: list[TensorWrapper] = []

    def visit(a: Any) -> Any:
        if isinstance(a, TensorWrapper) and not found:
            found.append(a)
        return a

    tree_map(visit, args)
    return found[0] if found else None


def densified_call(func: Any, args: tuple, kwargs: dict, detail: str = "") -> Any:
    """Refuse ``func`` (NotImplementedError naming it and the format) or, under the dense fallback,
    run it with every wrapper replaced by a dense copy."""
    u = first_wrapper((args, kwargs))
    refuse_or_warn(func, u.format_name if u is not None else "?", detail)

    def dense(a: Any) -> Any:
        return a.dense() if isinstance(a, TensorWrapper) else a

    args, kwargs = tree_map(dense, (args, kwargs))
    return func(*args, **kwargs)


def _rebuild(cls: type[TensorWrapper], t: torch.Tensor, fmt: TensorFormat) -> TensorWrapper:
    return cls.from_torch(t, fmt)
