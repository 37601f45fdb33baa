"""Operands no kernel takes as they are, converted once per plan (a copy, O(nnz); reported in
``Matmul.path`` as ``convert(<operand>-><format>)+<path>``).

The emitter walks exactly one stored operand into a dense result. A contraction with more stored operands,
or with a sparse result, goes through MLIR's sparsifier, so its stored operands must be formats the
sparsifier compiles (not range/delta levels or diagonal maps, :func:`lowering.miscompiles.unsupported_levels`)
and without padding (``frontend.format.stores_padding``: their stored zeros are not entries, and n:m levels
do not co-iterate).
Such operands are converted to the CSR-like format of their rank, which keeps exactly their entries.
When the one stored operand needs the emitter, other encoded dense operands (e.g. Fortran-ordered arrays)
become row-major copies instead.
"""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from frontend.format import Dimension, LevelFormat, NamedFormats, TensorFormat, block_sizes, stores_padding
from frontend.tensor._tensor import Tensor
from lowering.miscompiles import unsupported_levels

from ._blocks import unblocked_format
from ._kernel_cache import dense_tensor, row_major

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
            sparse_result: bool) -> tuple[list[Tensor], tuple[str, ...]]:
    """``tensors`` with the operands no kernel takes converted (see the module docstring), and one note
    per conversion (``"a->CSR"``)."""
    stored = [k for k, t in enumerate(tensors) if not row_major(t.tensor_format)]
    if len(stored) < 2 and not sparse_result:
        return list(tensors), ()
    out = list(tensors)
    notes: list[str] = []
    walked = [k for k in stored if tensors[k].is_sparse]
    if len(walked) == 1 and not sparse_result and _needs_emitter(tensors[walked[0]].tensor_format):
        for k in stored:  # the emitter walks the sparse one: the encoded dense ones become row-major copies
            if k != walked[0]:
                out[k] = dense_tensor(np.ascontiguousarray(np.asarray(tensors[k].to_dense())))
                notes.append(f"{names[k]}->row-major")
        return out, tuple(notes)
    for k in walked:
        fmt = tensors[k].tensor_format
        if fmt.mlir_support() != "sparsifier" or unsupported_levels(fmt) or stores_padding(fmt):
            target = entry_format(fmt.num_dimensions)
            out[k] = tensors[k].convert(target)
            notes.append(f"{names[k]}->{format_name(target)}")
    return out, tuple(notes)
