"""Operands no kernel takes as they are, converted once per plan (a copy, O(nnz); reported in
``Matmul.path`` as ``convert(<operand>-><format>)+<path>``).

The emitter walks exactly one stored operand into a dense result. A contraction with more stored operands,
or with a sparse result, goes through MLIR's sparsifier, so its stored operands must be formats the
sparsifier compiles (not range/delta levels or diagonal maps, :func:`lowering.miscompiles.unsupported_levels`)
and without padding (``frontend.format.stores_padding``: their stored zeros are not entries, and n:m levels
do not co-iterate).
Such operands are converted to the CSR-like format of their rank, which keeps exactly their entries.
Encoded dense operands (e.g. Fortran-ordered arrays) become row-major copies when the one stored operand
needs the emitter, next to a sparse result (the sparsifier cannot legalize a sparse result computed
from a dense level order other than the loop order), and when they have batch dimensions (a batched ``b`` whose
batch dimension is not outermost in memory, ``torch.rand(4, 6, 5).transpose(0, 1)``).

A conversion is a :data:`Reroutes` entry (operand index -> target format, None for a row-major copy) that a
prepared op keeps and replays on other operands of the same structure (one-shot calls through a template).
The copy itself is remembered per source buffer set (:func:`converted`, in ``_stats.buffer_memo``) with a
snapshot of the source's values and unwatched (NumPy) index buffers: a call over the same, unchanged buffers
reuses it; values or index buffers changed in place make a fresh copy.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from frontend.format import Dimension, LevelFormat, NamedFormats, TensorFormat, block_sizes, stores_padding
from frontend.storage._validate import index_snapshot, same_indices
from frontend.tensor._tensor import Tensor
from lowering.miscompiles import unsupported_levels

from ._blocks import unblocked_format
from ._kernel_cache import dense_tensor, row_major
from ._stats import buffer_memo, memo_head

#: Operand index -> the format its copy has (None: a row-major dense copy).
Reroutes = tuple[tuple[int, TensorFormat | None], ...]

_ENTRY_FORMATS: dict[int, TensorFormat] = {}  # rank -> padding-free format the sparsifier encodes


def entry_format(rank: int) -> TensorFormat:
    """The CSR-like format of ``rank`` (dense outer level, compressed inner levels): no padding."""
    got = _ENTRY_FORMATS.get(rank)
    if got is None:
        if rank == 1:
            got = NamedFormats.SparseVector
        elif rank == 2:
            got = NamedFormats.CSR
        else:
            dims = [Dimension(f"d{k}") for k in range(rank)]
            got = TensorFormat(dims, [(dims[0], LevelFormat.DENSE)] + [(d, LevelFormat.COMPRESSED) for d in dims[1:]])
        _ENTRY_FORMATS[rank] = got
    return got


_NAMED = ("CSR", "CSC", "COO", "DCSR", "DCSC", "SparseVector")


def format_name(fmt: TensorFormat) -> str:
    """``fmt``'s name, or the named format it equals, or its DSL text."""
    if fmt.name:
        return fmt.name
    for name in _NAMED:
        if getattr(NamedFormats, name) == fmt:
            return name
    return str(fmt)


def result_format(out: TensorFormat) -> TensorFormat:
    """The format a kernel writes a result meant for ``out`` in (a sparse format the sparsifier inserts
    into, without padding): ``out`` without its blocks when that is one (BSC -> CSC), else CSR-like."""
    unblocked = unblocked_format(out) if block_sizes(out) else out
    if not _needs_emitter(unblocked) and not unblocked.is_dense and not stores_padding(unblocked):
        return unblocked
    return entry_format(out.num_dimensions)


def _needs_emitter(fmt: TensorFormat) -> bool:
    return fmt.mlir_support() != "sparsifier" or unsupported_levels(fmt)


def reroute(tensors: Sequence[Tensor], names: Sequence[str],
            sparse_result: bool) -> tuple[list[Tensor], Reroutes, tuple[str, ...]]:
    """``tensors`` with the operands no kernel takes converted (see the module docstring), the conversions
    made (for :func:`apply`) and one note per conversion (``"a->CSR"``)."""
    plan = plan_reroutes(tensors, sparse_result)
    notes = tuple(f"{names[k]}->{'row-major' if fmt is None else format_name(fmt)}" for k, fmt in plan)
    return apply(tensors, plan), plan, notes


def plan_reroutes(tensors: Sequence[Tensor], sparse_result: bool) -> Reroutes:
    """Which operands to convert, and to what (see the module docstring)."""
    stored = [k for k, t in enumerate(tensors) if not row_major(t.tensor_format)]
    if len(stored) < 2 and not sparse_result:
        return ()
    walked = [k for k in stored if tensors[k].is_sparse]
    if len(walked) == 1 and not sparse_result and _needs_emitter(tensors[walked[0]].tensor_format):
        return tuple((k, None) for k in stored if k != walked[0])  # the emitter walks the sparse one
    plan: list[tuple[int, TensorFormat | None]] = []
    for k in stored:
        fmt = tensors[k].tensor_format
        if not tensors[k].is_sparse:
            if sparse_result or tensors[k].ndim > 2:  # the sparsifier takes no reordered batch levels
                plan.append((k, None))
        elif fmt.mlir_support() != "sparsifier" or unsupported_levels(fmt) or stores_padding(fmt):
            plan.append((k, entry_format(fmt.num_dimensions)))
    return tuple(plan)


def apply(tensors: Sequence[Tensor], plan: Reroutes) -> list[Tensor]:
    """``tensors`` with the conversions of ``plan`` made in order (remembered copies, :func:`converted`)."""
    out = list(tensors)
    for k, fmt in plan:
        out[k] = converted(out[k], fmt)
    return out


def converted(t: Tensor, fmt: TensorFormat | None) -> Tensor:
    """``t`` in ``fmt`` (None: a row-major dense copy), remembered per buffer set of ``t``: the copy is made
    again only when ``t``'s buffers are other objects or its values changed (compared with a snapshot)."""
    if fmt is not None and t.tensor_format == fmt:
        return t
    memo = buffer_memo(t)
    key = ("converted", fmt, t.shape, t.tensor_format.structure_key(), t.index_type, t.crd_type)
    head = memo_head(t)
    others = tuple(b for b in t.buffers() if b is not head)  # held by the entry: never the memo's key
    vals = np.asarray(t.val)
    got = None if memo is None else memo.get(key)
    if got is not None:
        held, snapshot, indices, copy = got
        if len(held) == len(others) and all(x is y for x, y in zip(held, others)) and \
                snapshot.dtype == vals.dtype and np.array_equal(snapshot, vals) and same_indices(t, indices):
            return copy
    if fmt is None:
        copy = dense_tensor(np.ascontiguousarray(np.asarray(t.to_dense())))
    else:
        copy = t.convert(fmt)
    if memo is not None:  # the other buffers are held (no id reuse while the entry lives), the values copied
        memo[key] = (others, vals.copy(), index_snapshot(t), copy)
    return copy
