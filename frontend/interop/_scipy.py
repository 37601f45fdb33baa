"""SciPy (and ``cupyx.scipy.sparse``) sparse arrays/matrices <-> :class:`Tensor`, sharing buffers.

===========  ================================  ===================================================
scipy        Tensor format                     buffers
===========  ================================  ===================================================
csr          ``NamedFormats.CSR``              pos[1] = indptr, crd[1] = indices, val = data
csc          ``NamedFormats.CSC``              pos[1] = indptr, crd[1] = indices, val = data
bsr (R, C)   ``NamedFormats.BSR((R, C))``      pos[1] = indptr, crd[1] = indices, val = data (nnzb*R*C)
coo (n-D)    ``NamedFormats.COO(n)``           pos[0] = [0, nnz] (new, 2 items), crd[k] = coords[k]
dia          ``NamedFormats.DIAJ``             pos[0] = [0, ndiag] (new), crd[0] = offsets, val = data
===========  ================================  ===================================================

DIA: scipy stores diagonal ``offsets[k]`` (= j - i) in ``data[k, j]``, i.e. indexed by the column, which
is exactly DIAJ ``(j - i : compressed, j : range)`` with every diagonal padded to the full column extent
``n`` (entries whose row ``j - offset`` falls outside the matrix are padding). ``data`` with ``w < n``
columns (``scipy.sparse.diags`` makes such) is DIAJ with a range level storing ``w`` slots,
``(i, j) -> (j - i : compressed, j : range(w))`` (columns ``j >= w`` hold nothing). Both are viewed without
a copy when ``data`` is C-contiguous and the offsets are increasing and in range; otherwise (unsorted
offsets, ``data`` wider than ``n``, diagonals outside the matrix, or a narrow cupyx ``data``) ``data``'s rows
are copied once into the padded DIAJ layout and the Tensor no longer shares memory with the DIA object.

BSR whose block columns are unsorted within a block row (scipy's own CSR -> BSR constructor leaves them so;
``has_sorted_indices`` is False) is viewed without a copy too, as BSR with an unordered block-column level
``(i // R : dense, j // C : compressed(nonordered), i % R : dense, j % C : dense)``; the kernels take it.

COO whose ``has_canonical_format`` is False (unsorted or repeated coordinates, as ``scipy.sparse.random_array``
makes) gets its coordinates sorted, and repeated entries summed, into the library's own buffers
(:mod:`frontend.interop._canonical`, remembered per source; the source is unchanged, flags included).
``lil``/``dok`` arrays and matrices are converted to CSR (a copy) on every view.

Other sources must be canonical: CSR/CSC/BSR with sorted, duplicate-free indices;
:func:`frontend.storage._validate.validate` checks that and a ``ValueError`` says what to call
(``sum_duplicates()``).
"""
from __future__ import annotations

from typing import Any

import numpy as np

from frontend.format import TensorFormat
from frontend.storage import _buffers
from frontend.storage._protocol import StoredTensor, TensorT
from frontend.storage._validate import mark_valid

from ._canonical import canonical_coo
from ._layouts import Layout


def _device(package: str, x: Any) -> str:
    return "cpu" if package == "scipy" else f"cuda:{x.data.device.id}"


def _compressed(x: Any, cls: type[TensorT], package: str, xp: Any) -> TensorT:
    kind = x.format.upper()
    what = f"{package} {kind} matrix"
    m, n = (int(s) for s in x.shape)
    if kind == "BSR":
        bm, bn = (int(s) for s in x.blocksize)
        major = -(-m // bm)
    else:
        major = m if kind == "CSR" else n
    indptr, indices, data = x.indptr, x.indices, x.data
    itype = _buffers.check_index_buffers([indptr, indices], what)
    if indptr.ndim != 1 or indptr.shape[0] != major + 1:
        raise ValueError(f"{what}: indptr has {indptr.shape[0]} entries, expected {major + 1}")
    nnz = int(indptr[-1])
    if indices.shape[0] < nnz or data.shape[0] < nnz:
        raise ValueError(f"{what}: indptr ends at {nnz} but there are {indices.shape[0]} indices and "
                         f"{data.shape[0]} values")
    if indices.shape[0] > nnz or data.shape[0] > nnz:  # spare capacity after the entries
        indices, data = indices[:nnz], data[:nnz]
    if not data.flags.c_contiguous:
        raise ValueError(f"{what}: data is not contiguous")
    if kind == "BSR":
        layout = Layout("BSR", block=(bm, bn))
        pos, crd = [None, indptr, None, None], [None, indices, None, None]
        val = data.reshape(-1)
        fmt = layout.tensor_format()
        if package == "scipy" and not x.has_sorted_indices:  # scipy's CSR -> BSR leaves block columns unsorted
            fmt = unordered_blocks(fmt)
    else:
        layout = Layout(kind)
        pos, crd, val = [None, indptr], [None, indices], data
        fmt = layout.tensor_format()
    return cls(fmt, (m, n), pos, crd, val, index_type=itype, package=package, device=_device(package, x), source=x)


_UNORDERED: dict[TensorFormat, TensorFormat] = {}  # BSR format -> its block-column level nonordered; one each


def unordered_blocks(fmt: TensorFormat) -> TensorFormat:
    """BSR ``fmt`` with an unordered block-column level (``compressed(nonordered)`` in MLIR)."""
    got = _UNORDERED.get(fmt)
    if got is None:
        got = _UNORDERED[fmt] = TensorFormat.parse(str(fmt).replace(": compressed,", ": compressed(nonordered),", 1))
    return got


def _coo(x: Any, cls: type[TensorT], package: str, xp: Any) -> TensorT:
    coords = tuple(x.coords) if hasattr(x, "coords") else (x.row, x.col)
    what = f"{package} COO array"
    itype = _buffers.check_index_buffers(list(coords), what)
    nnz = int(x.data.shape[0])
    if any(int(c.shape[0]) != nnz for c in coords):
        raise ValueError(f"{what}: coordinate arrays and data differ in length")
    data, source = x.data, x
    canon = None
    if package == "scipy" and not getattr(x, "has_canonical_format", True) and coords:
        canon = canonical_coo(coords[0], coords, x.shape, what)
    if canon is not None:  # sorted and summed into the library's buffers; x stays as it is
        coords, data, source, nnz = tuple(canon.coords), canon.values(data), None, int(canon.starts.shape[0])
    elif not data.flags.c_contiguous:
        raise ValueError(f"{what}: data is not contiguous")
    n = len(coords)
    pos: list[Any] = [xp.asarray([0, nnz], dtype=itype)] + [None] * (n - 1)
    t = cls(Layout("coo", nsparse=n).tensor_format(), x.shape, pos, list(coords), data,
            index_type=itype, package=package, device=_device(package, x), source=source)
    return t if canon is None else mark_valid(t, owned=True)


def needs_copy(x: Any) -> bool:
    """Whether viewing SciPy object ``x`` makes a copy (lil/dok, COO not known to be canonical): such views
    are not kept in the view cache (the copy would not follow values changed in place)."""
    return x.format in CONVERTED or (x.format == "coo" and not getattr(x, "has_canonical_format", True))


#: formats without a Tensor layout of their own, converted to CSR (a copy) when viewed
CONVERTED = ("lil", "dok")


def _dia(x: Any, cls: type[TensorT], package: str, xp: Any) -> TensorT:
    m, n = (int(s) for s in x.shape)
    offsets, data = x.offsets, x.data
    what = f"{package} DIA matrix"
    itype = _buffers.check_index_buffers([offsets], what)
    ndiag = int(offsets.shape[0])
    inside = (offsets > -m) & (offsets < n)
    width = int(data.shape[1]) if data.ndim == 2 else -1
    narrow = package == "scipy" and 0 <= width < n  # a range(width) level: columns past width hold nothing
    viewable = ((width == n or narrow) and data.flags.c_contiguous and bool(inside.all())
                and bool((offsets[1:] > offsets[:-1]).all()))
    source, layout = x, Layout("dia", width=width if narrow else None)
    if not viewable:  # copy the kept diagonals, sorted, into rows of exactly n columns
        order = xp.argsort(offsets, kind="stable")
        order = order[inside[order]]
        offsets = offsets[order]
        if bool((offsets[1:] == offsets[:-1]).any()):
            raise ValueError(f"{what} has duplicate offsets")
        width = min(int(data.shape[1]), n)
        padded = xp.zeros((int(order.shape[0]), n), dtype=data.dtype)
        padded[:, :width] = data[order, :width]
        data, ndiag, source, layout = padded, int(order.shape[0]), None, Layout("dia")
    pos = [xp.asarray([0, ndiag], dtype=itype), None]
    return cls(layout.tensor_format(), (m, n), pos, [offsets, None], data.reshape(-1),
               index_type=itype, package=package, device=_device(package, x), source=source)


_READERS = {"csr": _compressed, "csc": _compressed, "bsr": _compressed, "coo": _coo, "dia": _dia}


def source_buffers(x: Any) -> list[Any]:
    """The arrays a SciPy/cupyx sparse object keeps (their addresses identify its current contents)."""
    coords = list(x.coords) if hasattr(x, "coords") else [getattr(x, n) for n in ("row", "col") if hasattr(x, n)]
    return [getattr(x, n) for n in ("indptr", "indices", "offsets", "data") if hasattr(x, n)] + coords


def from_scipy(x: Any, cls: type[TensorT], package: str = "scipy") -> TensorT:
    """A ``cls`` viewing a SciPy (``package="scipy"``) or cupyx (``"cupy"``) sparse array/matrix."""
    if x.format in CONVERTED and package == "scipy":
        x = x.tocsr()  # a copy: lil/dok have no Tensor layout (results still come back as SciPy objects)
    reader = _READERS.get(x.format)
    if reader is None:
        raise TypeError(f"{package} sparse format {x.format!r} has no Tensor view; convert it with "
                        f".tocsr()/.tocoo() first (supported: {', '.join(_READERS)})")
    if package == "cupy":
        import cupy as xp
    else:
        import numpy as xp
    return reader(x, cls, package, xp)


def _module(package: str) -> Any:
    if package == "cupy":
        import cupyx.scipy.sparse as sp
    else:
        import scipy.sparse as sp
    return sp


def to_scipy(t: StoredTensor, layout: Layout, package: str = "scipy") -> Any:
    """The SciPy (or cupyx) sparse array with ``t``'s buffers (dense layouts: the ndarray itself)."""
    conv = _buffers.as_cupy if package == "cupy" else _buffers.as_numpy
    val = conv(t.val, "values")
    if layout.kind == "dense":
        return val.transpose(layout.level_of_dimension)
    sp = _module(package)
    flat = not layout.nbatch and not layout.ndense
    if not flat or layout.kind == "BSC":
        raise TypeError(f"{package} has no sparse type for format {t.tensor_format} "
                        f"({t.tensor_format.name or layout.kind}); convert to CSR, CSC, COO, BSR or DIAJ")
    shape = tuple(t.shape)
    if package == "cupy":  # cupyx constructors keep the given arrays (int32 indices)
        return _to_cupyx(sp, t, layout, shape, conv)
    if layout.kind in ("CSR", "CSC", "BSR"):
        lvl = 1
        kw = {"blocksize": layout.block} if layout.kind == "BSR" else {}
        obj = getattr(sp, f"{layout.kind.lower()}_array")(shape, dtype=val.dtype, **kw)
        obj.indptr, obj.indices = conv(t.pos(lvl), "positions"), conv(t.crd(lvl), "coordinates")
        obj.data = val.reshape((-1,) + layout.block) if layout.block else val
        obj.has_sorted_indices = True
        obj.has_canonical_format = True
        return obj
    if layout.kind == "coo":
        obj = sp.coo_array(shape, dtype=val.dtype)
        obj.coords = tuple(conv(t.crd(k), "coordinates") for k in range(layout.nsparse))
        obj.data = val
        obj.has_canonical_format = True
        return obj
    obj = sp.dia_array(shape, dtype=val.dtype)  # DIAJ
    obj.offsets = conv(t.crd(0), "offsets")
    obj.data = val.reshape(int(obj.offsets.shape[0]), layout.width if layout.width is not None else shape[1])
    return obj


def _to_cupyx(sp: Any, t: StoredTensor, layout: Layout, shape: tuple, conv: Any) -> Any:
    val = conv(t.val, "values")
    if layout.kind in ("CSR", "CSC"):
        cls = sp.csr_matrix if layout.kind == "CSR" else sp.csc_matrix
        return cls((val, conv(t.crd(1)), conv(t.pos(1))), shape=shape)
    if layout.kind == "coo" and layout.nsparse == 2:
        return sp.coo_matrix((val, (conv(t.crd(0)), conv(t.crd(1)))), shape=shape)
    if layout.kind == "dia":
        offsets = conv(t.crd(0))
        width = layout.width if layout.width is not None else shape[1]
        return sp.dia_matrix((val.reshape(int(offsets.shape[0]), width), offsets), shape=shape)
    raise TypeError(f"cupy has no sparse type for format {t.tensor_format}; convert to CSR, CSC, 2-D COO or DIAJ")


_PLAIN_ATTRS = frozenset({"_shape", "maxprint", "indices", "indptr", "data"})
_PLAIN: dict[str, dict[str, Any] | None] = {}


def _plain_attrs(kind: str) -> dict[str, Any] | None:
    """The attributes besides the buffers and shape of scipy's ``kind`` (``"csr_array"``/``"csc_array"``)
    objects when those are exactly what its constructor sets (checked once per kind), else None."""
    if kind not in _PLAIN:
        import scipy.sparse as sps

        real = getattr(sps, kind)((np.zeros(1), np.zeros(1, np.int32), np.array([0, 1], np.int32)), shape=(1, 1))
        _PLAIN[kind] = {"maxprint": real.maxprint} if set(vars(real)) == _PLAIN_ATTRS else None
    return _PLAIN[kind]


def canonical_compressed(kind: str, data: np.ndarray, indices: np.ndarray, indptr: np.ndarray,
                         shape: tuple[int, ...]) -> Any:
    """A scipy ``csr_array``/``csc_array`` (``kind``) over buffers a kernel built valid, sorted and duplicate-free
    with int32 indices, without the constructor's checks and copies (its ``prune`` copies views of larger
    buffers); marked canonical, so scipy does not check again. The constructor when scipy's objects carry
    other attributes than this scipy version's."""
    import scipy.sparse as sps

    cls = getattr(sps, kind)
    plain = _plain_attrs(kind)
    if plain is None or indices.dtype != np.int32 or indptr.dtype != np.int32:
        return cls((data, indices, indptr), shape=shape)
    obj = cls.__new__(cls)
    obj.__dict__.update(plain)
    obj.__dict__.update(_shape=shape, indices=indices, indptr=indptr, data=data)
    obj._has_sorted_indices = True
    obj._has_canonical_format = True
    return obj
