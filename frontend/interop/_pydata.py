"""pydata/sparse (``sparse.COO``, ``sparse.GCXS``) <-> :class:`Tensor`, sharing buffers both ways.

===============================  ========================  ============================================
pydata/sparse                    Tensor format             buffers
===============================  ========================  ============================================
``COO`` (n-D)                    ``NamedFormats.COO(n)``   pos[0] = [0, nnz] (new, 2 items), crd[k] =
                                                           coords[k] (rows of ``coords``), val = data
``GCXS`` 2-D, compressed axis 0  ``NamedFormats.CSR``      pos[1] = indptr, crd[1] = indices, val = data
``GCXS`` 2-D, compressed axis 1  ``NamedFormats.CSC``      pos[1] = indptr, crd[1] = indices, val = data
``GCXS`` any other (n-D)         COO, levels in the order  pos[0] = [0, nnz], crd[k] = the coordinates
                                 ``compressed_axes`` then  decoded from indptr/indices (new), val = data
                                 the other axes
===============================  ========================  ============================================

Back: COO Tensors whose coordinate buffers are the rows of one ``(n, nnz)`` array (views of a pydata COO)
give a ``sparse.COO`` over that array; others stack their coordinates (a copy of the indices, values
shared). CSR/CSC give a ``sparse.GCXS`` over the same three buffers. Sources must be canonical (sorted,
no duplicates; ``x.sum_duplicates()`` makes them so), which validation checks.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from frontend.format import TensorFormat
from frontend.storage import _buffers
from frontend.storage._protocol import StoredTensor, TensorT

from ._layouts import Layout


def is_pydata(x: Any) -> bool:
    """Whether ``x`` is a pydata/sparse COO or GCXS array."""
    return (type(x).__module__ or "").split(".", 1)[0] == "sparse" and (hasattr(x, "coords")
                                                                        or hasattr(x, "compressed_axes"))


def source_buffers(x: Any) -> list[Any]:
    """The arrays a pydata/sparse object keeps (their addresses identify its current contents)."""
    if hasattr(x, "coords"):
        return [x.coords, x.data]
    return [x.indptr, x.indices, x.data]


def from_pydata(x: Any, cls: type[TensorT]) -> TensorT:
    """A ``cls`` viewing a pydata/sparse COO or 2-D GCXS array (no copy but the 2-item ``pos`` of COO)."""
    what = f"pydata/sparse {type(x).__name__}"
    data = x.data
    if not data.flags.c_contiguous:
        raise ValueError(f"{what}: data is not contiguous")
    if hasattr(x, "coords"):
        coords = x.coords
        if not coords.flags.c_contiguous:
            raise ValueError(f"{what}: coords is not C-contiguous")
        n, nnz = int(coords.shape[0]), int(coords.shape[1])
        rows = [coords[k] for k in range(n)]
        itype = _buffers.check_index_buffers(rows, what) or np.dtype(np.int64)
        pos: list[Any] = [np.asarray([0, nnz], dtype=itype)] + [None] * (n - 1)
        return cls(Layout("coo", nsparse=n).tensor_format(), tuple(x.shape), pos, rows, data, index_type=itype,
                   package="sparse", source=x)
    axes = tuple(int(a) for a in x.compressed_axes)
    if len(x.shape) != 2 or axes not in ((0,), (1,)):
        return _gcxs_entries(x, axes, cls, what)
    kind = "CSR" if axes == (0,) else "CSC"
    itype2 = _buffers.check_index_buffers([x.indptr, x.indices], what)
    return cls(Layout(kind).tensor_format(), tuple(x.shape), [None, x.indptr], [None, x.indices], data,
               index_type=itype2, package="sparse", source=x)


def _gcxs_entries(x: Any, axes: tuple[int, ...], cls: type[TensorT], what: str) -> TensorT:
    """A ``cls`` of a GCXS of any rank or compressed axes: pydata stores the 2-D CSR of the array with its axes
    reordered (``compressed_axes`` first, the others after, in order) and reshaped to (compressed axes
    flattened) x (the others flattened). Its entries are in the lexicographic order of that axis order, so a
    COO whose levels store the dimensions in that order holds them as they are: the values are shared, the
    coordinates are decoded from ``indptr``/``indices`` (new int64 buffers)."""
    shape = tuple(int(e) for e in x.shape)
    order = list(axes) + [d for d in range(len(shape)) if d not in axes]
    indptr, indices = np.asarray(x.indptr), np.asarray(x.indices)
    _buffers.check_index_buffers([indptr, indices], what)
    rows = np.repeat(np.arange(len(indptr) - 1, dtype=np.int64), np.diff(indptr))
    lead = np.unravel_index(rows, [shape[a] for a in axes]) if axes else ()  # (1-D: compressed_axes ())
    rest = [shape[a] for a in order[len(axes):]]
    tail = np.unravel_index(indices.astype(np.int64, copy=False), rest) if rest else ()
    crd = [np.ascontiguousarray(c, dtype=np.int64) for c in (*lead, *tail)]
    coo = Layout("coo", nsparse=len(shape)).tensor_format()  # level k stores dimension k
    where = {lvl: dim for lvl, dim in enumerate(order)}  # level k stores dimension order[k]
    dims = [coo.dimensions[next(k for k, d in where.items() if d == p)] for p in range(len(shape))]
    fmt = TensorFormat(dims, coo.levels)
    pos: list[Any] = [np.asarray([0, len(crd[0]) if crd else 0], dtype=np.int64)] + [None] * (len(shape) - 1)
    return cls(fmt, shape, pos, crd, x.data, index_type=np.dtype(np.int64), package="sparse", source=x)


def to_pydata(t: StoredTensor, layout: Layout) -> Any:
    """The pydata/sparse array over ``t``'s buffers (COO of any rank, CSR/CSC as GCXS; dense: the ndarray)."""
    import sparse

    val = _buffers.as_numpy(t.val, "values")
    if layout.kind == "dense":
        return val.transpose(layout.level_of_dimension)
    if layout.kind == "coo" and not layout.nbatch and not layout.ndense:
        rows = [_buffers.as_numpy(t.crd(k), "coordinates") for k in range(layout.nsparse)]
        base = rows[0].base
        shared = (isinstance(base, np.ndarray) and base.ndim == 2 and base.shape[0] == len(rows)
                  and all(r.base is base for r in rows) and base.flags.c_contiguous
                  and base.shape[1] == rows[0].shape[0]
                  and all(r.__array_interface__["data"][0] == base[k].__array_interface__["data"][0]
                          for k, r in enumerate(rows)))
        coords = base if shared else np.stack(rows)
        return sparse.COO(coords, val, shape=tuple(t.shape), has_duplicates=False, sorted=True)
    if layout.kind in ("CSR", "CSC") and not layout.nbatch and not layout.ndense:
        return sparse.GCXS((val, _buffers.as_numpy(t.crd(1)), _buffers.as_numpy(t.pos(1))), shape=tuple(t.shape),
                           compressed_axes=(0,) if layout.kind == "CSR" else (1,))
    raise TypeError(f"pydata/sparse has no array for format {t.tensor_format}; convert to COO, CSR or CSC")
