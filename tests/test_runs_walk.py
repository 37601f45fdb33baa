"""The gathered CSR walk's run loads (a group of MID_LANES entries whose columns are consecutive loads x with
one contiguous vector load, other groups gather) against scipy, forced and as the chooser picks it; the
``runs`` statistic and the RUN_SHARE rule."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp

import frontend as F
from frontend import NamedFormats as N, Tensor
from frontend.ops._semiring import get_semiring
from frontend.ops._stats import _measure
from lowering.emitter import emit_contraction
from lowering.schedule import MID_LANES, RUN_SHARE, OperandStats, choose_schedule
from test_variants import _run_gathered, prepared, spmv_contraction

TOL = {np.float32: 3e-5, np.float64: 1e-12}


def blocks(rows: int, cols: int, dtype: type, seed: int = 0) -> sp.csr_array:
    """4x4 blocks (some cut by the matrix's edge), a row of mixed runs and single columns, an empty row and a
    run ending at the last column (a contiguous load must stay in bounds)."""
    rng = np.random.default_rng(seed)
    nb, mb = -(-rows // 4), -(-cols // 4)
    pattern = sp.random_array((nb, mb), density=min(1.0, 2.5 / max(mb, 1)), random_state=seed, format="csr")
    a = sp.kron(pattern, np.ones((4, 4)), format="lil")[:rows, :cols]
    if rows > 3 and cols > 9:
        a[2, :] = 0
        a[1, [0, 2, 3, 4, 5, 7, 9]] = 1.0  # a run not aligned to the row's start, single columns
        a[rows - 1, cols - 4:] = 1.0  # a run up to the last column
    a = sp.csr_array(a)
    a.sum_duplicates()
    a.data = rng.standard_normal(a.nnz)
    return sp.csr_array(a.astype(dtype))


SHAPES = [(1, 1), (4, 4), (7, 3), (13, 37), (0, 4), (4, 0), (64, 40)]


@pytest.mark.parametrize("rows", [True, False], ids=["rows", "whole"])
@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_forced_run_loads_match_scipy(shape: tuple[int, int], dtype: type, rows: bool) -> None:
    a = blocks(*shape, dtype)
    t = Tensor.from_package(a)
    x = (np.random.default_rng(1).random(shape[1]) - 0.5).astype(dtype)
    op = prepared(t, x, "spmv")
    c = dataclasses.replace(op.describe(), lanes=MID_LANES, row_range=rows, gather=True)
    text = emit_contraction(c, rows=rows)
    assert "vector.gather" in text and "vector.reduction <and>" in text  # the run check, then load or gather
    got = _run_gathered(op, c, rows)
    np.testing.assert_allclose(got, a @ x, rtol=TOL[dtype], atol=TOL[dtype])


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
@pytest.mark.parametrize("threads", [None, 2])
def test_chooser_picks_runs_for_block_rows(dtype: type, threads: int | None) -> None:
    a = blocks(400, 400, dtype, seed=3)
    x = (np.random.default_rng(2).random(400) - 0.5).astype(dtype)
    mm = F.Matmul(a, x, threads=threads).plan()
    assert "in runs of" in mm.info.reason and mm.info.lanes == MID_LANES
    assert "vector.reduction <and>" in mm.mlir
    for _ in range(2):
        np.testing.assert_allclose(mm.execute(), a @ x, rtol=TOL[dtype], atol=TOL[dtype])
    y = np.empty(400, dtype)
    mm.execute(out=y)
    np.testing.assert_allclose(y, a @ x, rtol=TOL[dtype], atol=TOL[dtype])


def test_runs_statistic() -> None:
    block = blocks(400, 400, np.float64, seed=4)
    assert _measure(Tensor.from_package(block)).stats.runs > 0.9
    uniform = sp.random_array((400, 4000), density=0.005, format="csr", random_state=0)
    assert _measure(Tensor.from_package(uniform)).stats.runs < 0.1
    dense_rows = sp.csr_array(np.ones((5, 9)))  # 2 aligned groups of 4 per row of 9 entries
    assert _measure(Tensor.from_package(dense_rows)).stats.runs == pytest.approx(8 / 9)
    assert _measure(Tensor.from_package(sp.csr_array((3, 3)))).stats.runs == 0.0


def test_run_share_rule() -> None:
    c = spmv_contraction(m=1000, n=1000)

    def with_runs(runs: float, mean: float = 16.0) -> OperandStats:
        return OperandStats(1000, 1000, int(1000 * mean), int(mean), mean, 0.0, 0.3, runs=runs)
    got = choose_schedule(c, with_runs(RUN_SHARE), 1, None)
    assert got.gather and got.lanes == MID_LANES and "in runs of" in got.reason
    assert choose_schedule(c, with_runs(1.0, mean=2048.0), 1, None).gather  # long rows too
    assert not choose_schedule(c, with_runs(RUN_SHARE - 0.01), 1, None).gather  # mispredicted groups
    assert not choose_schedule(c, with_runs(1.0, mean=MID_LANES - 1), 1, None).gather  # no full group
    minplus = dataclasses.replace(c, semiring=get_semiring("min-plus"))
    assert not choose_schedule(minplus, with_runs(1.0), 1, None).gather
    assert not choose_schedule(spmv_contraction(N.DELTA(8)), with_runs(1.0), 1, None).gather
    assert not choose_schedule(spmv_contraction(cols=16), with_runs(1.0), 1, None).gather  # SpMM


def test_long_rows_gather_when_x_leaves_cache() -> None:
    from lowering.schedule import GATHER_ROW_CV, LONG_ROW, X_CACHE_BYTES

    n = X_CACHE_BYTES // 8 + 1

    def rows(mean: float, cols: int) -> OperandStats:
        return OperandStats(1000, cols, int(1000 * mean), int(mean), mean, 0.0, 0.3)
    got = choose_schedule(spmv_contraction(m=1000, n=n), rows(LONG_ROW, n), 1, None)
    assert got.gather and got.lanes == MID_LANES and "out of cache" in got.reason
    assert not choose_schedule(spmv_contraction(m=1000, n=n), rows(LONG_ROW - 1, n), 1, None).gather
    assert not choose_schedule(spmv_contraction(m=1000, n=4096), rows(2048.0, 4096), 1, None).gather  # x in cache
    spread = dataclasses.replace(rows(LONG_ROW, n), row_cv=GATHER_ROW_CV + 0.1)  # power-law: short rows too
    assert not choose_schedule(spmv_contraction(m=1000, n=n), spread, 1, None).gather


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=lambda d: np.dtype(d).name)
def test_forced_gather_on_long_random_rows(dtype: type) -> None:
    a = sp.random_array((9, 5000), density=0.2, format="csr", random_state=5, dtype=np.float64).astype(dtype)
    a = sp.csr_array(a)
    t = Tensor.from_package(a)
    x = (np.random.default_rng(3).random(5000) - 0.5).astype(dtype)
    op = prepared(t, x, "spmv")
    for rows in (True, False):
        c = dataclasses.replace(op.describe(), lanes=MID_LANES, row_range=rows, gather=True)
        np.testing.assert_allclose(_run_gathered(op, c, rows), a @ x, rtol=TOL[dtype] * 10, atol=TOL[dtype] * 10)
