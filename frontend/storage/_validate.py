"""Validation of a tensor's buffers against its format (the layout in :mod:`frontend.tensor`).

``validate(t)`` raises ``TypeError`` (wrong buffer types, layouts) or ``ValueError`` (wrong contents)
naming the level and the problem; it is O(nnz) and vectorized, and remembered per buffer set: a
tensor (or another tensor over the very same buffers) is checked once (:mod:`._guard`: torch index buffers
are validated again when their version moved; NumPy ones cannot be watched). Call it before a kernel reads
buffers it did not build; :func:`recheck` before each call of a prepared kernel; :func:`validate_now` before
each call of a kernel that is not bounds-safe (its contents checked again unless torch versions prove them
unchanged).
"""
from __future__ import annotations

import ctypes
import operator
import threading
import weakref
from collections.abc import Sequence
from typing import Any

import numpy as np

from frontend.format import Level, LevelFormat, TensorFormat, num_batch_levels

from ._buffers import is_contiguous, numpy_dtype
from ._guard import EMPTY, UNWATCHED, Guard, intact, record
from ._layout import (
    INDEX_TYPES,
    VALUE_KINDS,
    coordinate_span,
    coordinates_type,
    delta_crd_dtype,
    delta_crd_length,
    delta_packed,
    index_dtype,
    is_narrow,
    structured_groups,
    to_host,
    unpack_gaps,
    value_count,
)
from ._protocol import StoredTensor, TensorT
from ._read import delta_coordinates, ranges

#: buffer_key -> the guard of its index buffers, held weakly (:func:`_weak`), and the finalizers that drop the entry
#: when one of its buffers dies (the others are detached then): the memo never keeps a buffer or a key alive
_VALIDATED: dict[tuple, tuple] = {}
#: buffer_key -> copies of its unwatched index buffers as :func:`validate_now` last checked them in full
#: (:data:`_ONCE` after the first full check: no copy is kept for a buffer set checked only once)
_CHECKED: dict[tuple, Any] = {}
_ONCE = object()
_LOCK = threading.RLock()  # reentrant: a weakref finalizer (_forget) may run while it is held


def _forget(key: tuple) -> None:
    with _LOCK:
        got = _VALIDATED.pop(key, None)
        _CHECKED.pop(key, None)
    if got is not None:  # the finalizers still waiting on the other buffers would keep the key: detached
        for f in got[2]:
            f.detach()


def _weak(guard: Guard) -> tuple:
    """``guard`` with weak references in place of its torch buffers (what :data:`_VALIDATED` stores)."""
    versions, watched = guard
    return tuple((weakref.ref(b), v) for b, v in versions), watched


def _strong(weak: tuple | None) -> Guard | None:
    """The guard :func:`_weak` stored, or None when one of its buffers was freed."""
    if weak is None:
        return None
    versions = tuple((r(), v) for r, v in weak[0])
    if any(b is None for b, _ in versions):
        return None
    return versions, weak[1]


def _memcmp() -> Any:
    try:
        fn = ctypes.CDLL(None).memcmp
    except (OSError, AttributeError):  # no C library to ask: NumPy compares
        return None
    fn.argtypes, fn.restype = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t], ctypes.c_int
    return fn


_MEMCMP = _memcmp()


def _equal(a: Any, copy: np.ndarray) -> bool:
    """Whether host buffer ``a`` holds the bytes of ``copy`` (one pass, no temporary: C ``memcmp``)."""
    a = to_host(a)
    if a.dtype != copy.dtype or a.shape != copy.shape:
        return False
    if _MEMCMP is None or not (a.flags.c_contiguous and copy.flags.c_contiguous):
        return bool(np.array_equal(a, copy))
    return a.nbytes == 0 or _MEMCMP(a.ctypes.data, copy.ctypes.data, a.nbytes) == 0


def _copies(buffers: list[Any]) -> tuple[np.ndarray, ...]:
    return tuple(np.array(to_host(b), copy=True, order="C") for b in buffers)


def _remember(key: tuple, buffers: list[Any], guard: Guard) -> None:
    """Caches ``key`` until any of its buffers is garbage collected (ids can then be reused)."""
    finalizers: list[weakref.finalize] = []
    try:
        weak = _weak(guard)
        for b in buffers:
            finalizers.append(weakref.finalize(b, _forget, key))
    except TypeError:  # a buffer type without weak references: keep only the per-tensor flag
        for f in finalizers:
            f.detach()
        return
    with _LOCK:
        _VALIDATED[key] = (*weak, finalizers)


def _index_buffers(t: StoredTensor) -> list[Any]:
    return [b for pair in zip(t._pos, t._crd) for b in pair if b is not None]


class Built:
    """``_validated`` of a tensor the library built valid (:func:`mark_valid`): the buffers it was built over;
    their key is computed only when asked for (:func:`_validated_key`: most results are handed on unchecked)."""

    __slots__ = ("buffers",)

    def __init__(self, buffers: tuple[Any, ...]) -> None:
        self.buffers = buffers


def _validated_key(t: StoredTensor) -> tuple | None:
    """``t``'s ``buffer_key()`` at its last validation (a :class:`Built` one resolved now: its key while ``t``
    still holds the buffers it was built over), or None."""
    v = t._validated
    if type(v) is Built:
        now = t.buffers()
        v = t.buffer_key() if len(now) == len(v.buffers) and all(map(operator.is_, now, v.buffers)) else None
        t._validated = v
    return v


def _known_guard(t: StoredTensor, key: tuple) -> Guard | None:
    """The guard of ``key``'s last validation if its index buffers are unchanged since, else None."""
    guard = t._guard if _validated_key(t) == key else _strong(_VALIDATED.get(key))
    return guard if guard is not None and intact(guard) else None


def is_validated(t: StoredTensor) -> bool:
    """Whether ``t``'s current buffer set was validated already (and its index buffers are unchanged since)."""
    return _known_guard(t, t.buffer_key()) is not None


def validate(t: TensorT) -> TensorT:
    """Checks ``t``'s buffers (once per buffer set, again when an index buffer changed) and returns ``t``."""
    key = t.buffer_key()
    guard = _known_guard(t, key)
    if guard is None:
        t._validated, t._guard = None, None
        _forget(key)
        _check(t)
        guard = record(_index_buffers(t))
        _remember(key, t.buffers(), guard)
    t._validated, t._guard = key, guard
    return t


def recheck(t: StoredTensor) -> None:
    """Before a prepared call reads ``t`` again: validates it again if an index buffer changed (O(1) when
    not; ``ValueError`` naming the level when the new contents are wrong). Dense tensors pass."""
    guard = t._guard
    if guard is not None:  # intact(guard), inlined: this runs on every call of a prepared kernel
        for b, version in guard[0]:
            if b._version != version:
                break
        else:
            return
    if not t.tensor_format.is_dense:
        validate(t)


def watched(t: StoredTensor) -> bool:
    """Whether every index buffer of validated ``t`` is watched by a version counter (torch) and unchanged."""
    guard = t._guard
    return guard is not None and guard[1] and intact(guard)


#: Index buffers of at most this many bytes in all are copied at their first full check (else at the second:
#: a one-off conversion of a large tensor keeps no copy)
SMALL_COPY = 1 << 16
#: Index buffers up to this many bytes are compared as ``bytes`` (no C call; faster for small buffers)
_BYTES_MAX = 1 << 12


def _kept(copy: np.ndarray) -> Any:
    """What :func:`_same` compares a buffer with later, from the ``copy`` taken at its full check: its shape,
    dtype and bytes (small) or the copy itself."""
    return (copy.shape, copy.dtype, copy.tobytes()) if copy.nbytes <= _BYTES_MAX else copy


def _same(b: np.ndarray, copy: Any) -> bool:
    """Whether NumPy buffer ``b`` holds what :func:`_kept` keeps (its shape, dtype and bytes)."""
    if type(copy) is tuple:
        return b.shape == copy[0] and b.dtype == copy[1] and b.tobytes() == copy[2]
    return _equal(b, copy)


def _unchanged(t: StoredTensor, fresh: tuple) -> bool:
    """Whether ``t`` has the very buffer objects :func:`validate_now` last checked in full, with the index
    buffers' bytes unchanged: the per-call fast path (no key built, no lock, one compare per index buffer)."""
    buffers, index, copies = fresh
    now = t.buffers()
    if len(now) != len(buffers):
        return False
    for a, b in zip(now, buffers):
        if a is not b:
            return False
    for b, c in zip(index, copies):
        if not _same(b, c):
            return False
    return True


def validate_now(t: TensorT) -> TensorT:
    """Before a kernel that is not bounds-safe reads ``t``: its contents checked now (``ValueError`` naming the
    level), unless version counters prove them unchanged since validation. NumPy index buffers may have been
    written in place since (nothing freezes them): they are compared with a copy taken at their last full check
    (one compare per buffer, certain; for small buffers from the second call, for others from the third) and
    checked in full again only when they differ. The tensor remembers its buffers and copies: a repeat call on
    it compares them without building its key."""
    if t.tensor_format.is_dense:
        return t
    fresh = t._fresh
    if fresh is not None and _unchanged(t, fresh):
        return t
    key = t.buffer_key()
    guard = _known_guard(t, key)
    if guard is None or not guard[1]:
        buffers = _index_buffers(t)
        copies = None if guard is None else _CHECKED.get(key)
        if copies is None or copies is _ONCE or len(copies) != len(buffers) or \
                not all(map(_equal, buffers, copies)):
            t._validated, t._guard, t._fresh = None, None, None
            _check(t, exact=guard is None)
            if guard is None:
                guard = record(buffers)
                _remember(key, t.buffers(), guard)
            small = sum(int(getattr(b, "nbytes", 0)) for b in buffers) <= SMALL_COPY
            with _LOCK:  # the copy from the second full check on (small: the first): a one-off conversion keeps none
                if key in _VALIDATED:  # dropped with the buffers, like the memo
                    copies = _CHECKED[key] = _ONCE if copies is None and not small else _copies(buffers)
        if copies is not None and copies is not _ONCE and all(type(b) is np.ndarray for b in buffers):
            t._fresh = (tuple(t.buffers()), tuple(buffers), tuple(map(_kept, copies)))
    t._validated, t._guard = key, guard
    return t


def index_snapshot(t: StoredTensor) -> tuple[Any, ...] | None:
    """Copies of ``t``'s index buffers when some are unwatched (NumPy), for :func:`same_indices`; else None.
    For state derived from the index buffers and kept across calls (a solver's analysis): O(nnz) to compare,
    and certain, unlike any sample of the entries (small buffers kept as bytes: no C call to compare)."""
    if t.tensor_format.is_dense or watched(t):
        return None
    return tuple(map(_kept, _copies(_index_buffers(t))))


def same_indices(t: StoredTensor, snapshot: tuple[Any, ...] | None) -> bool:
    """Whether ``t``'s index buffers hold what :func:`index_snapshot` copied (True without a snapshot)."""
    if snapshot is None:
        return True
    now = _index_buffers(t)
    if len(now) != len(snapshot):
        return False
    for b, c in zip(now, snapshot):
        if not _same(to_host(b), c):
            return False
    return True


def mark_valid(t: TensorT, owned: bool = False) -> TensorT:
    """Records ``t`` (built by the library, valid by construction) as validated; its buffer key is built only
    if it is validated again (:class:`Built`). ``owned``: every index buffer is a NumPy array the library
    allocated (a kernel's result, a sorted copy), so none is watched by torch and none needs looking at."""
    t._validated = Built(tuple(t.buffers()))
    t._guard = (EMPTY if t.tensor_format.is_dense else UNWATCHED) if owned else record(_index_buffers(t))
    return t


def _where(k: int, lv: Level) -> str:
    return f"level {k} ({lv.render()})"


def _check_extents(shape: tuple[int, ...], index_type: np.dtype | None) -> None:
    """Extents must fit int64 (the index type of generated code) and the index buffers' type."""
    for d, e in enumerate(shape):
        if e > np.iinfo(np.int64).max:
            raise ValueError(f"dimension {d} has extent {e}, more than 2**63 - 1 (int64, the largest index "
                             "type); use smaller extents")
        if index_type is not None and e > np.iinfo(index_type).max:
            raise ValueError(f"dimension {d} has extent {e}, more than {index_type} index buffers hold "
                             f"({np.iinfo(index_type).max}); use int64 index buffers (index_type=np.int64)")


def check_coordinate_span(fmt: TensorFormat, shape: Sequence[int], crd_type: np.dtype) -> None:
    """ValueError when a level's coordinates do not fit a narrow ``crd_type`` (:func:`coordinate_span`), naming
    the level, its dimension and the fix; wide types are checked per dimension by :func:`_check_extents`."""
    if not is_narrow(crd_type):
        return
    span = coordinate_span(crd_type)
    ext, off = fmt.level_extents(shape), fmt.diagonal_offset(shape)
    for k, (lv, e, o) in enumerate(zip(fmt.levels, ext, off)):
        if not lv.has_coordinates or lv.format is LevelFormat.DELTA:
            continue
        top = lv.structure[1] if lv.format is LevelFormat.STRUCTURED else o + e  # type: ignore[index]
        if o >= -span and top <= span:
            continue
        dims = ", ".join(f"dimension {fmt.dimensions.index(d)} ({d}, extent {shape[fmt.dimensions.index(d)]})"
                         for d in lv.expr.dimensions())
        raise ValueError(f"{_where(k, lv)} of {dims} addresses coordinates {o}..{top - 1}, beyond {crd_type} "
                         f"coordinates (0..{span - 1} for extents up to {span}); convert with "
                         f"crd_type=np.int{16 * crd_type.itemsize} or wider")


def _check_types(t: StoredTensor, nb: int) -> None:
    """Buffer presence, dtypes, contiguity and batch axes."""
    fmt = t.tensor_format
    if any(s < 0 for s in t.shape):
        raise ValueError(f"negative extent in shape {t.shape}")
    it = np.dtype(t.index_type)
    ct = coordinates_type(fmt, t._crd, it)
    wide = [d for d in (it, ct) if d in INDEX_TYPES and not is_narrow(d)]
    _check_extents(t.shape, min(wide, key=lambda d: d.itemsize) if wide and not fmt.is_dense else None)
    if ct in INDEX_TYPES and not fmt.is_dense:
        check_coordinate_span(fmt, t.shape, ct)
    vdt = numpy_dtype(t.val)
    if vdt.kind not in VALUE_KINDS and str(vdt) != "bfloat16":
        raise TypeError(f"values must be numeric, got dtype {vdt}")
    bshape = tuple(t.levels[:nb])
    for k, lv in enumerate(fmt.levels):
        for name, buf, needed in (("pos", t._pos[k], lv.has_positions), ("crd", t._crd[k], lv.has_coordinates)):
            if buf is None:
                if needed:
                    raise ValueError(f"{_where(k, lv)}: missing its {name} buffer")
                continue
            if not needed:
                raise ValueError(f"{_where(k, lv)}: this level has no {name} buffer, got one")
            dt = numpy_dtype(buf)
            if dt not in INDEX_TYPES and not (name == "crd" and lv.format is LevelFormat.DELTA):
                raise TypeError(f"{_where(k, lv)}: {name} must be int8, int16, int32 or int64, got {dt}")
            if name == "pos":
                want, role = it, " (the index type)"
            elif lv.format is LevelFormat.DELTA:
                want, role = delta_crd_dtype(lv.bits), ""  # type: ignore[arg-type]
            else:
                want, role = ct, " (the coordinates type of every level)"
            if dt != want:
                raise TypeError(f"{_where(k, lv)}: {name} must be {want}{role}, got {dt}")
            if len(buf.shape) != nb + 1 or tuple(buf.shape[:nb]) != bshape:
                raise ValueError(f"{_where(k, lv)}: {name} must have shape (*{list(bshape)}, n), "
                                 f"got {tuple(buf.shape)}")
            if not is_contiguous(buf):
                raise ValueError(f"{_where(k, lv)}: {name} buffer is not contiguous")
    index_dtype(it)
    index_dtype(ct, "crd_type")
    if not is_contiguous(t.val):
        raise ValueError("values buffer is not contiguous")
    if fmt.is_dense:
        if tuple(t.val.shape) != tuple(t.levels):
            raise ValueError(f"dense values must have the level extents {tuple(t.levels)} as shape, "
                             f"got {tuple(t.val.shape)}")
    elif tuple(t.val.shape[:nb]) != bshape or len(t.val.shape) < nb + 1:
        raise ValueError(f"values must have shape (*{list(bshape)}, n, ...), got {tuple(t.val.shape)}")


def _check(t: StoredTensor, exact: bool = True) -> None:
    """Checks ``t``'s buffers; ``exact=False``: buffers may be longer than the levels use (the re-check of a
    buffer set validated before or built by a kernel with spare capacity: what memory safety needs)."""
    fmt = t.tensor_format
    nb = num_batch_levels(fmt)
    _check_types(t, nb)
    if fmt.is_dense:
        return
    ext, off = t.levels, fmt.diagonal_offset(t.shape)
    pos = [None if p is None else to_host(p) for p in t._pos]
    crd = [None if c is None else to_host(c) for c in t._crd]
    val = to_host(t.val)
    for b in np.ndindex(*ext[:nb]):
        where = f" in batch {b}" if nb else ""
        count = _check_levels(fmt.levels, ext, off, nb, [None if p is None else p[b] for p in pos],
                              [None if c is None else c[b] for c in crd], exact=exact and nb == 0, where=where)
        have = value_count(val[b], 0) if nb else value_count(val, 0)
        if have != count if exact and nb == 0 else have < count:
            raise ValueError(f"values{where}: the levels store {count} entries, the values buffer holds {have}")


def _check_sorted(k: int, lv: Level, c: np.ndarray, same: np.ndarray, where: str) -> None:
    """Ordered levels: coordinates increase within a parent (``same[t]``: entries t, t+1 share one)."""
    bad = np.less_equal(c[1:], c[:-1]) if lv.unique else np.less(c[1:], c[:-1])
    bad &= same
    if bad.any():
        t = int(np.argmax(bad))
        what = "strictly increasing" if lv.unique else "non-decreasing"
        raise ValueError(f"{_where(k, lv)}{where}: coordinates must be {what} within a parent; "
                         f"crd[{t}] = {int(c[t])}, crd[{t + 1}] = {int(c[t + 1])}")


def _check_unordered_unique(k: int, lv: Level, c: np.ndarray, seg: np.ndarray, where: str) -> None:
    order = np.lexsort((c, seg))
    sc, ss = c[order], seg[order]
    dup = (sc[1:] == sc[:-1]) & (ss[1:] == ss[:-1])
    if dup.any():
        t = int(np.argmax(dup))
        raise ValueError(f"{_where(k, lv)}{where}: coordinate {int(sc[t])} stored twice in one parent "
                         "of a unique level")


def _check_positions(k: int, lv: Level, p: np.ndarray, parents: int, ncrd: int, exact: bool,
                     where: str) -> tuple[np.ndarray, np.ndarray]:
    """Checks a compressed/delta/loose positions buffer; returns the ``[lo, hi)`` bounds per parent."""
    if lv.format is LevelFormat.LOOSE_COMPRESSED:
        need = 2 * parents
        if len(p) < need or (exact and len(p) != need):
            raise ValueError(f"{_where(k, lv)}{where}: pos must have 2 * {parents} = {need} entries "
                             f"(lo, hi per parent), got {len(p)}")
        lo, hi = p[0:need:2].astype(np.int64), p[1:need:2].astype(np.int64)
        if len(lo) and (lo.min() < 0 or (hi < lo).any() or hi.max() > ncrd):
            raise ValueError(f"{_where(k, lv)}{where}: pos pairs must satisfy 0 <= lo <= hi <= {ncrd} "
                             f"(the crd length)")
        return lo, hi
    need = parents + 1
    if len(p) < need or (exact and len(p) != need):
        raise ValueError(f"{_where(k, lv)}{where}: pos must have {parents} + 1 = {need} entries, got {len(p)}")
    p = p[:need].astype(np.int64)
    if p[0] != 0:
        raise ValueError(f"{_where(k, lv)}{where}: pos must start at 0, got {int(p[0])}")
    dec = p[1:] < p[:-1]
    if dec.any():
        t = int(np.argmax(dec))
        raise ValueError(f"{_where(k, lv)}{where}: pos must be non-decreasing; pos[{t}] = {int(p[t])} > "
                         f"pos[{t + 1}] = {int(p[t + 1])}")
    last = int(p[-1])
    if last > ncrd or (exact and last != ncrd):
        raise ValueError(f"{_where(k, lv)}{where}: pos ends at {last} but crd has {ncrd} entries")
    return p[:-1], p[1:]


def _check_bounds(k: int, lv: Level, c: np.ndarray, lo: int, hi: int, where: str) -> None:
    if len(c) and (c.min() < lo or c.max() >= hi):
        bad = int(np.argmax((c < lo) | (c >= hi)))
        raise ValueError(f"{_where(k, lv)}{where}: coordinate {int(c[bad])} at crd[{bad}] is out of "
                         f"bounds [{lo}, {hi})")


def _check_levels(levels: tuple[Level, ...], ext: list[int], off: list[int], nb: int, pos: list,
                  crd: list, exact: bool, where: str) -> int:
    """Checks the levels after the batch levels; returns the number of entries of the last level."""
    parents = 1
    tie: np.ndarray | None = None  # entries t, t+1 equal in every coordinate of a nonunique chain
    for k in range(nb, len(levels)):
        lv, e, o, f = levels[k], int(ext[k]), int(off[k]), levels[k].format
        if lv.is_dense_like or f is LevelFormat.RANGE:
            parents, tie = parents * e, None
            continue
        c = crd[k]
        if f is LevelFormat.SINGLETON:
            if len(c) < parents or (exact and len(c) != parents):
                raise ValueError(f"{_where(k, lv)}{where}: crd must have one coordinate per parent "
                                 f"position ({parents}), got {len(c)}")
            c = c[:parents].astype(np.int64)
            _check_bounds(k, lv, c, o, o + e, where)
            if tie is not None:
                if lv.ordered:
                    _check_sorted(k, lv, c, tie, where)
                tie = tie & (c[1:] == c[:-1])
            continue
        if f is LevelFormat.STRUCTURED:
            n, m = lv.structure  # type: ignore[misc]
            need = parents * structured_groups(lv, e) * n
            if len(c) < need or (exact and len(c) != need):
                raise ValueError(f"{_where(k, lv)}{where}: crd must have {need} entries ({n} per group "
                                 f"of {m}), got {len(c)}")
            c = c[:need].astype(np.int64)
            _check_bounds(k, lv, c, 0, m, where)
            step = np.diff(c.reshape(-1, n), axis=1)
            if (step <= 0).any():
                g = int(np.argmax((step <= 0).any(axis=1)))
                raise ValueError(f"{_where(k, lv)}{where}: coordinates of group {g} must be strictly "
                                 f"increasing, got {c[g * n:(g + 1) * n].tolist()}")
            parents, tie = need, None
            continue
        packed = f is LevelFormat.DELTA and delta_packed(lv.bits)
        if packed:  # one gap per slot; the exact byte count is checked below
            nbytes, c = len(c), unpack_gaps(c, lv.bits)  # type: ignore[arg-type]
        lo, hi = _check_positions(k, lv, pos[k], parents, len(c), exact and not packed, where)
        if packed and exact and delta_crd_length(lv.bits, int(hi[-1]) if len(hi) else 0) != nbytes:  # type: ignore[arg-type]
            raise ValueError(f"{_where(k, lv)}{where}: crd must hold {int(hi[-1]) if len(hi) else 0} gaps "
                             f"packed {8 // lv.bits} to a byte (ceil(entries * {lv.bits} / 8) bytes), "  # type: ignore[operator]
                             f"got {nbytes} bytes")
        lengths = hi - lo
        contiguous = f is not LevelFormat.LOOSE_COMPRESSED
        idx = None if contiguous else ranges(lo, lengths)
        raw = c[:int(hi[-1]) if len(hi) else 0] if contiguous else c[idx]
        if f is LevelFormat.DELTA:
            top = (1 << lv.bits) - 1  # type: ignore[operator]
            if len(raw) and int(raw.max()) > top:
                bad = int(np.argmax(raw > top))
                raise ValueError(f"{_where(k, lv)}{where}: gap {int(raw[bad])} at crd[{bad}] exceeds "
                                 f"{top} = 2**{lv.bits} - 1")
            cc = delta_coordinates(raw, lengths)
            _check_bounds(k, lv, cc, o, o + e, where)
            parents, tie = len(c) if exact and not packed else int(hi[-1]) if len(hi) else 0, None
            continue
        cc = raw.astype(np.int64)
        _check_bounds(k, lv, cc, o, o + e, where)
        same = np.ones(max(len(cc) - 1, 0), dtype=bool)  # entries t, t+1 share a parent
        first = np.cumsum(lengths)[:-1]
        first = first[(first > 0) & (first < len(cc))]
        same[first - 1] = False
        if lv.ordered:
            _check_sorted(k, lv, cc, same, where)
        elif lv.unique:
            _check_unordered_unique(k, lv, cc, np.repeat(np.arange(len(lengths)), lengths), where)
        tie = None if lv.unique else same & (cc[1:] == cc[:-1])
        parents = len(c) if (exact or not contiguous) else (int(hi[-1]) if len(hi) else 0)
    return parents
