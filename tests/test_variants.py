"""Every kernel variant ``lowering.schedule.choose_schedule`` can pick, forced, against numpy; and its rules.

A variant is ``Contraction.lanes`` (1: scalar loops; 8: 8-lane vectors / 8 partial sums; None: the
emitter's default) in the row-range form (``emit_contraction(c, rows=True)``, run here in two chunks) and
the whole-matrix form, over CSR, BSR (its demapped view), DIA-I, DELTA(8) and batched CSR operands.
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from frontend import NamedFormats as N, Tensor, TensorFormat
from frontend.format import stores_padding
from frontend.ops._kernel_cache import ArgumentLayout, _value_ranks
from frontend.ops._options import MatmulOptions
from frontend.ops._prepared import PreparedOp
from frontend.ops._semiring import get_semiring
from frontend.storage._convert import inside_shape, level_coordinates
from lowering.contraction import Contraction, TensorSpec
from lowering.emitter import emit_contraction, register_level_rule, row_parallel, rule_for
from lowering.pipelines import Pipeline
from lowering.schedule import (
    AUTO_MIN_WORK,
    CHUNKS_PER_THREAD,
    DELTA_LANES,
    DYNAMIC_MIN_WORK,
    LONG_ROW,
    MID_LANES,
    STENCIL_COLUMNS,
    STRIDE_FILL,
    STRIDE_MAX,
    WIDE_LANES,
    X_CACHE_BYTES,
    OperandStats,
    Schedule,
    choose_schedule,
)
from mlir_bridge import compile_module
from ops_util import rand

BATCHED_CSR = TensorFormat.parse("(b, i, j) -> (b : batch, i : dense, j : compressed)")
FORMATS = {"CSR": N.CSR, "BSR": N.BSR((2, 2)), "DIAI": N.DIAI, "DELTA8": N.DELTA(8)}
#: The lanes the chooser can pick for each operation (1 or MID_LANES partial sums for reductions, WIDE_LANES
#: vectors over 16 dense columns, scalar for 3), plus WIDE_LANES partial sums on SpMV (the emitter's other width)
VARIANTS = {"spmv": [1, MID_LANES, WIDE_LANES], "spmm16": [1, WIDE_LANES], "spmm3": [1], "vecmat": [1, MID_LANES],
            "min-plus": [1, MID_LANES], "max-plus": [1, MID_LANES]}
TOL = {np.float32: 3e-5, np.float64: 1e-12, np.complex128: 1e-12}
#: (einsum subscripts of the stored operand and the dense ones, output, options)
OPS = {
    "spmv": (("ik", "k"), "i", {}),
    "spmm16": (("ik", "kj"), "ij", {}),
    "spmm3": (("ik", "kj"), "ij", {}),
    "vecmat": (("ki", "k"), "i", {}),
    "min-plus": (("ik", "k"), "i", {"semiring": "min-plus"}),
    "max-plus": (("ik", "k"), "i", {"semiring": "max-plus"}),
}


def matrix(shape: tuple[int, ...], dtype=np.float64, seed: int = 0) -> np.ndarray:
    """Random entries, row 1 empty, and one row longer than two vectors of 8 and 16 partial sums."""
    a = rand(shape, 0.3, dtype, seed)
    if shape[-2] > 3 and shape[-1] > 20:
        a[..., 3, :] = rand(shape[-1:], 1.0, dtype, seed + 1)
    return a


def dense_operand(op: str, shape: tuple[int, ...], dtype, seed: int = 1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    k = shape[0] if op == "vecmat" else shape[-1]
    cols = {"spmm16": 16, "spmm3": 3}.get(op)
    x = rng.random(shape[:-2] + ((k,) if cols is None else (k, cols))) - 0.5
    return x.astype(dtype)


def stored_mask(t: Tensor) -> np.ndarray:
    """Where ``t`` stores entries: its stored slots, less the zeros a padding format stores (padding is not an
    entry: a semiring never sees it, README "Stored entries")."""
    lvl, _ = level_coordinates(t)
    dims = [np.asarray(d) for d in t.tensor_format.lvl2dim(lvl)]
    keep = inside_shape(t.tensor_format, dims, t.shape)
    mask = np.zeros(t.shape, dtype=bool)
    mask[tuple(d if keep is None else d[keep] for d in dims)] = True
    return mask & (t.to_dense() != 0) if stores_padding(t.tensor_format) else mask


def reference(a: np.ndarray, x: np.ndarray, op: str, t: Tensor | None = None) -> np.ndarray:
    if op == "vecmat":
        return x @ a
    if op in ("min-plus", "max-plus"):
        pick = np.min if op == "min-plus" else np.max
        ident = np.inf if op == "min-plus" else -np.inf
        mask = a != 0 if t is None else stored_mask(t)
        return pick(np.where(mask, a + x[None, :], ident), axis=1)
    if a.ndim == 3:
        return np.einsum("bij,bj->bi", a, x)
    return a @ x


def prepared(t: Tensor, x: np.ndarray, op: str, c: np.ndarray | None = None, **options) -> PreparedOp:
    subs, out, kw = OPS[op]
    if t.ndim == 3:
        subs, out = ("bik", "bk"), "bi"
    return PreparedOp(subs, [t, Tensor.from_package(x)], out, ("a", "b"), MatmulOptions(**kw, **options), c)


def run_variant(op: PreparedOp, lanes: int | None, rows: bool) -> np.ndarray:
    """The prepared contraction compiled with ``lanes``; the row-range form runs in two chunks."""
    c = dataclasses.replace(op.describe(), lanes=lanes, row_range=rows)
    fn = compile_module(emit_contraction(c, rows=rows), Pipeline()).function("main")
    layout = ArgumentLayout(c.inputs, _value_ranks(c.inputs, [a.rank for a in fn.signature.args]))
    args = layout.flatten(op.tensors, op.extra)
    if rows:
        out = np.full(c.output.shape, np.nan, dtype=args[-1].dtype if op.extra else op.tensors[0].dtype)
        m = c.output.shape[0]
        fn(*args, out, 0, m // 2)
        fn(*args, out, m // 2, m)
    else:
        out = fn(*args)
    return out if op.restore is None else op.restore(out)


def check(got: np.ndarray, ref: np.ndarray, dtype) -> None:
    assert got.shape == ref.shape
    np.testing.assert_allclose(got, ref, rtol=TOL[dtype], atol=TOL[dtype])


def _cases() -> list[tuple[str, str, bool, int]]:
    cases = []
    for name in FORMATS:
        for op in OPS:
            for rows in (True, False):
                if rows and op == "vecmat":  # writes scattered outputs: no row-range form
                    continue
                cases += [(name, op, rows, lanes) for lanes in VARIANTS[op]]
    return cases


@pytest.mark.parametrize("name,op,rows,lanes", _cases(),
                         ids=lambda v: {True: "rows", False: "whole"}.get(v, v) if not isinstance(v, int) or
                         isinstance(v, bool) else f"lanes{v}")
def test_forced_variant_matches_numpy(name, op, rows, lanes):
    a = matrix((10, 36) if name == "BSR" and op.endswith("plus") else (10, 37))
    t = Tensor.from_dense(a, FORMATS[name], index_type=np.int32)
    x = dense_operand(op, a.shape, np.float64)
    p = prepared(t, x, op)
    if rows:
        assert row_parallel(dataclasses.replace(p.describe(), row_range=True))
    check(run_variant(p, lanes, rows), reference(a, x, op, t), np.float64)


@pytest.mark.parametrize("lanes", [1, MID_LANES, WIDE_LANES], ids=lambda v: f"lanes{v}")
@pytest.mark.parametrize("rows", [True, False], ids=["rows", "whole"])
@pytest.mark.parametrize("op", ["spmv", "spmm16", "min-plus"])
def test_batched_csr(op, rows, lanes):
    a = matrix((3, 6, 25), seed=4)
    t = Tensor.from_dense(a, BATCHED_CSR, index_type=np.int32)
    x = dense_operand(op, a.shape, np.float64)
    if op == "spmm16":
        ref = np.einsum("bik,bkj->bij", a, x)
        p = PreparedOp(("bik", "bkj"), [t, Tensor.from_package(x)], "bij", ("a", "b"), MatmulOptions())
    elif op == "min-plus":
        mask = stored_mask(t)
        ref = np.stack([np.min(np.where(mask[k], a[k] + x[k][None, :], np.inf), axis=1) for k in range(3)])
        p = PreparedOp(("bik", "bk"), [t, Tensor.from_package(x)], "bi", ("a", "b"),
                       MatmulOptions(semiring="min-plus"))
    else:
        ref = reference(a, x, op)
        p = prepared(t, x, op)
    check(run_variant(p, lanes, rows), ref, np.float64)


#: (operation, lanes, form) runs of the shape and dtype tests: each variant the chooser picks, once
CHOSEN = [("spmv", 1, True), ("spmv", MID_LANES, True), ("spmm16", WIDE_LANES, True), ("spmv", 1, False)]


@pytest.mark.parametrize("shape", [(1, 1), (5, 1), (1, 40), (7, 3), (3, 70), (0, 4)], ids=str)
@pytest.mark.parametrize("name", ["CSR", "DELTA8"])
def test_shapes(name, shape):
    a = matrix(shape, seed=7) if min(shape) else np.zeros(shape)
    t = Tensor.from_dense(a, FORMATS[name], index_type=np.int32)
    for op, lanes, rows in CHOSEN:
        x = dense_operand(op, shape, np.float64)
        check(run_variant(prepared(t, x, op), lanes, rows), reference(a, x, op), np.float64)


@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("name", ["CSR", "DELTA8", "BSR"])
def test_dtypes(name, dtype):
    a = matrix((9, 30), dtype, seed=2)
    t = Tensor.from_dense(a, FORMATS[name], index_type=np.int32)
    for op, lanes, rows in CHOSEN[:3]:
        x = dense_operand(op, a.shape, dtype)
        if np.dtype(dtype).kind == "c":
            x = (x + 0.5j * x[::-1]).astype(dtype)
        got = run_variant(prepared(t, x, op), lanes, rows)
        assert got.dtype == dtype
        check(got, a @ x, dtype)


@pytest.mark.parametrize("lanes", [1, MID_LANES, WIDE_LANES], ids=lambda v: f"lanes{v}")
@pytest.mark.parametrize("op", ["spmv", "spmm16", "spmm3"])
@pytest.mark.parametrize("name", ["CSR", "DELTA8"])
def test_alpha_beta_and_epilog_in_the_fused_store(name, op, lanes):
    """Rows written once: the initial value (beta * c), alpha and the epilog go into that one store."""
    a = matrix((8, 30), seed=5)
    t = Tensor.from_dense(a, FORMATS[name], index_type=np.int32)
    x = dense_operand(op, a.shape, np.float64)
    ref = a @ x
    c = np.random.default_rng(9).random(ref.shape)
    p = prepared(t, x, op, c, alpha=2.0, beta=0.5)
    check(run_variant(p, lanes, True), 2.0 * ref + 0.5 * c, np.float64)
    q = prepared(t, x, op, epilog=lambda v: v * 3.0 + 1.0)
    check(run_variant(q, lanes, True), ref * 3.0 + 1.0, np.float64)


def test_emitted_loops_per_variant():
    """lanes=1: no unrolled partial sums or vectors; 4: four partial sums (SpMV); 8: 8-lane vectors (SpMM);
    rows of SpMV/SpMM are stored once (no zero-fill loop, no load of the output)."""
    a = matrix((10, 37))
    t = Tensor.from_dense(a, N.CSR, index_type=np.int32)
    spmv = prepared(t, dense_operand("spmv", a.shape, np.float64), "spmv").describe()
    spmm = prepared(t, dense_operand("spmm16", a.shape, np.float64), "spmm16").describe()
    scalar = emit_contraction(dataclasses.replace(spmv, lanes=1, row_range=True), rows=True)
    assert "vector" not in scalar and scalar.count("iter_args") == 1
    wide = emit_contraction(dataclasses.replace(spmv, lanes=MID_LANES, row_range=True), rows=True)
    assert "-> (f64, f64, f64, f64)" in wide and "vector" not in wide
    tile = emit_contraction(dataclasses.replace(spmm, lanes=8, row_range=True), rows=True)
    assert "-> (vector<8xf64>, vector<8xf64>)" in tile and tile.count("vector.store") == 2
    for text in (scalar, wide, tile):
        assert "memref.load %out" not in text and "vector.load %out" not in text


@pytest.mark.parametrize("bits", [3, 8])  # byte-per-gap widths (bit-packed DELTA(4) is never gathered)
@pytest.mark.parametrize("lanes", [WIDE_LANES, 16], ids=lambda v: f"lanes{v}")
@pytest.mark.parametrize("shape", [(1, 1), (5, 1), (7, 3), (3, 70), (0, 4), (10, 37), (6, 300)], ids=str)
def test_gathered_delta_walk(shape, lanes, bits):
    """DELTA's gathered walk (off by default: ``register_level_rule(..., gather=True)``): ``lanes`` gaps at a
    time, their coordinates one i32 prefix sum over a splat of the running column, then one gather."""
    register_level_rule("delta", rule_for("delta"), gather=True, replace=True)
    try:
        for dtype in (np.float32, np.float64):
            a = matrix(shape, dtype, seed=11) if min(shape) else np.zeros(shape, dtype)
            t = Tensor.from_dense(a, N.DELTA(bits), index_type=np.int32)
            x = dense_operand("spmv", shape, dtype)
            for rows in (True, False):
                check(run_variant(prepared(t, x, "spmv"), lanes, rows), a @ x, dtype)
        text = emit_contraction(dataclasses.replace(prepared(t, x, "spmv").describe(), lanes=lanes, row_range=True),
                                rows=True)
        assert "vector.gather" in text and f"vector<{lanes}xi32>" in text and f"vector<{lanes}xindex>" not in text
    finally:
        register_level_rule("delta", rule_for("delta"), gather=False, replace=True)


# ----- choose_schedule's rules on synthetic statistics ----------------------------------------------------------
def _spec(fmt, shape, elem="f64") -> TensorSpec:
    return TensorSpec(fmt, shape, elem, 32, 32)


def spmv_contraction(fmt=N.CSR, m: int = 1000, n: int = 1000, cols: int = 0) -> Contraction:
    x = _spec(None, (n,) if cols == 0 else (n, cols))
    y = _spec(None, (m,) if cols == 0 else (m, cols))
    return Contraction(("ik", "k" if cols == 0 else "kj"), (_spec(fmt, (m, n)), x), "i" if cols == 0 else "ij", y)


def stats(rows: int = 1000, mean: float = 5.0, cv: float = 0.2) -> OperandStats:
    return OperandStats(rows, rows, int(rows * mean), int(mean * 3), mean, cv, 0.1)


def test_short_rows_scalar_long_rows_partial_sums():
    c = spmv_contraction()
    assert choose_schedule(c, stats(mean=5.0), 1, None).lanes == 1
    assert choose_schedule(c, stats(mean=LONG_ROW - 1), 1, None).lanes == 1
    assert choose_schedule(c, stats(mean=LONG_ROW), 1, None).lanes == MID_LANES
    assert choose_schedule(c, stats(mean=2048.0), 1, None).lanes == MID_LANES
    assert choose_schedule(c, None, 1, None).lanes == 1


def test_unpacked_delta_rows_take_more_partial_sums():
    """Long DELTA(8) rows take DELTA_LANES partial sums; bit-packed DELTA(4) rows MID_LANES, short rows none."""
    assert DELTA_LANES != MID_LANES
    for mean in (LONG_ROW, 2048.0):
        got = choose_schedule(spmv_contraction(N.DELTA(8)), stats(mean=mean), 1, None)
        assert got.lanes == DELTA_LANES and "unpacked delta" in got.reason
        assert choose_schedule(spmv_contraction(N.DELTA(4)), stats(mean=mean), 1, None).lanes == MID_LANES
    assert choose_schedule(spmv_contraction(N.DELTA(8)), stats(mean=LONG_ROW - 1), 1, None).lanes == 1


def test_dense_columns_are_vectorized():
    assert choose_schedule(spmv_contraction(cols=16), stats(), 2, None).lanes == WIDE_LANES
    assert choose_schedule(spmv_contraction(cols=64), stats(mean=100), 2, None).lanes == WIDE_LANES
    assert choose_schedule(spmv_contraction(cols=3), stats(), 2, None).lanes == 1


def test_threads_auto_off_forced():
    c = spmv_contraction(m=100_000, n=100_000)
    big = stats(rows=100_000, mean=10.0)
    small = stats(rows=100, mean=10.0)
    assert choose_schedule(c, big, 4, None).threads == 4
    assert choose_schedule(c, big, 4, "auto").threads == 4
    assert choose_schedule(c, small, 4, None).threads == 1
    assert choose_schedule(c, big, 1, None).threads == 1
    assert choose_schedule(c, None, 4, None).threads == 1
    assert choose_schedule(c, big, 4, 1).threads == 1
    assert choose_schedule(c, small, 4, 3).threads == 3
    assert choose_schedule(c, stats(rows=2), 4, 3).threads == 2     # no more chunks than rows
    # work = entries + rows
    assert choose_schedule(c, stats(rows=AUTO_MIN_WORK // 2 - 1, mean=1.0), 2, None).threads == 1
    assert choose_schedule(c, stats(rows=AUTO_MIN_WORK // 2, mean=1.0), 2, None).threads == 2


def test_dynamic_chunks_from_dynamic_min_work():
    """Auto threads split large work into CHUNKS_PER_THREAD chunks per thread (claimed dynamically); below
    DYNAMIC_MIN_WORK, one thread, or forced threads: one chunk per thread (chunks 0)."""
    c = spmv_contraction(m=10_000_000, n=10_000_000)
    big = stats(rows=DYNAMIC_MIN_WORK, mean=1.0)  # work = 2 x DYNAMIC_MIN_WORK
    got = choose_schedule(c, big, 2, None)
    assert got.threads == 2 and got.chunks == 2 * CHUNKS_PER_THREAD and "claimed dynamically" in got.reason
    assert choose_schedule(c, stats(rows=DYNAMIC_MIN_WORK // 2 - 1, mean=1.0), 2, None).chunks == 0
    assert choose_schedule(c, big, 2, 2).chunks == 0 and choose_schedule(c, big, 2, 1).chunks == 0
    assert choose_schedule(c, big, 1, None).chunks == 0
    assert choose_schedule(c, stats(rows=DYNAMIC_MIN_WORK, mean=1.0), 2, None).code_key() == \
        choose_schedule(c, stats(rows=DYNAMIC_MIN_WORK // 2 - 1, mean=1.0), 2, None).code_key()


def test_gathered_walk_on_stencil_like_rows():
    """Short plus-times CSR rows take the gathered walk when x exceeds X_CACHE_BYTES and columns lie
    STENCIL_COLUMNS or more from the diagonal but within STENCIL_BANDWIDTH of the columns (Poisson-like)."""
    n = X_CACHE_BYTES // 8 + 1
    big = spmv_contraction(m=n, n=n)

    def spread(distance: float, mean: float = 7.0) -> OperandStats:
        return dataclasses.replace(stats(rows=n, mean=mean), bandwidth=distance / n)
    got = choose_schedule(big, spread(STENCIL_COLUMNS), 1, None)
    assert got.gather and got.lanes == MID_LANES and "stencil-like" in got.reason
    assert not choose_schedule(big, spread(STENCIL_COLUMNS - 1), 1, None).gather  # banded: x loads in cache
    assert not choose_schedule(big, spread(0.33 * n), 1, None).gather  # uniform random columns
    long_rows = choose_schedule(big, spread(STENCIL_COLUMNS, mean=LONG_ROW), 1, None)  # long rows, x out of cache
    assert long_rows.gather and "out of cache" in long_rows.reason and "stencil" not in long_rows.reason
    assert not choose_schedule(big, spread(float("nan")), 1, None).gather
    small = spmv_contraction(m=1000, n=1000)
    assert not choose_schedule(small, dataclasses.replace(stats(), bandwidth=0.005), 1, None).gather  # x fits
    minplus = dataclasses.replace(big, semiring=get_semiring("min-plus"))
    assert not choose_schedule(minplus, spread(STENCIL_COLUMNS), 1, None).gather
    assert not choose_schedule(spmv_contraction(N.DELTA(8), m=n, n=n), spread(STENCIL_COLUMNS), 1, None).gather
    assert not choose_schedule(spmv_contraction(m=n, n=n, cols=16), spread(STENCIL_COLUMNS), 1, None).gather


@pytest.mark.parametrize("rows", [True, False], ids=["rows", "whole"])
@pytest.mark.parametrize("shape", [(1, 1), (5, 1), (7, 3), (10, 37), (0, 4), (40, 300)], ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_gathered_csr_walk_matches_numpy(shape, dtype, rows):
    """The gathered CSR walk (Contraction.gather) against numpy: empty rows, rows shorter and longer than the
    vector, row-range in two chunks and whole-matrix; its text gathers x."""
    a = matrix(shape, dtype)
    t = Tensor.from_dense(a, N.CSR, index_type=np.int32)
    x = dense_operand("spmv", shape, dtype)
    op = prepared(t, x, "spmv")
    c = dataclasses.replace(op.describe(), lanes=MID_LANES, row_range=rows, gather=True)
    assert "vector.gather" in emit_contraction(c, rows=rows)
    got = _run_gathered(op, c, rows)
    check(got, reference(a, x, "spmv"), dtype)


def _run_gathered(op: PreparedOp, c: Contraction, rows: bool) -> np.ndarray:
    fn = compile_module(emit_contraction(c, rows=rows), Pipeline()).function("main")
    layout = ArgumentLayout(c.inputs, _value_ranks(c.inputs, [v.rank for v in fn.signature.args]))
    args = layout.flatten(op.tensors, op.extra)
    if not rows:
        return fn(*args)
    out = np.full(c.output.shape, np.nan, dtype=op.tensors[0].dtype)
    m = c.output.shape[0]
    fn(*args, out, 0, m // 2)
    fn(*args, out, m // 2, m)
    return out


def test_split_by_entries_where_positions_exist():
    big = stats(rows=100_000, mean=10.0)
    csr = choose_schedule(spmv_contraction(m=100_000, n=100_000), big, 2, None)
    assert csr.split == "nnz" and "by nnz" in csr.reason
    dia = choose_schedule(spmv_contraction(N.DIAI, m=100_000, n=100_000), big, 2, None)
    assert dia.split == "rows"


def test_not_row_parallel_runs_one_thread():
    c = spmv_contraction(N.CSC, m=100_000, n=100_000)  # rows are CSC's inner level
    s = choose_schedule(c, stats(rows=100_000, mean=10.0), 4, None)
    assert s.threads == 1 and "not row-parallel" in s.reason


def test_code_key_is_the_decision_only():
    a, b = stats(mean=3.0, cv=0.1), stats(mean=7.0, cv=2.0)
    c = spmv_contraction()
    assert choose_schedule(c, a, 1, None).code_key() == choose_schedule(c, b, 1, None).code_key() == (1, 0, False)
    assert Schedule(8, 2, "nnz", "").code_key() == (8, 0, False)
    assert Schedule(1, 1, "nnz", "", 5).code_key() == (1, 5, False)
    assert Schedule(4, 1, "nnz", "", gather=True).code_key() == (4, 0, True)
    assert dataclasses.replace(c, gather=True).key() != c.key()
    assert dataclasses.replace(c, stride=5).key() != c.key()


def test_fixed_stride_rule():
    """The fixed-stride walk: a loose_compressed row level with exactly K slots per row (measured), fill
    >= STRIDE_FILL, K <= STRIDE_MAX, plus-times without a prolog on the stored operand."""
    def ell(k: int = 5, fill: float = 1.0) -> OperandStats:
        return dataclasses.replace(stats(mean=float(k)), stride=k, fill=fill)
    c = spmv_contraction(N.ELL)
    assert choose_schedule(c, ell(), 1, None).stride == 5
    assert choose_schedule(spmv_contraction(N.ELL, cols=16), ell(), 1, None).stride == 0  # SpMM: no gain
    assert choose_schedule(spmv_contraction(N.BlockedELL((2, 2))), ell(3), 1, None).stride == 3
    assert choose_schedule(c, ell(fill=STRIDE_FILL), 1, None).stride == 5
    assert choose_schedule(c, ell(fill=STRIDE_FILL - 0.01), 1, None).stride == 0
    assert choose_schedule(c, ell(STRIDE_MAX + 1), 1, None).stride == 0
    assert choose_schedule(c, stats(), 1, None).stride == 0          # not measured as fixed-stride
    assert choose_schedule(c, None, 1, None).stride == 0
    assert choose_schedule(spmv_contraction(), ell(), 1, None).stride == 0  # CSR: compressed rows
    min_plus = dataclasses.replace(c, semiring=get_semiring("min-plus").lowered("f64"))
    assert choose_schedule(min_plus, ell(), 1, None).stride == 0
    assert dataclasses.replace(c, lanes=8).key() != dataclasses.replace(c, lanes=1).key() != c.key()


@pytest.mark.parametrize("op", ["spmv", "spmm3"])
def test_dia_tiles_fill_their_own_rows(op, monkeypatch):
    """DIA-I's row-range kernel zeroes each tile's output rows at the tile's start (no separate fill pass);
    over several tiles and chunk bounds that cut tiles, every row is written once, as numpy's (tiles of 2048
    rows here, to keep the dense reference small). Plain products take ``emitter.diagonal`` (no tiles), the
    generic walk still runs DIA-I products with a semiring, alpha or c: both are checked."""
    from lowering.emitter import diagonal, walker

    RANGE_TILE = 2048
    monkeypatch.setattr(walker, "range_tile", lambda row_bytes: RANGE_TILE)
    monkeypatch.setattr(diagonal, "applies", lambda c: False)
    rows = 2 * RANGE_TILE + 77
    a = np.zeros((rows, rows - 300))
    for off in (-40, -1, 0, 3, 500):
        i = np.arange(max(0, -off), min(rows, rows - 300 - off))
        a[i, i + off] = np.random.default_rng(off + 50).random(i.size) + 0.5
    t = Tensor.from_dense(a, N.DIAI, index_type=np.int32)
    x = dense_operand(op, a.shape, np.float64)
    c = dataclasses.replace(prepared(t, x, op).describe(), row_range=True)
    text = emit_contraction(c, rows=True)
    assert text.index("scf.parallel") < text.index("memref.store")  # the fill is inside the tile loop
    fn = compile_module(text, Pipeline()).function("main")
    args = ArgumentLayout(c.inputs, _value_ranks(c.inputs, [v.rank for v in fn.signature.args])).flatten(
        [t, Tensor.from_package(x)], [])
    out = np.full(c.output.shape, np.nan)
    for lo, hi in ((0, 1001), (1001, RANGE_TILE + 5), (RANGE_TILE + 5, rows)):
        fn(*args, out, lo, hi)
    check(out, a @ x, np.float64)
    monkeypatch.undo()
    own = compile_module(emit_contraction(c, rows=True), Pipeline()).function("main")
    out = np.full(c.output.shape, np.nan)
    for lo, hi in ((0, 39), (39, 1001), (1001, rows - 3), (rows - 3, rows)):  # cuts inside the edge rows too
        own(*args, out, lo, hi)
    check(out, a @ x, np.float64)


def test_matmul_gathers_on_a_poisson_matrix():
    """A 2-D Poisson matrix with x over X_CACHE_BYTES plans the gathered walk (info says so) and matches scipy
    on one thread and on the auto threads; a banded matrix of the same size does not gather."""
    import scipy.sparse as sp

    import frontend as F

    g = 400  # 160k rows: x of 1.28 MB
    t = sp.diags([-1.0, -1.0, 4.0, -1.0, -1.0], [-g, -1, 0, 1, g], shape=(g * g, g * g), format="csr")
    t.indices, t.indptr = t.indices.astype(np.int32), t.indptr.astype(np.int32)
    x = np.random.default_rng(2).random(g * g)
    for threads in (1, None):
        mm = F.Matmul(t, x, threads=threads).plan()
        assert "gathered" in mm.info.reason and mm.info.lanes == MID_LANES
        np.testing.assert_allclose(mm.execute(), t @ x, rtol=1e-12)
    y = np.random.default_rng(3).random(g * g)
    scaled = F.Matmul(t, x, c=y.copy(), alpha=2.0, beta=0.5).plan()
    assert "gathered" in scaled.info.reason
    np.testing.assert_allclose(np.asarray(scaled.execute()), 2.0 * (t @ x) + 0.5 * y, rtol=1e-12)
    band = sp.diags([1.0, 2.0, 3.0], [-1, 0, 1], shape=(g * g, g * g), format="csr")
    assert "gathered" not in F.Matmul(band, x).info.reason


def test_spmm_work_counts_vector_operations():
    """SpMM work is entries x ceil(columns / WIDE_LANES) (+ rows): a bar-sized SpMM x16 stays on one thread,
    x64 of the same matrix (4x the vector operations) goes to two; fewer columns than WIDE_LANES count each."""
    rows, mean = 600, 39.0  # pyamg bar: 23k entries
    s = stats(rows=rows, mean=mean)
    assert choose_schedule(spmv_contraction(m=rows, n=rows, cols=16), s, 2, None).threads == 1
    assert choose_schedule(spmv_contraction(m=rows, n=rows, cols=64), s, 2, None).threads == 2
    few = stats(rows=rows, mean=AUTO_MIN_WORK / rows / 3)
    assert choose_schedule(spmv_contraction(m=rows, n=rows, cols=3), few, 2, None).threads == 2
    assert choose_schedule(spmv_contraction(m=rows, n=rows, cols=2), few, 2, None).threads == 1
