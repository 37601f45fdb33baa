"""The text form of a tensor (``repr``): types, format, extents, level buffers, bytes and sparsity."""
from __future__ import annotations

from typing import Any

import numpy as np

from frontend.storage._buffers import nbytes
from frontend.storage._layout import to_host
from frontend.storage._protocol import StoredTensor

FULL_ITEMS = 32  # arrays up to this length are shown whole
EDGE_ITEMS = 8   # longer ones as the first and last EDGE_ITEMS items


def _item(x: Any) -> str:
    v = x.item() if hasattr(x, "item") else x
    return repr(v) if isinstance(v, (float, complex)) else str(v)


def format_array(a: Any) -> str:
    """``[1, 2, 3] #3``; long arrays as ``[first items, ..., last items] #length`` (flattened, C order)."""
    flat = np.ravel(to_host(a))
    n = len(flat)
    if n <= FULL_ITEMS:
        items = [_item(x) for x in flat]
    else:
        items = [_item(x) for x in flat[:EDGE_ITEMS]] + ["..."] + [_item(x) for x in flat[-EDGE_ITEMS:]]
    return f"[{', '.join(items)}] #{n}"


def _dtype_name(x: Any) -> str:
    return str(x.dtype).replace("torch.", "")


def _line(label: str, text: str) -> str:
    return f"{label:<9}: {text}"


def describe(t: StoredTensor) -> str:
    """The multi-line description shown by ``repr(t)``."""
    fmt = t.tensor_format
    bufs = t.buffers()
    index = str(np.dtype(t.index_type))
    if t.is_sparse:
        pos_types = sorted({_dtype_name(p) for p in t._pos if p is not None}) or [index]
        crd_types = sorted({_dtype_name(c) for c in t._crd if c is not None}) or [index]
        head = (f"---- Sparse Tensor<VAL={_dtype_name(t.val)},POS={'/'.join(pos_types)},"
                f"CRD={'/'.join(crd_types)},DIM={fmt.num_dimensions},LVL={fmt.num_levels}>")
    else:
        head = f"---- Dense Tensor<VAL={_dtype_name(t.val)},DIM={fmt.num_dimensions},LVL={fmt.num_levels}>"
    lines = [head, _line("format", str(fmt)), _line("device", str(t.device)),
             _line("dim", str(list(t.shape))), _line("lvl", str(list(t.levels))), _line("nse", str(t.nse))]
    for k in range(fmt.num_levels):
        if t._pos[k] is not None:
            lines.append(_line(f"pos[{k}]", format_array(t._pos[k])))
        if t._crd[k] is not None:
            lines.append(_line(f"crd[{k}]", format_array(t._crd[k])))
    lines.append(_line("values", format_array(t.val)))
    lines.append(_line("data", f"{sum(nbytes(b) for b in bufs)} bytes"))
    size = int(np.prod(t.shape)) if t.shape else 1
    if size:
        nonzeros = min(int(np.count_nonzero(to_host(t.val))), size)
        lines.append(_line("sparsity", f"{100.0 * (size - nonzeros) / size:.2f}%"))
    else:
        lines.append(_line("sparsity", "n/a (empty)"))
    lines.append("----")
    return "\n".join(lines)
