"""One prepared contraction over operand Tensors, in named steps: operands -> layout (block rewrite) ->
initial value and scalars -> traced functions -> structural key (+ threads) -> kernel -> arguments ->
result; plus the fallbacks for sparse results the sparsifier cannot insert in order."""
from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from frontend.format import Dimension, LevelFormat, NamedFormats, TensorFormat, stores_padding
from frontend.storage._budget import require, storage_bytes, workspace_bytes
from frontend.storage._layout import to_host
from frontend.tensor._tensor import Tensor
from lowering.contraction import Contraction, TensorSpec
from lowering.dispatch import path_of, registry_state
from lowering.emitter import row_parallel
from lowering.kernels.registry import match_kernel
from lowering.miscompiles import unsupported_levels
from lowering.schedule import REALIGN_BYTES, Schedule, choose_schedule
from mlir_bridge.errors import CompileError

from . import _blocks as blocks
from ._kernel_cache import Kernel, get_kernel, row_major, spec_of
from ._operands import (
    aligned,
    aligned_copy,
    cast_values,
    check_cpu,
    elem_of,
    half_elem,
    operand,
    operand_key,
    out_width,
    result_shape,
)
from ._options import MatmulOptions, pipeline_key
from ._plan import MatmulInfo
from ._reroute import Reroutes, apply, entry_format, format_name, reroute, result_format
from ._semiring import get_semiring, trace_unary
from ._stats import stored_rows
from ._threads import cpu_count, resolve_threads
from ._two_pass import kernel_threads


def default_sparse_format(like: TensorFormat, rank: int) -> TensorFormat:
    """The output format of a sparse result: ``like``'s family when it has the rank and MLIR can insert
    into it in order (unique levels), else CSR-like (dense outer level, compressed inner levels)."""
    if blocks.block_sizes(like):
        like = blocks.unblocked_format(like)
    if (like.num_dimensions == rank and not like.is_dense and all(lv.unique and lv.ordered for lv in like.levels)
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
    :meth:`_structural_key`, :meth:`_schedule`); run with :meth:`kernel_for`, :meth:`arguments` and
    :meth:`run`. ``options.out_format`` is the result's format (None: dense). ``rows``: prefer the row-range
    variant even on one thread (an ``out=`` array to write into)."""

    def __init__(self, subscripts: Sequence[str], tensors: list[Tensor], out_subs: str, names: Sequence[str],
                 options: MatmulOptions, c: Any = None, rows: bool = False) -> None:
        self.subscripts, self.out_subs, self.tensors = tuple(subscripts), out_subs, tensors
        self.given_ids = tuple(id(t) for t in tensors)  # the operands as given (a template's check, no refs)
        self.names = tuple(names)
        self._check_operands(names)
        self.out_format = _checked_out_format(options.out_format, len(out_subs))
        self._check_memory()
        self.kernel_shape = self.out_shape
        self.restore: Callable[[np.ndarray], np.ndarray] | None = None
        self._out_split: Callable[[np.ndarray], np.ndarray] | None = None
        #: operand copies made (index -> format, None: row-major; in order), replayed by :meth:`with_operands`
        self.reroutes: Reroutes = ()
        #: whether operands of this structure run this op after its reroutes alone (no demapped block views)
        self.replayable = True
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
        self.threads_option = options.threads
        self.forced_threads = resolve_threads(options.threads)
        self.conversions: tuple[str, ...] = ()  # copies made so that a kernel takes the operands (_reroute)
        self._reroute(names)
        self.out_dtype: np.dtype | None = None  # a half type the float32 result is cast back to (in_dtype)
        #: (copy's values, the source's values), refreshed by a planned execute: promoted operands' cast copies
        #: (:meth:`in_dtype`), then dense operands' aligned copies (:meth:`_realign_dense`)
        self.casts: list[tuple[Any, Any]] = []
        self.base_key = self._structural_key()
        self.initial_key = self.base_key  # before a fallback's conversions (reset_operands compares it)
        self._schedule(rows)

    # ----- preparation steps -------------------------------------------------------------------------------------
    def _check_memory(self) -> None:
        """``MemoryError`` before compiling when the result and the kernel's workspace cannot be allocated."""
        itemsize = 16 if self.elem.startswith("c") else 8
        need = (storage_bytes(self.out_format, self.out_shape, 0, itemsize)
                + workspace_bytes(self.out_format, self.out_shape, itemsize))
        require(f"einsum {','.join(self.subscripts)}->{self.out_subs}", need, [t.shape for t in self.tensors])

    def _check_operands(self, names: Sequence[str]) -> None:
        """CPU buffers of one supported dtype whose extents agree: the element type and result shape."""
        for t, n in zip(self.tensors, names):
            check_cpu(t, n)
        #: f16/bf16 operands the kernel loads as they are (computing in f32, :func:`_operands.native_half`)
        self.in_elem = half_elem(self.tensors)
        self.elem = "f32" if self.in_elem is not None else elem_of(self.tensors, names)
        self.out_shape = result_shape(self.subscripts, self.tensors, names, self.out_subs)

    def _rewrite_blocks(self) -> None:
        """Block operands: the contraction on their demapped views (dense result), else unblocked copies."""
        if not any(blocks.has_blocks(t) for t in self.tensors):
            return
        rw = None if self.out_format is not None else blocks.rewrite(self.subscripts, self.tensors, self.out_subs,
                                                                     self.out_shape)
        if rw is None:
            self.reroutes = tuple((k, blocks.unblocked_format(t.tensor_format))
                                  for k, t in enumerate(self.tensors) if blocks.has_blocks(t))
            self.tensors = apply(self.tensors, self.reroutes)
            return
        self.replayable = False
        self.subscripts, self.out_subs, self.kernel_shape = rw.subscripts, rw.out_subs, rw.out_shape
        self.tensors, self.restore, self._out_split = rw.tensors, rw.restore, rw.out_split

    def _bind_c(self, c: Any) -> None:
        """``c`` (updated in place): a dense CPU array of the result's shape and dtype in any layout (one not
        C-ordered is computed in a C-ordered scratch copy, written back after the kernel)."""
        self.c_obj = c
        self.c_arr: np.ndarray | None = None
        self.c_kernel: np.ndarray | None = None  # what the kernel updates (c, or c split into blocks)
        self.c_back: np.ndarray | None = None  # the caller's c when the kernel updates a scratch copy of it
        if c is None:
            return
        if self.out_format is not None:
            raise ValueError("c is updated in place and needs a dense result; drop out_format or c")
        tc = operand(c, "c")
        check_cpu(tc, "c")
        if tc.shape != self.out_shape:
            raise ValueError(f"c has shape {tc.shape}, the result has shape {self.out_shape}")
        if np.dtype(tc.dtype) != np.dtype(self.tensors[0].dtype):
            raise TypeError(f"dtype mismatch: c is {tc.dtype}, the operands are {self.tensors[0].dtype}")
        self.c_arr, self.c_back = c_buffers(c, tc.val)
        if self.c_back is None and not row_major(tc.tensor_format):
            raise ValueError("c must be a dense array (a NumPy or torch array in any layout, or a row-major Tensor); "
                             "it is updated in place")
        self.c_kernel = self.c_arr
        if self._out_split is not None:  # c in the demapped (split) shape: a view, or a padded copy
            self.c_kernel = self._out_split(tc.val)

    def _reroute(self, names: Sequence[str]) -> None:
        """Operands (and a result format) no kernel takes as they are: converted copies (:mod:`._reroute`)."""
        self.tensors, more, notes = reroute(self.tensors, names, self.out_format is not None)
        self.reroutes += more
        out = self.out_format
        if out is not None and (out.mlir_support() != "sparsifier" or stores_padding(out) or unsupported_levels(out)):
            # no kernel writes it (the sparsifier cannot insert into padded formats): computed, then converted
            self.out_format, self.final_format = result_format(out), out
            notes += (f"result via {format_name(self.out_format)}",)
        self.conversions = notes

    def _scalar_arguments(self, alpha: Any, beta: Any) -> list[Any]:
        """The kernel's trailing arguments: c (when it is read), alpha, beta (when they apply)."""
        extra: list[Any] = [self.c_kernel] if self.init in ("c", "beta_c") else []
        dt = np.dtype(np.float32) if self.in_elem is not None else np.dtype(self.tensors[0].dtype)
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

    def _schedule(self, rows: bool) -> None:
        """The variant from the stored operand's measured statistics (:func:`lowering.schedule.choose_schedule`):
        inner-loop lanes (part of the key), and for row-parallel contractions (``lowering.emitter.row_parallel``,
        no registered kernel) the row-range kernel, run in chunks balanced by stored entries (one chunk on one
        thread); with a custom ``pipeline`` only when the schedule uses several threads, ``threads=n > 1``
        forces chunks, or ``rows`` asks for it."""
        self.schedule: Schedule | None = None
        self.lanes: int | None = None
        self.stride = 0
        self.gather = False
        self.row_range, self.rows_wanted = False, rows
        self.bounds: tuple[int, ...] = (0, self.kernel_shape[0] if self.kernel_shape else 1)
        stored = [t for t in self.tensors if not row_major(t.tensor_format)]
        if self.out_format is None and self.target == "cpu" and len(stored) == 1 and self.kernel_shape:
            c = self._described()
            if match_kernel(c) is None:
                self._apply(self._schedule_for(stored[0], c))
                self._realign_dense()
        self.two_pass_threads = None
        if self.out_format is not None and self.target == "cpu":  # a two-pass kernel (SpGEMM): row chunks
            self.two_pass_threads = kernel_threads(match_kernel(self._described()), self.threads_option)
        self.key = self.base_key + ((self.lanes, self.row_range, self.two_pass_threads, self.stride, self.gather),)

    def _schedule_for(self, stored: Tensor, c: Contraction) -> tuple[Schedule, bool, tuple[int, ...]]:
        """(schedule, row-range?, chunk bounds) over ``stored``'s buffers (remembered per buffer set and plan)."""
        measured = stored_rows(stored)
        memo = (self.base_key, self.threads_option, self.rows_wanted)
        got = measured.schedules.get(memo)
        if got is None:
            schedule = choose_schedule(c, measured.stats, cpu_count(), self.threads_option)
            # the row-range kernel also on one thread (measured faster than the sparsifier's: docs/performance.md),
            # unless a custom pipeline asks for the sparsifier's options
            rows = row_parallel(c) and (self.rows_wanted or self.forced_threads > 1 or schedule.threads > 1
                                        or self.pipeline is None)
            n = self.kernel_shape[0]
            chunks = schedule.chunks or schedule.threads
            bounds = measured.bounds(n, max(1, min(chunks, n)), schedule.split) if rows else (0, n)
            got = measured.schedules[memo] = (schedule, rows, bounds)
        return got

    def _apply(self, decision: tuple[Schedule, bool, tuple[int, ...]]) -> None:
        self.schedule, self.row_range, self.bounds = decision
        self.lanes, self.stride, self.gather = decision[0].lanes, decision[0].stride, decision[0].gather

    def _realign_dense(self) -> None:
        """Where the schedule asks for it (``Schedule.realign``), dense operands (rank 2 and up) whose values do not
        start at a multiple of ``REALIGN_BYTES`` are read from aligned copies (refreshed by a planned execute)."""
        if self.schedule is None or not self.schedule.realign:
            return
        tensors = list(self.tensors)  # (never the caller's list)
        for k, t in enumerate(tensors):
            if row_major(t.tensor_format) and len(t.shape) >= 2 and not aligned(t.val, REALIGN_BYTES):
                tensors[k] = aligned_copy(t, REALIGN_BYTES)
                self.casts.append((tensors[k].val, t.val))
        self.tensors = tensors

    def info(self) -> MatmulInfo:
        """What runs and why: path, lanes, chunks, split and the schedule's reason."""
        path = self.kernel.path if self.kernel is not None else path_of(self.describe())
        s = self.schedule
        if s is None:
            return MatmulInfo(path, None, 1, "rows", "default kernel (not one stored operand with a dense result "
                              "on the CPU, or a registered kernel): 1 thread")
        threads = min(len(self.bounds) - 1, max(s.threads, 1)) if self.row_range else 1
        return MatmulInfo(path, s.lanes, threads, s.split if threads > 1 else "rows", s.reason)

    # ----- reuse over other operands -----------------------------------------------------------------------------
    def _copy(self) -> PreparedOp:
        """A shallow copy (cheaper than ``copy.copy``: this is on the per-call path)."""
        op = PreparedOp.__new__(PreparedOp)
        op.__dict__.update(self.__dict__)
        return op

    def without_operands(self) -> PreparedOp:
        """A copy holding the structure and the kernel but no operands (for :meth:`with_operands`)."""
        op = self._copy()
        op.tensors, op.extra, op.c_obj, op.c_arr, op.c_kernel, op.c_back = [], [], None, None, None, None
        return op

    def with_operands(self, tensors: list[Tensor], c: Any, c_arr: Any, alpha: Any, beta: Any) -> PreparedOp:
        """A copy of this op (with its kernel) over other operands of the same structure (no block rewrite),
        scheduled for their buffers (another variant's kernel when their statistics choose another)."""
        op = self._copy()
        if self.reroutes:
            tensors = apply(tensors, self.reroutes)
        c_arr, op.c_back = (c_arr, None) if c is None else c_buffers(c, c_arr)
        op.tensors, op.c_obj, op.c_arr, op.c_kernel = tensors, c, c_arr, c_arr
        op.extra = op._scalar_arguments(alpha, beta) if op.init != "zero" or op.has_alpha else []
        if self.schedule is not None:
            stored = next(t for t in tensors if not row_major(t.tensor_format))
            op._apply(op._schedule_for(stored, self._described()))
            op.casts = []  # (a template's operands are never promoted: its copies were aligned ones)
            op._realign_dense()
            if (op.lanes, op.stride, op.gather, op.row_range) != (self.lanes, self.stride, self.gather,
                                                                  self.row_range):
                op.kernel = None
                op.key = self.base_key + ((op.lanes, op.row_range, op.two_pass_threads, op.stride, op.gather),)
        return op

    def _described(self) -> Contraction:
        """The contraction without a variant (what the schedule chooses for), built once per template."""
        c = self.__dict__.get("_contraction")
        if c is None:
            lanes, rows, stride, gather = self.lanes, self.row_range, self.stride, self.gather
            self.lanes, self.row_range, self.stride, self.gather = None, False, 0, False
            c = self._contraction = self.describe()
            self.lanes, self.row_range, self.stride, self.gather = lanes, rows, stride, gather
        return c

    def adopt_variant(self, other: PreparedOp) -> None:
        """Run ``other``'s kernel (same structure) over this op's operands: its lanes and row-range choice,
        chunks from this op's schedule."""
        if other.row_range and not self.row_range:  # these operands would not use several threads
            self.bounds = (0, self.kernel_shape[0])
        if other.base_key != self.base_key:  # other's fallback converted operands or the result: replayed here
            self.tensors = apply(self.tensors, other.reroutes[len(self.reroutes):])
            self.reroutes, self.conversions = other.reroutes, other.conversions
            self.out_format, self.final_format = other.out_format, other.final_format
            self.base_key, self.two_pass_threads = other.base_key, other.two_pass_threads
        self.kernel, self.lanes, self.row_range, self.key = other.kernel, other.lanes, other.row_range, other.key
        self.stride, self.gather = other.stride, other.gather

    def with_row_range(self) -> PreparedOp:
        """A copy running the row-range variant on one chunk per schedule (for writing into ``out=``)."""
        op = self._copy()
        op.rows_wanted = True
        stored = [t for t in op.tensors if not row_major(t.tensor_format)]
        op._apply(op._schedule_for(stored[0], self._described()))
        op.kernel = None
        op.key = op.base_key + ((op.lanes, op.row_range, op.two_pass_threads, op.stride, op.gather),)
        return op

    def describe(self) -> Contraction:
        elem = self.elem
        specs = tuple(spec_of(t, self.in_elem or elem) for t in self.tensors)
        if self.out_format is None:
            out = TensorSpec(None, self.kernel_shape, elem)
        else:
            w = out_width(self.tensors)
            out = TensorSpec(self.out_format, self.out_shape, elem, w, w)
        return Contraction(
            self.subscripts, specs, self.out_subs, out,
            semiring=self.semiring_regions, alpha=self.has_alpha, init=self.init,
            prolog=self.prolog_fn, epilog=self.epilog_fn, row_range=self.row_range, lanes=self.lanes,
            stride=self.stride, gather=self.gather)

    # ----- kernel, arguments, result ----------------------------------------------------------------------------
    def kernel_for(self) -> Kernel:
        """The compiled kernel (from the cache, or built now; with the fallbacks below)."""
        if self.kernel is None:
            try:
                self.kernel = get_kernel(self.key, self.describe, self.target, self.pipeline, self._kernel_threads())
            except CompileError as err:
                if self.row_range:  # the row-range variant did not compile: run single-threaded
                    self.row_range, self.bounds = False, (0, self.kernel_shape[0])
                    self.key = self.base_key + ((self.lanes, False, self.two_pass_threads, self.stride, self.gather),)
                    return self.kernel_for()
                self.kernel = self._fallback(err)
        return self.kernel

    def _kernel_threads(self) -> int | str:
        """How a two-pass kernel splits its rows (1 for every other kernel)."""
        return self.two_pass_threads if self.two_pass_threads is not None else 1

    def _fallback(self, err: CompileError) -> Kernel:
        """Sparse results the sparsifier cannot insert in order (CSC x CSR -> CSC, CSR x CSR -> DCSC, a
        transposed COO times a dense operand -> CSR), tried in turn (copies, O(nnz), kept in ``reroutes``):

        1. the other sparse operands converted to the first one's format;
        2. the result computed in the first sparse operand's family, then converted;
        3. every operand in its rank's CSR-like format (dense ones row-major), the result computed in the
           CSR-like format, then converted.

        ``err`` is raised when none compiles."""
        if self.out_format is None:
            raise err
        for step in (self._align_sparse_operands, self._compute_in_family, self._compute_in_entry_formats):
            if step():
                try:
                    return get_kernel(self.key, self.describe, self.target, self.pipeline, self._kernel_threads())
                except CompileError:
                    continue
        raise err

    def _align_sparse_operands(self) -> bool:
        """The other sparse operands converted to the first one's format. Returns whether any was."""
        sparse = [t for t in self.tensors if t.is_sparse]
        if len(sparse) < 2:
            return False
        f0 = sparse[0].tensor_format
        return self._convert_operands(tuple(
            (k, f0) for k, t in enumerate(self.tensors)
            if t.is_sparse and t is not sparse[0] and t.ndim == f0.num_dimensions and t.tensor_format != f0))

    def _compute_in_family(self) -> bool:
        """The result computed in the first sparse operand's family, then converted. Returns whether that
        differs from the result format."""
        sparse = [t for t in self.tensors if t.is_sparse]
        if not sparse:
            return False
        return self._compute_in(default_sparse_format(sparse[0].tensor_format, len(self.out_subs)))

    def _compute_in_entry_formats(self) -> bool:
        """Every operand CSR-like (dense ones row-major), the result computed CSR-like. Returns whether
        anything changed."""
        plan = tuple((k, entry_format(t.ndim) if t.is_sparse else None) for k, t in enumerate(self.tensors)
                     if not row_major(t.tensor_format) and t.tensor_format != entry_format(t.ndim))
        changed = self._convert_operands(plan)
        return self._compute_in(entry_format(len(self.out_subs))) or changed

    def _compute_in(self, fmt: TensorFormat) -> bool:
        if self.out_format is None or fmt == self.out_format:
            return False
        self.final_format, self.out_format = self.final_format or self.out_format, fmt
        self.conversions += (f"result via {format_name(fmt)}",)
        self._restructured()
        return True

    def _convert_operands(self, plan: Reroutes) -> bool:
        """Operands converted as ``plan`` says (kept in ``reroutes``: a template replays them)."""
        if not plan:
            return False
        self.reroutes += plan
        self.tensors = apply(self.tensors, plan)
        self.conversions += tuple(f"{self.names[k]}->{'row-major' if f is None else format_name(f)}"
                                  for k, f in plan)
        self._restructured()
        return True

    def _restructured(self) -> None:
        """Keys and the two-pass split after operands or the result format changed."""
        self.__dict__.pop("_contraction", None)
        self.base_key = self._structural_key()
        if self.target == "cpu":
            self.two_pass_threads = kernel_threads(match_kernel(self._described()), self.threads_option)
        self.key = self.base_key + ((self.lanes, self.row_range, self.two_pass_threads, self.stride, self.gather),)

    def arguments(self) -> list[Any]:
        """The kernel's arguments for the current operands."""
        return self.kernel_for().flatten(self.tensors, self.extra)

    def is_plain(self) -> bool:
        """Whether the kernel's result is the result as is (dense, no conversion or reshape, no c to write)."""
        return (self.kernel is not None and not self.kernel.sparse_output and self.final_format is None
                and self.restore is None and self.c_arr is None and self.out_dtype is None)

    def in_dtype(self, dtype: np.dtype | None, raw: Sequence[Tensor] = (), cast: Sequence[Tensor] = ()
                 ) -> PreparedOp:
        """Results cast to ``dtype`` (a half type: the operands were float32 copies) unless None; ``raw`` /
        ``cast``: the operands before and after promotion (a planned call refreshes the copies); returns self."""
        self.out_dtype = dtype
        self.casts = [(c.val, r.val) for r, c in zip(raw, cast) if c is not r] + self.casts
        return self

    def refresh_casts(self) -> None:
        """Copies the promoted operands' current values into their cast copies (a planned call's execute)."""
        for dst, src in self.casts:
            np.copyto(dst, np.asarray(to_host(src)).reshape(dst.shape), casting="unsafe")

    def check_out(self, out: Any) -> None:
        """``out=``: a writable C-contiguous numpy array of the dense result's shape and dtype that shares no
        memory with an operand (ValueError / TypeError naming the problem)."""
        if self.c_obj is not None:
            raise ValueError("out= and c cannot both be given: c is already updated in place")
        if self.out_format is not None:
            raise ValueError("out= needs a dense result (this operation gives a sparse one)")
        if type(out) is not np.ndarray:
            raise TypeError(f"out must be a numpy array, got {type(out).__name__}")
        if out.shape != self.out_shape:
            raise ValueError(f"out has shape {out.shape}, the result has shape {self.out_shape}")
        want = self.out_dtype if self.out_dtype is not None else np.dtype(self.tensors[0].dtype)
        if out.dtype != want:
            raise TypeError(f"out has dtype {out.dtype}, the result has dtype {want}")
        if not out.flags.c_contiguous or not out.flags.writeable:
            raise ValueError("out must be a writable C-contiguous array")
        seen = self.__dict__.get("_out_checked")  # (weak reference to out, operand list) of the last check
        if seen is not None and seen[0]() is out and seen[1] is self.tensors:
            return  # the same array over the same operands: shares no memory with them (checked before)
        for t in self.tensors:
            if any(np.may_share_memory(out, b) for b in t.buffers() if isinstance(b, np.ndarray)):
                raise ValueError("out shares memory with an operand; pass a separate array")
        try:
            self._out_checked = (weakref.ref(out), self.tensors)
        except TypeError:  # an ndarray subclass without weak references: checked every time
            pass

    def run(self, call: Any, out: np.ndarray | None = None) -> Any:
        """Run a prepared call of this op's kernel: the result (c when given). Row-range kernels write into
        ``c`` or ``out`` directly; others' results are copied into ``out`` when given."""
        if self.c_back is not None:  # c's current contents into its scratch copy
            np.copyto(self.c_arr, self.c_back)  # type: ignore[arg-type]
        if self.row_range:
            dest = self.c_kernel if self.c_kernel is not None else (
                out if self.restore is None and self.out_dtype is None else None)
            result = self.finish(call(dest))
        else:
            result = self.finish(call())
        if out is not None and result is not out:
            np.copyto(out, result)
            return out
        return result

    def finish(self, result: Any) -> Any:
        """Decode the kernel's result; write into c when given."""
        out = self.kernel.decode(result, self.out_format)  # type: ignore[union-attr]
        if self.final_format is not None:
            out = out.convert(self.final_format)
        if self.restore is not None:
            out = self.restore(out)
        if self.out_dtype is not None:  # half operands computed in float32: the result in their type
            out = cast_values(out, self.out_dtype) if isinstance(out, Tensor) else out.astype(self.out_dtype)
        c = self.c_arr
        if c is not None:
            if out is not c and (out.__array_interface__["data"][0] != c.__array_interface__["data"][0]
                                 or out.shape != c.shape):
                np.copyto(c, out)
            if self.c_back is not None:
                np.copyto(self.c_back, c)
            return self.c_obj
        return out


def c_buffers(c: Any, val: Any) -> tuple[Any, np.ndarray | None]:
    """(the array a kernel updates for ``c``, the caller's array it is copied back into or None): ``val`` (the
    Tensor view's values) for a C-ordered NumPy/torch ``c`` or a Tensor, else a C-ordered scratch copy."""
    host = c if isinstance(c, np.ndarray) else None
    if host is None and type(c).__module__.startswith("torch") and getattr(c, "layout", None) is not None:
        import torch

        if c.layout == torch.strided and c.device.type == "cpu":
            host = c.detach().numpy()
    if host is None or host.flags.c_contiguous:
        return val, None
    if not host.flags.writeable:
        raise ValueError("c is updated in place and must be writable")
    return np.ascontiguousarray(host), host


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
