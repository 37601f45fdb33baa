"""Creating arrays: ``asarray`` from any package the library reads, sparse ``zeros``/``empty``/``eye`` (and
``full`` with a zero fill), the ``*_like`` functions, ``tril``/``triu``, and dense-format ``arange``,
``linspace``, ``meshgrid`` and ``from_dlpack``.

``ones``, ``arange``, ``linspace`` store every element: they are dense-format. ``format=`` (an extension
keyword) chooses the format of a created array: a format, a name or DSL text, or ``"dense"``; the default of
``zeros``/``empty``/``eye``/``full`` is a sparse vector, CSR or n-D COO (an array without elements, 0-d or
with a zero extent, is dense-format: there is nothing to store either way)."""
from __future__ import annotations

from typing import Any

import numpy as np

from frontend.tensor._tensor import Tensor

from ._arrays import (
    as_tensor,
    build,
    check_device,
    dense_of,
    entries,
    fill_error,
    format_of,
    is_host_array,
    numpy_of,
    wrap,
)
from ._dtypes import astype

_DEFAULT_FLOAT = np.dtype(np.float64)


def _shape(shape: Any) -> tuple[int, ...]:
    return (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)


def asarray(obj: Any, /, *, dtype: Any = None, device: Any = None, copy: bool | None = None,
            format: Any = None) -> Tensor:  # noqa: A002 - the extension keyword users pass
    """A Tensor of ``obj``: a Tensor, a SciPy sparse array, a torch tensor (dense or sparse), a pydata/sparse
    array, a NumPy array, nested lists or a Python scalar. Package objects share their buffers unless
    ``copy=True`` (or ``dtype`` needs a cast); lists and scalars give dense-format Tensors. ``format=``
    converts the result (a copy)."""
    check_device(device)
    if isinstance(obj, Tensor):
        t = obj
    elif is_host_array(obj):
        if copy is False and not isinstance(obj, np.ndarray):
            raise ValueError("asarray(copy=False): a Python list or scalar always needs a copy")
        arr = np.array(obj, dtype=dtype, copy=True if copy else None)
        if copy is False and not np.shares_memory(arr, obj) and arr.size:
            raise ValueError("asarray(copy=False): this array needs a copy (dtype or memory order)")
        t = wrap(arr)
    else:
        t = as_tensor(obj)
    if dtype is not None and np.dtype(dtype) != np.dtype(t.dtype):
        if copy is False:
            raise ValueError(f"asarray(copy=False): a cast from {t.dtype} to {np.dtype(dtype)} needs a copy")
        t = astype(t, dtype)
    elif copy and t is obj:
        t = t.clone()
    if format is not None:
        fmt = format_of(format, t.ndim)
        if fmt != t.tensor_format:
            t = t.convert(tensor_format=fmt)
    return t


def zeros(shape: Any, *, dtype: Any = None, device: Any = None, format: Any = None) -> Tensor:  # noqa: A002
    """An array of zeros: sparse and storing nothing (``format="dense"``, or a shape without elements: a
    dense-format array of zeros)."""
    check_device(device)
    shape = _shape(shape)
    dt = np.dtype(_DEFAULT_FLOAT if dtype is None else dtype)
    fmt = format_of("dense" if format is None and 0 in shape else format, len(shape))
    if fmt.is_dense:
        t = wrap(np.zeros(shape, dtype=dt))
        return t if fmt == t.tensor_format else t.convert(tensor_format=fmt)
    return build(shape, np.zeros((len(shape), 0), np.int64), np.zeros(0, dt), fmt)


def empty(shape: Any, *, dtype: Any = None, device: Any = None, format: Any = None) -> Tensor:  # noqa: A002
    """As :func:`zeros`: a sparse array that stores nothing is as cheap as an uninitialised one."""
    return zeros(shape, dtype=dtype, device=device, format=format)


def full(shape: Any, fill_value: Any, *, dtype: Any = None, device: Any = None,
         format: Any = None) -> Tensor:  # noqa: A002
    """An array of ``fill_value``: sparse only when it is zero (:func:`zeros`); a nonzero fill needs
    ``format="dense"``."""
    check_device(device)
    shape = _shape(shape)
    dt = np.dtype(dtype) if dtype is not None else np.asarray(fill_value).dtype
    if dtype is None and isinstance(fill_value, float):
        dt = _DEFAULT_FLOAT
    if format_of(format, len(shape)).is_dense:
        return wrap(np.full(shape, fill_value, dtype=dt))
    if fill_value == 0:
        return zeros(shape, dtype=dt, format=format)
    raise fill_error("full", fill_value)


def ones(shape: Any, *, dtype: Any = None, device: Any = None, format: Any = None) -> Tensor:  # noqa: A002
    """An array of ones, dense-format as :func:`arange` (every element is stored); ``format=`` converts it."""
    check_device(device)
    shape = _shape(shape)
    t = wrap(np.ones(shape, dtype=_DEFAULT_FLOAT if dtype is None else dtype))
    return t if format is None else t.convert(tensor_format=format_of(format, len(shape)))


def eye(n_rows: int, n_cols: int | None = None, /, *, k: int = 0, dtype: Any = None, device: Any = None,
        format: Any = None) -> Tensor:  # noqa: A002
    """The ``n_rows x n_cols`` matrix with ones on diagonal ``k``, sparse (default CSR)."""
    check_device(device)
    n_cols = n_rows if n_cols is None else n_cols
    dt = np.dtype(_DEFAULT_FLOAT if dtype is None else dtype)
    fmt = format_of("dense" if format is None and 0 in (n_rows, n_cols) else format, 2)
    if fmt.is_dense:
        return wrap(np.eye(n_rows, n_cols, k=k, dtype=dt))
    rows = np.arange(max(0, -k), min(n_rows, n_cols - k), dtype=np.int64)
    return build((n_rows, n_cols), np.stack([rows, rows + k]), np.ones(len(rows), dt), fmt)


def _like(x: Any, dtype: Any, device: Any) -> tuple[Tensor, np.dtype]:
    check_device(device)
    t = as_tensor(x)
    return t, np.dtype(t.dtype if dtype is None else dtype)


def zeros_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> Tensor:
    """Zeros of ``x``'s shape in ``x``'s format (sparse: nothing stored)."""
    t, dt = _like(x, dtype, device)
    if t.is_sparse:
        return build(t.shape, np.zeros((t.ndim, 0), np.int64), np.zeros(0, dt), t.tensor_format)
    return wrap(np.zeros(t.shape, dtype=dt))


def empty_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> Tensor:
    """As :func:`zeros_like`."""
    return zeros_like(x, dtype=dtype, device=device)


def full_like(x: Any, /, fill_value: Any, *, dtype: Any = None, device: Any = None) -> Tensor:
    """``fill_value`` in ``x``'s shape: any fill for a dense-format ``x``, zero only for a sparse one."""
    t, dt = _like(x, dtype, device)
    if not t.is_sparse:
        return wrap(np.full(t.shape, fill_value, dtype=dt))
    if fill_value == 0:
        return zeros_like(t, dtype=dt)
    raise fill_error("full_like", fill_value)


def ones_like(x: Any, /, *, dtype: Any = None, device: Any = None) -> Tensor:
    """Ones in ``x``'s shape: for a dense-format ``x`` only."""
    return full_like(x, 1, dtype=dtype, device=device)


def _triangle(name: str, x: Any, k: int, keep: Any) -> Tensor:
    t = as_tensor(x)
    if t.ndim < 2:
        raise ValueError(f"{name} needs an array of at least 2 dimensions, got shape {t.shape}")
    if not t.is_sparse:
        return wrap(getattr(np, name)(numpy_of(t), k=k))
    crd, val = entries(t)
    mask = keep(crd[-1] - crd[-2], k)
    return build(t.shape, crd[:, mask], val[mask], t.tensor_format)


def tril(x: Any, /, *, k: int = 0) -> Tensor:
    """The entries on and below diagonal ``k`` of the last two axes (sparse stays sparse)."""
    return _triangle("tril", x, k, lambda off, k: off <= k)


def triu(x: Any, /, *, k: int = 0) -> Tensor:
    """The entries on and above diagonal ``k`` of the last two axes (sparse stays sparse)."""
    return _triangle("triu", x, k, lambda off, k: off >= k)


def arange(start: Any, /, stop: Any = None, step: Any = 1, *, dtype: Any = None, device: Any = None) -> Tensor:
    """Evenly spaced values in ``[start, stop)``, a dense-format array (every entry is stored)."""
    check_device(device)
    if stop is None:
        start, stop = 0, start
    return wrap(np.arange(start, stop, step, dtype=dtype))


def linspace(start: Any, stop: Any, /, num: int, *, dtype: Any = None, device: Any = None,
             endpoint: bool = True) -> Tensor:
    """``num`` evenly spaced values from ``start`` to ``stop``, a dense-format array."""
    check_device(device)
    if dtype is None and any(isinstance(v, complex) for v in (start, stop)):
        dtype = np.complex128
    return wrap(np.linspace(start, stop, num, endpoint=endpoint, dtype=dtype))


def meshgrid(*arrays: Any, indexing: str = "xy") -> list[Tensor]:
    """Coordinate grids of 1-D arrays (dense-format arrays; sparse inputs are read densely)."""
    dense: list[Any] = [dense_of(as_tensor(a)) for a in arrays]
    how: Any = indexing
    return [wrap(g) for g in np.meshgrid(*dense, indexing=how)]


def from_dlpack(x: Any, /, *, device: Any = None, copy: bool | None = None) -> Tensor:
    """A dense-format Tensor of a DLPack-exporting object (zero copy where NumPy can)."""
    check_device(device)
    return wrap(np.from_dlpack(x, copy=copy))
