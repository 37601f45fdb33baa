"""One prepared contraction over operand Tensors, in named steps: operands -> layout (block rewrite) ->
initial value and scalars -> traced functions -> structural key (+ threads) -> kernel -> arguments ->
result; plus the fallbacks for sparse results the sparsifier cannot insert in order."""
from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from frontend.format import Dimension, LevelFormat, NamedFormats, TensorFormat, stores_padding
from frontend.tensor._tensor import Tensor
from lowering.contraction import Contraction, TensorSpec
from lowering.dispatch import registry_state
from lowering.emitter import row_parallel
from lowering.kernels.registry import match_kernel
from lowering.miscompiles import unsupported_levels
from mlir_bridge.errors import CompileError

from . import _blocks as blocks
from ._kernel_cache import Kernel, get_kernel, row_major, spec_of
from ._operands import check_cpu, elem_of, operand, operand_key, out_width, result_shape
from ._options import MatmulOptions, pipeline_key
from ._reroute import format_name, reroute, result_format
from ._semiring import get_semiring, trace_unary
from ._threads import resolve_threads
from ._two_pass import kernel_threads


def default_sparse_format(like: TensorFormat, rank: int) -> TensorFormat:
    """The output format of a sparse result: ``like``'s family when it has the rank and MLIR can insert
    into it in order (unique levels), else CSR-like (dense outer level, compressed inner levels)."""
    if blocks.block_sizes(like):
        like = blocks.unblocked_format(like)
    if (like.num_dimensions == rank and not like.is_dense and all(lv.unique for lv in like.levels)
            and all(lv.format.value != "batch" for lv in like.levels) and like.mlir_support() == "sparsifier"):
        return like
    if rank == 1:
        return NamedFormats.SparseVector
    if rank == 2:
        return NamedFormats.CSR
    dims = [Dimension(f"d{k}") for k in range(rank)]
    return TensorFormat(dims, [(dims[0], LevelFormat.DENSE)] + [(d, LevelFormat.COMPRESSED) for d in dims[1:]])


class PreparedOp:
    """A contraction over given operand Tensors: structural key, kernel, argument list, result handling.

    Built in steps (:meth:`_check_operands`, :meth:`_rewrite_blocks`, :meth:`_bind_c`, :meth:`_trace_functions`,
    :meth:`_structural_key`, :meth:`_use_threads`); run with :meth:`kernel_for`, :meth:`arguments` and
    :meth:`finish`. ``options.out_format`` is the result's format (None: dense)."""

    def __init__(self, subscripts: Sequence[str], tensors: list[Tensor], out_subs: str, names: Sequence[str],
                 options: MatmulOptions, c: Any = None) -> None:
        self.subscripts, self.out_subs, self.tensors = tuple(subscripts), out_subs, tensors
        self._check_operands(names)
        self.out_format = _checked_out_format(options.out_format, len(out_subs))
        self.kernel_shape = self.out_shape
        self.restore: Callable[[np.ndarray], np.ndarray] | None = None
        self._out_split: Callable[[np.ndarray], np.ndarray] | None = None
        self._rewrite_blocks()
        semiring = get_semiring(options.semiring)
        self.init = _initial_value(semiring, options.alpha, options.beta, c)
        self._bind_c(c)
        self.has_alpha = options.alpha != 1
        self.extra = self._scalar_arguments(options.alpha, options.beta)
        self._trace_functions(semiring, options.prolog, options.epilog)
        self.target, self.pipeline = options.target, options.pipeline
        self.kernel: Kernel | None = None
        self.final_format: TensorFormat | None = None  # set when the result is converted after the kernel
        self.threads: int | str = 1
        self.row_range = False
        self.conversions: tuple[str, ...] = ()  # copies made so that a kernel takes the operands (_reroute)
        self._reroute(names)
        self.key = self._structural_key()
        self._use_threads(options.threads)

    # ----- preparation steps -------------------------------------------------------------------------------------
    def _check_operands(self, names: Sequence[str]) -> None:
        """CPU buffers of one supported dtype whose extents agree: the element type and result shape."""
        for t, n in zip(self.tensors, names):
            check_cpu(t, n)
        self.elem = elem_of(self.tensors, names)
        self.out_shape = result_shape(self.subscripts, self.tensors, names, self.out_subs)

    def _rewrite_blocks(self) -> None:
        """Block operands: the contraction on their demapped views (dense result), else unblocked copies."""
        if not any(blocks.has_blocks(t) for t in self.tensors):
            return
        rw = None if self.out_format is not None else blocks.rewrite(self.subscripts, self.tensors, self.out_subs,
                                                                     self.out_shape)
        if rw is None:
            self.tensors = [blocks.unblock(t) if blocks.has_blocks(t) else t for t in self.tensors]
            return
        self.subscripts, self.out_subs, self.kernel_shape = rw.subscripts, rw.out_subs, rw.out_shape
        self.tensors, self.restore, self._out_split = rw.tensors, rw.restore, rw.out_split

    def _bind_c(self, c: Any) -> None:
        """``c`` (updated in place): a dense C-contiguous CPU array of the result's shape and dtype."""
        self.c_obj = c
        self.c_arr: np.ndarray | None = None
        self.c_kernel: np.ndarray | None = None  # what the kernel updates (c, or c split into blocks)
        if c is None:
            return
        if self.out_format is not None:
            raise ValueError("c is updated in place and needs a dense result; drop out_format or c")
        tc = operand(c, "c")
        check_cpu(tc, "c")
        if not row_major(tc.tensor_format):
            raise ValueError("c must be a dense C-contiguous array (it is updated in place)")
        if tc.shape != self.out_shape:
            raise ValueError(f"c has shape {tc.shape}, the result has shape {self.out_shape}")
        if np.dtype(tc.dtype) != np.dtype(self.tensors[0].dtype):
            raise TypeError(f"dtype mismatch: c is {tc.dtype}, the operands are {self.tensors[0].dtype}")
        self.c_arr = self.c_kernel = tc.val
        if self._out_split is not None:  # c in the demapped (split) shape: a view, or a padded copy
            self.c_kernel = self._out_split(tc.val)

    def _reroute(self, names: Sequence[str]) -> None:
        """Operands (and a result format) no kernel takes as they are: converted copies (:mod:`._reroute`)."""
        self.tensors, notes = reroute(self.tensors, names, self.out_format is not None)
        out = self.out_format
        if out is not None and (out.mlir_support() != "sparsifier" or stores_padding(out) or unsupported_levels(out)):
            # no kernel writes it (the sparsifier cannot insert into padded formats): computed, then converted
            self.out_format, self.final_format = result_format(out), out
            notes += (f"result via {format_name(self.out_format)}",)
        self.conversions = notes

    def _scalar_arguments(self, alpha: Any, beta: Any) -> list[Any]:
        """The kernel's trailing arguments: c (when it is read), alpha, beta (when they apply)."""
        extra: list[Any] = [self.c_kernel] if self.init in ("c", "beta_c") else []
        dt = np.dtype(self.tensors[0].dtype)
        if self.has_alpha:
            extra.append(np.array([alpha], dtype=dt))
        if self.init == "beta_c":
            extra.append(np.array([beta], dtype=dt))
        return extra

    def _trace_functions(self, semiring: Any, prolog: Callable | None, epilog: Callable | None) -> None:
        """Traced MLIR regions: keyed by what the functions compute (not by function objects, so a lambda
        re-created on every call does not add a kernel per call)."""
        self.semiring_regions = None if semiring is None else semiring.lowered(self.elem)
        self.prolog_fn = None if prolog is None else trace_unary(prolog, self.elem)
        self.epilog_fn = None if epilog is None else trace_unary(epilog, self.elem)

    def _structural_key(self) -> tuple:
        """The kernel cache's key: formats' structure, shapes, dtypes, widths, functions, options; never names."""
        out = None if self.out_format is None else (self.out_format.structure_key(), out_width(self.tensors))
        key = ("einsum", self.subscripts, self.out_subs, tuple(operand_key(t) for t in self.tensors), out,
               self.semiring_regions, self.has_alpha, self.init, self.prolog_fn, self.epilog_fn, self.target,
               registry_state())
        return key if self.pipeline is None else key + (pipeline_key(self.pipeline),)

    def _use_threads(self, threads: Any) -> None:
        """With ``threads`` other than 1 and a row-parallel contraction (``lowering.emitter.row_parallel``;
        no registered kernel for it), prepare the row-range kernel run in chunks (part of the key). A sparse
        result from a two-pass kernel (SpGEMM) runs in row chunks with ``threads=None`` too (all cores
        above a work threshold: :mod:`frontend.ops._two_pass`)."""
        n = resolve_threads(threads)
        if self.out_format is not None and self.target == "cpu":  # a two-pass kernel (SpGEMM): row chunks
            k = kernel_threads(match_kernel(self.describe()), threads)
            if k is not None:
                self.threads = k
                self.key = self.key + (("threads", k),)
            return
        if n == 1 or self.target != "cpu":
            return
        c = self.describe()
        if match_kernel(c) is not None or not row_parallel(c):
            return
        self.threads, self.row_range = n, True
        self.key = self.key + (("threads", n),)

    # ----- reuse over other operands -----------------------------------------------------------------------------
    def _copy(self) -> PreparedOp:
        """A shallow copy (cheaper than ``copy.copy``: this is on the per-call path)."""
        op = PreparedOp.__new__(PreparedOp)
        op.__dict__.update(self.__dict__)
        return op

    def without_operands(self) -> PreparedOp:
        """A copy holding the structure and the kernel but no operands (for :meth:`with_operands`)."""
        op = self._copy()
        op.tensors, op.extra, op.c_obj, op.c_arr, op.c_kernel = [], [], None, None, None
        return op

    def with_operands(self, tensors: list[Tensor], c: Any, c_arr: Any, alpha: Any, beta: Any) -> PreparedOp:
        """A copy of this op (with its kernel) over other operands of the same structure (no block rewrite)."""
        op = self._copy()
        op.tensors, op.c_obj, op.c_arr, op.c_kernel = tensors, c, c_arr, c_arr
        op.extra = op._scalar_arguments(alpha, beta) if op.init != "zero" or op.has_alpha else []
        return op

    def describe(self) -> Contraction:
        elem = self.elem
        specs = tuple(spec_of(t, elem) for t in self.tensors)
        if self.out_format is None:
            out = TensorSpec(None, self.kernel_shape, elem)
        else:
            w = out_width(self.tensors)
            out = TensorSpec(self.out_format, self.out_shape, elem, w, w)
        return Contraction(
            self.subscripts, specs, self.out_subs, out,
            semiring=self.semiring_regions, alpha=self.has_alpha, init=self.init,
            prolog=self.prolog_fn, epilog=self.epilog_fn, row_range=self.row_range)

    # ----- kernel, arguments, result ----------------------------------------------------------------------------
    def kernel_for(self) -> Kernel:
        """The compiled kernel (from the cache, or built now; with the fallbacks below)."""
        if self.kernel is None:
            try:
                self.kernel = get_kernel(self.key, self.describe, self.target, self.pipeline, self.threads)
            except CompileError as err:
                if self.row_range:  # the row-range variant did not compile: run single-threaded
                    self.row_range, self.threads = False, 1
                    self.key = tuple(x for x in self.key if not (type(x) is tuple and x[:1] == ("threads",)))
                    return self.kernel_for()
                self.kernel = self._fallback(err)
        return self.kernel

    def _fallback(self, err: CompileError) -> Kernel:
        """Sparse results the sparsifier cannot insert in order (CSC x CSR -> CSC, CSR x CSR -> DCSC):
        first the other sparse operands are converted to the first one's format, then the result is
        computed in that operand's family and converted (copies, O(nnz)); else ``err`` is raised."""
        if self.out_format is None:
            raise err
        if self._align_sparse_operands():
            try:
                return get_kernel(self.key, self.describe, self.target, self.pipeline)
            except CompileError:
                pass
        sparse = [t for t in self.tensors if t.is_sparse]
        compute = default_sparse_format(sparse[0].tensor_format, len(self.out_subs)) if sparse else None
        if compute is None or compute == self.out_format:
            raise err
        self.final_format, self.out_format = self.final_format or self.out_format, compute
        self.key = self.key[:4] + ((compute.structure_key(), out_width(self.tensors)),) + self.key[5:]
        return get_kernel(self.key, self.describe, self.target, self.pipeline)

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
            self.key = self.key[:3] + (tuple(operand_key(t) for t in tensors),) + self.key[4:]
        return changed

    def arguments(self) -> list[Any]:
        """The kernel's arguments for the current operands."""
        return self.kernel_for().flatten(self.tensors, self.extra)

    def is_plain(self) -> bool:
        """Whether the kernel's result is the result as is (dense, no conversion or reshape, no c to write)."""
        return (self.kernel is not None and not self.kernel.sparse_output and self.final_format is None
                and self.restore is None and self.c_arr is None)

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


def _checked_out_format(out_format: TensorFormat | None, rank: int) -> TensorFormat | None:
    """The sparse result format (None for a dense one); ValueError for formats no kernel can write."""
    if out_format is None or row_major(out_format):
        return None
    if out_format.num_dimensions != rank:
        raise ValueError(f"out_format {out_format} has {out_format.num_dimensions} dimensions, the result "
                         f"has {rank}")
    if out_format.is_dense:
        raise ValueError(f"out_format {out_format}: a dense result is always row-major; pass None")
    return out_format


def _initial_value(semiring: Any, alpha: Any, beta: Any, c: Any) -> str:
    """What the result starts from: ``"zero"``, ``"c"`` or ``"beta_c"`` (ValueError for invalid scalings)."""
    if semiring is not None and (alpha != 1 or beta not in (None, 1)):
        raise ValueError("alpha/beta apply to plain arithmetic; with a semiring, c is combined with the "
                         "semiring's add (leave alpha=1, beta=None)")
    if c is None:
        if beta is not None:
            raise ValueError("beta needs c")
        return "zero"
    if beta is None or beta == 1:
        return "c"
    return "zero" if beta == 0 else "beta_c"
