"""The CPU backend of ``Matmul`` / ``matmul`` / ``einsum``: a :class:`PreparedOp`, its kernel and a prepared call.

Matmuls of one signature (operands' structure + structural options) reuse one prepared op without operands
(``_TEMPLATES``), so building a plan for a signature seen before skips the preparation steps, and
one-shot calls run through this thread's prepared call for the signature (:func:`_shared_call`).
"""
from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from lowering.dispatch import lower, path_of, registry_state

from ._contractions import einsum_op, matmul_op
from ._kernel_cache import Kernel
from ._operands import operand, operand_key, result_package, to_caller_package
from ._options import DEFAULT_GPU_OPTIONS, GpuOptions, MatmulOptions
from ._plan import MatmulPlan
from ._prepared import PreparedOp

_TEMPLATES: dict[tuple, PreparedOp] = {}  # matmul signature -> PreparedOp without operands; 513 at most
_THREAD_CALLS = threading.local()  # .calls: signature -> (kernel, prepared call, its arguments); 65 per thread


def forget_templates() -> None:
    """Drop the per-signature prepared ops (their kernels stay in the kernel cache)."""
    _TEMPLATES.clear()


def _shared_call(signature: tuple, kernel: Kernel, args: list[Any]) -> Any:
    """Run ``kernel`` through this thread's prepared call for ``signature``, re-binding only the arguments
    that are other objects than last time (the descriptors of unchanged ones are reused). The prepared
    call keeps the last call's argument buffers alive until the next call with this signature."""
    calls = getattr(_THREAD_CALLS, "calls", None)
    if calls is None:
        calls = _THREAD_CALLS.calls = {}
    got = calls.get(signature)
    if got is None or got[0] is not kernel:
        if len(calls) > 64:
            calls.clear()
        bound = kernel.function.bind(*args)
        calls[signature] = (kernel, bound, args)
        return bound()
    _, bound, last = got
    for i, a in enumerate(args):
        if a is not last[i]:
            bound.rebind(i, a)
            last[i] = a
    return bound()


class CpuMatmul(MatmulPlan):
    """A prepared contraction on the CPU: ``plan()`` fetches or compiles its kernel and binds the arguments,
    ``execute()`` runs that prepared call. ``path``: ``"sparsifier"``, ``"emitter"``, ``"emitter-rows"``
    or ``"kernel:<name>"``."""

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
        self._plain = False  # whether the prepared call's result is the dense result itself (set by plan)

    @classmethod
    def for_matmul(cls, a: Any, b: Any, c: Any, options: MatmulOptions,
                   gpu: GpuOptions = DEFAULT_GPU_OPTIONS) -> CpuMatmul:
        """``alpha * op(a) @ op(b) + beta * c``, from the signature's template when there is one."""
        if gpu is not DEFAULT_GPU_OPTIONS and not gpu.is_default():
            raise TypeError("path, chip and stream apply to the GPU (CUDA operands or device='cuda')")
        ta, tb = operand(a, "a"), operand(b, "b")
        tc = None if c is None else operand(c, "c")
        signature = (operand_key(ta), operand_key(tb), None if tc is None else operand_key(tc), options.key(),
                     registry_state())
        template = _TEMPLATES.get(signature)
        if template is not None:
            op = template.with_operands([ta, tb], c, None if tc is None else tc.val, options.alpha, options.beta)
        else:
            op = matmul_op(ta, tb, c, options)
            if op.tensors[0] is not ta or op.tensors[1] is not tb:  # transposed or squeezed: not reusable as is
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
        self._bound = kernel.function.bind(*kernel.flatten(op.tensors, op.extra))
        self._plain = op.is_plain()
        return self

    def execute(self) -> Any:
        bound = self._bound
        if bound is None:
            bound = self.plan()._bound
        if self._plain:
            return to_caller_package(bound(), self._package)
        op = self._op
        out = op.finish(bound())  # type: ignore[union-attr]
        if op.c_obj is not None:  # type: ignore[union-attr]
            return op.c_obj  # type: ignore[union-attr]
        return to_caller_package(out, self._package)

    def execute_once(self) -> Any:
        op = self._live()
        kernel = op.kernel if op.kernel is not None else self._kernel()
        args = kernel.flatten(op.tensors, op.extra)
        signature = self._signature if self._from_template else None
        out = op.finish(_shared_call(signature, kernel, args) if signature is not None else kernel.function(*args))
        if op.c_obj is not None:
            return op.c_obj
        return to_caller_package(out, self._package)

    def reset_operands(self, a: Any = None, b: Any = None, c: Any = None) -> CpuMatmul:
        old = self._live()
        objs = [new if new is not None else obj for new, obj in zip((a, b, c), self._objs)] + self._objs[3:]
        op = self._prepare(objs)
        if op.key != old.key:
            raise ValueError("reset_operands needs operands of the same formats, shapes, dtypes and index "
                             "types; create a new Matmul for others")
        op.kernel = old.kernel
        self._op, self._objs, self._plain = op, objs, op.is_plain()
        if self._bound is not None:
            self._bound = op.kernel.function.bind(*op.kernel.flatten(op.tensors, op.extra))  # type: ignore[union-attr]
        return self

    def release(self) -> None:
        self._op, self._bound, self._objs = None, None, [None] * len(self._objs)

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
