"""Block formats (levels ``i // b`` and ``i % b``) as plain higher-rank formats over the same buffers.

MLIR's sparsifier handles block maps only in some cases (square blocks, one sparse operand) and aborts or
fails to legalize in others. A block tensor's storage is, level for level, an identity-mapped tensor over
its level coordinates (BSR (2, 3) of a 6x9 matrix = a 3x3x2x3 tensor ``(I : dense, J : compressed,
a : dense, b : dense)``), so an einsum on block operands is rewritten on that view: each blocked letter
``i`` splits into an outer and an inner letter, dense operands and the dense result are reshaped (zero
padded where the extent is not a multiple of the block), and the result is reshaped back.

Sparse results, and letters blocked differently in two operands, use the unblocked format instead
(BSR -> CSR, BSC -> CSC; a conversion copy), since the sparsifier cannot insert into block outputs.
"""
from __future__ import annotations

import dataclasses
import string
from collections.abc import Callable, Sequence

import numpy as np

from frontend.format import Dimension, TensorFormat, block_sizes, is_block
from frontend.tensor._tensor import Tensor

from ._kernel_cache import dense_tensor, row_major

_DEMAPPED: dict[TensorFormat, TensorFormat] = {}  # block format -> its demapped format; one per format seen
_UNBLOCKED: dict[TensorFormat, TensorFormat] = {}  # block format -> its unblocked format; one per format seen


def demapped_format(fmt: TensorFormat) -> TensorFormat:
    """The identity-mapped format over ``fmt``'s level coordinates (same buffers)."""
    got = _DEMAPPED.get(fmt)
    if got is None:
        dims = [Dimension(f"l{k}") for k in range(fmt.num_levels)]
        got = TensorFormat(dims, [dataclasses.replace(lv, expr=d) for lv, d in zip(fmt.levels, dims)])
        _DEMAPPED[fmt] = got
    return got


def unblocked_format(fmt: TensorFormat) -> TensorFormat:
    """``fmt`` without its ``d % b`` levels and with ``d // b`` read as ``d`` (BSR -> CSR, BSC -> CSC)."""
    got = _UNBLOCKED.get(fmt)
    if got is None:
        levels = []
        for lv in fmt.levels:
            e = lv.expr
            if is_block(e):
                if e.op == "%":  # type: ignore[attr-defined]
                    continue
                lv = dataclasses.replace(lv, expr=e.lhs)  # type: ignore[attr-defined]
            levels.append(lv)
        got = TensorFormat(fmt.dimensions, levels)
        _UNBLOCKED[fmt] = got
    return got


def has_blocks(t: Tensor) -> bool:
    return bool(block_sizes(t.tensor_format))


@dataclasses.dataclass(frozen=True)
class Rewrite:
    """An einsum rewritten on demapped block operands; ``restore`` maps the dense result back."""

    subscripts: tuple[str, ...]
    tensors: list[Tensor]
    out_subs: str
    out_shape: tuple[int, ...]
    restore: Callable[[np.ndarray], np.ndarray]
    out_split: Callable[[np.ndarray], np.ndarray]


def _split_dense(arr: np.ndarray, subs: str, splits: dict[str, int], outer: dict[str, str]) -> tuple[np.ndarray, str]:
    """Reshape each split letter's axis ``E`` into ``(ceil(E / b), b)`` (zero padded when needed)."""
    pad = [(0, (-e) % splits[ch]) if ch in splits else (0, 0) for ch, e in zip(subs, arr.shape)]
    if any(p for _, p in pad):
        arr = np.pad(arr, pad)
    shape: list[int] = []
    letters = ""
    for ch, e in zip(subs, arr.shape):
        if ch in splits:
            b = splits[ch]
            shape += [e // b, b]
            letters += outer[ch] + ch
        else:
            shape.append(e)
            letters += ch
    return np.ascontiguousarray(arr).reshape(shape), letters


def rewrite(subscripts: Sequence[str], tensors: Sequence[Tensor], out_subs: str,
            out_shape: tuple[int, ...]) -> Rewrite | None:
    """The demapped einsum for a dense result, or None (no blocks, or blocks that disagree)."""
    splits: dict[str, int] = {}
    for s, t in zip(subscripts, tensors):
        for d, b in block_sizes(t.tensor_format).items():
            if splits.setdefault(s[d], b) != b:
                return None
    if not splits:
        return None
    for s, t in zip(subscripts, tensors):
        fmt = t.tensor_format
        if not block_sizes(fmt) and not row_major(fmt) and any(ch in splits for ch in s):
            return None  # a non-block sparse operand shares a blocked letter
    used = set("".join(subscripts) + out_subs)
    free = [ch for ch in string.ascii_letters if ch not in used]
    outer = {ch: free.pop(0) for ch in splits}
    new_subs: list[str] = []
    new_tensors: list[Tensor] = []
    for s, t in zip(subscripts, tensors):
        fmt = t.tensor_format
        sizes = block_sizes(fmt)
        if sizes:
            letters = ""
            for lv in fmt.levels:
                e = lv.expr
                if is_block(e):
                    ch = s[fmt.dimensions.index(e.lhs)]  # type: ignore[attr-defined]
                    letters += outer[ch] if e.op == "//" else ch  # type: ignore[attr-defined]
                else:
                    ch = s[fmt.dimensions.index(e)]
                    if ch in splits:
                        return None
                    letters += ch
            new_subs.append(letters)
            new_tensors.append(Tensor(demapped_format(fmt), t.levels, t._pos, t._crd, t._val,
                                      index_type=t.index_type, package=t.package, device=t.device))
        else:
            dense = np.asarray(t.val) if row_major(fmt) else t.to_dense()  # dimension order (e.g. Fortran)
            arr, letters = _split_dense(dense, s, splits, outer)
            new_subs.append(letters)
            new_tensors.append(dense_tensor(arr))
    new_out = "".join(outer[ch] + ch if ch in splits else ch for ch in out_subs)
    padded = tuple(-(-e // splits[ch]) * splits[ch] if ch in splits else e for ch, e in zip(out_subs, out_shape))
    split_shape: list[int] = []
    for ch, ext in zip(out_subs, padded):
        split_shape += [ext // splits[ch], splits[ch]] if ch in splits else [ext]
    crop = tuple(slice(0, e) for e in out_shape)

    def restore(res: np.ndarray) -> np.ndarray:
        full = res.reshape(padded)
        return full if full.shape == out_shape else np.ascontiguousarray(full[crop])

    def out_split(c: np.ndarray) -> np.ndarray:
        return _split_dense(c, out_subs, splits, outer)[0]

    return Rewrite(tuple(new_subs), new_tensors, new_out, tuple(split_shape), restore, out_split)
