"""torch.sparse's calls on a TorchUST: accessors, indexing, reductions, conversions, comparisons, ``where``, ``cat``.

- Accessors (``crow_indices()``, ``col_indices()``, ``ccol_indices()``, ``row_indices()``, ``indices()``,
  ``_nnz()``, ``layout``, ``is_sparse``, ``is_sparse_csr``) answer as torch does for the layout of the
  format (CSR, CSC, COO, BSR, BSC); the index tensors are the stored buffers (zero-copy where torch's
  layout has them as one tensor: COO's ``indices()`` stacks the coordinate buffers when they are separate).
  Formats torch has no layout for report ``torch.strided`` (the layout torch's dispatcher sees) and refuse
  the layout-specific accessors, naming ``to_sparse_coo()``.
- ``W[i]``, ``W[i, j]``, ``select`` give a COO TorchUST of one dimension less (a dense scalar for the last
  dimension); ``torch.sparse.sum`` with ``dim`` a COO TorchUST over the coordinates of the stored entries;
  ``torch.norm``/``torch.linalg.vector_norm`` reduce the stored entries (and the implicit zeros where they
  matter); ``to_sparse_*`` convert (gradients follow the values); comparisons with a scalar whose result at
  0 is False keep the pattern (bool values), others are dense; ``torch.where`` with a sparse mask is dense;
  ``torch.cat`` of TorchUSTs joins their entries in the first operand's format.
All are differentiable in the stored values where torch's are.
"""
from __future__ import annotations

import math
import numbers
import operator
from collections.abc import Callable, Sequence
from typing import Any

import torch

from frontend.format import NamedFormats, TensorFormat

from ._elementwise import _entry_values, _flat_keys, _locate, _scalar, _scatter, _with_entry_values
from ._wrapper import TensorWrapper, densified_call


# ----- accessors ---------------------------------------------------------------------------------------------
def _torch_view(a: TensorWrapper, layouts: Sequence[torch.layout], name: str) -> torch.Tensor:
    lay = a.layout
    if lay not in layouts:
        hint = "; convert with W.to_sparse_coo() / to_sparse_csr()" if lay == torch.strided else ""
        raise RuntimeError(f"{name} expected a TorchUST of layout {' or '.join(str(x) for x in layouts)}, got "
                           f"format {a.format_name} (layout {lay}){hint}")
    return a.to_torch()


_COMPRESSED_ROWS = (torch.sparse_csr, torch.sparse_bsr)
_COMPRESSED_COLS = (torch.sparse_csc, torch.sparse_bsc)


def crow_indices(a: TensorWrapper) -> torch.Tensor:
    return _torch_view(a, _COMPRESSED_ROWS, "crow_indices").crow_indices()


def col_indices(a: TensorWrapper) -> torch.Tensor:
    return _torch_view(a, _COMPRESSED_ROWS, "col_indices").col_indices()


def ccol_indices(a: TensorWrapper) -> torch.Tensor:
    return _torch_view(a, _COMPRESSED_COLS, "ccol_indices").ccol_indices()


def row_indices(a: TensorWrapper) -> torch.Tensor:
    return _torch_view(a, _COMPRESSED_COLS, "row_indices").row_indices()


def indices(a: TensorWrapper) -> torch.Tensor:
    return _torch_view(a, (torch.sparse_coo,), "indices")._indices()


def values_of(a: TensorWrapper) -> torch.Tensor:
    """``Tensor.values(W)`` / ``W._values()``: the stored values."""
    return a._stored


def nnz(a: TensorWrapper) -> int:
    """``W._nnz()``: torch's count for its layout (blocks for BSR/BSC), else the stored values."""
    return int(a.to_torch()._nnz()) if a.layout != torch.strided else int(a.ust.nse)


def coalesce(a: TensorWrapper) -> TensorWrapper:
    return a


def is_coalesced(a: TensorWrapper) -> bool:
    return bool(a.tensor_format.is_unique)


def sparse_dim(a: TensorWrapper) -> int:
    return a.dim()


def dense_dim(a: TensorWrapper) -> int:
    return 0


# ----- building a TorchUST from entries ---------------------------------------------------------------------------
def from_entries(like: TensorWrapper, shape: tuple[int, ...], dims: torch.Tensor, vals: torch.Tensor,
                 fmt: TensorFormat | None = None) -> TensorWrapper:
    """A wrapper (``like``'s class) of ``shape`` in ``fmt`` (COO by default) holding ``vals`` at the
    ``(ndim, n)`` coordinates ``dims`` (distinct), differentiable in ``vals``."""
    dims = dims.to(torch.int64).cpu()
    pattern_coo = torch.sparse_coo_tensor(dims, torch.ones(dims.shape[1], dtype=vals.dtype), shape,
                                          check_invariants=False).coalesce()  # distinct, in-bounds coordinates
    pattern = type(like).from_torch(pattern_coo, fmt)
    io, do = pattern.entry_coordinates()
    where = _locate(_flat_keys(dims.to(do.device), shape), _flat_keys(do, shape))
    keep = where >= 0
    on_device: Any = pattern.to(vals.device) if pattern.device != vals.device else pattern
    return _with_entry_values(on_device,
                              io[keep].to(vals.device), vals[where[keep].to(vals.device)])


def converted(a: TensorWrapper, fmt: TensorFormat) -> TensorWrapper:
    """``a`` in ``fmt`` (``a`` itself when it is in it), its values differentiable through the conversion."""
    if a.tensor_format == fmt:
        return a
    _, dims, v = _entry_values(a)
    return from_entries(a, tuple(a.shape), dims, v, fmt)


def to_sparse_coo(a: TensorWrapper) -> TensorWrapper:
    return converted(a, NamedFormats.COO if a.dim() == 2 else NamedFormats.COO(a.dim()))


def to_sparse_csr(a: TensorWrapper, dense_dim: Any = None) -> TensorWrapper:
    return converted(a, NamedFormats.CSR)


def to_sparse_csc(a: TensorWrapper, dense_dim: Any = None) -> TensorWrapper:
    return converted(a, NamedFormats.CSC)


def to_sparse_bsr(a: TensorWrapper, blocksize: Sequence[int], dense_dim: Any = None) -> TensorWrapper:
    return converted(a, NamedFormats.BSR(tuple(int(b) for b in blocksize)))  # type: ignore[arg-type]


def to_sparse_bsc(a: TensorWrapper, blocksize: Sequence[int], dense_dim: Any = None) -> TensorWrapper:
    return converted(a, NamedFormats.BSC(tuple(int(b) for b in blocksize)))  # type: ignore[arg-type]


def to_sparse(a: TensorWrapper, *args: Any, layout: Any = None, blocksize: Any = None,
              dense_dim: Any = None) -> TensorWrapper:
    """``to_sparse()`` (COO), ``to_sparse(layout=..., blocksize=...)``."""
    if args and isinstance(args[0], int):  # to_sparse(sparse_dim)
        if args[0] != a.dim():
            return densified_call(torch.Tensor.to_sparse, (a, *args), {}, "sparse_dim below the tensor's dims")
        layout = torch.sparse_coo
    layout = layout or torch.sparse_coo
    if layout == torch.sparse_coo:
        return to_sparse_coo(a)
    if layout == torch.sparse_csr:
        return to_sparse_csr(a)
    if layout == torch.sparse_csc:
        return to_sparse_csc(a)
    if blocksize is None:
        raise RuntimeError(f"to_sparse: layout {layout} needs a blocksize")
    return to_sparse_bsr(a, blocksize) if layout == torch.sparse_bsr else to_sparse_bsc(a, blocksize)


# ----- indexing ------------------------------------------------------------------------------------------------
def select(a: TensorWrapper, dim: int, index: int) -> Any:
    """``a.select(dim, index)``: a COO wrapper of one dimension less, a 0-D dense tensor from a 1-D one."""
    nd = a.dim()
    if not -nd <= dim < nd:
        raise IndexError(f"select: dim {dim} is out of range for a {nd}-D TorchUST")
    dim %= nd
    size = a.shape[dim]
    if not -size <= index < size:
        raise IndexError(f"index {index} is out of bounds for dimension {dim} with size {size}")
    index %= size
    _, dims, v = _entry_values(a)
    keep = dims[dim] == index
    if nd == 1:
        return v[keep].sum()
    rest = [d for d in range(nd) if d != dim]
    shape = tuple(a.shape[d] for d in rest)
    return from_entries(a, shape, dims[rest][:, keep], v[keep])


def getitem(a: TensorWrapper, key: Any) -> Any:
    """``a[i]``, ``a[i, j]``, ``a[i, :]``, ``a[:, j]`` (integers and full slices)."""
    keys = key if isinstance(key, tuple) else (key,)
    if len(keys) > a.dim() or not all(isinstance(k, numbers.Integral) or k == slice(None) for k in keys):
        return densified_call(torch.Tensor.__getitem__, (a, key), {}, "integer indices and full slices only")
    out: Any = a
    dim = 0
    for k in keys:
        if isinstance(k, numbers.Integral):
            out = select(out, dim, int(k))
        else:
            dim += 1
    return out


# ----- reductions --------------------------------------------------------------------------------------------
def _dims_of(a: TensorWrapper, dim: Any) -> list[int]:
    if dim is None:
        return list(range(a.dim()))
    dims = [dim] if isinstance(dim, int) else list(dim)
    for d in dims:
        if not -a.dim() <= d < a.dim():
            raise IndexError(f"dim {d} is out of range for a {a.dim()}-D TorchUST")
    return sorted({d % a.dim() for d in dims})


def sparse_sum(a: TensorWrapper, dim: Any = None, dtype: Any = None) -> Any:
    """``torch.sparse.sum``: a dense scalar over every dim, else a COO wrapper over the other dims."""
    reduced = _dims_of(a, dim)
    _, dims, v = _entry_values(a)
    if dtype is not None:
        v = v.to(dtype)
    if len(reduced) == a.dim():
        return v.sum()
    rest = [d for d in range(a.dim()) if d not in reduced]
    shape = tuple(a.shape[d] for d in rest)
    keys = _flat_keys(dims[rest], shape)
    uniq, inverse = torch.unique(keys, return_inverse=True)
    total = torch.zeros(uniq.numel(), dtype=v.dtype, device=v.device).index_add(0, inverse, v)
    coords = torch.stack(torch.unravel_index(uniq, shape)) if uniq.numel() else torch.zeros(
        (len(shape), 0), dtype=torch.int64)
    return from_entries(a, shape, coords, total)


def _norm_values(a: TensorWrapper, ord: float, dtype: Any) -> torch.Tensor:
    """The entries' values, plus one explicit zero where the tensor has implicit zeros (for min/count norms)."""
    _, dims, v = _entry_values(a)
    if dtype is not None:
        v = v.to(dtype)
    if dims.shape[1] < a.numel() and (ord <= 0 or math.isinf(ord) and ord < 0):
        v = torch.cat([v, v.new_zeros(1)])
    return v


def vector_norm(a: TensorWrapper, ord: Any = 2, dim: Any = None, keepdim: bool = False, *,
                dtype: Any = None, out: Any = None) -> Any:
    """``torch.linalg.vector_norm`` of a TorchUST: over the entries (every ``ord``) or along ``dim``
    (``ord > 0``; a dense result)."""
    if out is not None:
        return densified_call(torch.linalg.vector_norm, (a, ord, dim, keepdim), {"out": out}, "out=")
    ord = float(ord)
    reduced = _dims_of(a, dim)
    if len(reduced) == a.dim():
        r = torch.linalg.vector_norm(_norm_values(a, ord, dtype), ord)
        return r.reshape((1,) * a.dim()) if keepdim else r
    if ord <= 0:
        return densified_call(torch.linalg.vector_norm, (a, ord, dim, keepdim), {}, "ord <= 0 along a dim")
    rest = [d for d in range(a.dim()) if d not in reduced]
    shape = tuple(a.shape[d] for d in rest)
    _, dims, v = _entry_values(a)
    v = (v if dtype is None else v.to(dtype)).abs()
    if v.is_complex():
        v = v.real
    group = _flat_keys(dims[rest], shape)
    n = math.prod(shape)
    if math.isinf(ord):
        r = torch.zeros(n, dtype=v.dtype, device=v.device).scatter_reduce(0, group, v, "amax", include_self=True)
    else:
        r = torch.zeros(n, dtype=v.dtype, device=v.device).index_add(0, group, v.pow(ord)).pow(1.0 / ord)
    r = r.reshape(shape)
    if keepdim:
        r = r.reshape([1 if d in reduced else a.shape[d] for d in range(a.dim())])
    return r


def norm(a: TensorWrapper, p: Any = "fro", dim: Any = None, keepdim: bool = False, out: Any = None,
         dtype: Any = None) -> Any:
    """``torch.norm``: ``"fro"`` and numeric ``p`` as vector norms (``"nuc"`` has no sparse answer)."""
    if p == "nuc" or out is not None:
        return densified_call(torch.norm, (a, p, dim, keepdim), {"out": out} if out is not None else {},
                              "the nuclear norm / out=")
    return vector_norm(a, 2 if p in ("fro", None) else p, dim, keepdim, dtype=dtype)


# ----- comparisons, clamp, where --------------------------------------------------------------------------------
def _pattern_or_dense(a: TensorWrapper, fn: Callable[[torch.Tensor], torch.Tensor], at_zero: Any) -> Any:
    """``fn`` of every element: on the stored values when ``fn(0)`` is zero/False (the pattern is kept),
    else a dense tensor filled with ``at_zero`` and ``fn`` of the entries written at their coordinates."""
    if not bool(at_zero):
        return a.map(fn)
    _, dims, v = _entry_values(a)
    fv = fn(v)
    out = torch.full(tuple(a.shape), at_zero.item() if isinstance(at_zero, torch.Tensor) else at_zero,
                     dtype=fv.dtype, device=fv.device)
    return out.index_put(tuple(dims), fv)


def _comparison(op: Callable[[Any, Any], Any], name: str) -> Callable[..., Any]:
    def handler(a: Any, b: Any) -> Any:
        if isinstance(a, TensorWrapper) and _scalar(b):
            s, other, f = a, b, (lambda v: op(v, other))
        elif isinstance(b, TensorWrapper) and _scalar(a):
            s, other, f = b, a, (lambda v: op(other, v))
        else:
            return densified_call(getattr(torch, name), (a, b), {}, "comparisons with a scalar")
        return _pattern_or_dense(s, f, f(torch.zeros((), dtype=s.dtype)))

    handler.__name__ = name
    return handler


def clamp(a: TensorWrapper, min: Any = None, max: Any = None) -> Any:
    """``clamp`` with scalar bounds: keeps the pattern when ``min <= 0 <= max``, else dense."""
    if not all(x is None or _scalar(x) for x in (min, max)):
        return densified_call(torch.clamp, (a, min, max), {}, "scalar bounds")

    def fn(v: torch.Tensor) -> torch.Tensor:
        return torch.clamp(v, min, max)

    return _pattern_or_dense(a, fn, fn(torch.zeros((), dtype=a.dtype)))


def clamp_(a: TensorWrapper, min: Any = None, max: Any = None) -> TensorWrapper:
    """In-place ``clamp`` of the stored values (the pattern is kept: bounds must contain 0)."""
    if not all(x is None or _scalar(x) for x in (min, max)) or (min is not None and min > 0) or (
            max is not None and max < 0):
        raise ValueError(f"clamp_ on a TorchUST keeps its pattern: scalar bounds with min <= 0 <= max, got "
                         f"min={min}, max={max}; use torch.clamp (a dense result)")
    a._stored.clamp_(min, max)
    return a


def where(cond: Any, x: Any = None, y: Any = None) -> Any:
    """``torch.where(mask, x, y)`` with a TorchUST mask (its nonzero entries; dense result, differentiable in
    x and y, TorchUST ones included); ``torch.where(mask)``: the coordinates of those entries."""
    if not isinstance(cond, TensorWrapper):
        return densified_call(torch.where, (cond, x, y), {}, "a TorchUST mask")
    _, dims, v = _entry_values(cond)
    true = dims[:, v != 0]
    if x is None and y is None:
        order = torch.argsort(_flat_keys(true, tuple(cond.shape)))
        return tuple(true[d][order] for d in range(cond.dim()))
    mask = torch.zeros(tuple(cond.shape), dtype=torch.bool, device=cond.device)
    mask[tuple(true)] = True

    def dense(t: Any) -> Any:
        return _scatter(t, tuple(t.shape), t.dtype) if isinstance(t, TensorWrapper) else t

    return torch.where(mask, dense(x), dense(y))


# ----- cat ---------------------------------------------------------------------------------------------------------
def cat(tensors: Sequence[Any], dim: int = 0, *, out: Any = None) -> Any:
    """``torch.cat`` of TorchUSTs: their entries joined (offset along ``dim``) in the first one's format."""
    ts = list(tensors)
    if out is not None or not ts or not all(isinstance(t, TensorWrapper) for t in ts):
        return densified_call(torch.cat, (ts, dim), {"out": out} if out is not None else {},
                              "TorchUST operands only, no out=")
    first = ts[0]
    nd = first.dim()
    if not -nd <= dim < nd:
        raise IndexError(f"cat: dim {dim} is out of range for {nd}-D TorchUSTs")
    dim %= nd
    for t in ts[1:]:
        if t.dim() != nd or any(t.shape[d] != first.shape[d] for d in range(nd) if d != dim):
            raise RuntimeError(f"cat: TorchUSTs of shapes {tuple(first.shape)} and {tuple(t.shape)} do not "
                               f"match outside dim {dim}")
    dtype = ts[0].dtype
    for t in ts[1:]:
        dtype = torch.promote_types(dtype, t.dtype)
    coords, vals, offset = [], [], 0
    for t in ts:
        _, dims, v = _entry_values(t)
        dims = dims.clone()
        dims[dim] += offset
        coords.append(dims)
        vals.append(v.to(dtype))
        offset += t.shape[dim]
    shape = tuple(offset if d == dim else first.shape[d] for d in range(nd))
    return from_entries(first, shape, torch.cat(coords, 1), torch.cat(vals), first.tensor_format)


_CMP = (("gt", operator.gt), ("ge", operator.ge), ("lt", operator.lt), ("le", operator.le), ("eq", operator.eq),
        ("ne", operator.ne))


def _cmp_funcs(name: str) -> tuple[Any, ...]:
    aliases = {"gt": ("greater",), "ge": ("greater_equal",), "lt": ("less",), "le": ("less_equal",),
               "ne": ("not_equal",)}.get(name, ())
    names = (name, *aliases)
    return (*(getattr(torch, n) for n in names), *(getattr(torch.Tensor, n) for n in names),
            getattr(torch.Tensor, f"__{name}__"))


HANDLED: tuple[tuple[tuple[Any, ...], Callable[..., Any]], ...] = (
    ((torch.Tensor.crow_indices,), crow_indices),
    ((torch.Tensor.col_indices,), col_indices),
    ((torch.Tensor.ccol_indices,), ccol_indices),
    ((torch.Tensor.row_indices,), row_indices),
    ((torch.Tensor.indices, torch.Tensor._indices), indices),
    ((torch.Tensor.values, torch.Tensor._values), values_of),
    ((torch.Tensor._nnz,), nnz),
    ((torch.Tensor.coalesce,), coalesce),
    ((torch.Tensor.is_coalesced,), is_coalesced),
    ((torch.Tensor.sparse_dim,), sparse_dim),
    ((torch.Tensor.dense_dim,), dense_dim),
    ((torch.Tensor.to_sparse_coo,), to_sparse_coo),
    ((torch.Tensor.to_sparse_csr,), to_sparse_csr),
    ((torch.Tensor.to_sparse_csc,), to_sparse_csc),
    ((torch.Tensor.to_sparse_bsr,), to_sparse_bsr),
    ((torch.Tensor.to_sparse_bsc,), to_sparse_bsc),
    ((torch.Tensor.to_sparse,), to_sparse),
    ((torch.select, torch.Tensor.select), select),
    ((torch.Tensor.__getitem__,), getitem),
    ((torch.sparse.sum, torch._sparse_sum), sparse_sum),
    ((torch.linalg.vector_norm,), vector_norm),
    ((torch.norm, torch.Tensor.norm), norm),
    ((torch.clamp, torch.clip, torch.Tensor.clamp, torch.Tensor.clip), clamp),
    ((torch.Tensor.clamp_, torch.Tensor.clip_), clamp_),
    ((torch.where,), where),
    ((torch.cat, torch.concat, torch.concatenate), cat),
) + tuple((_cmp_funcs(name), _comparison(op, name)) for name, op in _CMP)

