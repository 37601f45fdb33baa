"""SDDMM (sampled dense-dense product) on the hand-written kernel (:mod:`lowering.kernels.sddmm`).

``einsum("ij,ik,kj->ij", A, X, Y)`` (``A``'s values times ``X @ Y`` at ``A``'s entries) and
``einsum("ij,ik,jk->ij", A, X, Yt)`` run here when ``A`` is a 2-D CSR, CSC or COO matrix (a Tensor or a
SciPy object) and ``X``/``Y`` are NumPy arrays of ``A``'s value type (f32/f64): chosen by the operand's
structure (its levels), not its name, so other formats keep the generic path. :func:`sampled_dot` gives
the unscaled values of ``X @ Yt.T`` at a pattern's entries in storage order (TorchUST's sampled products).

- Compressed rows (CSR) run as row ranges; CSC is the same kernel on the transposed problem (``X`` and
  ``Yt`` swapped, scipy ``_compressed.py`` style); COO runs as entry ranges from its row coordinates.
- ``Y`` given ``k x n`` is transposed once (``n * k`` copies, against ``nnz * k`` multiply-adds: the kernel
  then reads both operands' rows contiguously and vectorizes over ``k``).
- Threads: ``threads=None``/``"auto"`` runs on every core when ``nnz * k`` reaches
  :data:`SDDMM_PARALLEL_MIN` (chunks of near-equal entries), one thread below; ``threads=n`` forces ``n``
  chunks (``1`` opts out).
"""
from __future__ import annotations

import threading
from typing import Any

import numpy as np

from frontend.format import NamedFormats, TensorFormat, as_format
from frontend.interop._view_cache import shared_view
from frontend.storage._layout import INDEX_TYPES
from frontend.storage._validate import validate_now
from frontend.tensor._tensor import Tensor
from lowering.kernels import sddmm as kernel_text

from ._elementwise_kernels import RowKernel, row_kernel_for
from ._operands import check_cpu, operand, result_package, to_caller_package
from ._threads import balanced_bounds, chunk_bounds, cpu_count, resolve_threads

#: ``nnz * k`` multiply-adds from which the kernel runs on every core (below: one thread).
SDDMM_PARALLEL_MIN = 1 << 21
#: Values of a ``k x n`` ``Y`` from which the compiled transpose runs (below: NumPy's copy, less call overhead).
TRANSPOSE_KERNEL_MIN = 1 << 14
#: Canonical einsum subscripts of SDDMM -> whether ``Y`` comes transposed (``n x k``).
FORMS = {"ab,ac,cb->ab": False, "ab,ac,bc->ab": True}
#: The kernel's name in paths and ``info``.
PATH = "kernel:sddmm"

_FORM_OF: dict[str, bool | None] = {}  # subscripts seen -> FORMS entry (memo of canonical())
_UNSEEN = object()
_ELEMS = {np.dtype(np.float32): "f32", np.dtype(np.float64): "f64"}
_SCIPY = frozenset({"csr_array", "csr_matrix", "csc_array", "csc_matrix", "coo_array", "coo_matrix"})


def canonical(subscripts: str) -> str:
    """``subscripts`` without spaces, its letters renamed by first appearance (``"ij,ik,kj->ij"`` ->
    ``"ab,ac,cb->ab"``)."""
    names: dict[str, str] = {}
    out = []
    for ch in subscripts:
        if ch.isalpha():
            out.append(names.setdefault(ch, chr(ord("a") + len(names))))
        elif not ch.isspace():
            out.append(ch)
    return "".join(out)


class Pattern:
    """The stored entries of a 2-D matrix as the kernel reads them: ``rows`` ``"compressed"`` (``first``:
    positions, ``second``: coordinates; ``swap``: the outer level is the columns, CSC) or ``"coordinates"``
    (``first``: row, ``second``: column of each entry)."""

    __slots__ = ("rows", "first", "second", "swap", "nnz")

    def __init__(self, rows: str, first: np.ndarray, second: np.ndarray, swap: bool, nnz: int) -> None:
        self.rows, self.first, self.second, self.swap, self.nnz = rows, first, second, swap, nnz


def _host(buf: Any) -> np.ndarray | None:
    """A C-contiguous integer NumPy array over ``buf`` (a NumPy array or a CPU torch tensor), or None."""
    if type(buf) is not np.ndarray:
        if not (hasattr(buf, "numpy") and getattr(buf, "device", None) is not None and buf.device.type == "cpu"):
            return None
        buf = buf.detach().numpy()
    if buf.dtype not in INDEX_TYPES:  # int8 .. int64 (narrow ones sign-extended on load)
        return None
    return buf if buf.flags.c_contiguous else np.ascontiguousarray(buf)


def pattern_of(t: Tensor) -> Pattern | None:
    """The kernel's view of ``t``'s entries when ``t`` is a 2-D CSR, CSC or COO Tensor; None otherwise."""
    fmt = t.tensor_format
    if t.ndim != 2:
        return None
    if fmt == NamedFormats.CSR or fmt == NamedFormats.CSC:
        rows, first, second = "compressed", _host(t._pos[1]), _host(t._crd[1])
    elif fmt == NamedFormats.COO:
        rows, first, second = "coordinates", _host(t._crd[0]), _host(t._crd[1])
    else:
        return None
    if first is None or second is None:
        return None
    # (positions may have been written in place: the entries clamped to the coordinates, as the kernel does)
    nnz = min(max(int(first[-1]), 0), len(second)) if rows == "compressed" else min(len(first), len(second))
    return Pattern(rows, first, second, fmt == NamedFormats.CSC, nnz)


def check_shapes(shape: tuple[int, ...], x: np.ndarray, yt: np.ndarray, y_shape: tuple[int, ...]) -> None:
    """ValueError naming the shapes unless ``x`` is ``m x k`` and ``yt`` ``n x k`` for an ``m x n`` pattern."""
    m, n = shape
    if x.ndim != 2 or yt.ndim != 2 or x.shape[0] != m or yt.shape[0] != n or x.shape[1] != yt.shape[1]:
        raise ValueError(f"sampled product: the sparse operand {tuple(shape)} needs X (m, k) and Y (k, n) "
                         f"(or Yt (n, k)) with m={m}, n={n} and one k; got X {tuple(x.shape)} and Y "
                         f"{tuple(y_shape)}")


def elem_of(x: np.ndarray) -> str:
    """The MLIR value type of the factor ``x`` (``f32``/``f64``)."""
    return _ELEMS[x.dtype]


def kernel_for(p: Pattern, elem: str, scaled: bool) -> RowKernel:
    """The compiled kernel for this pattern's shape, index types and value type."""
    pt, ct = f"i{p.first.dtype.itemsize * 8}", f"i{p.second.dtype.itemsize * 8}"
    return row_kernel_for(("sddmm", p.rows, elem, pt, ct, scaled),
                          lambda: kernel_text.build(elem, pt, ct, rows=p.rows, scaled=scaled))


def chunks(p: Pattern, k: int, threads: Any) -> int:
    """How many chunks the kernel runs in (the module docstring's rule)."""
    n = resolve_threads(threads)
    if threads is None or threads == "auto":
        n = cpu_count() if p.nnz * max(k, 1) >= SDDMM_PARALLEL_MIN else 1
    return n


def sampled_dot(p: Pattern, x: np.ndarray, yt: np.ndarray, values: np.ndarray | None = None,
                threads: Any = None) -> np.ndarray:
    """``values[q] * dot(x[i], yt[j])`` for each stored entry ``q`` at ``(i, j)`` in storage order (without
    ``values``: the dot alone). ``x`` and ``yt`` are C-contiguous of one float dtype, shapes checked."""
    out = np.empty(p.nnz, x.dtype)
    if p.nnz == 0:
        return out
    u, v = (yt, x) if p.swap else (x, yt)
    kernel = kernel_for(p, _ELEMS[x.dtype], values is not None)
    a = out if values is None else values
    outer = len(p.first) - 1 if p.rows == "compressed" else p.nnz
    n = min(chunks(p, x.shape[1], threads), max(outer, 1))
    if n <= 1:
        args = [p.first, p.second, a, u, v, out, 0, outer]
        if p.nnz * x.shape[1] < SDDMM_PARALLEL_MIN:  # small: the prepared call (holds its arguments)
            _call_once(kernel.function("sddmm"), args)
        else:
            kernel.function("sddmm")(*args)
        return out
    if p.rows == "compressed":
        bounds = balanced_bounds(p.first, n)
    else:
        bounds = tuple(chunk_bounds(outer, n))
    return kernel([p.first, p.second, a, u, v], out, bounds, "sddmm")


_LOCAL = threading.local()  # .calls: compiled function -> (its prepared call, the arguments bound last)


def _call_once(fn: Any, args: list[Any]) -> None:
    """``fn(*args)`` through this thread's prepared call of ``fn``, re-bound only where an argument is another
    object than last time (a fresh output of the same shape: just its pointer). The prepared call keeps the
    last arguments alive until the next call of ``fn`` on this thread, so only calls below
    :data:`SDDMM_PARALLEL_MIN` take it."""
    calls = getattr(_LOCAL, "calls", None)
    if calls is None:
        calls = _LOCAL.calls = {}
    got = calls.get(fn)
    if got is None:
        if len(calls) > 32:
            calls.clear()
        calls[fn] = (fn.bind(*args), args)
        calls[fn][0]()
        return
    bound, last = got
    for i, x in enumerate(args):
        if x is not last[i]:
            if type(x) is np.ndarray:
                bound.rebind_same(i, x)
            else:
                bound.rebind(i, x)
            last[i] = x
    bound()


def transposed(y: np.ndarray, p: Pattern, threads: Any = None) -> np.ndarray:
    """``y.T`` as a C-contiguous array: NumPy's copy below :data:`TRANSPOSE_KERNEL_MIN` values, else the
    module's cache-blocked ``@transpose`` in column ranges (every core from :data:`SDDMM_PARALLEL_MIN` values
    under ``threads=None``)."""
    k, n = y.shape
    if y.size < TRANSPOSE_KERNEL_MIN:
        return np.ascontiguousarray(y.T)
    yt = np.empty((n, k), y.dtype)
    fn = kernel_for(p, _ELEMS[y.dtype], True)
    c = resolve_threads(threads)
    if threads is None or threads == "auto":
        c = cpu_count() if y.size >= SDDMM_PARALLEL_MIN else 1
    if c <= 1:
        fn.function("transpose")(y, yt, 0, n)
        return yt
    return fn([y], yt, tuple(chunk_bounds(n, c)), "transpose")


def _sparse_view(a: Any) -> Tensor | None:
    """The validated Tensor of a sparse operand (a Tensor, or a SciPy CSR/CSC/COO object viewed and validated
    once per buffer set; the SDDMM kernel is bounds-safe, so index buffers written in place since are read as
    they are); None for other operands."""
    ta = type(a)
    if ta is Tensor:
        return operand(a, "a") if a.is_sparse else None
    if ta.__name__ in _SCIPY and ta.__module__.startswith("scipy.sparse"):
        view = shared_view(a)
        return view if view is not None else operand(a, "a")
    return None


def _contiguous(x: np.ndarray) -> np.ndarray:
    return x if x.flags.c_contiguous else np.ascontiguousarray(x)


def _dense(x: Any) -> np.ndarray | None:
    return x if type(x) is np.ndarray else None


def plan(subscripts: str, operands: tuple, out_format: Any, threads: Any = None
         ) -> tuple[Tensor, Pattern, np.ndarray, np.ndarray] | None:
    """(A's Tensor, its pattern, X, Yt: ``Y`` transposed by :func:`transposed` when given ``k x n``) when
    ``einsum(subscripts, *operands)`` is an SDDMM this kernel runs; None when the generic path must (other
    formats, dtypes, operand kinds). ValueError for shapes that do not fit."""
    if len(operands) != 3:
        return None
    form = _FORM_OF.get(subscripts, _UNSEEN)
    if form is _UNSEEN:
        if len(_FORM_OF) > 256:
            _FORM_OF.clear()
        form = _FORM_OF[subscripts] = FORMS.get(canonical(subscripts))
    if form is None:
        return None
    x, y = _dense(operands[1]), _dense(operands[2])
    if x is None or y is None:
        return None
    t = _sparse_view(operands[0])
    if t is None or t.ndim != 2 or x.ndim != 2 or y.ndim != 2:
        return None
    dtype = np.dtype(t.dtype)
    if dtype not in _ELEMS or x.dtype != dtype or y.dtype != dtype or type(t.val) is not np.ndarray:
        return None
    if out_format is not None:
        want = as_format(out_format, "out_format")
        if not isinstance(want, TensorFormat) or want != t.tensor_format:
            return None
    p = pattern_of(t)
    if p is None:
        return None
    check_cpu(t, "a")
    check_shapes(t.shape, x, y if form else y.T, y.shape)
    x = _contiguous(x)
    return t, p, x, _contiguous(y) if form else transposed(_contiguous(y), p, threads)


def run(subscripts: str, operands: tuple, out_format: Any = None, threads: Any = None) -> Any:
    """``einsum(subscripts, *operands)`` through the kernel, in the operands' package (a SciPy object for a
    SciPy ``A``, a Tensor for a Tensor); None when :func:`plan` declines."""
    got = plan(subscripts, operands, out_format, threads)
    if got is None:
        return None
    t, p, x, yt = got
    vals = sampled_dot(p, x, yt, _contiguous(np.asarray(t.val)), threads)
    package = result_package(operands)
    if package == "scipy":
        return _scipy_like(operands[0], t, p, vals)
    res = Tensor(t.tensor_format, t.shape, t._pos, t._crd, vals, index_type=t.index_type, package="numpy")
    return to_caller_package(res, package)


def _scipy_like(a: Any, t: Tensor, p: Pattern, vals: np.ndarray) -> Any:
    """A SciPy object of ``a``'s kind (CSR/CSC/COO; a Tensor ``a`` gives its SciPy counterpart) with ``a``'s
    pattern (index arrays copied) and the values ``vals``. SciPy indexes with that pattern unchecked, so its
    index buffers are checked first (:func:`frontend.storage._validate.validate_now`: a compare with a copy
    when unchanged; ``ValueError`` when written out of range in place)."""
    import scipy.sparse as sps

    validate_now(t)

    if p.rows == "coordinates":
        return sps.coo_array((vals, (p.first.copy(), p.second.copy())), shape=t.shape)
    kind = "csc_array" if p.swap else "csr_array"
    from frontend.interop._scipy import canonical_compressed

    canonical_flag = getattr(a, "__dict__", {}).get("_has_canonical_format")
    if canonical_flag:
        return canonical_compressed(kind, vals, p.second.copy(), p.first.copy(), t.shape)
    return getattr(sps, kind)((vals, p.second.copy(), p.first.copy()), shape=t.shape)


def pattern_values(t: Tensor, x: np.ndarray, yt: np.ndarray, threads: Any = None) -> np.ndarray | None:
    """The values of ``x @ yt.T`` at the stored entries of the 2-D Tensor ``t`` in its storage order (its own
    values unused) when the kernel takes ``t``'s format and the factors' dtype; None otherwise (the caller
    takes the generic path). ValueError for shapes that do not fit."""
    if x.dtype not in _ELEMS or yt.dtype != x.dtype or t.ndim != 2:
        return None
    p = pattern_of(t)
    if p is None:
        return None
    check_shapes(t.shape, x, yt, yt.shape[::-1])
    return sampled_dot(p, np.ascontiguousarray(x), np.ascontiguousarray(yt), None, threads)
