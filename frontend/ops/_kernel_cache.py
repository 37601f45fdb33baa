"""Compiled kernels: a lowered, compiled contraction with its argument layout, cached by structure.

``get_kernel(key, describe)`` returns the :class:`Kernel` for a structural key (format structure keys,
shapes, dtypes, index widths, op, semiring, options, target; never names), building it once with
``describe() -> Contraction`` even when several threads ask at the same time.
"""
from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from typing import Any

import numpy as np

from frontend.format import index_width
from frontend.storage._convert import from_coordinates
from frontend.storage._validate import mark_valid
from frontend.tensor._tensor import Tensor
from lowering.contraction import Contraction, TensorSpec
from lowering.dispatch import Lowered, lower
from lowering.kernels.registry import kernel_named
from mlir_bridge.errors import CompileError

from ._threads import RowRangeFunction
from ._two_pass import TwoPassFunction

#: Lowering paths whose generated code clamps every position range and every coordinate it uses as an address
#: (lowering.emitter.rules), so it reads and writes in bounds whatever the index buffers hold.
BOUNDS_SAFE_PATHS = frozenset({"emitter", "emitter-rows"})


def buffer_parts(fmt: Any) -> tuple[tuple[str, int], ...]:
    """The lowered arguments of an encoded tensor, in order: ``("pos", k)``, ``("crd", k)``, ``("val", -1)``."""
    parts: list[tuple[str, int]] = []
    for k, lv in enumerate(fmt.levels):
        if lv.has_positions:
            parts.append(("pos", k))
        if lv.has_coordinates:
            parts.append(("crd", k))
    parts.append(("val", -1))
    return tuple(parts)


def _signed_view(a: Any) -> Any:
    """Delta gaps are unsigned (uint8/16/32); kernels take the same-width signed type and zero-extend."""
    dt = getattr(a, "dtype", None)
    if isinstance(dt, np.dtype) and dt.kind == "u":
        return a.view(np.dtype(f"i{dt.itemsize}"))
    return a


class ArgumentLayout:
    """How operand Tensors become a kernel's arguments: each encoded operand's buffers in level order
    (:func:`buffer_parts`, values reshaped to the kernel's value rank), each row-major one's values.
    The per-operand plan (which buffers, in which order) is computed once, here."""

    def __init__(self, inputs: Sequence[TensorSpec], val_ranks: Sequence[int]) -> None:
        # per operand: None (row-major: its values) or ((is it a pos buffer, level) per level buffer, values rank)
        self._plan: list[tuple[tuple[tuple[bool, int], ...], int] | None] = [
            (tuple((kind == "pos", k) for kind, k in buffer_parts(t.fmt) if kind != "val"), vrank) if t.encoded
            else None for t, vrank in zip(inputs, val_ranks)]

    @classmethod
    def flat_values(cls, inputs: Sequence[TensorSpec]) -> ArgumentLayout:
        """The layout of kernels taking every encoded operand's values as one 1-D buffer (the GPU's)."""
        return cls(inputs, [1] * len(inputs))

    def flatten(self, tensors: Sequence[Any], extra: Sequence[Any] = ()) -> list[Any]:
        """The function's arguments for operand Tensors (a row-major operand may also be given as its numpy
        array) and trailing ``extra`` arrays (c, alpha, beta)."""
        args: list[Any] = []
        for t, plan in zip(tensors, self._plan):
            if plan is None:
                args.append(t if type(t) is np.ndarray else t.val)
                continue
            levels, vrank = plan
            for is_pos, k in levels:
                args.append(t.pos(k) if is_pos else _signed_view(t.crd(k)))
            v = t.val
            if v.ndim != vrank:
                v = v.reshape(v.shape[:vrank - 1] + (-1,))
            args.append(v)
        args.extend(extra)
        return args


def expected_arguments(c: Contraction) -> list[str]:
    """The leading arguments a kernel of ``c`` takes, named: each stored operand's level buffers in level order
    then its values, each dense operand as one memref (then ``c``/``alpha``/``beta`` as the contraction asks)."""
    names: list[str] = []
    for k, t in enumerate(c.inputs):
        if t.encoded:
            names += [f"in{k}.{kind}" + ("" if kind == "val" else f"[{lv}]") for kind, lv in buffer_parts(t.fmt)]
        else:
            names.append(f"in{k} (dense memref)")
    return names


def _check_arguments(c: Contraction, path: str, given: int) -> None:
    """A function with fewer arguments than its operands need (a registered kernel's wrong signature) is named."""
    need = expected_arguments(c)
    if given < len(need):
        raise TypeError(f"{path}: the function @{c.name} takes {given} arguments, but its operands need at least "
                        f"{len(need)}: {', '.join(need)} (see docs/extending.md, 'A hand-written kernel')")


def _value_ranks(inputs: Sequence[TensorSpec], ranks: Sequence[int]) -> list[int]:
    """The rank the function's signature gives each operand's values (its last argument)."""
    out: list[int] = []
    pos = 0
    for t in inputs:
        pos += len(buffer_parts(t.fmt)) if t.encoded else 1
        out.append(ranks[pos - 1])
    return out


def sparse_result(out: TensorSpec, parts: Sequence[tuple[str, int]], result: Sequence[Any], fmt: Any,
                  index_type: Any) -> Tensor:
    """A Tensor over the buffers a kernel returned for the sparse result ``out`` (``parts``: which level buffer
    each is, :func:`buffer_parts`), in ``fmt`` (default: the compiled format)."""
    assert out.fmt is not None  # sparse results have a format
    n = out.fmt.num_levels
    pos: list[Any] = [None] * n
    crd: list[Any] = [None] * n
    val = None
    for (kind, k), arr in zip(parts, result):
        if kind == "pos":
            pos[k] = arr
        elif kind == "crd":
            crd[k] = arr
        else:
            val = arr
    return Tensor(fmt if fmt is not None else out.fmt, out.shape, pos, crd, val, index_type=index_type,
                  package="numpy")


def _safe_kernel(path: str) -> bool:
    """Whether the registered kernel of ``path`` (``"kernel:<name>"``) says it is bounds-safe."""
    try:
        return kernel_named(path[len("kernel:"):]).bounds_safe
    except KeyError:  # unregistered since it was compiled: checked like any other
        return False


class Kernel(ArgumentLayout):
    """A compiled contraction: ``flatten`` operands into arguments, ``decode`` the results."""

    def __init__(self, contraction: Contraction, lowered: Lowered, module: Any, threads: int | str = 1) -> None:
        self.contraction = contraction
        self.lowered = lowered
        self.module = module
        self.function = module.function(contraction.name)
        self.row_range = contraction.row_range
        if contraction.row_range:  # the row-range variant: run in chunks into an output the caller allocates
            fn = self.function
            self.function = RowRangeFunction(fn, contraction.output.shape, fn.signature.args[-3].dtype)
        elif lowered.path.startswith("kernel:"):  # a two-pass kernel with a sparse result: row chunks
            entry = kernel_named(lowered.path[len("kernel:"):])
            if entry.row_ranges is not None:
                self.function = TwoPassFunction(module, contraction.name, entry.row_ranges(contraction), threads)
        path = lowered.path
        #: whether the kernel stays in bounds whatever its operands' index buffers hold (else its NumPy-backed
        #: operands are validated again before each call: frontend.storage._validate.validate_now)
        self.bounds_safe = path in BOUNDS_SAFE_PATHS or (path.startswith("kernel:") and _safe_kernel(path))
        ranks = [a.rank for a in self.function.signature.args]
        _check_arguments(contraction, lowered.path, len(ranks))
        super().__init__(contraction.inputs, _value_ranks(contraction.inputs, ranks))
        out = contraction.output
        self._out_parts = buffer_parts(out.fmt) if out.sparse else None
        self._out_index = np.dtype(f"int{out.crd_width}") if out.sparse else None

    def bind(self, args: Sequence[Any], bounds: tuple[int, ...] | None = None) -> Any:
        """A prepared call over ``args`` (row-range kernels: over the chunks ``bounds`` delimit)."""
        if self.row_range:
            return self.function.bind(*args, bounds=bounds)
        return self.function.bind(*args)

    @property
    def text(self) -> str:
        return self.lowered.text

    @property
    def path(self) -> str:
        return self.lowered.path

    @property
    def sparse_output(self) -> bool:
        """Whether the kernel returns a sparse result's buffers (decoded into a Tensor)."""
        return self._out_parts is not None

    def decode(self, result: Any, fmt: Any = None) -> Any:
        """A numpy array (dense output) or a Tensor over the kernel-allocated buffers (sparse output,
        in ``fmt``: the caller's format object, structurally equal to the compiled one)."""
        if self._out_parts is None:
            return result
        # built by the kernel: valid by construction (buffers may have spare capacity: later re-checks allow it)
        out = sparse_result(self.contraction.output, self._out_parts, result, fmt, self._out_index)
        return mark_valid(out, owned=True)


_lock = threading.Lock()
_kernels: dict[Any, Kernel] = {}  # structural key -> Kernel; unbounded (one per structure), emptied by clear_kernels
_building: dict[Any, Future] = {}  # structural key -> the Future of the build in progress; removed when it ends
_failed: dict[Any, BaseException] = {}  # structural key -> CompileError; unbounded, emptied by clear_kernels


def get_kernel(key: Any, describe: Callable[[], Contraction], target: str = "cpu", pipeline: Any = None,
               threads: int | str = 1) -> Kernel:
    """The kernel for ``key``: from memory, else lowered and compiled (or fetched from the disk cache);
    ``threads``: how a two-pass kernel (SpGEMM) splits its rows (part of ``key``)."""
    k = _kernels.get(key)
    if k is not None:
        return k
    with _lock:
        k = _kernels.get(key)
        if k is not None:
            return k
        failed = _failed.get(key)
        if failed is not None:  # MLIR could not compile this structure: do not retry on every call
            raise failed
        fut = _building.get(key)
        owner = fut is None
        if owner:
            fut = _building[key] = Future()
    assert fut is not None
    if not owner:
        return fut.result()
    try:
        from mlir_bridge import compile_module

        contraction = describe()
        lowered = lower(contraction, target, pipeline)
        module = compile_module(lowered.text, lowered.pipeline, target=target)
        k = Kernel(contraction, lowered, module, threads)
    except BaseException as err:
        with _lock:
            del _building[key]
            if isinstance(err, CompileError):
                _failed[key] = err
        fut.set_exception(err)
        raise
    with _lock:
        _kernels[key] = k
        del _building[key]
    fut.set_result(k)
    return k


def clear_kernels() -> None:
    """Forget the cached kernels (the compiled modules stay loaded while something uses them)."""
    with _lock:
        _kernels.clear()
        _failed.clear()


def kernel_count() -> int:
    """How many kernels are cached."""
    return len(_kernels)


_DENSE_FORMATS: dict[int, Any] = {}  # rank -> row-major dense format; one per rank used


def dense_format(rank: int) -> Any:
    """The row-major dense format of ``rank`` (built once per rank)."""
    fmt = _DENSE_FORMATS.get(rank)
    if fmt is None:
        from frontend.format import NamedFormats
        fmt = (NamedFormats.Dense(rank) if rank != 1 else NamedFormats.DenseVector) if rank else NamedFormats.Scalar
        _DENSE_FORMATS[rank] = fmt
    return fmt


_INT64 = np.dtype(np.int64)


def dense_tensor(arr: np.ndarray) -> Tensor:
    """A row-major dense Tensor over a C-contiguous numpy array (no copy, no validation needed)."""
    n = arr.ndim
    return Tensor._trusted(dense_format(n), arr.shape, [None] * n, [None] * n, arr, _INT64, arr)


def entries_tensor(fmt: Any, shape: Sequence[int], dims: Sequence[np.ndarray], values: np.ndarray) -> Tensor:
    """A Tensor of ``fmt`` (new buffers, int64 indices) holding ``values`` at the distinct coordinates ``dims``
    (one array per dimension, any order)."""
    pos, crd, val = from_coordinates(fmt, shape, dims, np.asarray(values))
    return Tensor(fmt, tuple(shape), pos, crd, val, index_type=_INT64, package="numpy")


_ROW_MAJOR: dict[Any, bool] = {}  # format -> whether row-major dense; one per format seen


def row_major(fmt: Any) -> bool:
    """Whether ``fmt`` is plain row-major dense (all-dense, level k = dimension k; memoized per format)."""
    got = _ROW_MAJOR.get(fmt)
    if got is None:
        got = _ROW_MAJOR[fmt] = fmt.is_dense and fmt.is_identity
    return got


def spec_of(t: Tensor, elem: str) -> TensorSpec:
    """The TensorSpec of an operand Tensor (plain dense when row-major)."""
    fmt = t.tensor_format
    if row_major(fmt):
        return TensorSpec(None, t.shape, elem)
    w = 64 if t.index_type is None else index_width(t.index_type)
    return TensorSpec(fmt, t.shape, elem, w, index_width(t.crd_type) if t.index_type is not None else w)
