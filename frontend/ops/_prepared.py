"""One planned contraction over operand Tensors: structural key, kernel (compiled or cached), arguments,
result handling, and the fallbacks for sparse results the sparsifier cannot insert in order."""
from __future__ import annotations

import copy
from typing import Any, Callable, Sequence

import numpy as np

from lowering.contraction import Contraction, TensorSpec
from lowering.dispatch import registry_state
from mlir_bridge.errors import CompileError

from frontend.ops import _blocks as blocks
from frontend.ops import _kernel_cache as P
from frontend.format import TensorFormat
from frontend.format import NamedFormats
from frontend.ops._operands import check_cpu, elem_of, operand, operand_key, out_width, result_shape
from frontend.ops._semiring import Semiring, trace_unary
from frontend.tensor._tensor import Tensor


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
    from frontend.format import Dimension
    from frontend.format import LevelFormat as F
    dims = [Dimension(f"d{k}") for k in range(rank)]
    return TensorFormat(dims, [(dims[0], F.DENSE)] + [(d, F.COMPRESSED) for d in dims[1:]])


class PlannedOp:
    """A contraction over given operand Tensors: structural key, kernel, argument list, result handling."""

    def __init__(self, subscripts: tuple[str, ...], tensors: list[Tensor], out_subs: str,
                 out_format: TensorFormat | None, semiring: Semiring | None, alpha: Any, beta: Any,
                 c: Any, prolog: Callable | None, epilog: Callable | None, target: str,
                 names: Sequence[str], threads: Any = None) -> None:
        for t, n in zip(tensors, names):
            check_cpu(t, n)
        elem = elem_of(tensors, names)
        out_shape = result_shape(subscripts, tensors, names, out_subs)
        self.out_shape = out_shape
        self.elem = elem
        self.tensors = tensors
        self.subscripts = subscripts
        self.out_subs = out_subs
        if out_format is not None and P.row_major(out_format):
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
            check_cpu(tc, "c")
            if not P.row_major(tc.tensor_format):
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
                    tuple(operand_key(t) for t in tensors),
                    None if out_format is None else (out_format.structure_key(), out_width(tensors)),
                    self.semiring_regions, has_alpha, init, self.prolog_fn, self.epilog_fn, target,
                    registry_state())
        self.kernel: P.Kernel | None = None
        self.pipeline: Any = None
        self.final_format: TensorFormat | None = None  # set when the result is converted after the kernel
        self.threads: int | str = 1
        self.row_range = False
        self._use_threads(threads)

    def _use_threads(self, threads: Any) -> None:
        """With ``threads`` other than 1 and a row-parallel contraction (``lowering.emitter.row_parallel``;
        no registered kernel for it), plan the row-range kernel run in chunks (part of the key). A sparse
        result from a two-pass kernel (SpGEMM) runs in row chunks with ``threads=None`` too (all cores
        above a work threshold: :mod:`frontend.ops._two_pass`)."""
        from frontend.ops._threads import resolve_threads
        from lowering.kernels.registry import match_kernel
        n = resolve_threads(threads)
        if self.out_format is not None and self.target == "cpu":  # a two-pass kernel (SpGEMM): row chunks
            from frontend.ops._two_pass import kernel_threads
            k = kernel_threads(match_kernel(self.describe()), threads)
            if k is not None:
                self.threads = k
                self.key = self.key + (("threads", k),)
            return
        if n == 1 or self.target != "cpu":
            return
        from lowering.emitter import row_parallel
        c = self.describe()
        if match_kernel(c) is not None or not row_parallel(c):
            return
        self.threads, self.row_range = n, True
        self.key = self.key + (("threads", n),)

    def template(self) -> "PlannedOp":
        """A copy holding the structure and the kernel but no operands (for :meth:`rebind`)."""
        op = copy.copy(self)
        op.tensors, op.extra, op.c_obj, op.c_arr, op.c_kernel = [], [], None, None, None
        return op

    def rebind(self, tensors: list[Tensor], c: Any, c_arr: Any, alpha: Any, beta: Any) -> "PlannedOp":
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
            w = out_width(self.tensors)
            out = TensorSpec(self.out_format, self.out_shape, elem, w, w)
        return Contraction(
            self.subscripts, specs, self.out_subs, out,
            semiring=self.semiring_regions, alpha=self.has_alpha, init=self.init,
            prolog=self.prolog_fn, epilog=self.epilog_fn, row_range=getattr(self, "row_range", False))

    def plan(self) -> P.Kernel:
        if self.kernel is None:
            try:
                self.kernel = P.get_kernel(self.key, self.describe, self.target, self.pipeline, self.threads)
            except CompileError as err:
                if self.row_range:  # the row-range variant did not compile: run single-threaded
                    self.row_range, self.threads = False, 1
                    self.key = tuple(x for x in self.key if not (type(x) is tuple and x[:1] == ("threads",)))
                    return self.plan()
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
        self.key = self.key[:4] + ((compute.structure_key(), out_width(self.tensors)),) + self.key[5:]
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
            self.key = self.key[:3] + (tuple(operand_key(t) for t in tensors),) + self.key[4:]
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
