"""Compiled elementwise and reduction kernels (:mod:`lowering.sparsifier.elementwise` modules), cached by
structure: ``run_kernel(key, build, inputs, specs, out)`` compiles ``build()`` once per ``key`` through
the sparsifier pipeline, passes the operand Tensors' buffers without copies and decodes the result
(a NumPy array, or a Tensor over the buffers the kernel allocated)."""
from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from frontend.storage._validate import mark_valid
from frontend.tensor._tensor import Tensor
from lowering.contraction import TensorSpec
from lowering.sparsifier.path import sparsifier_pipeline

from ._kernel_cache import ArgumentLayout, buffer_parts, sparse_result


class ElementwiseKernel(ArgumentLayout):
    """A compiled module's ``@main``, the argument layout of its operands and the result's spec."""

    def __init__(self, text: str, inputs: Sequence[TensorSpec], out: TensorSpec) -> None:
        from mlir_bridge import compile_module

        self.text = text
        self.function = compile_module(text, sparsifier_pipeline()).function("main")
        super().__init__(inputs, [1] * len(inputs))
        self.out = out
        self._out_parts = buffer_parts(out.fmt) if out.sparse else None

    def __call__(self, tensors: Sequence[Tensor], fmt: Any = None) -> Any:
        """Run on ``tensors``: a NumPy array (dense result) or a Tensor in ``fmt`` (default: the compiled one)."""
        result = self.function(*self.flatten(tensors))
        parts = self._out_parts
        if parts is None:
            return result
        t = sparse_result(self.out, parts, result, fmt, np.dtype(f"int{self.out.crd_width}"))
        mark_valid(t)  # built by the kernel: valid by construction
        return t


_lock = threading.Lock()
_kernels: dict[tuple, ElementwiseKernel] = {}  # structural key -> kernel; one per structure, emptied by clear


def kernel_for(key: tuple, build: Callable[[], str], inputs: Sequence[TensorSpec], out: TensorSpec
               ) -> ElementwiseKernel:
    """The kernel for ``key``, compiled from ``build()`` the first time (the module text is cached on disk
    by ``mlir_bridge`` too)."""
    k = _kernels.get(key)
    if k is None:
        k = ElementwiseKernel(build(), inputs, out)
        with _lock:
            k = _kernels.setdefault(key, k)
    return k


def clear_elementwise_kernels() -> None:
    """Forget the cached elementwise kernels."""
    with _lock:
        _kernels.clear()
