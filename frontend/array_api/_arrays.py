"""What every function of the namespace shares: operands as Tensors, dense-format Tensors as NumPy arrays and
back, sparse Tensors as entries (coordinates and values) and back, and the fill-value error.

A dense-format Tensor is computed on with NumPy over its buffer (exact NumPy semantics); a sparse one through
:mod:`frontend.ops` or, for what only moves or maps stored entries, on its entries here.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from frontend.format import NamedFormats, TensorFormat, as_format
from frontend.ops._elementwise import broadcast_entries, result_format
from frontend.ops._kernel_cache import dense_tensor
from frontend.ops._prepared import default_sparse_format
from frontend.storage._convert import coordinates
from frontend.storage._layout import is_padded
from frontend.tensor._indexing import from_entries
from frontend.tensor._tensor import Tensor

SCALARS = (bool, int, float, complex, np.bool_, np.number)


def is_sparse(x: Any) -> bool:
    """Whether ``x`` is a Tensor in a format with a sparse level."""
    return isinstance(x, Tensor) and x.is_sparse


def check_device(device: Any) -> None:
    """The namespace computes on the CPU: ``device`` must be None or ``"cpu"``."""
    if device is not None and str(device) != "cpu":
        raise ValueError(f"device {device!r} is not supported: the array API namespace computes on 'cpu'")


def is_host_array(x: Any) -> bool:
    """Whether NumPy reads ``x`` itself (an array, a list, a scalar, a buffer): a dense-format Tensor."""
    return isinstance(x, (np.ndarray, np.generic, list, tuple, *SCALARS)) or hasattr(x, "__array_interface__")


def as_tensor(x: Any) -> Tensor:
    """``x`` as a Tensor: a Tensor as it is, NumPy arrays, lists and scalars as dense-format Tensors (a view
    of a C-contiguous array), package objects (SciPy, torch, pydata/sparse, CuPy) through
    ``Tensor.from_package`` (their buffers shared)."""
    if isinstance(x, Tensor):
        return x
    if is_host_array(x):
        return wrap(np.asarray(x))
    return Tensor.from_package(x)


def numpy_of(x: Any) -> Any:
    """A dense operand as NumPy sees it: the array of a dense-format Tensor (a view of its buffer), a Python
    scalar as it is (NumPy's weak scalar promotion), other objects through ``np.asarray``."""
    if isinstance(x, Tensor):
        if x.is_sparse:
            raise TypeError("internal: a sparse Tensor reached a dense computation")
        view = x._dense_view()
        return view if view is not None else x.to_dense()
    if isinstance(x, SCALARS):
        return x
    return numpy_of(as_tensor(x))


def wrap(result: Any) -> Tensor:
    """A NumPy result (array or scalar) as a dense-format Tensor (C order; the array itself when it is)."""
    arr = np.asarray(result)
    return dense_tensor(arr if arr.flags.c_contiguous else np.asarray(arr, order="C"))


def dense_of(x: Any) -> np.ndarray:
    """The dense contents of any operand (a sparse Tensor is densified: a copy)."""
    if is_sparse(x):
        return x.to_dense()
    return np.asarray(numpy_of(x))


def fill_error(name: str, fill_value: Any) -> ValueError:
    """The error of creating a sparse array whose every element is a nonzero ``fill_value``."""
    return ValueError(f"{name}: a sparse array stores nothing for its fill value, which is 0, not "
                      f"{fill_value!r}; pass format='dense' (or start from a dense-format array) for an array "
                      "that stores every element")


def sparse_only_error(name: str, why: str) -> TypeError:
    """The error of a function that has no meaning for sparse arrays."""
    return TypeError(f"{name} of a sparse array is not supported: {why}; densify first "
                     "(frontend.array_api.asarray(x.todense()) is a dense-format Tensor)")


def dense_only(name: str, x: Any, why: str) -> np.ndarray:
    """``x`` as NumPy for a function with no sparse meaning (``sparse_only_error`` for a sparse ``x``)."""
    t = as_tensor(x)
    if t.is_sparse:
        raise sparse_only_error(name, why)
    return np.asarray(numpy_of(t))


# ----- formats ---------------------------------------------------------------------------------------------------
def default_format(rank: int) -> TensorFormat:
    """The sparse format the namespace creates arrays in: a sparse vector, CSR, n-D COO; 0-d arrays are dense."""
    if rank == 0:
        return NamedFormats.Scalar
    if rank == 1:
        return NamedFormats.SparseVector
    return NamedFormats.CSR if rank == 2 else NamedFormats.COO(rank)


def format_of(format: Any, rank: int) -> TensorFormat:  # noqa: A002 - the keyword users pass
    """A ``format=`` keyword as a TensorFormat of ``rank`` (None: :func:`default_format`; ``"dense"``)."""
    if format is None:
        return default_format(rank)
    if isinstance(format, str) and format.lower() == "dense":
        return NamedFormats.Dense(rank) if rank else NamedFormats.Scalar
    fmt = as_format(format)
    if fmt.num_dimensions != rank:
        raise ValueError(f"format {fmt} has {fmt.num_dimensions} dimensions, the array has {rank}")
    return fmt


def sparse_result_format(formats: Sequence[TensorFormat], rank: int) -> TensorFormat:
    """The format of a sparse result built from entries: the operands' common format when they share one of
    this rank and it stores no padding, else the family :mod:`frontend.ops` computes in."""
    if formats and all(f == formats[0] for f in formats) and formats[0].num_dimensions == rank \
            and not is_padded(formats[0]):
        return formats[0]
    sparse = [f for f in formats if not f.is_dense]
    like = sparse[0] if sparse else default_format(rank)
    if like.num_dimensions == rank:
        return result_format([like], rank)[0]
    return default_sparse_format(like, rank) if rank else NamedFormats.Scalar


# ----- entries -----------------------------------------------------------------------------------------------------
def entries(t: Tensor) -> tuple[np.ndarray, np.ndarray]:
    """``(coords, values)`` of a sparse Tensor: an ``(ndim, n)`` int64 array and the values, padding left out,
    duplicates as stored."""
    return coordinates(t)


def canonical(t: Tensor) -> tuple[np.ndarray, np.ndarray]:
    """``(keys, values)``: the C-order linear index of each stored entry of ``t``, sorted and unique
    (duplicates summed), and their values."""
    crd, val = entries(t)
    keys = np.ravel_multi_index(tuple(crd), t.shape) if t.ndim else np.zeros(len(val), np.int64)
    keys = np.asarray(keys, dtype=np.int64)
    if len(keys) and (np.any(keys[1:] <= keys[:-1])):
        keys, inverse = np.unique(keys, return_inverse=True)
        summed = np.zeros(len(keys), dtype=val.dtype)
        np.add.at(summed, inverse, val)
        val = summed
    return keys, val


def build(shape: Sequence[int], crd: Any, values: np.ndarray, fmt: TensorFormat) -> Tensor:
    """A Tensor of ``fmt`` holding the entries ``crd`` (``(ndim, n)``, any order) and ``values``."""
    shape = tuple(int(s) for s in shape)
    values = np.ascontiguousarray(values)
    if not shape:
        return wrap(values.sum() if len(values) else np.zeros((), values.dtype))
    return from_entries(Tensor, fmt, shape, [np.asarray(c) for c in crd], values, np.int64)


def build_keys(shape: Sequence[int], keys: np.ndarray, values: np.ndarray, fmt: TensorFormat) -> Tensor:
    """:func:`build` from C-order linear indices."""
    crd = np.unravel_index(keys, tuple(shape)) if len(shape) else ()
    return build(shape, np.array(crd, dtype=np.int64).reshape(len(shape), len(keys)), values, fmt)


def broadcast_sparse(t: Tensor, shape: tuple[int, ...]) -> Tensor:
    """A sparse ``t`` broadcast to ``shape`` (NumPy's rules): its stored entries repeated along the new and
    size-1 axes (:func:`frontend.ops._elementwise.broadcast_entries`); no zeros are stored for the broadcast."""
    shape = tuple(int(s) for s in shape)
    if t.shape == shape:
        return t
    try:
        if tuple(np.broadcast_shapes(t.shape, shape)) != shape:
            raise ValueError
    except ValueError:
        raise ValueError(f"shape {t.shape} does not broadcast to {shape}") from None
    return broadcast_entries(t, shape)


def gathered(x: Any, keys: np.ndarray, shape: tuple[int, ...]) -> Any:
    """An operand's values at the C-order linear ``keys`` of ``shape`` (broadcast; a scalar stays a scalar; a
    sparse Tensor gives zero where it stores nothing)."""
    if isinstance(x, SCALARS):
        return x
    if is_sparse(x):
        own, val = canonical(broadcast_sparse(x, shape))
        at = np.minimum(np.searchsorted(own, keys), max(len(own) - 1, 0))
        hit = own[at] == keys if len(own) else np.zeros(len(keys), dtype=bool)
        return np.where(hit, val[at] if len(val) else np.zeros(len(keys), val.dtype), np.zeros((), val.dtype))
    arr = np.broadcast_to(np.asarray(numpy_of(x)), shape)
    if arr.ndim == 0:
        return arr
    return arr[np.unravel_index(keys, shape)]
