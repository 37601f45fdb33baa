"""``matmul`` and ``einsum`` as :class:`PreparedOp` contractions on the CPU: subscripts (numpy matmul rules
for vectors and batches, free transposes), operands and the default sparse result format."""
from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from frontend.storage._convert import coordinates
from frontend.tensor._tensor import Tensor

from ._kernel_cache import dense_tensor, entries_tensor, row_major
from ._operands import c_dtypes, half_result, native_half, operand, permuted, promoted, squeezed
from ._options import MatmulOptions
from ._prepared import PreparedOp, default_sparse_format
from ._subscripts import parse_subscripts

_BATCH_LETTERS = "pqrstuvwxyzabcdefgh"


def matmul_op(a: Any, b: Any, c: Any, options: MatmulOptions, rows: bool = False) -> PreparedOp:
    """``alpha * op(a) @ op(b) + beta * c`` as one contraction (batch dimensions broadcast); ``rows``: prefer
    the row-range variant (an ``out=`` array to write into)."""
    raw = [operand(a, "a"), operand(b, "b")]
    half = half_result(raw)
    if half is not None and c is not None:
        raise TypeError(f"c with {half} operands: c is updated in place by a float32 kernel; pass c=None and "
                        "add the product yourself")
    native = c is None and native_half(raw, options)  # half values loaded as they are (no float32 copy)
    ta, tb = cast = raw if native else promoted(raw, c_dtypes(c))
    if ta.ndim == 0 or tb.ndim == 0:
        raise ValueError("matmul needs operands with at least one dimension (use * for scalars)")
    if options.transpose_a and ta.ndim >= 2:
        ta = permuted(ta, tuple(range(ta.ndim - 2)) + (ta.ndim - 1, ta.ndim - 2))
    if options.transpose_b and tb.ndim >= 2:
        tb = permuted(tb, tuple(range(tb.ndim - 2)) + (tb.ndim - 1, tb.ndim - 2))
    ka = ta.shape[-1]
    kb = tb.shape[-2] if tb.ndim >= 2 else tb.shape[0]
    if ka != kb:
        raise ValueError(f"matmul: inner dimensions differ: op(a) has shape {ta.shape}, op(b) has shape "
                         f"{tb.shape} ({ka} != {kb})")
    ba, bb = ta.shape[:-2], tb.shape[:-2]
    try:
        batch = np.broadcast_shapes(ba, bb)
    except ValueError:
        raise ValueError(f"matmul: batch dimensions {ba} and {bb} do not broadcast") from None
    nb = len(batch)
    letters = _BATCH_LETTERS[:nb]

    def subs(t: Tensor, own: tuple, core: str, what: str) -> tuple[str, Tensor]:
        off = nb - len(own)
        drop = [d for d, e in enumerate(own) if e == 1 and batch[off + d] != 1]
        t = _squeezed(t, drop, what)
        s = "".join(letters[off + d] for d in range(len(own)) if d not in drop)
        return s + core, t

    sa, ta = subs(ta, ba, "ik" if ta.ndim >= 2 else "k", "a")
    sb, tb = subs(tb, bb, "kj" if tb.ndim >= 2 else "k", "b")
    out_subs = letters + ("i" if "i" in sa else "") + ("j" if "j" in sb else "")
    if options.out_format is None and c is None and ta.is_sparse and tb.is_sparse and out_subs:
        options = dataclasses.replace(options, out_format=default_sparse_format(ta.tensor_format, len(out_subs)))
    return PreparedOp((sa, sb), [ta, tb], out_subs, ("a", "b"), options, c, rows).in_dtype(half, raw, cast)


def _squeezed(t: Tensor, drop: Sequence[int], what: str) -> Tensor:
    """``t`` without its size-1 batch dimensions ``drop`` (broadcast against the other operand's): a view of a
    row-major dense operand; a sparse one's entries in its family of the lower rank (new buffers)."""
    if not drop:
        return t
    if not t.is_sparse:
        return squeezed(t if row_major(t.tensor_format) else dense_tensor(np.ascontiguousarray(t.to_dense())),
                        drop, what)
    dims, vals = coordinates(t)
    kept = [d for d in range(t.ndim) if d not in drop]
    shape = tuple(t.shape[d] for d in kept)
    return entries_tensor(default_sparse_format(t.tensor_format, len(shape)), shape, [dims[d] for d in kept], vals)


def einsum_op(subscripts: str, operands: Sequence[Any], options: MatmulOptions) -> PreparedOp:
    """An einsum over ``operands`` (a pure permutation of one sparse operand is a format view + conversion)."""
    if not operands:
        raise ValueError("einsum needs at least one operand")
    names = [f"operand {k}" for k in range(len(operands))]
    raw = [operand(x, n) for x, n in zip(operands, names)]
    half = half_result(raw)
    tensors = cast = promoted(raw)
    ins, out = parse_subscripts(subscripts, len(tensors))
    out_format = options.out_format
    if out_format is None and out:
        like = _sparse_result_like(ins, tensors, out)
        if like is not None:
            out_format = default_sparse_format(like.tensor_format, len(out))
            options = dataclasses.replace(options, out_format=out_format)
    if len(tensors) == 1 and len(ins[0]) == len(out) and ins[0] != out and (
            tensors[0].is_sparse or out_format is not None):
        # a pure permutation: view the operand permuted, then convert into the output format
        perm = tuple(ins[0].index(ch) for ch in out)
        tensors, ins = [permuted(tensors[0], perm)], (out,)
    return PreparedOp(ins, tensors, out, names, options).in_dtype(half, raw, cast)


def _sparse_result_like(ins: Sequence[str], tensors: Sequence[Tensor], out: str) -> Tensor | None:
    """The operand whose family a default sparse result takes, or None for a dense result: sparse when
    several operands are all sparse, or when a sparse operand is indexed by exactly the output letters
    (it samples the result: SDDMM, element-wise products, transpositions)."""
    sparse = [t for t in tensors if t.is_sparse]
    if not sparse:
        return None
    if len(tensors) > 1 and len(sparse) == len(tensors):
        return sparse[0]
    for s, t in zip(ins, tensors):
        if t.is_sparse and set(s) == set(out):
            return t
    return None
