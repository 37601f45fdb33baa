"""Compiled elementwise and reduction kernels (:mod:`lowering.sparsifier.elementwise` modules), cached by
structure: ``run_kernel(key, build, inputs, specs, out)`` compiles ``build()`` once per ``key`` through
the sparsifier pipeline, passes the operand Tensors' buffers without copies and decodes the result
(a NumPy array, or a Tensor over the buffers the kernel allocated)."""
from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import numpy as np

from frontend.storage._budget import require, storage_bytes, workspace_bytes
from frontend.storage._validate import mark_valid, validate_now
from frontend.tensor._tensor import Tensor
from lowering.contraction import TensorSpec
from lowering.sparsifier.path import sparsifier_pipeline

from ._kernel_cache import ArgumentLayout, buffer_parts, sparse_result
from ._threads import RowRangeFunction


class ElementwiseKernel(ArgumentLayout):
    """A compiled module's ``@main``, the argument layout of its operands and the result's spec."""

    def __init__(self, text: str, inputs: Sequence[TensorSpec], out: TensorSpec) -> None:
        from mlir_bridge import compile_module

        self.text = text
        self.function = compile_module(text, sparsifier_pipeline()).function("main")
        super().__init__(inputs, [1] * len(inputs))
        self.out = out
        self._out_parts = buffer_parts(out.fmt) if out.sparse else None

    #: the lowering path that built it: MLIR's sparsifier over a ``linalg.generic``
    path = "sparsifier"

    def stages(self) -> list[tuple[str, str]]:
        """``[(stage, module text), ...]``: the input module, then after each sparsifier pipeline stage."""
        from mlir_bridge import lower_stages

        return lower_stages(self.text, sparsifier_pipeline())

    def __call__(self, tensors: Sequence[Tensor], fmt: Any = None) -> Any:
        """Run on ``tensors``: a NumPy array (dense result) or a Tensor in ``fmt`` (default: the compiled one)."""
        for t in tensors:  # sparsifier code is not bounds-safe: NumPy index buffers checked on every call
            if isinstance(t, Tensor) and t.is_sparse:
                validate_now(t)
        result = self.function(*self.flatten(tensors))
        parts = self._out_parts
        if parts is None:
            return result
        t = sparse_result(self.out, parts, result, fmt, np.dtype(f"int{self.out.crd_width}"))
        mark_valid(t, owned=True)  # built by the kernel: valid by construction
        return t


_lock = threading.Lock()
_recording = threading.local()  # the list kernel_for appends to inside recorded_kernels()
_kernels: dict[tuple, Any] = {}  # structural key -> kernel; one per structure, emptied by clear


def kernel_for(key: tuple, build: Callable[[], str], inputs: Sequence[TensorSpec], out: TensorSpec
               ) -> ElementwiseKernel:
    """The kernel for ``key``, compiled from ``build()`` the first time (the module text is cached on disk
    by ``mlir_bridge`` too); ``MemoryError`` when the result cannot be allocated."""
    need = storage_bytes(out.fmt, out.shape, 0, 16) + workspace_bytes(out.fmt, out.shape, 16)
    require(f"{key[0]} {key[1] if isinstance(key[1], str) else ''}".strip(), need, [s.shape for s in inputs])
    return _cached(("sparsifier", *key), lambda: ElementwiseKernel(build(), inputs, out))


K = TypeVar("K")


def _cached(key: tuple, make: Callable[[], K]) -> K:
    """``_kernels[key]``, made the first time; recorded inside :func:`recorded_kernels`."""
    k = _kernels.get(key)
    if k is None:
        k = make()
        with _lock:
            k = _kernels.setdefault(key, k)
    note_kernel(k)
    return k


#: :func:`recorded_kernels` blocks open in any thread: while none is, :func:`note_kernel` returns at once
#: (a global read, not the ~0.4 us thread-local lookup, on every lean call)
_open_recordings = 0


def note_kernel(kernel: Any) -> None:
    """Record ``kernel`` as run when inside :func:`recorded_kernels` (for a call that did not look it up)."""
    if _open_recordings:
        seen = getattr(_recording, "kernels", None)
        if seen is not None:
            seen.append(kernel)


@contextlib.contextmanager
def recorded_kernels() -> Iterator[list[Any]]:
    """The kernels the calling thread runs inside this block, in call order (for ``print_mlir``)."""
    global _open_recordings
    got: list[Any] = []
    before = getattr(_recording, "kernels", None)
    _recording.kernels = got
    with _lock:
        _open_recordings += 1
    try:
        yield got
    finally:
        _recording.kernels = before
        with _lock:
            _open_recordings -= 1


class RowKernel:
    """A compiled hand-written module of row-range functions ``@f(*args, out, row_begin, row_end)``
    (:mod:`lowering.kernels.row_softmax`, :mod:`lowering.kernels.merge_rows`), run in row chunks on the
    thread pool."""

    def __init__(self, text: str, name: str = "rows") -> None:
        from mlir_bridge import compile_module

        self.text = text
        self.name = name
        self.module = compile_module(text, sparsifier_pipeline())

    @property
    def path(self) -> str:
        """``"kernel:<name>"``: which hand-written row kernel (``merge``: the union/intersection of CSR/CSC rows,
        ``rowsum``, ``softmax``, ``sddmm``)."""
        return f"kernel:{self.name}"

    def stages(self) -> list[tuple[str, str]]:
        from mlir_bridge import lower_stages

        return lower_stages(self.text, sparsifier_pipeline())

    def function(self, name: str) -> Any:
        """The compiled ``@name`` itself: ``f(*args, out, row_begin, row_end)`` runs one chunk at once (one
        descriptor pack; no prepared call)."""
        return self.module.function(name)

    def __call__(self, args: Sequence[Any], out: np.ndarray, bounds: tuple[int, ...], name: str = "main"
                 ) -> np.ndarray:
        """``@name`` on rows ``[bounds[k], bounds[k + 1])`` into ``out``, one chunk per pair of bounds."""
        return RowRangeFunction(self.module.function(name), out.shape, out.dtype).bind(*args, bounds=bounds)(out)


def row_kernel_for(key: tuple, build: Callable[[], str]) -> RowKernel:
    """The row kernel for ``key``, compiled from ``build()`` the first time."""
    return _cached(("row", *key), lambda: RowKernel(build(), str(key[0])))


def clear_elementwise_kernels() -> None:
    """Forget the cached elementwise kernels."""
    with _lock:
        _kernels.clear()
