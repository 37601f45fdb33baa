"""NumPy functions on stored values: the ufuncs that have no kernel of their own (``np.sqrt``, ``np.sin``,
``/``, comparisons, ``np.maximum`` ...), computed with NumPy on the stored values of a sparse tensor while
the function keeps zero at zero, so the pattern (and with a scalar, the index buffers) stays.

``binary`` takes a sparse tensor with a scalar (the values mapped, index buffers shared), with a dense array
of its shape (the dense operand gathered at the stored coordinates) or with another sparse tensor of its shape
(the union of the two patterns). A function that maps zero to nonzero (``np.exp``, ``0 / 0``, ``A == 0``)
would make every absent entry nonzero: it raises ``ValueError`` naming the densify opt-in, and with
``UST_MLIR_AUTO_DENSIFY=1`` computes on the dense arrays (a NumPy result)."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from frontend.storage._convert import coordinates
from frontend.storage._layout import to_host
from frontend.tensor._indexing import from_entries, sparse_format
from frontend.tensor._operators import auto_densify, densify_hint
from frontend.tensor._tensor import Tensor

from .._elementwise import result_format
from .._kernel_cache import dense_tensor, row_major
from .._operands import operand

_SCALARS = (int, float, complex, bool, np.number, np.bool_)


def is_scalar(x: Any) -> bool:
    return isinstance(x, _SCALARS) or (isinstance(x, np.ndarray) and x.ndim == 0)


def classify(x: Any) -> tuple[str, Any]:
    """``("scalar", value)``, ``("sparse", Tensor)`` or ``("dense", ndarray)`` for an operand."""
    if is_scalar(x):
        return "scalar", x
    t = x if isinstance(x, Tensor) else operand(x, "operand")
    if t.is_sparse:
        return "sparse", t
    view = t._dense_view()
    return "dense", view if view is not None else t.to_dense()


def dense(x: Any) -> Any:
    """``x`` as NumPy: a Tensor densified, a scalar as it is, anything else through the operand intake."""
    kind, v = classify(x)
    return v.to_dense() if kind == "sparse" else v


def densified(what: str, fn: Callable[..., Any], *operands: Any, **kwargs: Any) -> Any:
    """``fn`` on the dense operands under the opt-in; else ``ValueError`` explaining ``what`` and the opt-in."""
    if not auto_densify():
        raise ValueError(densify_hint(what))
    return fn(*(dense(o) for o in operands), **kwargs)


def _name(fn: Any) -> str:
    return getattr(fn, "__name__", repr(fn))


def _nonzero_fill(fill: Any) -> bool:
    with np.errstate(all="ignore"):
        return bool(np.any(np.asarray(fill) != 0))


def unary(ufunc: Any, t: Tensor, **kwargs: Any) -> Any:
    """``ufunc`` (one operand) on the stored values of sparse ``t``; same pattern and index buffers."""
    zero = np.zeros(1, dtype=t.dtype)
    with np.errstate(all="ignore"):
        fill = ufunc(zero, **kwargs)
    if _nonzero_fill(fill):
        return densified(f"np.{_name(ufunc)}(0) is {fill[0]}, so every absent entry of the result would be "
                         "nonzero", ufunc, t, **kwargs)
    return t._with_values(ufunc(to_host(t.val), **kwargs))


def binary(ufunc: Any, a: Any, b: Any, **kwargs: Any) -> Any:
    """``ufunc(a, b)`` with at least one sparse operand (see the module docstring)."""
    (ka, va), (kb, vb) = classify(a), classify(b)
    if ka != "sparse" and kb != "sparse":
        return dense_tensor(np.asarray(ufunc(va, vb, **kwargs), order="C"))  # keeps 0-d arrays 0-d
    first = ka == "sparse"
    t, (ko, other) = (va, (kb, vb)) if first else (vb, (ka, va))
    name = _name(ufunc)
    zero = np.zeros(1, dtype=t.dtype)
    if ko == "scalar":
        with np.errstate(all="ignore"):
            fill = ufunc(zero, other, **kwargs) if first else ufunc(other, zero, **kwargs)
        if _nonzero_fill(fill):
            return densified(_fill_message(name, fill[0]), ufunc, a, b, **kwargs)
        vals = to_host(t.val)
        return t._with_values(ufunc(vals, other, **kwargs) if first else ufunc(other, vals, **kwargs))
    if ko == "sparse":
        return _union(ufunc, va, vb, name, kwargs)
    return _with_dense(ufunc, t, np.asarray(other), first, name, kwargs, a, b)


def _fill_message(name: str, fill: Any) -> str:
    return (f"np.{name} gives {fill} where the sparse operand holds no entry, so every absent entry of the "
            "result would be nonzero")


def _with_dense(ufunc: Any, t: Tensor, d: np.ndarray, first: bool, name: str, kwargs: dict, a: Any,
                b: Any) -> Any:
    shape = np.broadcast_shapes(t.shape, d.shape)
    if tuple(shape) != t.shape:
        return densified(f"np.{name} of a sparse {t.shape} and a dense {d.shape} operand broadcasts the sparse one",
                         ufunc, a, b, **kwargs)
    dims, vals = coordinates(t)
    full = np.broadcast_to(d, shape)
    zero = np.zeros((), dtype=t.dtype)
    with np.errstate(all="ignore"):
        fill = ufunc(zero, full, **kwargs) if first else ufunc(full, zero, **kwargs)
    bad = np.asarray(fill != 0).copy()
    bad[tuple(dims)] = False  # stored entries may become anything
    if bad.any():
        return densified(_fill_message(name, fill[np.unravel_index(np.argmax(bad), shape)]), ufunc, a, b,
                         **kwargs)
    picked = full[tuple(dims)]
    out = ufunc(vals, picked, **kwargs) if first else ufunc(picked, vals, **kwargs)
    if len(vals) == t.nse and np.ndim(t.val) == 1:  # entries are the stored values, in storage order
        return t._with_values(out)
    return build(t.tensor_format, t.shape, dims, out, t.index_type)


def _union(ufunc: Any, a: Tensor, b: Tensor, name: str, kwargs: dict) -> Any:
    """``ufunc`` over the union of two sparse patterns of one shape (absent entries are zeros)."""
    zero = np.zeros(1, dtype=a.dtype), np.zeros(1, dtype=b.dtype)
    with np.errstate(all="ignore"):
        fill = ufunc(*zero, **kwargs)
    if _nonzero_fill(fill):
        return densified(_fill_message(name, fill[0]), ufunc, a, b, **kwargs)
    if a.shape != b.shape:
        return densified(f"np.{name} of sparse tensors of shapes {a.shape} and {b.shape} broadcasts one of them",
                         ufunc, a, b, **kwargs)
    keys, xa, xb = aligned(a, b)
    dims = np.unravel_index(keys, a.shape) if a.ndim else ()
    _, final = result_format([a.tensor_format, b.tensor_format], a.ndim)
    return build(final, a.shape, list(dims), ufunc(xa, xb, **kwargs), a.index_type)


def aligned(a: Tensor, b: Tensor) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The union of the stored coordinates of ``a`` and ``b`` (one shape) as linear keys, with each one's values
    there (0 where it stores none; duplicates added)."""
    (da, va), (db, vb) = coordinates(a), coordinates(b)
    ka = np.ravel_multi_index(tuple(da), a.shape) if a.ndim else np.zeros(len(va), np.int64)
    kb = np.ravel_multi_index(tuple(db), b.shape) if b.ndim else np.zeros(len(vb), np.int64)
    keys = np.union1d(ka, kb)
    xa, xb = np.zeros(len(keys), dtype=va.dtype), np.zeros(len(keys), dtype=vb.dtype)
    np.add.at(xa, np.searchsorted(keys, ka), va)
    np.add.at(xb, np.searchsorted(keys, kb), vb)
    return keys, xa, xb


def build(fmt: Any, shape: tuple[int, ...], dims: Any, vals: np.ndarray, index_type: Any) -> Tensor:
    """A tensor of ``fmt`` holding the entries ``dims``/``vals`` (a dense result for dense formats)."""
    if row_major(fmt):
        out = np.zeros(shape, dtype=vals.dtype)
        out[tuple(dims)] = vals
        return dense_tensor(out)
    try:
        return from_entries(Tensor, fmt, shape, dims, vals, index_type)
    except ValueError:  # the format cannot hold these entries (more than n of every m): the rank's sparse format
        return from_entries(Tensor, sparse_format(len(shape)), shape, dims, vals, index_type)

