"""Elementwise operations and reductions on any formats, compiled by MLIR's sparsifier.

``add``/``subtract``/``multiply`` (NumPy's broadcasting between any operands, NumPy's dtype promotion),
``apply`` (a traced function of the stored values), ``select`` (keep stored entries by a traced predicate),
``sum``/``max``/``min``/``prod``/``mean`` (NumPy's semantics: implicit zeros take part, any axes, ``keepdims``,
``dtype``, NumPy's accumulator and result dtypes), ``reduce`` (over stored entries only) and
``softmax``/``log_softmax`` (over stored entries; absent entries count as minus infinity). Each is one or a
few ``linalg.generic`` modules (:mod:`lowering.sparsifier.elementwise`) compiled once per structure
(:mod:`frontend.ops._elementwise_kernels`). Formats the sparsifier cannot read or whose storage has padding
(block fill, DIA, DELTA, skewed diagonals) are converted to CSR inside the op (a copy), so padding is never
an entry. The result format follows :func:`result_format`; ``out_format=`` (a format, a name or DSL text)
overrides it.
"""
from __future__ import annotations

import builtins
import inspect
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from frontend.format import NamedFormats, TensorFormat, as_format
from frontend.storage._compact import huge, run_compacted
from frontend.storage._convert import coordinates
from frontend.storage._layout import is_padded, to_host
from frontend.tensor._tensor import Tensor
from lowering.contraction import TensorSpec
from lowering.miscompiles import unsupported_levels
from lowering.scalar_fn import ScalarFn, exp, kind, logical_or, maximum, minimum, trace
from lowering.sparsifier import elementwise as build

from ._elementwise_fast import fast_binary, fast_rowsum, fast_softmax, merge_buffers, softmax_values
from ._elementwise_kernels import ElementwiseKernel, kernel_for, recorded_kernels
from ._kernel_cache import dense_tensor, entries_tensor, row_major, spec_of
from ._operands import (
    ELEMS,
    _with_values,
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


def _level_dims(fmt: TensorFormat) -> list[int] | None:
    """The dimension each level of ``fmt`` stores, in level order; None when a level stores an expression."""
    out = []
    for lv in fmt.levels:
        if lv.expr not in fmt.dimensions:
            return None
        out.append(fmt.dimension_index(lv.expr))
    return out


def _compacted(fn: Callable[..., Any], objs: Sequence[Any], axes: Sequence[int] | None, out_format: Any,
               name: str) -> Any:
    """``fn`` on hypersparse operands of one shape, run on a compacted problem (:mod:`frontend.storage._compact`:
    memory and time follow the stored entries), in the callers' package; None when no operand is hypersparse.
    ``axes``: the reduced axes (None: an elementwise result of the operands' shape)."""
    if not huge(objs):
        return None
    tensors = [_tensor(x, "ab"[k]) for k, x in enumerate(objs)]
    if len({t.shape for t in tensors}) != 1:
        return None
    letters = "abcdefghijklmnop"[:tensors[0].ndim]
    out = "".join(c for d, c in enumerate(letters) if axes is None or d not in axes)
    want = as_format(out_format) if out_format is not None else tensors[0].tensor_format
    got = run_compacted(fn, [(t, letters) for t in tensors], out, want, name, entry_format)
    if got is None:
        return None
    if isinstance(got, Tensor):
        return to_caller_package(got, result_package(objs))
    return _reduced(np.asarray(got), objs[0])


def readable(t: Tensor) -> Tensor:
    """``t`` as the sparsifier reads it: row-major dense, or a sparse format without padding that MLIR encodes
    and compiles (others are converted, a copy: BSR/DIA/DELTA -> CSR, level sequences the sparsifier aborts on
    such as ``(i : dense, j : singleton)`` -> CSR, level orders other than the dimensions' of three or more
    dimensions -> the CSR-like format, column-major dense -> row-major)."""
    fmt = t.tensor_format
    if row_major(fmt):
        return t
    if fmt.is_dense:
        return dense_tensor(np.ascontiguousarray(t.to_dense()))
    if unsupported_levels(fmt) or (t.ndim > 2 and _level_dims(fmt) != list(range(t.ndim))):
        return t.convert(tensor_format=entry_format(t.ndim))  # (the sparsifier loses permuted n-D level orders)
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


def _finish(result: Any, fmt: TensorFormat | None, package: str | None, dtype: np.dtype | None = None) -> Any:
    """``result`` (array or Tensor) in ``fmt`` (None: as it is), back in the callers' ``package``; its values
    cast to ``dtype`` when given (results computed in a wider type)."""
    if dtype is not None:
        result = _astype(result, dtype) if isinstance(result, Tensor) else np.asarray(result).astype(dtype)
    if fmt is not None:
        if isinstance(result, Tensor):
            if row_major(fmt):
                result = result.to_dense()
            elif result.tensor_format != fmt:
                result = result.convert(tensor_format=fmt)
        elif not row_major(fmt):
            result = Tensor.from_dense(result, fmt)
    if (package == "sparse" and isinstance(result, Tensor) and result.ndim > 2 and result.is_sparse
            and _level_dims(result.tensor_format) != list(range(result.ndim))):
        result = result.convert(tensor_format=NamedFormats.COO(result.ndim))  # pydata's n-D COO (e.g. from GCXS)
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
    arr = np.asarray(t.val if row_major(t.tensor_format) else t.to_dense()).reshape([shape[d] for d in dims])
    return dense_tensor(arr if arr.flags.c_contiguous else arr.copy()), dims  # (ascontiguousarray makes 0-d 1-d)


def broadcast_entries(t: Tensor, shape: tuple[int, ...]) -> Tensor:
    """Sparse ``t`` broadcast to ``shape`` (NumPy's rules) in the CSR-like format of that rank (new buffers):
    each stored entry repeated along the broadcast dimensions (missing leading ones and size-1 ones), so only
    stored entries are repeated and the sparsifier sees operands of one shape."""
    dims, vals = coordinates(t)
    off = len(shape) - t.ndim
    spread = [d for d in range(len(shape)) if d < off or (t.shape[d - off] == 1 and shape[d] != 1)]
    reps = int(np.prod([shape[d] for d in spread]))
    grid = np.indices([shape[d] for d in spread]).reshape(len(spread), reps)
    entry = np.repeat(np.arange(len(vals)), reps)
    where = np.tile(np.arange(reps), len(vals))
    coords = [grid[spread.index(d)][where] if d in spread else dims[d - off][entry] for d in range(len(shape))]
    return entries_tensor(entry_format(len(shape)), shape, coords, np.asarray(vals)[entry])


def _broadcast_to(t: Tensor, shape: tuple[int, ...], sparse_result: bool) -> Tensor:
    """An operand of a binary operation beside a sparse one, of the result's ``shape``: a sparse operand's
    stored entries repeated (:func:`broadcast_entries`); a dense one repeated when the result is dense (it
    is as large); a rank-0 dense one (a scalar) or one of the shape as it is."""
    if t.shape == shape or (t.ndim == 0 and sparse_result):
        return t
    if t.is_sparse:
        return broadcast_entries(t, shape)
    if not row_major(t.tensor_format):
        t = dense_tensor(np.ascontiguousarray(t.to_dense()))
    if sparse_result and int(np.prod(t.shape)) == 1:
        return dense_tensor(np.asarray(t.val).reshape(()).copy())
    if sparse_result:
        return t
    return dense_tensor(np.ascontiguousarray(np.broadcast_to(np.asarray(t.val), shape)))


def _binary(op: str, name: str, a: Any, b: Any, out_format: Any) -> Any:
    objs = [x for x in (a, b) if not isinstance(x, _SCALARS)]
    if len(objs) == 2 and huge(objs):
        routed = _compacted(lambda x, y: _binary(op, name, x, y, out_format), objs, None, out_format, name)
        if routed is not None:
            return routed
    if not objs:
        raise TypeError(f"{name} needs at least one array, sparse matrix or Tensor")
    first = _tensor(objs[0], "a" if objs[0] is a else "b")
    tensors = []
    for x, what in ((a, "a"), (b, "b")):
        if isinstance(x, _SCALARS):  # NumPy's weak scalars: int8 + 1 is int8, int32 + 2.5 is float64
            tensors.append(dense_tensor(np.asarray(x, dtype=np.result_type(np.dtype(first.dtype), x))))
        else:
            tensors.append(first if x is objs[0] else _tensor(x, what))
    narrow = np.result_type(*(np.dtype(t.dtype) for t in tensors))
    if narrow.kind in "biu" and narrow not in ELEMS:  # computed in int64 (wrapping as NumPy), cast back
        if narrow.kind == "b" and op == "sub":
            raise TypeError(f"{name}: NumPy's boolean subtract is not supported; use logical_xor or cast to int")
        tensors = [_astype(t, np.dtype(np.int64)) for t in tensors]
    ta, tb = promoted(tensors)  # mixed dtypes: np.result_type (a cast copy of the other operand)
    back = narrow if narrow.kind in "biu" and narrow not in ELEMS else None
    try:
        shape = tuple(np.broadcast_shapes(ta.shape, tb.shape))
    except ValueError:
        raise ValueError(f"{name}: operands of shapes {ta.shape} and {tb.shape} do not broadcast") from None
    elem = elem_of([ta, tb], ["a", "b"])
    if op != "mul":  # a rank-0 operand beside a sparse one crashes the sparsifier: add/subtract a full array
        ta, tb = (dense_tensor(np.full(shape, t.val, dtype=t.dtype)) if t.ndim == 0 and shape else t
                  for t in (ta, tb))
    originals = [t.tensor_format for t in (ta, tb) if not row_major(t.tensor_format) and t.ndim == len(shape)]
    n_sparse = builtins.sum(1 for t in (ta, tb) if t.is_sparse)
    if n_sparse and ta.shape != tb.shape:  # the sparsifier takes broadcasting maps beside a sparse operand badly
        ta, tb = (_broadcast_to(t, shape, n_sparse == 2 or op == "mul") for t in (ta, tb))
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
            return _finish(merged, want if want is not None else final, result_package(objs), back)
    else:
        final = None
        out = TensorSpec(None, shape, elem)
    specs = [spec_of(ta, elem), spec_of(tb, elem)]
    key = ("binary", op, specs[0].key(), specs[1].key(), da, db, out.key())
    kernel = kernel_for(key, lambda: build.binary_module(op, specs, (da, db), out), specs, out)
    return _finish(kernel([ta, tb]), want if want is not None else final, result_package(objs), back)


def _merged(op: str, ta: Tensor, tb: Tensor, computed: TensorFormat, elem: str) -> Tensor | None:
    """``ta op tb`` for two CSR (or two CSC) operands computed in that format: the one-pass row merge
    (:func:`frontend.ops._elementwise_fast.merge_buffers`); None when it does not apply."""
    fmt = ta.tensor_format
    if (fmt not in (NamedFormats.CSR, NamedFormats.CSC) or tb.tensor_format != fmt or computed != fmt
            or kind(elem) not in ("float", "int")):
        return None
    validate_sparse([ta, tb])
    a_pos, a_crd, b_pos, b_crd = (np.asarray(x) for x in (ta._pos[1], ta._crd[1], tb._pos[1], tb._crd[1]))
    a_val, b_val = np.asarray(ta.val), np.asarray(tb.val)
    if not (a_val.flags.c_contiguous and b_val.flags.c_contiguous):
        return None
    w = out_width([ta, tb])
    c_pos, c_crd, c_val = merge_buffers(op, (a_pos, a_crd, a_val), (b_pos, b_crd, b_val), elem, kind(elem),
                                        w, ta.shape[1] if fmt == NamedFormats.CSR else ta.shape[0])
    return Tensor(fmt, ta.shape, [None, c_pos], [None, c_crd], c_val, index_type=np.dtype(f"int{w}"),
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
        kept = _select_with_coordinates(t, traced, elem, sel_computed)
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


def _select_with_coordinates(t: Tensor, fn: ScalarFn, elem: str, fmt: TensorFormat) -> Tensor:
    """The stored entries of ``t`` (unpadded) on which ``fn(v, i, j, ...)`` is nonzero, in ``fmt``: the
    predicate runs as the coordinate kernel of :func:`_with_coordinates`, the kept entries are gathered."""
    if row_major(t.tensor_format):
        t = Tensor.from_dense(np.asarray(t.to_dense()), default_sparse_format(t.tensor_format, t.ndim))
    flags = _with_coordinates(t, fn, elem)
    keep = np.asarray(flags.val) != 0
    dims, _ = coordinates(t)
    return entries_tensor(fmt, t.shape, [d[keep] for d in dims], np.asarray(t.val)[keep])


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


def _reduces_in_order(t: Tensor, keep: tuple[int, ...]) -> bool:
    """Whether the sparsifier reduces ``t`` (sparse) over the dimensions not in ``keep`` with a custom monoid
    correctly: in level order the kept dimensions all come before the reduced ones or all after them (a
    kept dimension between reduced ones restarts the accumulator of ``sparse_tensor.reduce``)."""
    if t.ndim <= 2 or row_major(t.tensor_format):
        return True
    dims = _level_dims(t.tensor_format)
    if dims is None:
        return False
    kept = [d in keep for d in dims]
    changes = builtins.sum(1 for x, y in zip(kept, kept[1:]) if x != y)
    return changes <= 1


def _kept_by_reduced(t: Tensor, keep: tuple[int, ...], axes: tuple[int, ...]) -> Tensor:
    """``t``'s stored entries as a CSR matrix of (kept coordinates flattened) x (reduced ones flattened): a
    reduction along its rows is ``t``'s reduction over ``axes`` (a copy of the entries)."""
    dims, vals = coordinates(t)
    rows = int(np.prod([t.shape[d] for d in keep]))
    cols = int(np.prod([t.shape[d] for d in axes]))
    r = np.ravel_multi_index(tuple(dims[d] for d in keep), [t.shape[d] for d in keep]) if keep else \
        np.zeros(len(vals), np.int64)
    c = np.ravel_multi_index(tuple(dims[d] for d in axes), [t.shape[d] for d in axes])
    order = np.lexsort((c, r))
    pos = np.zeros(rows + 1, np.int64)
    np.cumsum(np.bincount(r, minlength=rows), out=pos[1:])
    return Tensor.from_buffers(NamedFormats.CSR, (rows, cols), pos=[None, pos],
                               crd=[None, np.ascontiguousarray(c[order])],
                               values=np.ascontiguousarray(np.asarray(vals)[order]))


#: dtypes NumPy's ``sum``/``prod`` accumulate small integers and booleans in (the platform integers)
_SIGNED, _UNSIGNED = np.dtype(np.int_), np.dtype(np.uint)
_NAMES = {"max": "maximum", "min": "minimum"}


def _result_dtype(name: str, dtype: np.dtype, given: Any) -> np.dtype:
    """NumPy's result dtype of reduction ``name`` of ``dtype`` values (``given``: the ``dtype=`` keyword):
    ``sum``/``prod`` of booleans and signed integers narrower than the platform integer give int64,
    of narrower unsigned ones uint64; ``mean`` of integers float64; ``max``/``min`` keep the dtype."""
    if given is not None:
        return np.dtype(given)
    if name in ("sum", "prod"):
        if dtype.kind == "b" or (dtype.kind == "i" and dtype.itemsize < _SIGNED.itemsize):
            return _SIGNED
        if dtype.kind == "u" and dtype.itemsize < _UNSIGNED.itemsize:
            return _UNSIGNED
    if name == "mean" and dtype.kind in "biu":
        return np.dtype(np.float64)
    return dtype


def _compute_dtype(name: str, dtype: np.dtype) -> np.dtype:
    """The kernel dtype reduction ``name`` of ``dtype`` values runs in (result bits identical after a cast):
    int64 for every integer and boolean (two's complement sums and products wrap as uint64 does; narrower
    values compare the same widened; uint64 compares after its sign bit is flipped), float32 for half
    floats, the dtype itself for the kernels' types."""
    if dtype in ELEMS:
        return dtype
    if dtype.kind in "biu":
        return np.dtype(np.int64)
    if dtype.kind == "f" and dtype.itemsize < 4:
        return np.dtype(np.float32)
    raise TypeError(f"{name} of {dtype} values is not supported (supported: booleans, integers, "
                    f"{', '.join(str(d) for d in ELEMS)})")


_SIGN = np.uint64(1 << 63)


def _astype(t: Tensor, dtype: np.dtype) -> Tensor:
    """``t`` with its values cast to ``dtype`` (a copy over the same index buffers; ``t`` when they are)."""
    if np.dtype(t.dtype) == dtype:
        return t
    return _with(t, np.asarray(to_host(t.val)).astype(dtype))


def _with(t: Tensor, vals: np.ndarray) -> Tensor:
    """``t``'s index buffers (a row-major dense ``t``: its shape) with the values ``vals``."""
    return dense_tensor(vals) if row_major(t.tensor_format) else _with_values(t, vals)


def _in_dtype(t: Tensor, name: str, dtype: np.dtype) -> tuple[Tensor, np.dtype]:
    """``t`` with values of the dtype ``name`` computes in, from values cast to ``dtype`` (a copy unless they
    already are), and that compute dtype."""
    compute = _compute_dtype(name, dtype)
    if name in ("max", "min") and dtype == np.uint64:  # order-preserving: unsigned order as signed order
        return _with(t, (np.asarray(to_host(t.val)).astype(dtype) ^ _SIGN).view(np.int64)), compute
    return _astype(_astype(t, dtype), compute), compute


def _from_compute(res: np.ndarray, name: str, dtype: np.dtype) -> np.ndarray:
    """A reduction's result computed by :func:`_in_dtype` back in ``dtype``."""
    if name in ("max", "min") and dtype == np.uint64:
        return res.view(np.uint64) ^ _SIGN
    return res.astype(dtype, copy=False)


def _empty_reduction(name: str, shape: tuple[int, ...], n: int, dtype: np.dtype) -> np.ndarray:
    """The result of reduction ``name`` over a tensor without elements (one extent 0) into ``shape``."""
    if n == 0 and name in _NAMES:
        raise ValueError(f"zero-size array to reduction operation {_NAMES[name]} which has no identity")
    fill = {"sum": 0, "prod": 1, "mean": np.nan}.get(name, 0)
    return np.full(shape, fill, dtype=dtype)


def _numpy_reduction(name: str, a: Any, axis: Any, keepdims: bool, dtype: Any) -> Any:
    """``sum``/``prod``/``max``/``min``/``mean`` with NumPy's semantics: implicit zeros take part, any axes,
    ``keepdims``, NumPy's accumulator and result dtypes (``dtype=``: both)."""
    if huge((a,)):
        routed = _hypersparse_reduction(name, a, axis, keepdims, dtype)
        if routed is not None:
            return routed
    t0 = _tensor(a, "a")
    axes = _axes(axis, t0.ndim)
    keep = tuple(d for d in range(t0.ndim) if d not in axes)
    src = np.dtype(t0.dtype)
    out_dtype = _result_dtype(name, src, dtype)
    acc = out_dtype if name != "mean" or dtype is not None or src.kind not in "biu" else np.dtype(np.float64)
    n = int(np.prod([t0.shape[d] for d in axes]))
    out_shape = tuple(t0.shape[d] for d in keep)
    if n == 0 or 0 in out_shape:
        res = _empty_reduction(name, out_shape, n, out_dtype)
    else:
        res = _reduce_values(name, t0, axes, keep, n, acc, out_dtype)
    if keepdims:
        res = res.reshape(tuple(1 if d in axes else e for d, e in enumerate(t0.shape)))
    return _reduced(res, a)


def _hypersparse_reduction(name: str, a: Any, axis: Any, keepdims: bool, dtype: Any) -> Any:
    """:func:`_numpy_reduction` of a hypersparse ``a`` on its compacted problem (memory follows the stored
    entries); ``mean`` as the sum over the true element count. None when the route does not apply."""
    shape = tuple(int(e) for e in a.shape)
    axes = _axes(axis, len(shape))
    n = math.prod(shape[d] for d in axes)
    if n == 0 or any(shape[d] == 0 for d in range(len(shape)) if d not in axes):
        return None
    op, dt = ("sum", None) if name == "mean" else (name, dtype)
    got = _compacted(lambda x: _numpy_reduction(op, x, axis, False, dt), (a,), axes, None, name)
    if got is None:
        return None
    res = np.asarray(got)
    if name == "mean":
        res = (res / n).astype(dtype if dtype is not None else np.result_type(res.dtype, np.float64))
    if keepdims:
        res = res.reshape(tuple(1 if d in axes else e for d, e in enumerate(shape)))
    return _reduced(res, a)


def _reduce_values(name: str, t0: Tensor, axes: tuple[int, ...], keep: tuple[int, ...], n: int,
                   acc: np.dtype, out_dtype: np.dtype) -> np.ndarray:
    """Reduction ``name`` of a non-empty ``t0`` over ``axes`` in the accumulator dtype ``acc``, as ``out_dtype``."""
    op = "sum" if name == "mean" else name
    tc, compute = _in_dtype(t0, op, acc)
    t = readable(tc)
    shape = tuple(t0.shape[d] for d in keep)
    if name in ("max", "min", "prod") and not _reduces_in_order(t, keep):
        t, keep = _kept_by_reduced(t, keep, axes), (0,)  # reduced along the rows of a (kept, reduced) matrix
    elem = elem_of([t], ["a"])
    if op == "sum":
        res = _reduce_stored(t, keep, "add", 0, elem)
    else:
        fn, ident = _MONOIDS[{"max": "max", "min": "min", "prod": "times"}[op]]
        stored = _reduce_stored(t, keep, trace(fn, 2, elem), ident(compute), elem)
        count = _reduce_stored(t, keep, "count", 0, elem)
        full = count.real >= n
        zero = np.zeros_like(stored)
        if op in ("max", "min") and acc == np.uint64:
            zero[...] = np.iinfo(np.int64).min  # the implicit zero with the sign bit flipped (see _in_dtype)
        if op == "prod":
            res = np.where(full, stored, zero)
        else:
            res = np.where(full, stored, (np.maximum if op == "max" else np.minimum)(stored, zero))
    res = np.asarray(res).reshape(shape)
    res = _from_compute(np.asarray(res, dtype=compute), op, acc)
    if name == "mean":
        res = np.asarray(res / n if acc.kind in "fc" else res / np.float64(n)).astype(out_dtype, copy=False)
    return np.asarray(res).astype(out_dtype, copy=False)


def sum(a: Any, axis: Any = None, *, keepdims: bool = False, dtype: Any = None) -> Any:  # noqa: A001 - numpy's
    """The sum along ``axis`` (None: all; an int or a tuple) as ``np.sum``: a dense array (a NumPy scalar for
    a full reduction of a Tensor), integers and booleans accumulated in NumPy's types (int32 -> int64)."""
    fast = fast_rowsum(a, axis) if not keepdims and dtype is None else None
    return fast if fast is not None else _numpy_reduction("sum", a, axis, keepdims, dtype)


def max(a: Any, axis: Any = None, *, keepdims: bool = False, dtype: Any = None) -> Any:  # noqa: A001 - numpy's
    """The maximum along ``axis``; implicit zeros take part (``np.max`` of the dense array). ValueError for an
    empty reduction (no identity), as NumPy. ``dtype=``: the values cast to it first."""
    return _numpy_reduction("max", a, axis, keepdims, dtype)


def min(a: Any, axis: Any = None, *, keepdims: bool = False, dtype: Any = None) -> Any:  # noqa: A001 - numpy's
    """The minimum along ``axis``; implicit zeros take part (``np.min`` of the dense array)."""
    return _numpy_reduction("min", a, axis, keepdims, dtype)


def prod(a: Any, axis: Any = None, *, keepdims: bool = False, dtype: Any = None) -> Any:
    """The product along ``axis``; implicit zeros take part (0 unless every entry is stored; 1 over no
    elements), with ``np.prod``'s dtypes."""
    return _numpy_reduction("prod", a, axis, keepdims, dtype)


def mean(a: Any, axis: Any = None, *, keepdims: bool = False, dtype: Any = None) -> Any:
    """The mean along ``axis``; implicit zeros take part (``np.mean``: integers and booleans give float64,
    NaN over no elements)."""
    return _numpy_reduction("mean", a, axis, keepdims, dtype)


def reduce(a: Any, axis: Any, op: str | Callable[[Any, Any], Any], identity: Any = None) -> Any:
    """The stored entries reduced along ``axis`` with ``op``: ``"plus"``, ``"times"``, ``"min"``, ``"max"``,
    ``"any"`` or a traced function of two values (with ``identity``). Positions without stored entries
    hold the identity."""
    t, axes, keep, elem = _reduction(a, axis)
    shape = tuple(t.shape[d] for d in keep)
    if op != "plus" and not _reduces_in_order(t, keep):
        t, keep = _kept_by_reduced(t, keep, axes), (0,)
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
    return _reduced(_reduce_stored(t, keep, monoid, identity, elem).reshape(shape), a)


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
    if huge((a,)):
        routed = _compacted(lambda x: _softmax(x, axis, logarithm, out_format, threads), (a,), None, out_format,
                            "log_softmax" if logarithm else "softmax")
        if routed is not None:
            return routed
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


__all__ = ["add", "apply", "log_softmax", "max", "mean", "min", "multiply", "prod", "reduce",
           "select", "softmax", "subtract", "sum"]

#: The public elementwise operations (``print_mlir(op, *operands, **options)`` takes any of them).
OPERATIONS = frozenset({add, apply, log_softmax, max, mean, min, multiply, prod, reduce, select, softmax, subtract,
                        sum})
