"""Elementwise operations and reductions on any formats, compiled by MLIR's sparsifier.

``add``/``subtract``/``multiply`` (numpy broadcasting of scalars and vectors), ``apply`` (a traced function of
the stored values), ``select`` (keep stored entries by a traced predicate), ``sum``/``max``/``min``/``prod``
(scipy semantics: implicit zeros take part), ``reduce`` (over stored entries only) and
``softmax``/``log_softmax`` (over stored entries; absent entries count as minus infinity). Each is one or a
few ``linalg.generic`` modules (:mod:`lowering.sparsifier.elementwise`) compiled once per structure
(:mod:`frontend.ops._elementwise_kernels`). Formats the sparsifier cannot read or whose storage has padding
(block fill, DIA, DELTA, skewed diagonals) are converted to CSR inside the op (a copy), so padding is never
an entry. The result format follows :func:`result_format`; ``out_format=`` (a format, a name or DSL text)
overrides it.
"""
from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from frontend.format import NamedFormats, TensorFormat, as_format
from frontend.storage._convert import coordinates
from frontend.storage._layout import is_padded
from frontend.storage._validate import validate_now
from frontend.tensor._tensor import Tensor
from lowering.contraction import TensorSpec
from lowering.miscompiles import unsupported_levels
from lowering.scalar_fn import ScalarFn, exp, kind, logical_or, maximum, minimum, trace
from lowering.sparsifier import elementwise as build

from ._elementwise_fast import fast_binary, fast_rowsum, fast_softmax, merge_buffers, softmax_values
from ._elementwise_kernels import ElementwiseKernel, kernel_for, recorded_kernels
from ._kernel_cache import dense_tensor, row_major, spec_of
from ._operands import (
    check_cpu,
    elem_of,
    operand,
    out_width,
    promoted,
    result_package,
    to_caller_package,
    validate_sparse,
)
from ._prepared import default_sparse_format
from ._reroute import entry_format
from ._threads import resolve_threads

_SCALARS = (int, float, complex, np.number)


# ----- operands and formats ------------------------------------------------------------------------------------
def _tensor(x: Any, what: str) -> Tensor:
    t = operand(x, what)
    check_cpu(t, what)
    return t


def readable(t: Tensor) -> Tensor:
    """``t`` as the sparsifier reads it: row-major dense, or a sparse format without padding that MLIR encodes
    and compiles (others are converted, a copy: BSR/DIA/DELTA -> CSR, level sequences the sparsifier aborts on
    such as ``(i : dense, j : singleton)`` -> CSR, column-major dense -> row-major)."""
    fmt = t.tensor_format
    if row_major(fmt):
        return t
    if fmt.is_dense:
        return dense_tensor(np.ascontiguousarray(t.to_dense()))
    if unsupported_levels(fmt):
        return t.convert(tensor_format=entry_format(t.ndim))
    if is_padded(fmt) or fmt.mlir_support() != "sparsifier":
        return t.convert(tensor_format=default_sparse_format(fmt, t.ndim))
    return t


def result_format(formats: Sequence[TensorFormat], rank: int) -> tuple[TensorFormat, TensorFormat]:
    """(the format a sparse result is computed in, the format it is returned in) for the sparse operands'
    ``formats``: computed in the first one's family when MLIR can insert into it in order
    (:func:`frontend.ops._prepared.default_sparse_format`: CSR, CSC, DCSR, ...; else CSR), returned in the
    operands' common format when they all share one (COO+COO -> COO, DIA+DIA -> DIA, a conversion) and
    as computed otherwise (CSR+COO -> CSR, BSR+CSR -> CSR, CSC+CSR -> CSC)."""
    computed = default_sparse_format(formats[0], rank)
    if unsupported_levels(computed):  # a level sequence the sparsifier aborts on: CSR-like
        computed = entry_format(rank)
    same = all(f == formats[0] for f in formats) and formats[0].num_dimensions == rank
    return computed, formats[0] if same else computed


def _finish(result: Any, fmt: TensorFormat | None, package: str | None) -> Any:
    """``result`` (array or Tensor) in ``fmt`` (None: as it is), back in the callers' ``package``."""
    if fmt is not None:
        if isinstance(result, Tensor):
            if row_major(fmt):
                result = result.to_dense()
            elif result.tensor_format != fmt:
                result = result.convert(tensor_format=fmt)
        elif not row_major(fmt):
            result = Tensor.from_dense(result, fmt)
    return to_caller_package(result, package)


def _sparse_spec(fmt: TensorFormat, shape: tuple[int, ...], elem: str, tensors: Sequence[Tensor]) -> TensorSpec:
    w = out_width(tensors)
    return TensorSpec(fmt, shape, elem, w, w)


# ----- add, subtract, multiply ---------------------------------------------------------------------------------
def _broadcast(t: Tensor, shape: tuple[int, ...]) -> tuple[Tensor, tuple[int, ...]]:
    """``t`` without its broadcast (size-1) dimensions and the output dimensions it is indexed by."""
    off = len(shape) - t.ndim
    dims = tuple(off + d for d, e in enumerate(t.shape) if not (e == 1 and shape[off + d] != 1))
    if len(dims) == t.ndim:
        return t, dims
    arr = t.val if row_major(t.tensor_format) else t.to_dense()
    return dense_tensor(np.ascontiguousarray(np.asarray(arr).reshape([shape[d] for d in dims]))), dims


def _binary(op: str, name: str, a: Any, b: Any, out_format: Any) -> Any:
    objs = [x for x in (a, b) if not isinstance(x, _SCALARS)]
    if not objs:
        raise TypeError(f"{name} needs at least one array, sparse matrix or Tensor")
    first = _tensor(objs[0], "a" if objs[0] is a else "b")
    tensors = []
    for x, what in ((a, "a"), (b, "b")):
        if isinstance(x, _SCALARS):
            val = np.asarray(x)
            if np.iscomplexobj(val) and not np.iscomplexobj(np.empty(0, first.dtype)):
                raise TypeError(f"{name}: a complex scalar with a {np.dtype(first.dtype)} operand")
            tensors.append(dense_tensor(np.asarray(x, dtype=first.dtype)))
        else:
            tensors.append(first if x is objs[0] else _tensor(x, what))
    ta, tb = promoted(tensors)  # mixed dtypes: np.result_type (a cast copy of the other operand)
    try:
        shape = tuple(np.broadcast_shapes(ta.shape, tb.shape))
    except ValueError:
        raise ValueError(f"{name}: operands of shapes {ta.shape} and {tb.shape} do not broadcast") from None
    elem = elem_of([ta, tb], ["a", "b"])
    if op != "mul":  # a rank-0 operand beside a sparse one crashes the sparsifier: add/subtract a full array
        ta, tb = (dense_tensor(np.full(shape, t.val, dtype=t.dtype)) if t.ndim == 0 and shape else t
                  for t in (ta, tb))
    originals = [t.tensor_format for t in (ta, tb) if not row_major(t.tensor_format) and t.ndim == len(shape)]
    (ta, da), (tb, db) = _broadcast(readable(ta), shape), _broadcast(readable(tb), shape)
    sparse = [t for t in (ta, tb) if not row_major(t.tensor_format)]
    want = as_format(out_format)
    sparse_out = len(sparse) == 2 or (len(sparse) == 1 and op == "mul")
    if sparse_out:
        computed, final = result_format([t.tensor_format for t in sparse] if not originals else originals, len(shape))
        if want is not None and not want.is_dense and default_sparse_format(want, len(shape)) == want:
            computed = want
        out = _sparse_spec(computed, shape, elem, sparse)
        full = tuple(range(len(shape)))
        merged = _merged(op, ta, tb, computed, elem) if da == db == full and len(sparse) == 2 else None
        if merged is not None:
            return _finish(merged, want if want is not None else final, result_package(objs))
    else:
        final = None
        out = TensorSpec(None, shape, elem)
    specs = [spec_of(ta, elem), spec_of(tb, elem)]
    key = ("binary", op, specs[0].key(), specs[1].key(), da, db, out.key())
    kernel = kernel_for(key, lambda: build.binary_module(op, specs, (da, db), out), specs, out)
    return _finish(kernel([ta, tb]), want if want is not None else final, result_package(objs))


def _merged(op: str, ta: Tensor, tb: Tensor, computed: TensorFormat, elem: str) -> Tensor | None:
    """``ta op tb`` for two CSR (or two CSC) operands computed in that format: the one-pass row merge
    (:func:`frontend.ops._elementwise_fast.merge_buffers`); None when it does not apply."""
    fmt = ta.tensor_format
    if (fmt not in (NamedFormats.CSR, NamedFormats.CSC) or tb.tensor_format != fmt or computed != fmt
            or kind(elem) not in ("float", "int")):
        return None
    validate_sparse([ta, tb])
    if op == "mul":  # the intersection kernel is not bounds-safe: NumPy index buffers checked on every call
        validate_now(ta)
        validate_now(tb)
    a_pos, a_crd, b_pos, b_crd = (np.asarray(x) for x in (ta._pos[1], ta._crd[1], tb._pos[1], tb._crd[1]))
    a_val, b_val = np.asarray(ta.val), np.asarray(tb.val)
    if not (a_val.flags.c_contiguous and b_val.flags.c_contiguous):
        return None
    c_pos, c_crd, c_val = merge_buffers(op, (a_pos, a_crd, a_val), (b_pos, b_crd, b_val), elem, kind(elem),
                                        out_width([ta, tb]), ta.shape[1] if fmt == NamedFormats.CSR else ta.shape[0])
    return Tensor(fmt, ta.shape, [None, c_pos], [None, c_crd], c_val, index_type=ta.index_type or tb.index_type,
                  package="numpy")


def add(a: Any, b: Any, *, out_format: Any = None) -> Any:
    """``a + b``. Sparse + sparse is sparse (the union of the patterns); with a dense operand, a scalar or
    a broadcast vector the result is dense. Results come back in the operands' package."""
    fast = fast_binary("add", a, b) if out_format is None else None
    return fast if fast is not None else _binary("add", "add", a, b, out_format)


def subtract(a: Any, b: Any, *, out_format: Any = None) -> Any:
    """``a - b``, with :func:`add`'s patterns."""
    fast = fast_binary("sub", a, b) if out_format is None else None
    return fast if fast is not None else _binary("sub", "subtract", a, b, out_format)


def multiply(a: Any, b: Any, *, out_format: Any = None) -> Any:
    """``a * b`` elementwise. Sparse * sparse is the intersection of the patterns; sparse * dense (scalars and
    broadcast vectors included: ``multiply(A, d[:, None])`` scales rows) keeps the sparse operand's pattern."""
    fast = fast_binary("mul", a, b) if out_format is None else None
    return fast if fast is not None else _binary("mul", "multiply", a, b, out_format)


# ----- apply and select ----------------------------------------------------------------------------------------
def _arity(fn: Callable, rank: int, what: str) -> int:
    try:
        params = [p for p in inspect.signature(fn).parameters.values()
                  if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) and p.default is p.empty]
    except (TypeError, ValueError):
        return 1
    if len(params) not in (1, 1 + rank):
        raise TypeError(f"{what} takes fn(v) or fn(v, {', '.join('ijkl'[:rank])}), got {len(params)} parameters")
    return len(params)


def _mapped(kind: str, a: Any, fn: Callable, out_format: Any) -> Any:
    t0 = _tensor(a, "a")
    t = readable(t0)
    elem = elem_of([t], ["a"])
    nargs = _arity(fn, t.ndim, kind)
    traced = trace(fn, nargs, elem)
    fmt = t.tensor_format
    want = as_format(out_format)
    if nargs > 1 and kind == "select":
        sel_computed, sel_final = result_format([t0.tensor_format], t.ndim)
        kept = _select_with_coordinates(t, traced, elem).convert(tensor_format=sel_computed)
        return _finish(kept, want if want is not None else sel_final, result_package([a]))
    if nargs > 1:
        res = _with_coordinates(t, traced, elem)
        final = None if row_major(fmt) or t0.tensor_format == fmt else t0.tensor_format
        return _finish(res, want if want is not None else final, result_package([a]))
    if row_major(fmt) and kind == "apply":
        out, final = TensorSpec(None, t.shape, elem), None
    else:
        computed, final = result_format([t0.tensor_format], t.ndim)
        out = _sparse_spec(computed, t.shape, elem, [t])
    spec = spec_of(t, elem)
    key = (kind, spec.key(), out.key(), traced)
    builder = build.unary_module if kind == "apply" else build.select_module
    kernel = kernel_for(key, lambda: builder(spec, out, traced), [spec], out)
    return _finish(kernel([t]), want if want is not None else final, result_package([a]))


def _with_coordinates(t: Tensor, fn: ScalarFn, elem: str) -> Any:
    """``fn(v, i, j, ...)`` on the stored entries of ``t`` (unpadded): a 1-D kernel over the values and the
    entries' coordinates; the result shares ``t``'s index buffers."""
    dense = row_major(t.tensor_format)
    if dense:
        coords = [c.ravel() for c in np.indices(t.shape)]
        vals = np.ascontiguousarray(np.asarray(t.val).ravel())
    else:
        dims, _ = coordinates(t)
        coords, vals = list(dims), np.ascontiguousarray(t.val)
    dtype = np.dtype(t.dtype)
    args = [dense_tensor(vals)] + [dense_tensor(np.ascontiguousarray(c, dtype=dtype)) for c in coords]
    spec = TensorSpec(None, (0,), elem)
    key = ("values", elem, fn)
    kernel = kernel_for(key, lambda: build.values_module(elem, fn), [spec] * len(args), spec)
    out = np.asarray(kernel(args))
    if dense:
        return out.reshape(t.shape)
    return Tensor(t.tensor_format, t.shape, t._pos, t._crd, out, index_type=t.index_type, package="numpy")


def _select_with_coordinates(t: Tensor, fn: ScalarFn, elem: str) -> Tensor:
    """The stored entries of ``t`` (unpadded) on which ``fn(v, i, j, ...)`` is nonzero, as a COO Tensor: the
    predicate runs as the coordinate kernel of :func:`_with_coordinates`, the kept entries are gathered."""
    if row_major(t.tensor_format):
        t = Tensor.from_dense(np.asarray(t.to_dense()), default_sparse_format(t.tensor_format, t.ndim))
    flags = _with_coordinates(t, fn, elem)
    keep = np.asarray(flags.val) != 0
    dims, _ = coordinates(t)
    kept = [d[keep] for d in dims]
    order = np.lexsort(kept[::-1])  # COO order: lexicographic by coordinates
    vals = np.ascontiguousarray(np.asarray(t.val)[keep][order])
    n = int(keep.sum())
    rank = t.ndim
    coo = NamedFormats.COO if rank == 2 else TensorFormat.parse(
        f"({', '.join('ijklmn'[:rank])}) -> ({'i : compressed(nonunique), ' if rank > 1 else 'i : compressed'}"
        + ", ".join(f"{c} : singleton" for c in "jklmn"[:rank - 1]) + ")")
    crd = [np.ascontiguousarray(d[order]) for d in kept]
    return Tensor.from_buffers(coo, t.shape, pos=[np.array([0, n])] + [None] * (rank - 1), crd=crd, values=vals)


def apply(a: Any, fn: Callable, *, out_format: Any = None) -> Any:
    """``fn`` on the stored values only (implicit zeros and padding stay out), traced into MLIR like semiring
    functions: ``fn(v)`` or ``fn(v, i, j)`` (coordinates as values of the dtype). Use ``where(cond, x, y)``,
    comparisons, ``maximum``/``minimum``, ``exp``/``log`` (from :mod:`frontend.ops`) inside ``fn``."""
    return _mapped("apply", a, fn, out_format)


def select(a: Any, predicate: Callable, *, out_format: Any = None) -> Any:
    """The stored entries of ``a`` on which ``predicate(v)`` (or ``predicate(v, i, j)``) is true; sparse."""
    return _mapped("select", a, predicate, out_format)


# ----- reductions -------------------------------------------------------------------------------------------------
def _axes(axis: Any, ndim: int) -> tuple[int, ...]:
    if axis is None:
        return tuple(range(ndim))
    axes = (axis,) if isinstance(axis, (int, np.integer)) else tuple(axis)
    out = []
    for ax in axes:
        if not -ndim <= ax < ndim:
            raise ValueError(f"axis {ax} is out of range for a tensor of {ndim} dimensions")
        out.append(int(ax) % ndim)
    return tuple(sorted(set(out)))


def _reduce_stored(t: Tensor, keep: tuple[int, ...], monoid: ScalarFn | str, identity: Any, elem: str) -> np.ndarray:
    spec = spec_of(t, elem)
    out = TensorSpec(None, tuple(t.shape[d] for d in keep), elem)
    key = ("reduce", spec.key(), keep, monoid, repr(identity))
    kernel = kernel_for(key, lambda: build.reduce_module(spec, keep, out, monoid, identity), [spec], out)
    return np.asarray(kernel([t]))


def _reduced(res: np.ndarray, a: Any) -> Any:
    """A reduction's dense result in the caller's package (a full reduction of a Tensor: a NumPy scalar)."""
    package = result_package([a])
    if package is None and res.ndim == 0:
        return res[()]
    return to_caller_package(res, package)


def _extreme(dtype: np.dtype, sign: int) -> Any:
    if dtype.kind == "f":
        return sign * float("inf")
    if dtype.kind in "iu":
        info = np.iinfo(dtype)
        return info.max if sign > 0 else info.min
    raise TypeError(f"max/min are not defined for {dtype} values")


_MONOIDS: dict[str, tuple[Callable[[Any, Any], Any], Callable[[np.dtype], Any]]] = {
    "plus": (lambda x, y: x + y, lambda d: 0),
    "times": (lambda x, y: x * y, lambda d: 1),
    "max": (maximum, lambda d: _extreme(d, -1)),
    "min": (minimum, lambda d: _extreme(d, 1)),
    "any": (logical_or, lambda d: 0),
}


def _reduction(a: Any, axis: Any) -> tuple[Tensor, tuple[int, ...], tuple[int, ...], str]:
    t = readable(_tensor(a, "a"))
    axes = _axes(axis, t.ndim)
    return t, axes, tuple(d for d in range(t.ndim) if d not in axes), elem_of([t], ["a"])


def _scipy_reduction(name: str, a: Any, axis: Any) -> Any:
    """``sum``/``max``/``min``/``prod`` with implicit zeros taking part (scipy's semantics)."""
    t, axes, keep, elem = _reduction(a, axis)
    if name == "sum":
        return _reduced(_reduce_stored(t, keep, "add", 0, elem), a)
    n = int(np.prod([t.shape[d] for d in axes]))
    if n == 0:
        raise ValueError(f"{name} of an empty axis (shape {t.shape}, axis {axis})")
    fn, ident = _MONOIDS[{"max": "max", "min": "min", "prod": "times"}[name]]
    dtype = np.dtype(t.dtype)
    stored = _reduce_stored(t, keep, trace(fn, 2, elem), ident(dtype), elem)
    count = _reduce_stored(t, keep, "count", 0, elem)
    full = count.real >= n
    if name == "prod":
        res = np.where(full, stored, np.zeros_like(stored))
    else:
        res = np.where(full, stored, (np.maximum if name == "max" else np.minimum)(stored, np.zeros_like(stored)))
    return _reduced(np.asarray(res, dtype=dtype), a)


def sum(a: Any, axis: Any = None) -> Any:  # noqa: A001 - numpy/scipy's name
    """The sum along ``axis`` (None: all; an int or a tuple), as scipy's ``A.sum(axis)``: a dense array."""
    fast = fast_rowsum(a, axis)
    return fast if fast is not None else _scipy_reduction("sum", a, axis)


def max(a: Any, axis: Any = None) -> Any:  # noqa: A001 - numpy/scipy's name
    """The maximum along ``axis``; implicit zeros take part (scipy's ``A.max(axis)``)."""
    return _scipy_reduction("max", a, axis)


def min(a: Any, axis: Any = None) -> Any:  # noqa: A001 - numpy/scipy's name
    """The minimum along ``axis``; implicit zeros take part (scipy's ``A.min(axis)``)."""
    return _scipy_reduction("min", a, axis)


def prod(a: Any, axis: Any = None) -> Any:
    """The product along ``axis``; implicit zeros take part (0 unless every entry is stored)."""
    return _scipy_reduction("prod", a, axis)


def reduce(a: Any, axis: Any, op: str | Callable[[Any, Any], Any], identity: Any = None) -> Any:
    """The stored entries reduced along ``axis`` with ``op``: ``"plus"``, ``"times"``, ``"min"``, ``"max"``,
    ``"any"`` or a traced function of two values (with ``identity``). Positions without stored entries
    hold the identity."""
    t, _, keep, elem = _reduction(a, axis)
    if isinstance(op, str):
        if op not in _MONOIDS:
            raise ValueError(f"unknown monoid {op!r} (named: {', '.join(_MONOIDS)})")
        fn, ident = _MONOIDS[op]
        identity = ident(np.dtype(t.dtype)) if identity is None else identity
    else:
        if identity is None:
            raise TypeError("reduce with a function needs its identity")
        fn = op
    monoid: ScalarFn | str = "add" if op == "plus" else trace(fn, 2, elem)
    return _reduced(_reduce_stored(t, keep, monoid, identity, elem), a)


# ----- softmax ------------------------------------------------------------------------------------------------
def _sampled(t: Tensor, v: np.ndarray, keep: tuple[int, ...], fn: ScalarFn, out: TensorSpec, elem: str) -> Tensor:
    spec, vt = spec_of(t, elem), dense_tensor(np.ascontiguousarray(v))
    vspec = spec_of(vt, elem)
    key = ("sampled", spec.key(), vspec.key(), keep, out.key(), fn)
    kernel = kernel_for(key, lambda: build.sampled_module(spec, vspec, keep, out, fn), [spec, vspec], out)
    return kernel([t, vt])


def _row_softmax(t: Tensor, axis: int, logarithm: bool, elem: str, threads: Any) -> Tensor | None:
    """Softmax along ``axis`` of a 2-D sparse ``t`` as one row kernel (:mod:`lowering.kernels.row_softmax`):
    on CSR rows (``axis=1``; other unpadded formats are converted to CSR) or CSC columns (``axis=0``);
    None for other cases (the four-kernel sparsifier path runs them). The result shares ``t``'s index
    buffers (same pattern) and owns new values."""
    fmt = t.tensor_format
    want = NamedFormats.CSR if axis == 1 else NamedFormats.CSC
    if t.ndim != 2 or row_major(fmt) or elem not in ("f32", "f64"):
        return None
    if fmt != want:
        if axis != 1:
            return None
        t = t.convert(tensor_format=want)
    pos = np.asarray(t._pos[1])
    vals = np.asarray(t.val)
    if pos.dtype not in (np.int32, np.int64) or not vals.flags.c_contiguous:
        return None
    n = resolve_threads(threads)
    out = softmax_values(pos, vals, logarithm, None if threads is None or threads == "auto" else n)
    return Tensor(t.tensor_format, t.shape, t._pos, t._crd, out, index_type=t.index_type, package="numpy")


def _softmax(a: Any, axis: int, logarithm: bool, out_format: Any, threads: Any = None) -> Any:
    t0 = _tensor(a, "a")
    t = readable(t0)
    axes = _axes(axis, t.ndim)
    if len(axes) != 1:
        raise ValueError(f"softmax needs one axis, got {axis!r}")
    keep = tuple(d for d in range(t.ndim) if d not in axes)
    elem = elem_of([t], ["a"])
    if kind(elem) != "float":
        raise TypeError(f"softmax needs a real floating-point dtype, got {np.dtype(t.dtype)}")
    dtype = np.dtype(t.dtype)
    if row_major(t.tensor_format):
        computed, final = default_sparse_format(NamedFormats.Dense(t.ndim), t.ndim), None
    else:
        computed, final = result_format([t0.tensor_format], t.ndim)
    want = as_format(out_format)
    fused = _row_softmax(t, axes[0], logarithm, elem, threads)
    if fused is not None:
        return _finish(fused, want if want is not None else final, result_package([a]))
    out = _sparse_spec(computed, t.shape, elem, [t])
    m = _reduce_stored(t, keep, trace(maximum, 2, elem), _extreme(dtype, -1), elem)
    e = _sampled(t, m, keep, trace(lambda x, y: exp(x - y), 2, elem), out, elem)
    s = _reduce_stored(e, keep, "add", 0, elem)
    if logarithm:
        with np.errstate(divide="ignore", invalid="ignore"):
            lse = (m + np.log(s)).astype(dtype)
        res = _sampled(t, lse, keep, trace(lambda x, y: x - y, 2, elem), out, elem)
    else:
        res = _sampled(e, s, keep, trace(lambda x, y: x / y, 2, elem), out, elem)
    return _finish(res, want if want is not None else final, result_package([a]))


def softmax(a: Any, axis: int = -1, *, out_format: Any = None, threads: Any = None) -> Any:
    """``exp(a - max) / sum(exp(a - max))`` along ``axis`` over the stored entries (absent entries count as
    minus infinity, as in ``torch.sparse.softmax``); the result has ``a``'s pattern, an empty row stays empty.
    CSR along rows / CSC along columns (SciPy objects or Tensors, f32/f64, no ``out_format=``/``threads=``)
    take a lean path straight to the row kernel (:func:`frontend.ops._elementwise_fast.fast_softmax`).

    Along the rows of CSR (and of formats converted to CSR) or the columns of CSC it is one kernel (max,
    exp-sum, scale per row) on ``threads`` row chunks (None/``"auto"``: every core from
    :data:`frontend.ops._elementwise_fast.ROW_PARALLEL_MIN` entries); other cases run four sparsifier kernels."""
    fast = fast_softmax(a, axis, False) if out_format is None and threads is None else None
    return fast if fast is not None else _softmax(a, axis, False, out_format, threads)


def log_softmax(a: Any, axis: int = -1, *, out_format: Any = None, threads: Any = None) -> Any:
    """``a - max - log(sum(exp(a - max)))`` along ``axis`` over the stored entries (see :func:`softmax`)."""
    fast = fast_softmax(a, axis, True) if out_format is None and threads is None else None
    return fast if fast is not None else _softmax(a, axis, True, out_format, threads)


def kernels_of(op: Callable[..., Any], *args: Any, **kwargs: Any) -> list[ElementwiseKernel]:
    """The compiled kernels ``op(*args, **kwargs)`` runs (it runs the call once), for ``print_mlir``."""
    if op not in OPERATIONS:
        raise TypeError(f"not an elementwise operation: {getattr(op, '__name__', op)!r}")
    with recorded_kernels() as got:
        op(*args, **kwargs)
    return got


__all__ = ["add", "apply", "log_softmax", "max", "min", "multiply", "prod", "reduce",
           "select", "softmax", "subtract", "sum"]

#: The public elementwise operations (``print_mlir(op, *operands, **options)`` takes any of them).
OPERATIONS = frozenset({add, apply, log_softmax, max, min, multiply, prod, reduce, select, softmax, subtract, sum})
