"""Polymorphic operations: ``matmul``, ``Matmul``, ``einsum``, compiled by MLIR's sparsifier and cached.

Every operation is one contraction (:class:`lowering.contraction.Contraction`) over the operands' own
buffers: sparse operands keep their format (an MLIR ``#sparse_tensor.encoding``), transposes are free
reinterpretations of a format (CSR^T is CSC over the same buffers), sparse results come back as buffers
the kernel allocated. Planned kernels are cached in memory by structure (see :mod:`frontend.plan`) and
compiled modules in memory and on disk by ``mlir_bridge``.
"""
from __future__ import annotations

import copy
import sys
import threading
import weakref
from typing import Any, Callable, Sequence

import numpy as np

from lowering.contraction import Contraction, TensorSpec
from lowering.dispatch import registry_state
from lowering.types import mlir_type
from mlir_bridge.errors import CompileError

from lowering import spgemm

from . import blocks
from . import plan as P
from .formats import TensorFormat
from .gpu_route import wants_gpu as _wants_gpu
from .named_formats import NamedFormats
from .semiring import Semiring, get_semiring, trace_unary
from .tensor import Tensor

_ELEMS = {np.dtype(t): mlir_type(t) for t in ("float32", "float64", "complex64", "complex128", "int32",
                                             "int64")}
_BATCH_LETTERS = "pqrstuvwxyzabcdefgh"


# ----- operands --------------------------------------------------------------------------------------------
def as_tensor(x: Any, what: str) -> Tensor:
    """``x`` as a Tensor (package objects are viewed without copying)."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, (int, float, complex)) or x is None:
        raise TypeError(f"{what} must be an array, a sparse matrix or a Tensor, got {type(x).__name__}")
    try:
        return Tensor.from_package(x)
    except TypeError as err:
        raise TypeError(f"{what}: {err}") from None


_MEMO: dict[int, tuple[Any, tuple, Tensor]] = {}
_SCIPY_BUFFERS = {"csr": ("indptr", "indices", "data"), "csc": ("indptr", "indices", "data"),
                  "bsr": ("indptr", "indices", "data"), "coo": ("coords", "data")}


def operand(x: Any, what: str) -> Tensor:
    """Like :func:`as_tensor`, with fast paths for the hot call: C-contiguous numpy arrays are wrapped
    directly, scipy sparse objects are viewed (and validated) once per buffer set. Sparse Tensors are
    validated (cached per buffer set) before any kernel sees them."""
    tx = type(x)
    if tx is Tensor:
        if not _row_major(x.tensor_format) and x.is_sparse:
            _validate((x,))
        return x
    if tx is np.ndarray and x.flags.c_contiguous:
        return P.dense_tensor(x)
    attrs = _SCIPY_BUFFERS.get(getattr(x, "format", None))  # type: ignore[arg-type]
    if attrs is not None and tx.__module__.startswith("scipy."):
        sig = tuple(id(getattr(x, a)) for a in attrs) + (x.shape,)
        got = _MEMO.get(id(x))
        if got is not None and got[0]() is x and got[1] == sig:
            return got[2]
        t = as_tensor(x, what)
        view = copy.copy(t)  # the memo must not keep x alive: its entry goes when x is collected
        view._source = None
        try:
            _MEMO[id(x)] = (weakref.ref(x), sig, view)
            weakref.finalize(x, _MEMO.pop, id(x), None)
        except TypeError:
            pass
        return t
    t = as_tensor(x, what)
    if t.is_sparse:
        _validate((t,))
    return t


def _elem_of(tensors: Sequence[Tensor], names: Sequence[str]) -> str:
    dt = np.dtype(tensors[0].dtype)
    for t, n in zip(tensors, names):
        d = np.dtype(t.dtype)
        if d != dt:
            raise TypeError(f"dtype mismatch: {names[0]} is {dt}, {n} is {d}; convert one of them first")
    try:
        return _ELEMS[dt]
    except KeyError:
        raise TypeError(f"dtype {dt} is not supported (supported: {', '.join(str(d) for d in _ELEMS)})") from None


def _check_cpu(t: Tensor, what: str) -> None:
    if t.device != "cpu":
        raise ValueError(f"{what} lives on {t.device}; the CPU target needs CPU buffers")


_PERMUTED: dict[tuple[TensorFormat, tuple[int, ...]], TensorFormat] = {}


def permuted(t: Tensor, perm: Sequence[int]) -> Tensor:
    """The same buffers viewed with dimensions reordered (``perm[d]`` = old dimension of new ``d``)."""
    perm = tuple(perm)
    if perm == tuple(range(len(perm))):
        return t
    fmt = t.tensor_format
    key = (fmt, perm)
    new = _PERMUTED.get(key)
    if new is None:
        new = TensorFormat([fmt.dimensions[p] for p in perm], fmt.levels)
        _PERMUTED[key] = new
    return Tensor(new, [t.shape[p] for p in perm], t._pos, t._crd, t._val, index_type=t.index_type,
                  package=t.package, device=t.device)


def _squeezed(t: Tensor, axes: Sequence[int], what: str) -> Tensor:
    """Drop size-1 broadcast axes of a dense operand."""
    if not axes:
        return t
    if not (t.tensor_format.is_dense and t.tensor_format.is_identity):
        raise ValueError(f"{what}: broadcasting a size-1 batch dimension needs a dense row-major operand; "
                         f"give a sparse operand of shape {t.shape} without it")
    return P.dense_tensor(np.asarray(t.val).reshape([s for d, s in enumerate(t.shape) if d not in axes]))


_PACKAGE_OF_TYPE: dict[type, str | None] = {}


def _result_package(objs: Sequence[Any]) -> str | None:
    """None for Tensor results, else the package results come back in."""
    found = "numpy"
    for x in objs:
        if x is None:
            continue
        tx = type(x)
        root = _PACKAGE_OF_TYPE.get(tx, "")
        if root == "":
            root = None if issubclass(tx, Tensor) else (tx.__module__ or "").split(".", 1)[0]
            _PACKAGE_OF_TYPE[tx] = root
        if root is None:
            return None
        if root == "torch":
            found = "torch"
        elif root == "scipy" and found != "torch":
            found = "scipy"
    return found


_SCIPY_COMPRESSED = {NamedFormats.CSR: "csr_array", NamedFormats.CSC: "csc_array"}


def _to_package(result: Any, package: str | None) -> Any:
    if isinstance(result, Tensor):
        if package is None:
            return result
        kind = _SCIPY_COMPRESSED.get(result.tensor_format) if package in ("scipy", "numpy") else None
        if kind is not None:  # kernel-built CSR/CSC: straight into scipy (the buffers are valid by construction)
            import scipy.sparse as sps
            return getattr(sps, kind)((result.val, result.crd(1), result.pos(1)), shape=result.shape)
        try:
            return result.to_package("scipy" if package == "numpy" else package)
        except TypeError:
            return result  # no such object in that package (e.g. DCSR in scipy): the Tensor itself
    if package is None:
        return P.dense_tensor(result)
    if package == "torch":
        return sys.modules["torch"].from_numpy(result) if result.ndim else sys.modules["torch"].tensor(result[()])
    return result if result.ndim else result[()]


# ----- output formats ---------------------------------------------------------------------------------------
def default_sparse_format(like: TensorFormat, rank: int) -> TensorFormat:
    """The output format of a sparse result: ``like``'s family when it has the rank and MLIR can insert
    into it in order (unique levels), else CSR-like (dense outer level, compressed inner levels)."""
    from .blocks import block_sizes, unblocked_format
    if block_sizes(like):
        like = unblocked_format(like)
    if (like.num_dimensions == rank and not like.is_dense and all(lv.unique for lv in like.levels)
            and all(lv.format.value != "batch" for lv in like.levels) and like.mlir_support() == "sparsifier"):
        return like
    if rank == 1:
        return NamedFormats.SparseVector
    if rank == 2:
        return NamedFormats.CSR
    from .expressions import Dimension
    from .formats import LevelFormat as F
    dims = [Dimension(f"d{k}") for k in range(rank)]
    return TensorFormat(dims, [(dims[0], F.DENSE)] + [(d, F.COMPRESSED) for d in dims[1:]])


# ----- one planned contraction -------------------------------------------------------------------------------
class _Op:
    """A contraction over given operand Tensors: structural key, kernel, argument list, result handling."""

    def __init__(self, subscripts: tuple[str, ...], tensors: list[Tensor], out_subs: str,
                 out_format: TensorFormat | None, semiring: Semiring | None, alpha: Any, beta: Any,
                 c: Any, prolog: Callable | None, epilog: Callable | None, target: str,
                 names: Sequence[str]) -> None:
        for t, n in zip(tensors, names):
            _check_cpu(t, n)
        elem = _elem_of(tensors, names)
        extents: dict[str, int] = {}
        for s, t, n in zip(subscripts, tensors, names):
            if len(s) != t.ndim:
                raise ValueError(f"{n} has {t.ndim} dimensions but subscripts {s!r}")
            for ch, e in zip(s, t.shape):
                if extents.setdefault(ch, e) != e:
                    raise ValueError(f"dimension {ch!r} has extent {extents[ch]} in one operand and {e} in "
                                     f"{n} (shapes {[tt.shape for tt in tensors]})")
        out_shape = tuple(extents[ch] for ch in out_subs)
        self.out_shape = out_shape
        self.elem = elem
        self.tensors = tensors
        self.subscripts = subscripts
        self.out_subs = out_subs
        if out_format is not None and out_format.is_dense and out_format.is_identity:
            out_format = None
        if out_format is not None and out_format.num_dimensions != len(out_subs):
            raise ValueError(f"out_format {out_format} has {out_format.num_dimensions} dimensions, the result "
                             f"has {len(out_subs)}")
        if out_format is not None and out_format.is_dense:
            raise ValueError(f"out_format {out_format}: a dense result is always row-major; pass None")
        self.out_format = out_format
        self.restore: Callable[[np.ndarray], np.ndarray] | None = None
        self.kernel_shape = out_shape
        if out_format is not None and blocks.block_sizes(out_format):
            raise ValueError(f"out_format {out_format}: MLIR's sparsifier cannot insert into block formats; "
                             "choose an unblocked one (e.g. CSR, CSC, DCSR)")
        if any(blocks.has_blocks(t) for t in tensors):
            rw = None if out_format is not None else blocks.rewrite(subscripts, tensors, out_subs, out_shape)
            if rw is None:
                tensors = [blocks.unblock(t) if blocks.has_blocks(t) else t for t in tensors]
            else:
                self.subscripts, self.out_subs, self.kernel_shape = rw.subscripts, rw.out_subs, rw.out_shape
                tensors, self.restore = rw.tensors, rw.restore
                self._out_split = rw.out_split
            self.tensors = tensors
        # scaling and the initial value
        self.c_obj = c
        self.c_arr: np.ndarray | None = None
        self.c_kernel: np.ndarray | None = None  # what the kernel updates (c, or c split into blocks)
        extra: list[Any] = []
        if semiring is not None and (alpha != 1 or beta not in (None, 1)):
            raise ValueError("alpha/beta apply to plain arithmetic; with a semiring, c is combined with the "
                             "semiring's add (leave alpha=1, beta=None)")
        if c is None:
            if beta is not None:
                raise ValueError("beta needs c")
            init = "zero"
        else:
            if out_format is not None:
                raise ValueError("c is updated in place and needs a dense result; drop out_format or c")
            tc = operand(c, "c")
            _check_cpu(tc, "c")
            if not (tc.tensor_format.is_dense and tc.tensor_format.is_identity):
                raise ValueError("c must be a dense C-contiguous array (it is updated in place)")
            if tc.shape != out_shape:
                raise ValueError(f"c has shape {tc.shape}, the result has shape {out_shape}")
            if np.dtype(tc.dtype) != np.dtype(tensors[0].dtype):
                raise TypeError(f"dtype mismatch: c is {tc.dtype}, the operands are {tensors[0].dtype}")
            self.c_arr = self.c_kernel = tc.val
            if self.restore is not None:  # c in the demapped (split) shape: a view, or a padded copy
                self.c_kernel = self._out_split(tc.val)
            if beta is None or beta == 1:
                init = "c"
                extra.append(self.c_kernel)
            elif beta == 0:
                init = "zero"
            else:
                init = "beta_c"
                extra.append(self.c_kernel)
        dt = np.dtype(tensors[0].dtype)
        has_alpha = alpha != 1
        if has_alpha:
            extra.append(np.array([alpha], dtype=dt))
        if init == "beta_c":
            extra.append(np.array([beta], dtype=dt))
        self.extra = extra
        self.semiring = semiring
        self.prolog = prolog
        self.epilog = epilog
        # traced MLIR regions: keys by what the functions compute (not by function objects, so a lambda
        # re-created on every call does not add a plan per call)
        self.semiring_regions = None if semiring is None else semiring.lowered(elem)
        self.prolog_fn = None if prolog is None else trace_unary(prolog, elem)
        self.epilog_fn = None if epilog is None else trace_unary(epilog, elem)
        self.target = target
        self.has_alpha = has_alpha
        self.init = init
        self.key = ("einsum", self.subscripts, self.out_subs,
                    tuple(_operand_key(t) for t in tensors),
                    None if out_format is None else (out_format.structure_key(), _out_width(tensors)),
                    self.semiring_regions, has_alpha, init, self.prolog_fn, self.epilog_fn, target,
                    registry_state())
        self.kernel: P.Kernel | None = None
        self.pipeline: Any = None
        self.final_format: TensorFormat | None = None  # set when the result is converted after the kernel

    def template(self) -> "_Op":
        """A copy holding the structure and the kernel but no operands (for :meth:`rebind`)."""
        op = copy.copy(self)
        op.tensors, op.extra, op.c_obj, op.c_arr, op.c_kernel = [], [], None, None, None
        return op

    def rebind(self, tensors: list[Tensor], c: Any, c_arr: Any, alpha: Any, beta: Any) -> "_Op":
        """A copy of this (planned) op over other operands of the same structure."""
        op = copy.copy(self)
        op.tensors, op.c_obj, op.c_arr, op.c_kernel = tensors, c, c_arr, c_arr
        dt = tensors[0].dtype
        extra = [] if self.init not in ("c", "beta_c") else [c_arr]
        if self.has_alpha:
            extra.append(np.array([alpha], dtype=dt))
        if self.init == "beta_c":
            extra.append(np.array([beta], dtype=dt))
        op.extra = extra
        return op

    def describe(self) -> Contraction:
        elem = self.elem
        specs = tuple(P.spec_of(t, elem) for t in self.tensors)
        if self.out_format is None:
            out = TensorSpec(None, self.kernel_shape, elem)
        else:
            w = _out_width(self.tensors)
            out = TensorSpec(self.out_format, self.out_shape, elem, w, w)
        return Contraction(
            self.subscripts, specs, self.out_subs, out,
            semiring=self.semiring_regions, alpha=self.has_alpha, init=self.init,
            prolog=self.prolog_fn, epilog=self.epilog_fn)

    def plan(self) -> P.Kernel:
        if self.kernel is None:
            try:
                self.kernel = P.get_kernel(self.key, self.describe, self.target, self.pipeline)
            except CompileError as err:
                self.kernel = self._fallback(err)
        return self.kernel

    def _fallback(self, err: CompileError) -> P.Kernel:
        """Sparse results the sparsifier cannot insert in order (CSC x CSR -> CSC, CSR x CSR -> DCSC):
        first the other sparse operands are converted to the first one's format, then the result is
        computed in that operand's family and converted (copies, O(nnz)); else ``err`` is raised."""
        if self.out_format is None:
            raise err
        if self._align_sparse_operands():
            try:
                return P.get_kernel(self.key, self.describe, self.target, self.pipeline)
            except CompileError:
                pass
        sparse = [t for t in self.tensors if t.is_sparse]
        compute = default_sparse_format(sparse[0].tensor_format, len(self.out_subs)) if sparse else None
        if compute is None or compute == self.out_format:
            raise err
        self.final_format, self.out_format = self.out_format, compute
        self.key = self.key[:4] + ((compute.structure_key(), _out_width(self.tensors)),) + self.key[5:]
        return P.get_kernel(self.key, self.describe, self.target, self.pipeline)

    def _align_sparse_operands(self) -> bool:
        """Fallback for sparse results the sparsifier cannot insert in order (e.g. CSC x CSR -> CSC): the
        other sparse operands are converted (a copy) to the first one's format. Returns whether any was."""
        if self.out_format is None:
            return False
        sparse = [t for t in self.tensors if t.is_sparse]
        if len(sparse) < 2:
            return False
        f0 = sparse[0].tensor_format
        changed = False
        tensors = []
        for t in self.tensors:
            if t.is_sparse and t is not sparse[0] and t.ndim == f0.num_dimensions and t.tensor_format != f0:
                t = t.convert(f0)
                changed = True
            tensors.append(t)
        if changed:
            self.tensors = tensors
            self.key = self.key[:3] + (tuple(_operand_key(t) for t in tensors),) + self.key[4:]
        return changed

    def args(self) -> list[Any]:
        return self.plan().flatten(self.tensors, self.extra)

    def finish(self, result: Any) -> Any:
        """Decode the kernel's result; write into c when given."""
        out = self.kernel.decode(result, self.out_format)  # type: ignore[union-attr]
        if self.final_format is not None:
            out = out.convert(self.final_format)
        if self.restore is not None:
            out = self.restore(out)
        c = self.c_arr
        if c is not None:
            if out is not c and (out.__array_interface__["data"][0] != c.__array_interface__["data"][0]
                                 or out.shape != c.shape):
                np.copyto(c, out)
            return self.c_obj
        return out


def _with_pipeline(op: _Op, pipeline: Any) -> _Op:
    """Compile ``op`` with a custom pipeline (a Pipeline, pass-pipeline string or Stage list): part of its key."""
    if pipeline is not None:
        op.pipeline = pipeline
        op.key = op.key + (_pipeline_key(pipeline),)
    return op


def _pipeline_key(pipeline: Any) -> Any:
    if pipeline is None:
        return None
    if isinstance(pipeline, str):
        return pipeline
    if hasattr(pipeline, "describe"):
        return pipeline.describe()
    return tuple(s.describe() for s in pipeline)


_ROW_MAJOR: dict[TensorFormat, bool] = {}


def _row_major(fmt: TensorFormat) -> bool:
    """Whether ``fmt`` is plain row-major dense (memoized per format)."""
    got = _ROW_MAJOR.get(fmt)
    if got is None:
        got = _ROW_MAJOR[fmt] = fmt.is_dense and fmt.is_identity
    return got


def _operand_key(t: Tensor) -> tuple:
    fmt = t.tensor_format
    if _row_major(fmt):
        return (None, t.shape, t.dtype)
    return (fmt.structure_key(), t.shape, t.dtype, t.index_type)


def _out_width(tensors: Sequence[Tensor]) -> int:
    for t in tensors:
        if t.is_sparse and t.index_type is not None:
            return np.dtype(t.index_type).itemsize * 8
    return 64


def _validate(tensors: Sequence[Tensor]) -> None:
    """Check sparse operands' buffers before a kernel reads them (cached per buffer set)."""
    try:
        from .validate import validate
    except ImportError:  # the validation module is being written in parallel; from_package validates too
        return
    for t in tensors:
        if t.is_sparse:
            validate(t)


# ----- matmul ----------------------------------------------------------------------------------------------
def _matmul_op(a: Any, b: Any, c: Any, alpha: Any, beta: Any, transpose_a: bool, transpose_b: bool,
               semiring: Any, out_format: Any, prolog: Any, epilog: Any, target: str) -> _Op:
    ta, tb = operand(a, "a"), operand(b, "b")
    if ta.ndim == 0 or tb.ndim == 0:
        raise ValueError("matmul needs operands with at least one dimension (use * for scalars)")
    if transpose_a and ta.ndim >= 2:
        ta = permuted(ta, tuple(range(ta.ndim - 2)) + (ta.ndim - 1, ta.ndim - 2))
    if transpose_b and tb.ndim >= 2:
        tb = permuted(tb, tuple(range(tb.ndim - 2)) + (tb.ndim - 1, tb.ndim - 2))
    ka = ta.shape[-1]
    kb = tb.shape[-2] if tb.ndim >= 2 else tb.shape[0]
    if ka != kb:
        raise ValueError(f"matmul: inner dimensions differ: op(a) has shape {ta.shape}, op(b) has shape "
                         f"{tb.shape} ({ka} != {kb})")
    ba, bb = ta.shape[:-2], tb.shape[:-2]
    try:
        batch = np.broadcast_shapes(ba, bb)
    except ValueError:
        raise ValueError(f"matmul: batch dimensions {ba} and {bb} do not broadcast") from None
    nb = len(batch)
    letters = _BATCH_LETTERS[:nb]

    def subs(t: Tensor, own: tuple, core: str, what: str) -> tuple[str, Tensor]:
        off = nb - len(own)
        drop = [d for d, e in enumerate(own) if e == 1 and batch[off + d] != 1]
        t = _squeezed(t, drop, what)
        s = "".join(letters[off + d] for d in range(len(own)) if d not in drop)
        return s + core, t

    sa, ta = subs(ta, ba, "ik" if ta.ndim >= 2 else "k", "a")
    sb, tb = subs(tb, bb, "kj" if tb.ndim >= 2 else "k", "b")
    out_subs = letters + ("i" if "i" in sa else "") + ("j" if "j" in sb else "")
    sem = get_semiring(semiring)
    if out_format is None and c is None and ta.is_sparse and tb.is_sparse and out_subs:
        out_format = default_sparse_format(ta.tensor_format, len(out_subs))
    return _Op((sa, sb), [ta, tb], out_subs, out_format, sem, alpha, beta, c, prolog, epilog, target,
               ("a", "b"))


def matmul(a: Any, b: Any, c: Any = None, *, alpha: Any = 1, beta: Any = None, transpose_a: bool = False,
           transpose_b: bool = False, semiring: Any = None, out_format: TensorFormat | None = None,
           prolog: Callable | None = None, epilog: Callable | None = None, target: str = "cpu",
           pipeline: Any = None, device: Any = None) -> Any:
    """``alpha * op(a) @ op(b) + beta * c`` on any formats (numpy matmul rules for vectors and batches).

    Operands: Tensors or package objects (numpy, scipy.sparse, torch CPU); the result comes back in the
    inputs' package (a Tensor for Tensors). With ``c``, ``c`` is updated in place and returned (``beta``
    defaults to 1). Sparse x sparse gives a sparse result in ``out_format`` (default: ``a``'s family, e.g.
    CSR x CSR -> CSR). ``semiring``: ``"min-plus"``, ``"max-plus"``, ``"or-and"``, a :class:`Semiring` or
    ``(add, mul[, identity])``. ``prolog`` maps ``a``'s stored values, ``epilog`` the result's.
    CUDA operands (torch, CuPy) or ``device="cuda"`` run on the GPU (:mod:`frontend.gpu_ops`).
    """
    if _wants_gpu((a, b, c), device, target):
        from .gpu_ops import gpu_matmul
        return gpu_matmul(a, b, c, alpha=alpha, beta=beta, transpose_a=transpose_a, transpose_b=transpose_b,
                          semiring=semiring, out_format=out_format, prolog=prolog, epilog=epilog, device=device)
    ta, tb = operand(a, "a"), operand(b, "b")
    tc = None if c is None else operand(c, "c")
    rkey = (_operand_key(ta), _operand_key(tb), None if tc is None else _operand_key(tc), alpha == 1,
            beta is None or beta == 1, beta == 0, transpose_a, transpose_b, semiring, out_format, prolog,
            epilog, target, registry_state(), _pipeline_key(pipeline))
    template = _RECIPES.get(rkey)
    if template is not None:
        op = template.rebind([ta, tb], c, None if tc is None else tc.val, alpha, beta)
    else:
        op = _with_pipeline(_matmul_op(ta, tb, tc, alpha, beta, transpose_a, transpose_b, semiring, out_format,
                                       prolog, epilog, target), pipeline)
        op.plan()
        op.c_obj = c
        if op.tensors[0] is ta and op.tensors[1] is tb:  # no transposes or squeezes: reusable as is
            if len(_RECIPES) > 512:  # e.g. lambdas re-created per call: keep the table bounded
                _RECIPES.clear()
            _RECIPES[rkey] = op.template()
    kernel = op.kernel
    args = kernel.flatten(op.tensors, op.extra)  # type: ignore[union-attr]
    out = op.finish(_call(rkey, kernel, args) if template is not None else kernel.function(*args))  # type: ignore[union-attr]
    if c is not None:
        return c
    return _to_package(out, _result_package((a, b)))


spgemm.register()  # CSR x CSR -> CSR and CSC x CSC -> CSC through the hand-written SpGEMM kernel

#: matmul's per-signature templates (structure of the operands + options -> planned _Op).
_RECIPES: dict[tuple, _Op] = {}
_TLS = threading.local()


def _call(rkey: tuple, kernel: P.Kernel, args: list[Any]) -> Any:
    """Run ``kernel`` through this thread's prepared call for ``rkey``, re-binding only the arguments
    that are other objects than last time (the descriptors of unchanged ones are reused). The prepared
    call keeps the last call's argument buffers alive until the next call with this signature."""
    calls = getattr(_TLS, "calls", None)
    if calls is None:
        calls = _TLS.calls = {}
    got = calls.get(rkey)
    if got is None or got[0] is not kernel:
        if len(calls) > 64:
            calls.clear()
        bound = kernel.function.bind(*args)
        calls[rkey] = (kernel, bound, args)
        return bound()
    _, bound, last = got
    for i, a in enumerate(args):
        if a is not last[i]:
            bound.rebind(i, a)
            last[i] = a
    return bound()


class Matmul:
    """Stateful matmul: ``plan()`` once (compile or fetch from cache), ``execute()`` many times.

        >>> with Matmul(A, B) as mm:
        ...     mm.plan()
        ...     y = mm.execute()
        ...     mm.reset_operands(a=A2)      # same formats, shapes and dtypes
        ...     y2 = mm.execute()

    CUDA operands or ``device="cuda"`` give a :class:`frontend.gpu_ops.GpuMatmul` instead (same methods,
    plus ``ptx``; ``path`` is ``"cusparse"``, ``"sparsifier-gpu"`` or ``"emitter-gpu"``).
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        if args and _wants_gpu(args[:3], kwargs.get("device"), kwargs.get("target", "cpu")):
            from .gpu_ops import gpu_matmul_plan
            return gpu_matmul_plan(*args, **kwargs)
        return super().__new__(cls)

    def __init__(self, a: Any, b: Any, c: Any = None, *, alpha: Any = 1, beta: Any = None,
                 transpose_a: bool = False, transpose_b: bool = False, semiring: Any = None,
                 out_format: TensorFormat | None = None, prolog: Callable | None = None,
                 epilog: Callable | None = None, target: str = "cpu", pipeline: Any = None,
                 device: Any = None) -> None:
        self._opts = dict(alpha=alpha, beta=beta, transpose_a=transpose_a, transpose_b=transpose_b,
                          semiring=semiring, out_format=out_format, prolog=prolog, epilog=epilog, target=target)
        self._pipeline = pipeline
        self._objs = [a, b, c]
        self._op: _Op | None = _with_pipeline(_matmul_op(a, b, c, **self._opts), pipeline)
        self._package = _result_package((a, b))
        self._bound: Any = None

    # ----- life cycle ----------------------------------------------------------------------------------------
    def plan(self) -> "Matmul":
        """Build and compile the kernel (or fetch it from the cache) and prepare the call."""
        op = self._live()
        kernel = op.plan()
        self._bound = kernel.function.bind(*kernel.flatten(op.tensors, op.extra))
        return self

    def execute(self) -> Any:
        """Run the planned kernel on the current operands (plans first if needed)."""
        bound = self._bound
        if bound is None:
            self.plan()
            bound = self._bound
        op = self._op
        out = op.finish(bound())  # type: ignore[union-attr]
        if op.c_obj is not None:  # type: ignore[union-attr]
            return op.c_obj  # type: ignore[union-attr]
        return _to_package(out, self._package)

    def reset_operands(self, a: Any = None, b: Any = None, c: Any = None) -> "Matmul":
        """New operands with the same formats, shapes and dtypes (the kernel is kept)."""
        old = self._live()
        objs = [a if a is not None else self._objs[0], b if b is not None else self._objs[1],
                c if c is not None else self._objs[2]]
        op = _with_pipeline(_matmul_op(objs[0], objs[1], objs[2], **self._opts), self._pipeline)
        if op.key != old.key:
            raise ValueError("reset_operands needs operands of the same formats, shapes, dtypes and index "
                             "types; create a new Matmul for others")
        op.kernel = old.kernel
        self._op, self._objs = op, objs
        if self._bound is not None:
            self._bound = op.kernel.function.bind(*op.kernel.flatten(op.tensors, op.extra))  # type: ignore[union-attr]
        return self

    def release(self) -> None:
        """Drop the operands, the prepared call and the kernel reference."""
        self._op, self._bound, self._objs = None, None, [None, None, None]

    def __enter__(self) -> "Matmul":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()

    def _live(self) -> _Op:
        if self._op is None:
            raise RuntimeError("this Matmul was released")
        return self._op

    # ----- introspection -------------------------------------------------------------------------------------
    @property
    def mlir(self) -> str:
        """The module text before lowering (linalg + sparse_tensor)."""
        op = self._live()
        if op.kernel is not None:
            return op.kernel.text
        from lowering.dispatch import lower
        return lower(op.describe(), op.target, op.pipeline).text

    @property
    def path(self) -> str:
        """The lowering path: ``"sparsifier"`` (MLIR's sparse compiler), ``"emitter"`` (ust-mlir's own
        loops, for range/delta levels and diagonal maps) or ``"kernel:<name>"`` (a registered kernel)."""
        op = self._live()
        if op.kernel is not None:
            return op.kernel.path
        from lowering.dispatch import path_of
        return path_of(op.describe())

    def stages(self) -> list[tuple[str, str]]:
        """``[(stage, module text), ...]``: linalg input, then after each pipeline stage."""
        return _stages(self._live())

    def print_mlir(self, stage: str | None = None, file: Any = None) -> None:
        """Print the module at each stage (or one: ``"linalg"``, ``"sparsified"``, ``"llvm"`` or a stage name)."""
        _print_stages(self.stages(), stage, file)


# ----- einsum ----------------------------------------------------------------------------------------------
def parse_subscripts(subscripts: str, n: int) -> tuple[tuple[str, ...], str]:
    """``"ik,kj->ij"`` -> (("ik", "kj"), "ij"); without ``->`` the output is the letters seen once, sorted."""
    if not isinstance(subscripts, str):
        raise TypeError("subscripts must be a string like 'ik,kj->ij'")
    text = subscripts.replace(" ", "")
    lhs, arrow, rhs = text.partition("->")
    ins = tuple(lhs.split(","))
    if len(ins) != n:
        raise ValueError(f"subscripts {subscripts!r} name {len(ins)} operands, got {n}")
    letters = "".join(ins)
    if not all(ch.isalpha() for ch in letters + rhs):
        raise ValueError(f"subscripts {subscripts!r}: use letters only (no '...')")
    if not arrow:
        rhs = "".join(sorted(ch for ch in set(letters) if letters.count(ch) == 1))
    for s in ins:
        if len(set(s)) != len(s):
            raise ValueError(f"subscripts {subscripts!r}: a letter repeated within one operand (a diagonal) is "
                             "not supported")
    if len(set(rhs)) != len(rhs) or any(ch not in letters for ch in rhs):
        raise ValueError(f"subscripts {subscripts!r}: output letters must be distinct and appear in the inputs")
    return ins, rhs


def _einsum_op(subscripts: str, operands: Sequence[Any], out_format: Any, semiring: Any, prolog: Any,
               epilog: Any, target: str) -> _Op:
    if not operands:
        raise ValueError("einsum needs at least one operand")
    names = [f"operand {k}" for k in range(len(operands))]
    tensors = [operand(x, n) for x, n in zip(operands, names)]
    ins, out = parse_subscripts(subscripts, len(tensors))
    if out_format is None and out:
        like = _sparse_result_like(ins, tensors, out)
        if like is not None:
            out_format = default_sparse_format(like.tensor_format, len(out))
    if len(tensors) == 1 and len(ins[0]) == len(out) and ins[0] != out and (
            tensors[0].is_sparse or out_format is not None):
        # a pure permutation: view the operand permuted, then convert into the output format
        perm = tuple(ins[0].index(ch) for ch in out)
        tensors, ins = [permuted(tensors[0], perm)], (out,)
    return _Op(ins, tensors, out, out_format, get_semiring(semiring), 1, None, None, prolog, epilog, target,
               names)


def _sparse_result_like(ins: Sequence[str], tensors: Sequence[Tensor], out: str) -> Tensor | None:
    """The operand whose family a default sparse result takes, or None for a dense result: sparse when
    several operands are all sparse, or when a sparse operand is indexed by exactly the output letters
    (it samples the result: SDDMM, element-wise products, transpositions)."""
    sparse = [t for t in tensors if t.is_sparse]
    if not sparse:
        return None
    if len(tensors) > 1 and len(sparse) == len(tensors):
        return sparse[0]
    for s, t in zip(ins, tensors):
        if t.is_sparse and set(s) == set(out):
            return t
    return None


def einsum(subscripts: str, *operands: Any, out_format: TensorFormat | None = None, semiring: Any = None,
           prolog: Callable | None = None, epilog: Callable | None = None, target: str = "cpu",
           pipeline: Any = None, device: Any = None) -> Any:
    """A contraction or element-wise product on any formats as one ``linalg.generic``.

    ``"ik,kj->ij"``, ``"ij,ij->ij"`` (sampled products keep the sparse operand's pattern), ``"bij,bjk->bik"``,
    ``"ijk,k->ij"``, ``"ij->ji"`` (transposition, e.g. into another ``out_format``). The result is sparse
    when several operands are all sparse, or when a sparse operand is indexed by exactly the output
    letters (sampled products such as SDDMM ``"ij,ik,kj->ij"``); else dense. ``out_format`` overrides it.
    """
    if _wants_gpu(operands, device, target):  # CUDA operands or device="cuda": frontend.gpu_ops
        from .gpu_ops import gpu_einsum
        return gpu_einsum(subscripts, *operands, out_format=out_format, semiring=semiring, prolog=prolog,
                          epilog=epilog, device=device)
    op = _with_pipeline(_einsum_op(subscripts, operands, out_format, semiring, prolog, epilog, target), pipeline)
    kernel = op.plan()
    out = op.finish(kernel.function(*kernel.flatten(op.tensors, op.extra)))
    return _to_package(out, _result_package(operands))


# ----- printing and caches -------------------------------------------------------------------------------------
_STAGE_ALIASES = {"linalg": "input", "sparsified": "sparsify", "llvm": "to-llvm"}


def _stages(op: _Op) -> list[tuple[str, str]]:
    from lowering.dispatch import lower
    from mlir_bridge import lower_stages

    lowered = op.kernel.lowered if op.kernel is not None else lower(op.describe(), op.target, op.pipeline)
    return lower_stages(lowered.text, lowered.pipeline)


def _print_stages(stages: list[tuple[str, str]], stage: str | None, file: Any) -> None:
    want = _STAGE_ALIASES.get(stage, stage) if stage is not None else None
    names = [n for n, _ in stages]
    if want is not None and want not in names:
        raise ValueError(f"unknown stage {stage!r}; have linalg, sparsified, llvm or one of {names}")
    for name, text in stages:
        if want is None or name == want:
            label = {v: k for k, v in _STAGE_ALIASES.items()}.get(name, name)
            print(f"// ----- {label} ({name}) -----", file=file)
            print(text, file=file)


def print_mlir(*args: Any, stage: str | None = None, file: Any = None, subscripts: str | None = None,
               **kwargs: Any) -> None:
    """Print the MLIR of an operation at each stage (linalg, after sparsification, LLVM dialect).

    ``print_mlir(mm)`` for a :class:`Matmul`; ``print_mlir(a, b, **matmul_options)`` for a matmul;
    ``print_mlir(*operands, subscripts="ik,kj->ij")`` for an einsum; ``stage=`` picks one.
    """
    if len(args) == 1 and hasattr(args[0], "print_mlir"):  # a Matmul or a frontend.gpu_ops.GpuMatmul
        args[0].print_mlir(stage, file)
        return
    if subscripts is not None:
        op = _einsum_op(subscripts, args, kwargs.pop("out_format", None), kwargs.pop("semiring", None),
                        kwargs.pop("prolog", None), kwargs.pop("epilog", None), kwargs.pop("target", "cpu"))
    else:
        if len(args) not in (2, 3):
            raise TypeError("print_mlir(a, b[, c], **options), print_mlir(matmul) or "
                            "print_mlir(*operands, subscripts=...)")
        mm = Matmul(*args, **kwargs)
        if not isinstance(mm, Matmul):  # the GPU plan (CUDA operands or device="cuda"): stage="ptx" too
            mm.print_mlir(stage, file)
            return
        op = mm._live()
    _print_stages(_stages(op), stage, file)


def cache_info() -> dict[str, Any]:
    """Planned kernels in memory plus the compile cache (``mlir_bridge.cache_info()``) fields."""
    from dataclasses import asdict

    from mlir_bridge import cache_info as bridge_info

    info = asdict(bridge_info())
    info["plans"] = P.plan_count()
    return info


def clear_cache(*, memory: bool = True, disk: bool = True) -> None:
    """Forget planned kernels and compiled modules (memory) and delete the disk cache's entries."""
    from mlir_bridge import clear_cache as bridge_clear

    if memory:
        P.clear_plans()
        _RECIPES.clear()
    bridge_clear(memory=memory, disk=disk)
