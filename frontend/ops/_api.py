"""Polymorphic operations: ``matmul``, ``Matmul``, ``einsum``, compiled and cached.

Every operation is one contraction (:class:`lowering.contraction.Contraction`) over the operands' own
buffers, lowered by :mod:`lowering.dispatch` (a registered kernel, MLIR's sparsifier with the formats as
``#sparse_tensor.encoding``, or ust-mlir's emitter for range/delta levels and diagonal maps): sparse
operands keep their format, transposes are free reinterpretations of a format (CSR^T is CSC over the
same buffers), sparse results come back as buffers the kernel allocated. Planned kernels are cached in
memory by structure (see :mod:`frontend.ops._kernel_cache`, :mod:`frontend.ops._prepared`) and compiled modules in memory
and on disk by ``mlir_bridge``.
"""
from __future__ import annotations

import threading
from typing import Any, Callable, Sequence

import numpy as np

from lowering.dispatch import registry_state

from frontend.ops import _kernel_cache as P
from frontend.ops._prepared import PlannedOp, default_sparse_format
from frontend.format import TensorFormat
from frontend.ops.gpu._route import wants_gpu as _wants_gpu
from frontend.ops._operands import (as_tensor, operand, operand_key, permuted, result_package, squeezed,  # noqa: F401
                       to_package)
from frontend.ops._semiring import get_semiring
from frontend.tensor._tensor import Tensor

_BATCH_LETTERS = "pqrstuvwxyzabcdefgh"


def _with_pipeline(op: PlannedOp, pipeline: Any) -> PlannedOp:
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


# ----- matmul ----------------------------------------------------------------------------------------------
def _matmul_op(a: Any, b: Any, c: Any, alpha: Any, beta: Any, transpose_a: bool, transpose_b: bool,
               semiring: Any, out_format: Any, prolog: Any, epilog: Any, target: str,
               threads: Any = None) -> PlannedOp:
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
        t = squeezed(t, drop, what)
        s = "".join(letters[off + d] for d in range(len(own)) if d not in drop)
        return s + core, t

    sa, ta = subs(ta, ba, "ik" if ta.ndim >= 2 else "k", "a")
    sb, tb = subs(tb, bb, "kj" if tb.ndim >= 2 else "k", "b")
    out_subs = letters + ("i" if "i" in sa else "") + ("j" if "j" in sb else "")
    sem = get_semiring(semiring)
    if out_format is None and c is None and ta.is_sparse and tb.is_sparse and out_subs:
        out_format = default_sparse_format(ta.tensor_format, len(out_subs))
    return PlannedOp((sa, sb), [ta, tb], out_subs, out_format, sem, alpha, beta, c, prolog, epilog, target,
                     ("a", "b"), threads)


def matmul(a: Any, b: Any, c: Any = None, *, alpha: Any = 1, beta: Any = None, transpose_a: bool = False,
           transpose_b: bool = False, semiring: Any = None, out_format: TensorFormat | None = None,
           prolog: Callable | None = None, epilog: Callable | None = None, target: str = "cpu",
           pipeline: Any = None, device: Any = None, threads: int | str | None = None) -> Any:
    """``alpha * op(a) @ op(b) + beta * c`` on any formats (numpy matmul rules for vectors and batches).

    Operands: Tensors or package objects (numpy, scipy.sparse, torch CPU); the result comes back in the
    inputs' package (a Tensor for Tensors). With ``c``, ``c`` is updated in place and returned (``beta``
    defaults to 1). Sparse x sparse gives a sparse result in ``out_format`` (default: ``a``'s family, e.g.
    CSR x CSR -> CSR). ``semiring``: ``"min-plus"``, ``"max-plus"``, ``"or-and"``, a :class:`Semiring` or
    ``(add, mul[, identity])``. ``prolog`` maps ``a``'s stored values, ``epilog`` the result's.
    CUDA operands (torch, CuPy) or ``device="cuda"`` run on the GPU (:mod:`frontend.ops.gpu._matmul`).
    ``threads``: None (1), a positive int, or ``"auto"`` (``os.cpu_count()`` above a size threshold):
    row-parallel products (one stored operand with a dense outer row level or DIA-I, dense result) run
    a row-range kernel in that many chunks on a shared thread pool (:mod:`frontend.ops._threads`); other
    operations, registered kernels and the GPU ignore it.
    """
    if _wants_gpu((a, b, c), device, target):
        from frontend.ops.gpu._matmul import gpu_matmul
        return gpu_matmul(a, b, c, alpha=alpha, beta=beta, transpose_a=transpose_a, transpose_b=transpose_b,
                          semiring=semiring, out_format=out_format, prolog=prolog, epilog=epilog, device=device)
    ta, tb = operand(a, "a"), operand(b, "b")
    tc = None if c is None else operand(c, "c")
    rkey = (operand_key(ta), operand_key(tb), None if tc is None else operand_key(tc), alpha == 1,
            beta is None or beta == 1, beta == 0, transpose_a, transpose_b, semiring, out_format, prolog,
            epilog, target, registry_state(), _pipeline_key(pipeline), threads)
    template = _RECIPES.get(rkey)
    if template is not None:
        op = template.rebind([ta, tb], c, None if tc is None else tc.val, alpha, beta)
    else:
        op = _with_pipeline(_matmul_op(ta, tb, tc, alpha, beta, transpose_a, transpose_b, semiring, out_format,
                                       prolog, epilog, target, threads), pipeline)
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
    return to_package(out, result_package((a, b)))


#: matmul's per-signature templates (structure of the operands + options -> planned PlannedOp).
_RECIPES: dict[tuple, PlannedOp] = {}
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

    CUDA operands or ``device="cuda"`` give a :class:`frontend.ops.gpu._matmul.GpuMatmul` instead (same methods,
    plus ``ptx``; ``path`` is ``"cusparse"``, ``"sparsifier-gpu"`` or ``"emitter-gpu"``).
    ``threads`` as in :func:`matmul` (a row-parallel plan has ``path == "emitter-rows"``).
    """

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        if args and _wants_gpu(args[:3], kwargs.get("device"), kwargs.get("target", "cpu")):
            from frontend.ops.gpu._matmul import gpu_matmul_plan
            return gpu_matmul_plan(*args, **kwargs)
        return super().__new__(cls)

    def __init__(self, a: Any, b: Any, c: Any = None, *, alpha: Any = 1, beta: Any = None,
                 transpose_a: bool = False, transpose_b: bool = False, semiring: Any = None,
                 out_format: TensorFormat | None = None, prolog: Callable | None = None,
                 epilog: Callable | None = None, target: str = "cpu", pipeline: Any = None,
                 device: Any = None, threads: int | str | None = None) -> None:
        self._opts = dict(alpha=alpha, beta=beta, transpose_a=transpose_a, transpose_b=transpose_b,
                          semiring=semiring, out_format=out_format, prolog=prolog, epilog=epilog, target=target,
                          threads=threads)
        self._pipeline = pipeline
        self._objs = [a, b, c]
        self._op: PlannedOp | None = _with_pipeline(_matmul_op(a, b, c, **self._opts), pipeline)
        self._package = result_package((a, b))
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
        return to_package(out, self._package)

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

    def _live(self) -> PlannedOp:
        if self._op is None:
            raise RuntimeError("this Matmul was released")
        return self._op

    # ----- introspection -------------------------------------------------------------------------------------
    @property
    def mlir(self) -> str:
        """The module text before lowering (linalg + sparse_tensor; loops on the emitter path)."""
        op = self._live()
        if op.kernel is not None:
            return op.kernel.text
        from lowering.dispatch import lower
        return lower(op.describe(), op.target, op.pipeline).text

    @property
    def path(self) -> str:
        """The lowering path: ``"sparsifier"`` (MLIR's sparse compiler), ``"emitter"`` (ust-mlir's own
        loops, for range/delta levels and diagonal maps), ``"emitter-rows"`` (the row-range kernel of a
        multi-threaded plan) or ``"kernel:<name>"`` (a registered kernel)."""
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
               epilog: Any, target: str) -> PlannedOp:
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
    return PlannedOp(ins, tensors, out, out_format, get_semiring(semiring), 1, None, None, prolog, epilog, target,
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
    if _wants_gpu(operands, device, target):  # CUDA operands or device="cuda": frontend.ops.gpu._matmul
        from frontend.ops.gpu._matmul import gpu_einsum
        return gpu_einsum(subscripts, *operands, out_format=out_format, semiring=semiring, prolog=prolog,
                          epilog=epilog, device=device)
    op = _with_pipeline(_einsum_op(subscripts, operands, out_format, semiring, prolog, epilog, target), pipeline)
    kernel = op.plan()
    out = op.finish(kernel.function(*kernel.flatten(op.tensors, op.extra)))
    return to_package(out, result_package(operands))


# ----- printing and caches -------------------------------------------------------------------------------------
_STAGE_ALIASES = {"linalg": "input", "sparsified": "sparsify", "llvm": "to-llvm"}


def _stages(op: PlannedOp) -> list[tuple[str, str]]:
    from lowering.dispatch import lower
    from mlir_bridge import lower_stages

    lowered = op.kernel.lowered if op.kernel is not None else lower(op.describe(), op.target, op.pipeline)
    return lower_stages(lowered.text, lowered.pipeline)


def _print_stages(stages: list[tuple[str, str]], stage: str | None, file: Any,
                  aliases: dict[str, str] = _STAGE_ALIASES) -> None:
    """Print every stage, or the one ``stage`` names (a stage name or one of ``aliases``)."""
    want = aliases.get(stage, stage) if stage is not None else None
    names = [n for n, _ in stages]
    if want is not None and want not in names:
        raise ValueError(f"unknown stage {stage!r}; have {', '.join(aliases)} or one of {names}")
    for name, text in stages:
        if want is None or name == want:
            label = {v: k for k, v in aliases.items()}.get(name, name)
            print(f"// ----- {label} ({name}) -----", file=file)
            print(text, file=file)


def print_mlir(*args: Any, stage: str | None = None, file: Any = None, subscripts: str | None = None,
               **kwargs: Any) -> None:
    """Print the MLIR of an operation at each stage (linalg, after sparsification, LLVM dialect).

    ``print_mlir(mm)`` for a :class:`Matmul`; ``print_mlir(a, b, **matmul_options)`` for a matmul;
    ``print_mlir(*operands, subscripts="ik,kj->ij")`` for an einsum; ``stage=`` picks one.
    """
    if len(args) == 1 and hasattr(args[0], "print_mlir"):  # a Matmul or a frontend.ops.gpu._matmul.GpuMatmul
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
