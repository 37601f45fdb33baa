"""The CPU backend of ``Matmul`` / ``matmul`` / ``einsum``: a :class:`PreparedOp`, its kernel and a prepared call.

Matmuls of one signature (operands' structure + structural options) reuse one prepared op without operands
(``_TEMPLATES``), so building a plan for a signature seen before skips the preparation steps, and
one-shot calls run through this thread's prepared call for the signature (:func:`_shared_call`).
"""
from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np

from frontend.interop._view_cache import shared_view
from frontend.storage._buffers import data_pointer
from frontend.storage._validate import recheck, validate_now
from frontend.tensor._tensor import Tensor
from lowering.dispatch import lower, path_of, registry_state

from ._contractions import einsum_op, matmul_op
from ._kernel_cache import Kernel
from ._operands import native_half, operand, operand_key, promoted, result_package, to_caller_package
from ._options import DEFAULT_GPU_OPTIONS, GpuOptions, MatmulOptions
from ._plan import MatmulInfo, MatmulPlan
from ._prepared import PreparedOp
from ._threads import RowRangeCall

_TEMPLATES: dict[tuple, PreparedOp] = {}  # matmul signature -> PreparedOp without operands; 513 at most
_THREAD_CALLS = threading.local()  # .calls: signature -> (kernel, prepared call, its arguments); 65 per thread
MISS = object()  # run_cached's answer when the full path must run


def forget_templates() -> None:
    """Drop the per-signature prepared ops (their kernels stay in the kernel cache)."""
    _TEMPLATES.clear()


def _shared_call(signature: tuple, bounds: tuple[int, ...], kernel: Kernel, args: list[Any]) -> Any:
    """This thread's prepared call of ``kernel`` for ``signature``, re-bound to the arguments that are other
    objects than last time (the descriptors of unchanged ones are reused) and to the chunks ``bounds``. The
    prepared call keeps the last call's argument buffers alive until the next call with this signature."""
    calls = getattr(_THREAD_CALLS, "calls", None)
    if calls is None:
        calls = _THREAD_CALLS.calls = {}
    got = calls.get(signature)
    if got is None or got[0] is not kernel:
        if len(calls) > 64:
            calls.clear()
        bound = kernel.bind(args, bounds)
        calls[signature] = (kernel, bound, args)
        return bound
    _, bound, last = got
    for i, a in enumerate(args):
        if a is not last[i]:
            bound.rebind(i, a)
            last[i] = a
    if kernel.row_range:
        bound.set_bounds(bounds)
    return bound


def _fast_operand(x: Any, what: str) -> tuple[tuple, Any] | None:
    """(operand key, what the kernel's arguments come from) of the operands a one-shot call takes without a
    new Tensor: a C-contiguous numpy array (itself), a SciPy object viewed and validated before with the same
    buffers (its shared view) or a Tensor (validated as :func:`operand` does); None for the others."""
    tx = type(x)
    if tx is np.ndarray:
        return ((None, x.shape, x.dtype), x) if x.flags.c_contiguous else None
    if tx is Tensor:
        t = operand(x, what)
        return operand_key(t), t
    view = shared_view(x)
    return None if view is None else (operand_key(view), view)


def _validate_now(tensors: Sequence[Any]) -> None:
    """The sparse Tensors among ``tensors`` validated now unless version counters prove them unchanged."""
    for t in tensors:
        if isinstance(t, Tensor) and t.is_sparse:
            validate_now(t)


def run_cached(a: Any, b: Any, options: MatmulOptions) -> Any:
    """``matmul(a, b)`` with a dense result run at once through this thread's prepared call when the signature
    has a template and the operands need no new Tensor; :data:`MISS` when the full path must run (first
    call of a signature, another variant for these buffers, scalings, other operand kinds)."""
    fa, fb = _fast_operand(a, "a"), _fast_operand(b, "b")
    if fa is None or fb is None or fa[0][2] != fb[0][2]:  # operand_key()[2] is the dtype
        return MISS  # unknown operands, or mixed dtypes (promoted copies on the full path)
    signature = (fa[0], fb[0], None, options.key(), registry_state(), False)
    template = _TEMPLATES.get(signature)
    if template is None or template.has_alpha or template.out_format is not None or template.reroutes:
        return MISS
    kernel, bounds = template.kernel, template.bounds
    if kernel is None:
        return MISS
    if template.schedule is not None:  # the variant these buffers choose (a measured schedule, remembered)
        schedule, rows, bounds = template._schedule_for(fa[1] if fa[0][0] is not None else fb[1],
                                                         template._described())
        if schedule.code_key() != (template.lanes, template.stride, template.gather) or rows != template.row_range:
            return MISS
    if not kernel.bounds_safe:  # NumPy index buffers may have changed in place: checked before this kernel reads
        _validate_now((fa[1], fb[1]))
    call = _shared_call(signature, bounds, kernel, kernel.flatten((fa[1], fb[1])))
    result = template.finish(call(None) if kernel.row_range else call())
    return to_caller_package(result, result_package((a, b)))


class CpuMatmul(MatmulPlan):
    """A prepared contraction on the CPU: ``plan()`` fetches or compiles its kernel and binds the arguments,
    ``execute()`` runs that prepared call. ``path``: ``"sparsifier"``, ``"emitter"``, ``"emitter-rows"``
    or ``"kernel:<name>"``; ``info`` says which variant runs on how many threads, and why."""

    def __init__(self, op: PreparedOp, objs: list[Any], options: MatmulOptions, subscripts: str | None = None,
                 signature: tuple | None = None, from_template: bool = False) -> None:
        self._op: PreparedOp | None = op
        self._objs = objs
        self._package = result_package(objs if subscripts is not None else objs[:2])
        self._options = options
        self._subscripts = subscripts  # an einsum's (None: a matmul)
        self._signature = signature  # set when a prepared op without operands can serve this signature
        self._from_template = from_template
        self._bound: Any = None
        self._direct = False  # whether the prepared call's result is the dense result itself (set by plan)
        self._into: tuple[PreparedOp, Any] | None = None  # row-range op and call for execute(out=); made once
        self._dense_slots: tuple[Any, dict[int, int]] | None = None  # (prepared call, operand -> argument)
        self._checks: tuple[Tensor, ...] = ()  # sparse tensors the prepared call reads: rechecked per execute
        self._unwatched: tuple[Tensor, ...] = ()  # those validated per execute (kernel not bounds-safe, NumPy buffers)
        self._versions: tuple[tuple[Any, int], ...] = ()  # their torch index buffers and versions
        self._casts: list[Any] = []  # promoted operands' (copy, source) values, refreshed per execute
        self._fast: Any = None  # the prepared call's raw runner when execute() may use it (set by plan)
        self.checked = True  # False: the caller guarantees the index buffers are unchanged (no recheck)

    def answer_like(self, objs: Sequence[Any]) -> None:
        """Give results in the package of ``objs`` (the caller's operands, where the plan runs on a converted
        copy of one of them: ``Matmul(optimize=True)``)."""
        self._package = result_package(objs)

    @classmethod
    def for_matmul(cls, a: Any, b: Any, c: Any, options: MatmulOptions,
                   gpu: GpuOptions = DEFAULT_GPU_OPTIONS, rows: bool = False) -> CpuMatmul:
        """``alpha * op(a) @ op(b) + beta * c``, from the signature's template when there is one; ``rows``:
        prefer the row-range variant (``out=``)."""
        if gpu is not DEFAULT_GPU_OPTIONS and not gpu.is_default():
            raise TypeError("path, chip and stream apply to the GPU (CUDA operands or device='cuda')")
        ta, tb = operand(a, "a"), operand(b, "b")
        tc = None if c is None else operand(c, "c")
        native = tc is None and native_half([ta, tb], options)  # half operands used as they are
        pa, pb = (ta, tb) if native else promoted([ta, tb], () if tc is None else (tc.dtype,))
        signature = (operand_key(ta), operand_key(tb), None if tc is None else operand_key(tc), options.key(),
                     registry_state(), rows)
        template = _TEMPLATES.get(signature) if pa is ta and pb is tb else None
        if pa is not ta or pb is not tb:  # mixed dtypes: promoted copies, no template
            op = matmul_op(ta, tb, c, options, rows)
            signature = None  # type: ignore[assignment]
        elif template is not None:
            op = template.with_operands([ta, tb], c, None if tc is None else tc.val, options.alpha, options.beta)
        else:
            op = matmul_op(ta, tb, c, options, rows)
            if not op.replayable or op.given_ids != (id(ta), id(tb)):  # e.g. transposed, squeezed, demapped
                signature = None  # type: ignore[assignment]
        return cls(op, [a, b, c], options, None, signature, template is not None)

    @classmethod
    def for_einsum(cls, subscripts: str, operands: Sequence[Any], options: MatmulOptions) -> CpuMatmul:
        """An einsum over ``operands``."""
        return cls(einsum_op(subscripts, operands, options), list(operands), options, subscripts)

    # ----- life cycle ----------------------------------------------------------------------------------------
    def plan(self) -> CpuMatmul:
        op = self._live()
        kernel = self._kernel()
        self._bound = kernel.bind(kernel.flatten(op.tensors, op.extra), op.bounds)
        self._direct = op.is_plain()
        self._fast = self._fast_runner()
        self._guard_checks(op)
        return self

    def _fast_runner(self) -> Any:
        """The prepared call's raw runner (:meth:`RowRangeCall.runner`, its result in the callers' package) when
        ``execute()`` may use it: a plain result of a row-range kernel, no promoted operands, an output of
        rank >= 1; else None (``execute()`` takes the general path)."""
        bound, op, package = self._bound, self._op, self._package
        if (not self._direct or op is None or op.casts or not op.row_range or not isinstance(bound, RowRangeCall)
                or not op.kernel.contraction.output.shape):  # type: ignore[union-attr]
            return None
        run = bound.runner()
        if run is None or package in ("numpy", "scipy"):
            return run
        return lambda: to_caller_package(run(), package)  # a dense Tensor (Tensor operands) or a torch tensor

    def _guard_checks(self, op: PreparedOp) -> None:
        """What execute() checks: the sparse operands' torch versions (validated first), the operands whose
        unwatched index buffers a kernel that is not bounds-safe reads, the casts."""
        self._checks = tuple(t for t in op.tensors if isinstance(t, Tensor) and t.is_sparse)
        for t in self._checks:
            recheck(t)
        kernel = op.kernel if op.kernel is not None else self._kernel()
        self._unwatched = () if kernel.bounds_safe else tuple(t for t in self._checks if not t._guard[1])
        self._versions = tuple(p for t in self._checks for p in t._guard[0])
        self._casts = op.casts

    def _revalidate(self) -> None:
        """An index buffer changed in place: validate the operands again (ValueError naming the level)."""
        for t in self._checks:
            recheck(t)
        self._guard_checks(self._live())

    def execute(self, out: np.ndarray | None = None) -> Any:
        """Run the prepared call (plans first if needed); ``out``: write the dense result into this array."""
        bound = self._bound
        if bound is None:
            bound = self.plan()._bound
        if self.checked:  # O(1) per torch index buffer (intact inlined); validated again when one changed
            for b, version in self._versions:
                if b._version != version:
                    self._revalidate()
                    break
            for t in self._unwatched:  # a kernel that is not bounds-safe reads NumPy index buffers: checked
                validate_now(t)
        if out is None and self._fast is not None:
            return self._fast()
        if self._casts:  # promoted operands: their current values, cast
            self._op.refresh_casts()  # type: ignore[union-attr]
        if out is not None:
            return self._execute_into(out)
        if self._direct:
            return to_caller_package(bound(), self._package)
        return self._result(self._op.run(bound))  # type: ignore[union-attr]

    def _execute_into(self, out: np.ndarray) -> Any:
        """``execute(out=...)``: row-parallel contractions run a row-range variant writing into ``out``."""
        op = self._live()
        op.check_out(out)
        if op.row_range or op.schedule is None or op.restore is not None:
            return self._result(op.run(self._bound, out), out)
        if self._into is None:
            into = op.with_row_range()
            kernel = into.kernel_for()
            self._into = (into, kernel.bind(kernel.flatten(into.tensors, into.extra), into.bounds))
        into, bound = self._into
        return self._result(into.run(bound, out), out)

    def execute_once(self, out: np.ndarray | None = None) -> Any:
        op = self._live()
        kernel = op.kernel if op.kernel is not None else self._kernel()
        if not kernel.bounds_safe:  # NumPy index buffers may have changed in place: checked before it reads them
            _validate_now(op.tensors)
        args = kernel.flatten(op.tensors, op.extra)
        if out is not None:
            op.check_out(out)
        if self._signature is not None and self._from_template:
            call = _shared_call(self._signature, op.bounds, kernel, args)
        elif kernel.row_range:
            call = kernel.bind(args, op.bounds)
        else:
            return self._result(op.run(lambda: kernel.function(*args), out), out)
        return self._result(op.run(call, out), out)

    def _result(self, result: Any, out: np.ndarray | None = None) -> Any:
        """``c``'s object when ``c`` was given, ``out`` when given, else the result in the operands' package."""
        op = self._op
        if op is not None and op.c_obj is not None:
            return op.c_obj
        if out is not None:
            return out
        return to_caller_package(result, self._package)

    def reset_operands(self, a: Any = None, b: Any = None, c: Any = None) -> CpuMatmul:
        old = self._live()
        objs = [new if new is not None else obj for new, obj in zip((a, b, c), self._objs)] + self._objs[3:]
        op = self._prepare(objs)
        if op.initial_key != old.initial_key:
            raise ValueError("reset_operands needs operands of the same formats, shapes, dtypes and index "
                             "types; create a new Matmul for others")
        op.adopt_variant(old)
        self._op, self._objs, self._direct, self._into = op, objs, op.is_plain(), None
        if self._bound is not None:
            kernel = op.kernel_for()
            self._bound = kernel.bind(kernel.flatten(op.tensors, op.extra), op.bounds)
            self._fast = self._fast_runner()
            self._guard_checks(op)
        return self

    def rebind_dense(self, index: int, array: Any) -> None:
        """Point dense operand ``index`` (operand order) at ``array``, a C-contiguous NumPy/torch array of the
        same shape and dtype, without preparing again: only the prepared call's descriptor changes (a few
        microseconds; :meth:`reset_operands` prepares the whole operation again). For plans whose kernel reads
        that operand in place and whose result is the kernel's own (no ``c``, conversion or reshape);
        ValueError otherwise (then use :meth:`reset_operands`)."""
        bound = self._bound if self._bound is not None else self.plan()._bound
        old = self._objs[index]
        if not self._direct or isinstance(old, Tensor) or not hasattr(old, "shape"):
            raise ValueError(f"operand {index}: rebind_dense needs a dense array operand of a plan whose "
                             "result is the kernel's own; use reset_operands")
        if tuple(array.shape) != tuple(old.shape) or str(array.dtype) != str(old.dtype):
            raise ValueError(f"operand {index}: rebind_dense needs shape {tuple(old.shape)} and dtype "
                             f"{old.dtype}, got {tuple(array.shape)} and {array.dtype}")
        held = self._dense_slots
        if held is None or held[0] is not bound:  # this prepared call's argument position of each dense operand
            op = self._live()
            args = op.kernel_for().flatten(op.tensors, op.extra)
            slots = {}
            for k, obj in enumerate(self._objs):
                if obj is not None and not isinstance(obj, Tensor) and hasattr(obj, "shape"):
                    where = [i for i, a in enumerate(args) if _same_buffer(a, obj)]
                    if len(where) == 1:
                        slots[k] = where[0]
            held = self._dense_slots = (bound, slots)
        slot = held[1].get(index)
        if slot is None:
            raise ValueError(f"operand {index}: the kernel reads a copy of it; use reset_operands")
        bound.rebind(slot, array)
        self._objs[index] = array

    def release(self) -> None:
        self._op, self._bound, self._into, self._objs = None, None, None, [None] * len(self._objs)
        self._fast = None

    def _live(self) -> PreparedOp:
        if self._op is None:
            raise RuntimeError("this Matmul was released")
        return self._op

    def _prepare(self, objs: list[Any]) -> PreparedOp:
        if self._subscripts is None:
            return matmul_op(objs[0], objs[1], objs[2], self._options)
        return einsum_op(self._subscripts, objs, self._options)

    def _kernel(self) -> Kernel:
        """The op's kernel; the first time, the op (without operands) becomes its signature's template."""
        op = self._live()
        if op.kernel is not None:
            return op.kernel
        kernel = op.kernel_for()
        if self._signature is not None:
            if len(_TEMPLATES) > 512:  # e.g. lambdas re-created per call: keep the table bounded
                _TEMPLATES.clear()
            _TEMPLATES[self._signature] = op.without_operands()
        return kernel

    # ----- introspection -------------------------------------------------------------------------------------
    @property
    def prepared(self) -> PreparedOp:
        """The prepared contraction (RuntimeError once released)."""
        return self._live()

    @property
    def info(self) -> MatmulInfo:
        return self._live().info()

    @property
    def mlir(self) -> str:
        op = self._live()
        if op.kernel is not None:
            return op.kernel.text
        return lower(op.describe(), op.target, op.pipeline).text

    @property
    def path(self) -> str:
        op = self._live()
        path = op.kernel.path if op.kernel is not None else path_of(op.describe())
        return f"convert({', '.join(op.conversions)})+{path}" if op.conversions else path

    def stages(self) -> list[tuple[str, str]]:
        from mlir_bridge import lower_stages

        op = self._live()
        lowered = op.kernel.lowered if op.kernel is not None else lower(op.describe(), op.target, op.pipeline)
        return lower_stages(lowered.text, lowered.pipeline)


def _same_buffer(arg: Any, obj: Any) -> bool:
    """Whether a flattened kernel argument is ``obj``'s own memory (same first element and shape)."""
    return (hasattr(arg, "shape") and tuple(arg.shape) == tuple(obj.shape)
            and data_pointer(arg) == data_pointer(obj))
