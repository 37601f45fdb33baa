"""Polymorphic operations: ``matmul``, ``Matmul``, ``einsum``, compiled and cached.

Every operation is one contraction (:class:`lowering.contraction.Contraction`) over the operands' own
buffers, lowered by :mod:`lowering.dispatch` (a registered kernel, MLIR's sparsifier with the formats as
``#sparse_tensor.encoding``, or ust-mlir's emitter for range/delta levels and diagonal maps): sparse
operands keep their format, transposes are free reinterpretations of a format (CSR^T is CSC over the
same buffers), sparse results come back as buffers the kernel allocated. :class:`Matmul` holds a backend
plan (:class:`frontend.ops._plan.MatmulPlan`) chosen by :func:`_backend_for`: the CPU's
(:mod:`frontend.ops._cpu`) or the GPU's (:mod:`frontend.ops.gpu._matmul`); ``matmul`` and ``einsum`` are
one-shot runs of the same plans. Kernels are cached in memory by structure (:mod:`frontend.ops._kernel_cache`)
and compiled modules in memory and on disk by ``mlir_bridge``.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from frontend.format import TensorFormat, as_format
from frontend.storage._compact import huge, run_compacted
from frontend.storage._format_choice import FormatChoice
from frontend.tensor._optimize import optimize
from frontend.tensor._tensor import Tensor

from . import _elementwise, _sddmm
from ._cpu import MISS, CpuMatmul, forget_templates, run_cached
from ._elementwise_kernels import clear_elementwise_kernels
from ._kernel_cache import clear_kernels, kernel_count
from ._operands import delegate, operand, result_package, to_caller_package
from ._options import DEFAULT_GPU_OPTIONS, GpuOptions, MatmulOptions, has_complex32, qualified_matmul
from ._plan import MatmulInfo, MatmulPlan, print_stages
from ._reroute import entry_format
from .gpu._route import wants_gpu


def _backend_for(objs: Sequence[Any], options: MatmulOptions) -> Any:
    """The backend plan class for these operands and options: the GPU's for CUDA operands, ``device="cuda"``
    or ``target="gpu"``, else the CPU's."""
    if wants_gpu(objs, options.device, options.target):
        from .gpu._matmul import GpuMatmul
        return GpuMatmul
    return CpuMatmul


def _matmul_plan(a: Any, b: Any, c: Any, options: MatmulOptions, gpu: GpuOptions = DEFAULT_GPU_OPTIONS) -> MatmulPlan:
    """The backend plan of ``alpha * op(a) @ op(b) + beta * c`` (what :class:`Matmul` holds)."""
    return _backend_for((a, b, c), options).for_matmul(a, b, c, options, gpu)


# ----- matmul ----------------------------------------------------------------------------------------------
def matmul(a: Any, b: Any, c: Any = None, *, alpha: Any = 1, beta: Any = None, transpose_a: bool = False,
           transpose_b: bool = False, conjugate_a: bool = False, conjugate_b: bool = False, compute_type: Any = None,
           semiring: Any = None, out_format: TensorFormat | str | None = None,
           prolog: Callable | None = None, epilog: Callable | None = None, target: str = "cpu",
           pipeline: Any = None, device: Any = None, threads: int | str | None = None, out: Any = None) -> Any:
    """``alpha * op(a) @ op(b) + beta * c`` on any formats (numpy matmul rules for vectors and batches).

    nvmath's qualifiers: ``conjugate_a``/``conjugate_b`` conjugate a complex operand (no-op on real ones;
    with ``transpose_*`` the conjugate transpose); ``compute_type`` (a dtype at least as wide as the
    operands', e.g. ``np.float64`` for float32 operands) accumulates in that type, the result keeping the
    operands' dtype (``c``'s when given); ``torch.complex32`` operands are computed in complex64 and the
    result comes back in complex32 (:func:`._options.qualified_matmul`).

    Operands: Tensors or package objects (numpy, scipy.sparse, torch CPU); the result comes back in the
    inputs' package (a Tensor for Tensors). With ``c``, ``c`` is updated in place and returned (``beta``
    defaults to 1). Sparse x sparse gives a sparse result in ``out_format`` (default: ``a``'s family, e.g.
    CSR x CSR -> CSR). ``semiring``: ``"min-plus"``, ``"max-plus"``, ``"or-and"``, a :class:`Semiring` or
    ``(add, mul[, identity])``. ``prolog`` maps ``a``'s stored values, ``epilog`` the result's.
    CUDA operands (torch, CuPy) or ``device="cuda"`` run on the GPU (:mod:`frontend.ops.gpu._matmul`).
    ``threads``: None or ``"auto"`` (the default: every core when the work is above a measured threshold,
    else one), 1 (single-threaded) or n (n chunks): row-parallel products (one stored operand with a dense
    outer row level or DIA-I, dense result) run a row-range kernel in chunks balanced by stored entries on
    a shared thread pool (:mod:`frontend.ops._threads`); other operations, registered kernels and the GPU
    run single-threaded. ``out``: a writable C-contiguous numpy array of the result's shape and dtype the
    dense result is written into (and returned; row-parallel products allocate nothing; CPU only).

    The same plan as ``Matmul(a, b, c, ...)``, run once: a signature seen before reuses its prepared op
    and this thread's prepared call.
    """
    owner = delegate((a, b, c))
    if conjugate_a or conjugate_b or compute_type is not None or has_complex32((a, b, c)):
        if owner is not None:
            raise TypeError("conjugate_a/conjugate_b/compute_type and complex32 operands are not supported with "
                            "distributed operands; conjugate or cast the operands first")
        return qualified_matmul(matmul, (a, b, c), (conjugate_a, conjugate_b, compute_type), out, dict(
            alpha=alpha, beta=beta, transpose_a=transpose_a, transpose_b=transpose_b, semiring=semiring,
            out_format=out_format, prolog=prolog, epilog=epilog, target=target, pipeline=pipeline, device=device,
            threads=threads))
    if owner is not None:  # a distributed operand (frontend.distributed) runs the call itself
        return owner.__ust_function__("matmul", (a, b, c), dict(
            alpha=alpha, beta=beta, transpose_a=transpose_a, transpose_b=transpose_b, semiring=semiring,
            out_format=out_format, prolog=prolog, epilog=epilog, target=target, pipeline=pipeline, device=device,
            threads=threads, out=out))
    if c is None and out is None and huge((a, b)):
        routed = _compacted_matmul(a, b, dict(
            alpha=alpha, transpose_a=transpose_a, transpose_b=transpose_b, semiring=semiring, out_format=out_format,
            prolog=prolog, epilog=epilog, target=target, pipeline=pipeline, device=device, threads=threads))
        if routed is not None:
            return routed
    options = MatmulOptions(alpha, beta, transpose_a, transpose_b, semiring, out_format, prolog, epilog, target,
                            pipeline, device, threads)
    backend = _backend_for((a, b, c), options)
    if out is None:
        if backend is CpuMatmul and c is None:
            result = run_cached(a, b, options)
            if result is not MISS:
                return result
        return backend.for_matmul(a, b, c, options, DEFAULT_GPU_OPTIONS).execute_once()
    if backend is not CpuMatmul:
        raise TypeError("out= applies to CPU results (a numpy array)")
    return CpuMatmul.for_matmul(a, b, c, options, rows=True).execute_once(out)




def _compacted_matmul(a: Any, b: Any, kwargs: dict[str, Any]) -> Any:
    """``matmul`` of hypersparse operands (rank 1 or 2) on a compacted problem (:mod:`frontend.storage._compact`:
    memory and time follow the stored entries); None when none is hypersparse."""
    ta, tb = operand(a, "a"), operand(b, "b")
    if ta.ndim not in (1, 2) or tb.ndim not in (1, 2) or ta.device != "cpu" or tb.device != "cpu":
        return None
    la = ("ki" if kwargs["transpose_a"] else "ik") if ta.ndim == 2 else "k"
    lb = ("jk" if kwargs["transpose_b"] else "kj") if tb.ndim == 2 else "k"
    out = ("i" if ta.ndim == 2 else "") + ("j" if tb.ndim == 2 else "")
    want = as_format(kwargs["out_format"]) if kwargs["out_format"] is not None else (
        ta.tensor_format if ta.is_sparse and ta.ndim == len(out) else None)
    got = run_compacted(lambda x, y: matmul(x, y, **kwargs), [(ta, la), (tb, lb)], out, want, "matmul",
                        entry_format)
    return None if got is None else to_caller_package(got, result_package((a, b)))


def _compacted_einsum(subscripts: str, operands: Sequence[Any], kwargs: dict[str, Any]) -> Any:
    """``einsum`` with explicit output letters on hypersparse operands, on a compacted problem; None when no
    operand is hypersparse (or the subscripts use ``...``)."""
    if "->" not in subscripts or "." in subscripts:
        return None
    ins, out = subscripts.replace(" ", "").split("->")
    letters = ins.split(",")
    tensors = [operand(x, f"operand {k}") for k, x in enumerate(operands)]
    if len(letters) != len(tensors) or any(len(s) != t.ndim or t.device != "cpu" for s, t in zip(letters, tensors)):
        return None
    want = as_format(kwargs["out_format"]) if kwargs["out_format"] is not None else None
    got = run_compacted(lambda *xs: einsum(subscripts, *xs, **kwargs), list(zip(tensors, letters)), out, want,
                        f"einsum {subscripts}", entry_format)
    return None if got is None else to_caller_package(got, result_package(operands))


class Matmul:
    """Stateful matmul: ``plan()`` once (compile or fetch from cache), ``execute()`` many times.

        >>> with Matmul(A, B) as mm:
        ...     mm.plan()
        ...     y = mm.execute()
        ...     mm.reset_operands(a=A2)      # same formats, shapes and dtypes
        ...     y2 = mm.execute()

    Options as in :func:`matmul`. It runs on a backend (:attr:`backend`): CUDA operands or ``device="cuda"``
    take the GPU's (:class:`frontend.ops.gpu._matmul.GpuMatmul`: ``path`` is ``"cusparse"``,
    ``"sparsifier-gpu"`` or ``"emitter-gpu"``; ``ptx`` shows its code; GPU-only options ``path``, ``chip``
    and ``stream``, ``execute(stream=...)``), else the CPU's (a row-parallel plan with ``threads`` has
    ``path == "emitter-rows"``).

    Memory safety: sparse operands are validated when the Matmul is made; the caller's index buffers stay
    writable. Every ``execute()`` validates again an operand whose torch index buffers changed (version
    counters, O(1)), and, when the kernel is not bounds-safe (sparsifier code, conversions; the emitter, SpGEMM
    and the row kernels clamp every position range and coordinate), the NumPy index buffers (O(nnz), a
    ``ValueError`` naming the level if they are now wrong: ``frontend.storage._guard``). ``checked=False`` (or
    :meth:`reset_operands_unchecked`) skips those checks: the caller guarantees the index buffers stay valid.
    """

    def __init__(self, a: Any, b: Any, c: Any = None, *, alpha: Any = 1, beta: Any = None,
                 transpose_a: bool = False, transpose_b: bool = False, semiring: Any = None,
                 out_format: TensorFormat | str | None = None, prolog: Callable | None = None,
                 epilog: Callable | None = None, target: str = "cpu", pipeline: Any = None,
                 device: Any = None, threads: int | str | None = None, path: str = "auto",
                 chip: str | None = None, stream: Any = None, checked: bool = True, optimize: bool = False) -> None:
        self._choice: FormatChoice | None = None
        self._first_calls: list[float] = []  # seconds of the first execute() calls of an optimized plan
        caller_a = a
        if optimize:
            a, self._choice = _optimized(a, b)
        options = MatmulOptions(alpha, beta, transpose_a, transpose_b, semiring, out_format, prolog, epilog,
                                target, pipeline, device, threads)
        gpu = DEFAULT_GPU_OPTIONS if path == "auto" and chip is None and stream is None else GpuOptions(path, chip,
                                                                                                         stream)
        self._backend = _matmul_plan(a, b, c, options, gpu)
        self._backend.checked = bool(checked)
        if optimize:
            if not isinstance(self._backend, CpuMatmul):
                raise ValueError("optimize=True chooses a CPU storage; GPU plans take the operand's own format")
            self._backend.answer_like((caller_a, b))

    @property
    def backend(self) -> MatmulPlan:
        """The backend plan this Matmul runs on (CPU or GPU)."""
        return self._backend

    # ----- life cycle ----------------------------------------------------------------------------------------
    def plan(self) -> Matmul:
        """Build and compile the kernel (or fetch it from the cache) and prepare the call."""
        self._backend.plan()
        return self

    def execute(self, stream: Any = None, *, out: Any = None) -> Any:
        """Run the planned kernel on the current operands (plans first if needed); ``stream``: GPU only;
        ``out``: CPU only, a numpy array the dense result is written into (see :func:`matmul`)."""
        if self._choice is not None and len(self._first_calls) < FIRST_CALLS:
            start = time.perf_counter()
            result = self._execute(stream, out)
            self._first_calls.append(time.perf_counter() - start)
            return result
        return self._execute(stream, out)

    def _execute(self, stream: Any, out: Any) -> Any:
        if stream is None and out is None:
            return self._backend.execute()
        backend: Any = self._backend  # only the GPU plan takes a stream, only the CPU plan out=
        if out is not None:
            if not isinstance(backend, CpuMatmul):
                raise TypeError("out= applies to CPU plans (a GPU plan returns a device array)")
            return backend.execute(out)
        return backend.execute(stream)

    def reset_operands(self, a: Any = None, b: Any = None, c: Any = None) -> Matmul:
        """New operands with the same formats, shapes and dtypes (the kernel is kept)."""
        self._backend.reset_operands(a, b, c)
        return self

    def reset_operands_unchecked(self, a: Any = None, b: Any = None, c: Any = None) -> Matmul:
        """:meth:`reset_operands`, and from now on ``execute()`` no longer checks whether the operands' index
        buffers changed in place (the caller guarantees they stay valid; the new operands are still
        validated once here)."""
        self._backend.reset_operands(a, b, c)
        self._backend.checked = False
        return self

    def release(self) -> None:
        """Drop the operands, the prepared call and the kernel reference."""
        self._backend.release()

    def __enter__(self) -> Matmul:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()

    # ----- introspection -------------------------------------------------------------------------------------
    @property
    def mlir(self) -> str:
        """The module text before lowering (linalg + sparse_tensor; loops on the emitter path)."""
        return self._backend.mlir

    @property
    def info(self) -> MatmulInfo:
        """What runs and why: ``path``, inner-loop ``lanes``, ``threads`` (row chunks per call), ``split``
        (``"nnz"`` or ``"rows"``) and the schedule's ``reason`` (from the stored operand's measured statistics;
        :mod:`lowering.schedule`). With ``optimize=True`` the reason also names the storage chosen for ``a``, why,
        and the measured time of the first calls."""
        info = self._backend.info
        if self._choice is None:
            return info
        c = self._choice
        first = ", ".join(f"{1e6 * t:.0f} us" for t in self._first_calls) or "none yet"
        return replace(info, reason=f"{info.reason}; optimize: {c.chosen.name} ({c.reason}; estimate "
                                    f"{c.chosen.estimate:.2f} of CSR's time; first calls {first})")

    @property
    def format_choice(self) -> FormatChoice | None:
        """The report of ``optimize=True`` (every candidate, the choice and why), None without it."""
        return self._choice

    @property
    def path(self) -> str:
        """The lowering path: ``"sparsifier"`` (MLIR's sparse compiler), ``"emitter"`` (ust-mlir's own
        loops, for range/delta levels and diagonal maps), ``"emitter-rows"`` (the row-range kernel of a
        multi-threaded plan), ``"kernel:<name>"`` (a registered kernel) or a GPU path."""
        return self._backend.path

    @property
    def ptx(self) -> str:
        """PTX of the generated kernels (GPU plans only)."""
        ptx = getattr(self._backend, "ptx", None)
        if ptx is None:
            raise AttributeError("a CPU Matmul has no PTX (CUDA operands or device='cuda' make a GPU plan)")
        return ptx

    def stages(self) -> list[tuple[str, str]]:
        """``[(stage, module text), ...]``: linalg input, then after each pipeline stage."""
        return self._backend.stages()

    def print_mlir(self, stage: str | None = None, file: Any = None) -> None:
        """Print the module at each stage (or one: ``"linalg"``, ``"sparsified"``, ``"llvm"`` or a stage name;
        GPU plans also ``"gpu"`` and ``"ptx"``)."""
        self._backend.print_mlir(stage, file)


#: ``Matmul(optimize=True)`` times this many first ``execute()`` calls for ``info``.
FIRST_CALLS = 3


def _optimized(a: Any, b: Any) -> tuple[Any, FormatChoice]:
    """``a`` in the storage :func:`frontend.optimize` picks for products with ``b`` (a dense vector or matrix)."""
    tb = b if isinstance(b, Tensor) or getattr(b, "ndim", 0) not in (1, 2) else Tensor.from_package(b)
    if getattr(a, "ndim", len(getattr(a, "shape", ()))) != 2 or getattr(b, "ndim", 0) not in (1, 2) or tb.is_sparse:
        raise ValueError("optimize=True takes a stored 2-D matrix a and a dense vector or matrix b")
    t = a if isinstance(a, Tensor) else Tensor.from_package(a)
    if not t.is_sparse:
        raise ValueError("optimize=True takes a stored (sparse) matrix a; a dense a has nothing to choose")
    return optimize(t, "spmv" if b.ndim == 1 else "spmm")


# ----- einsum ----------------------------------------------------------------------------------------------
def einsum(subscripts: str, *operands: Any, out_format: TensorFormat | str | None = None, semiring: Any = None,
           prolog: Callable | None = None, epilog: Callable | None = None, target: str = "cpu",
           pipeline: Any = None, device: Any = None, threads: int | str | None = None) -> Any:
    """A contraction or element-wise product on any formats as one ``linalg.generic``.

    ``"ik,kj->ij"``, ``"ij,ij->ij"`` (sampled products keep the sparse operand's pattern), ``"bij,bjk->bik"``,
    ``"ijk,k->ij"``, ``"ij->ji"`` (transposition, e.g. into another ``out_format``). The result is sparse
    when several operands are all sparse, or when a sparse operand is indexed by exactly the output
    letters (sampled products such as SDDMM ``"ij,ik,kj->ij"``); else dense. ``out_format`` overrides it.
    CUDA operands or ``device="cuda"`` run on the GPU (dense result). SDDMM (``"ij,ik,kj->ij"`` or
    ``"ij,ik,jk->ij"`` with a CSR/CSC/COO first operand and NumPy factors of its value type) runs on its own
    threaded kernel (:mod:`frontend.ops._sddmm`); ``threads`` as for :func:`matmul`.
    """
    if huge(operands):
        routed = _compacted_einsum(subscripts, operands, dict(
            out_format=out_format, semiring=semiring, prolog=prolog, epilog=epilog, target=target, pipeline=pipeline,
            device=device, threads=threads))
        if routed is not None:
            return routed
    if semiring is None and prolog is None and epilog is None and target == "cpu" and pipeline is None \
            and device is None:
        got = _sddmm.run(subscripts, operands, out_format, threads)
        if got is not None:
            return got
    owner = delegate(operands)
    if owner is not None:  # a distributed operand (frontend.distributed)
        return owner.__ust_function__("einsum", (subscripts, *operands), dict(
            out_format=out_format, semiring=semiring, prolog=prolog, epilog=epilog, target=target, pipeline=pipeline,
            device=device))
    options = MatmulOptions(semiring=semiring, out_format=out_format, prolog=prolog, epilog=epilog, target=target,
                            pipeline=pipeline, device=device, threads=threads)
    return _backend_for(operands, options).for_einsum(subscripts, operands, options).execute_once()


# ----- printing and caches -------------------------------------------------------------------------------------
def print_mlir(*args: Any, stage: str | None = None, file: Any = None, subscripts: str | None = None,
               **kwargs: Any) -> None:
    """Print the MLIR of an operation at each stage (linalg, after sparsification, LLVM dialect).

    ``print_mlir(mm)`` for a :class:`Matmul`; ``print_mlir(a, b, **matmul_options)`` for a matmul;
    ``print_mlir(*operands, subscripts="ik,kj->ij")`` for an einsum; ``print_mlir(op, *operands, **options)``
    for an elementwise operation or reduction (``op`` is :func:`add`, :func:`softmax`, ...: the call runs
    once and each kernel it compiles is printed in call order); ``stage=`` picks one.
    """
    if args and args[0] is matmul:  # print_mlir(matmul, a, b) as print_mlir(a, b)
        args = args[1:]
    elif args and args[0] is einsum and len(args) > 1:  # print_mlir(einsum, "ik,kj->ij", a, b)
        subscripts, args = args[1], args[2:]
    if len(args) == 1 and hasattr(args[0], "print_mlir"):  # a Matmul or a backend plan
        args[0].print_mlir(stage, file)
        return
    if args and callable(args[0]) and args[0] in _elementwise.OPERATIONS:
        kernels = _elementwise.kernels_of(args[0], *args[1:], **kwargs)
        for n, kernel in enumerate(kernels, 1):
            print(f"// ===== {args[0].__name__}: kernel {n} of {len(kernels)} =====", file=file)
            print_stages(kernel.stages(), stage, file)
        return
    if subscripts is not None:
        got = _sddmm.plan(subscripts, args, kwargs.get("out_format")) if set(kwargs) <= {"out_format"} else None
        if got is not None:  # the SDDMM kernel einsum runs for these operands
            print(f"// {_sddmm.PATH}", file=file)
            print_stages(_sddmm.kernel_for(got[1], _sddmm.elem_of(got[2]), True).stages(), stage, file)
            return
        options = MatmulOptions(out_format=kwargs.pop("out_format", None), semiring=kwargs.pop("semiring", None),
                                prolog=kwargs.pop("prolog", None), epilog=kwargs.pop("epilog", None),
                                target=kwargs.pop("target", "cpu"))
        CpuMatmul.for_einsum(subscripts, args, options).print_mlir(stage, file)
        return
    if args and callable(args[0]) and not hasattr(args[0], "shape"):
        raise TypeError(f"print_mlir: {getattr(args[0], '__name__', args[0])!r} is not an operation it prints; "
                        "give matmul, einsum or an elementwise operation (add, sum, softmax, ...) first, or the "
                        "operands of a matmul")
    if len(args) not in (2, 3):
        raise TypeError("print_mlir(a, b[, c], **options), print_mlir(matmul) or "
                        "print_mlir(*operands, subscripts=...)")
    Matmul(*args, **kwargs).print_mlir(stage, file)


def paths_of(op: Callable[..., Any], *args: Any, **kwargs: Any) -> list[str]:
    """The lowering paths ``op(*args, **kwargs)`` runs, in call order: ``[Matmul(...).info.path]`` for
    :func:`matmul`, the einsum plan's path for :func:`einsum` (first argument the subscripts), and for an
    elementwise operation or reduction each compiled kernel's (``"sparsifier"`` or ``"kernel:<functions>"`` of a
    hand-written row kernel; the call runs once)."""
    if op is matmul:
        return [Matmul(*args, **kwargs).info.path]
    if op is einsum:
        if set(kwargs) <= {"out_format"} and _sddmm.plan(args[0], args[1:], kwargs.get("out_format")) is not None:
            return [_sddmm.PATH]
        return [CpuMatmul.for_einsum(args[0], args[1:], MatmulOptions(**kwargs)).path]
    return [k.path for k in _elementwise.kernels_of(op, *args, **kwargs)]


def cache_info() -> dict[str, Any]:
    """Cached kernels in memory (``"plans"``) plus the compile cache (``mlir_bridge.cache_info()``) fields."""
    from dataclasses import asdict

    from mlir_bridge import cache_info as bridge_info

    info = asdict(bridge_info())
    info["plans"] = kernel_count()
    return info


def clear_cache(*, memory: bool = True, disk: bool = True) -> None:
    """Forget cached kernels and compiled modules (memory) and delete the disk cache's entries."""
    from mlir_bridge import clear_cache as bridge_clear

    if memory:
        clear_kernels()
        clear_elementwise_kernels()
        forget_templates()
    bridge_clear(memory=memory, disk=disk)
