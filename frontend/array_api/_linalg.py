"""Linear algebra: ``matmul``, ``tensordot``, ``vecdot`` on :func:`frontend.ops.matmul` /
:func:`frontend.ops.einsum` (NumPy for two dense-format arrays), ``matrix_transpose`` a view."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from frontend import ops
from frontend.tensor._tensor import Tensor

from ._arrays import as_tensor, broadcast_sparse, numpy_of, wrap
from ._elementwise import FUNCTIONS, on_ops
from ._manipulation import permute_dims

_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def matmul(x1: Any, x2: Any, /) -> Tensor:
    """The matrix product (NumPy's rules for 1-D and batched operands); a sparse operand runs on
    :func:`frontend.ops.matmul` (sparse times sparse is sparse)."""
    a, b = as_tensor(x1), as_tensor(x2)
    if a.ndim == 0 or b.ndim == 0:
        raise ValueError("matmul needs operands of at least one dimension (multiply scales by a scalar)")
    if not (a.is_sparse or b.is_sparse):
        return wrap(np.matmul(numpy_of(a), numpy_of(b)))
    return on_ops(ops.matmul, a, b)


def _einsum(subscripts: str, a: Tensor, b: Tensor) -> Tensor:
    return on_ops(lambda p, q: ops.einsum(subscripts, p, q), a, b)


def tensordot(x1: Any, x2: Any, /, *, axes: int | tuple[Sequence[int], Sequence[int]] = 2) -> Tensor:
    """The sum of products over ``axes`` (the last ``axes`` of ``x1`` with the first of ``x2``, or two
    sequences of axes); sparse operands run on :func:`frontend.ops.einsum`."""
    a, b = as_tensor(x1), as_tensor(x2)
    if not (a.is_sparse or b.is_sparse):
        return wrap(np.tensordot(numpy_of(a), numpy_of(b), axes=axes))
    if isinstance(axes, (int, np.integer)):
        if axes < 0 or axes > min(a.ndim, b.ndim):
            raise ValueError(f"tensordot: axes={axes} does not fit shapes {a.shape} and {b.shape}")
        first, second = list(range(a.ndim - axes, a.ndim)), list(range(axes))
    else:
        first, second = [int(d) % a.ndim for d in axes[0]], [int(d) % b.ndim for d in axes[1]]
    if len(first) != len(second) or any(a.shape[p] != b.shape[q] for p, q in zip(first, second)):
        raise ValueError(f"tensordot: axes {axes} of shapes {a.shape} and {b.shape} do not match")
    if a.ndim + b.ndim - len(first) > len(_LETTERS):
        raise ValueError("tensordot: too many dimensions")
    sa = list(_LETTERS[:a.ndim])
    sb = list(_LETTERS[a.ndim:a.ndim + b.ndim])
    for p, q in zip(first, second):
        sb[q] = sa[p]
    out = [c for d, c in enumerate(sa) if d not in first] + [c for d, c in enumerate(sb) if d not in second]
    return _einsum(f"{''.join(sa)},{''.join(sb)}->{''.join(out)}", a, b)


def vecdot(x1: Any, x2: Any, /, *, axis: int = -1) -> Tensor:
    """The dot product of vectors along ``axis`` (``x1`` conjugated), broadcast over the other axes."""
    a, b = as_tensor(x1), as_tensor(x2)
    if not (a.is_sparse or b.is_sparse):
        dot: Any = np.vecdot
        return wrap(dot(numpy_of(a), numpy_of(b), axis=axis))
    shape = tuple(np.broadcast_shapes(a.shape, b.shape))
    axis = axis - len(shape) if 0 <= axis < len(shape) else axis
    if not -len(shape) <= axis < 0 or a.shape[axis] != b.shape[axis]:
        raise ValueError(f"vecdot: axis {axis} does not fit shapes {a.shape} and {b.shape}")
    a, b = (broadcast_sparse(t, shape) if t.is_sparse else wrap(np.broadcast_to(numpy_of(t), shape))
            for t in (a, b))
    if np.iscomplexobj(np.empty(0, a.dtype)):
        a = FUNCTIONS["conj"](a)
    subs = _LETTERS[:len(shape)]
    kept = subs[:len(shape) + axis] + subs[len(shape) + axis + 1:]
    return _einsum(f"{subs},{subs}->{kept}", a, b)


def matrix_transpose(x: Any, /) -> Tensor:
    """The last two axes swapped (a view of a sparse Tensor's buffers: CSR becomes CSC)."""
    t = as_tensor(x)
    if t.ndim < 2:
        raise ValueError(f"matrix_transpose needs at least 2 dimensions, got shape {t.shape}")
    return permute_dims(t, (*range(t.ndim - 2), t.ndim - 1, t.ndim - 2))
