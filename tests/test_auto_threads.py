"""Default (auto) threads, chunks balanced by stored entries, ``out=`` and ``Matmul.info`` on the CPU."""
from __future__ import annotations

import gc
import tracemalloc

import numpy as np
import pytest
import scipy.sparse as sp

import frontend as F
from frontend import NamedFormats as N, Tensor
from frontend.ops import MatmulInfo
from frontend.ops._stats import balanced_bounds, stored_rows
from frontend.ops._threads import cpu_count
from ops_util import dense, rand

FORMATS = {"CSR": N.CSR, "BSR": N.BSR((2, 2)), "DELTA": N.DELTA(4), "DIAI": N.DIAI}


def stored(a: np.ndarray, name: str) -> Tensor:
    return Tensor.from_dense(a, FORMATS[name])


@pytest.mark.parametrize("name", list(FORMATS))
@pytest.mark.parametrize("threads", [None, 1, 2, 5])
def test_results_match_scipy_for_every_thread_option(name, threads):
    a = rand((12, 10), density=0.4, seed=7)
    a[3] = 0  # an empty row
    t = stored(a, name)
    ref = sp.csr_array(a)
    rng = np.random.default_rng(2)
    x, xs = rng.random(10), rng.random((10, 3))
    np.testing.assert_allclose(dense(F.matmul(t, x, threads=threads)), ref @ x, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(dense(F.matmul(t, xs, threads=threads)), ref @ xs, rtol=1e-12, atol=1e-12)
    mm = F.Matmul(t, xs, threads=threads).plan()
    np.testing.assert_allclose(dense(mm.execute()), ref @ xs, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("threads", [None, 3, 40])  # 40: more chunks than rows
def test_semirings_and_batched_with_chunks(threads):
    a = rand((9, 7), density=0.5, seed=8)
    t = stored(a, "CSR")
    x = np.random.default_rng(3).random((7, 2))
    big = np.where(a != 0, a, np.inf)
    ref = np.min(big[:, :, None] + x[None, :, :], axis=1)
    got = dense(F.matmul(t, x, semiring="min-plus", threads=threads))
    np.testing.assert_allclose(np.where(np.isinf(ref), 0, ref), np.where(np.isinf(got), 0, got), rtol=1e-12)
    batch = rand((3, 5, 4), density=0.5, seed=9)
    tb = Tensor.from_dense(batch, N.BatchedCSR)
    b = np.random.default_rng(4).random((3, 4, 2))
    np.testing.assert_allclose(dense(F.matmul(tb, b, threads=threads)), batch @ b, rtol=1e-12)


def test_auto_uses_every_core_above_the_threshold_balanced_by_nnz():
    rng = np.random.default_rng(5)
    rows = 4000
    lengths = np.minimum(rng.zipf(1.6, rows), 400)  # power-law rows
    indptr = np.concatenate(([0], np.cumsum(lengths))).astype(np.int32)
    indices = np.concatenate([rng.choice(rows, n, replace=False) for n in lengths]).astype(np.int32)
    indices = np.concatenate([np.sort(indices[indptr[r]:indptr[r + 1]]) for r in range(rows)])
    a = sp.csr_array((rng.random(indptr[-1]), indices, indptr), shape=(rows, rows))
    x = rng.random((rows, 64))
    mm = F.Matmul(a, x).plan()
    info = mm.info
    np.testing.assert_allclose(mm.execute(), a @ x, rtol=1e-10)
    if cpu_count() > 1:
        assert info.threads == cpu_count() and info.split == "nnz" and mm.path == "emitter-rows"
    assert F.Matmul(a, x, threads=1).info.threads == 1
    np.testing.assert_allclose(F.matmul(a, x, threads=1), a @ x, rtol=1e-10)


def test_balanced_bounds_within_one_row_of_the_ideal():
    rng = np.random.default_rng(6)
    lengths = np.minimum(rng.zipf(1.5, 10_000), 5000)
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    for n in (2, 3, 7, 16):
        b = balanced_bounds(offsets, n)
        assert len(b) == n + 1 and b[0] == 0 and b[-1] == len(lengths) and list(b) == sorted(b)
        ideal = offsets[-1] / n
        for k in range(n):
            work = offsets[b[k + 1]] - offsets[b[k]]
            longest = lengths[b[k]:b[k + 1] + 1].max(initial=0) + lengths[max(b[k] - 1, 0)]
            assert abs(work - ideal) <= longest
    assert balanced_bounds(np.zeros(5, np.int64), 3) == (0, 0, 0, 4)


@pytest.mark.parametrize("start", [0, 7])
def test_balanced_bounds_same_in_every_offset_type(start):
    """int32 and int64 offsets are searched in their own type (no copy): the same bounds as the float search,
    also for offsets not starting at 0 (a row slice's positions)."""
    rng = np.random.default_rng(16)
    for rows in (0, 1, 2, 5, 33, 400):
        offsets = start + np.concatenate(([0], np.cumsum(rng.integers(0, 9, rows))))
        for n in (1, 2, 3, 5, 8):
            want = balanced_bounds(offsets.astype(np.float64), n)
            assert balanced_bounds(offsets.astype(np.int32), n) == want
            assert balanced_bounds(offsets.astype(np.int64), n) == want


def test_stats_measured_once_per_buffer_set():
    a = rand((20, 15), density=0.3, seed=10)
    t = stored(a, "CSR")
    s = stored_rows(t)
    assert stored_rows(t) is s
    st = s.stats
    lengths = np.count_nonzero(a, axis=1)
    assert (st.rows, st.cols, st.nnz, st.row_max) == (20, 15, lengths.sum(), lengths.max())
    assert st.row_mean == pytest.approx(lengths.mean()) and st.row_cv == pytest.approx(lengths.std() / lengths.mean())
    assert 0 <= st.bandwidth <= 1


def test_out_written_in_place():
    a = rand((30, 20), density=0.3, seed=11)
    ref = sp.csr_array(a)
    x, xs = np.ones(20), np.random.default_rng(7).random((20, 4))
    out = np.full(30, np.nan)
    assert F.matmul(ref, x, out=out) is out
    np.testing.assert_allclose(out, ref @ x, rtol=1e-12)
    mm = F.Matmul(ref, xs).plan()
    out2 = np.full((30, 4), np.nan)
    assert mm.execute(out=out2) is out2
    np.testing.assert_allclose(out2, ref @ xs, rtol=1e-12)
    np.testing.assert_allclose(mm.execute(), ref @ xs, rtol=1e-12)
    csc = Tensor.from_dense(a, N.CSC)  # not row-parallel: computed, then copied into out
    out3 = np.empty(30)
    assert F.matmul(csc, x, out=out3) is out3
    np.testing.assert_allclose(out3, a @ x, rtol=1e-12)
    out4 = np.empty((30, 4))
    F.matmul(ref, xs, out=out4, alpha=2.0, epilog=lambda v: v + 1)
    np.testing.assert_allclose(out4, 2 * (ref @ xs) + 1, rtol=1e-12)


def test_out_errors():
    a = sp.csr_array(rand((6, 5), density=0.5, seed=12))
    x = np.ones(5)
    with pytest.raises(ValueError, match="shape"):
        F.matmul(a, x, out=np.empty(5))
    with pytest.raises(TypeError, match="dtype"):
        F.matmul(a, x, out=np.empty(6, np.float32))
    with pytest.raises(ValueError, match="C-contiguous"):
        F.matmul(a, np.ones((5, 2)), out=np.empty((2, 6)).T)
    with pytest.raises(TypeError, match="numpy array"):
        F.matmul(a, x, out=[0.0] * 6)
    square, y = sp.csr_array(rand((5, 5), density=0.5, seed=15)), np.ones(5)
    with pytest.raises(ValueError, match="shares memory"):
        F.matmul(square, y, out=y)
    with pytest.raises(ValueError, match="c"):
        F.matmul(a, x, np.zeros(6), out=np.empty(6))
    with pytest.raises(ValueError, match="dense result"):
        F.matmul(a, sp.csr_array(np.eye(5)), out=np.empty((6, 5)))


def test_dynamic_chunks_run_each_chunk_once_and_report_threads():
    """Above DYNAMIC_MIN_WORK auto threads run CHUNKS_PER_THREAD chunks per thread, each exactly once (a
    NaN-filled ``out`` shows any row left unwritten); ``info.threads`` counts threads, not chunks."""
    from frontend.ops._threads import run_chunks
    from lowering.schedule import DYNAMIC_MIN_WORK

    n = DYNAMIC_MIN_WORK // 3 + 7
    a = sp.diags([np.arange(1.0, n + 1), np.ones(n - 1), np.ones(n - 1)], [0, 1, -1], format="csr")
    x = np.random.default_rng(3).random(n)
    mm = F.Matmul(a, x).plan()
    out = np.full(n, np.nan)
    np.testing.assert_allclose(mm.execute(out=out), a @ x, rtol=1e-12)
    if cpu_count() > 1:
        assert mm.info.threads == cpu_count() and "claimed dynamically" in mm.info.reason
    ran: list[int] = []
    run_chunks([lambda k=k: ran.append(k) for k in range(11)])
    assert sorted(ran) == list(range(11))

    def boom() -> None:
        raise RuntimeError("chunk failed")
    with pytest.raises(RuntimeError, match="chunk failed"):
        run_chunks([boom] + [lambda: None] * 5)


def test_info_contents():
    a = sp.csr_array(rand((10, 8), density=0.4, seed=13))
    info = F.Matmul(a, np.ones(8)).info
    assert isinstance(info, MatmulInfo)
    assert info.path == "emitter-rows" and info.threads == 1 and info.lanes in (1, 8) and info.reason
    forced = F.Matmul(a, np.ones(8), threads=2).plan().info
    assert forced.path == "emitter-rows" and forced.threads == 2 and forced.split == "nnz"
    assert "threads=2" in forced.reason
    sparse = F.Matmul(a, sp.csr_array(np.eye(8))).info
    assert sparse.lanes is None and sparse.threads == 1


def test_repeated_calls_do_not_grow_memory():
    a = sp.csr_array(rand((40, 30), density=0.3, seed=14))
    x = np.ones(30)
    mm = F.Matmul(a, x, threads=2).plan()
    out = np.empty(40)
    for _ in range(50):  # warm up caches
        F.matmul(a, x)
        mm.execute()
        mm.execute(out=out)
    tracemalloc.start()
    try:
        gc.collect()  # a full collection also empties the interpreter's free lists: compare like with like
        before = tracemalloc.get_traced_memory()[0]
        for _ in range(2000):
            F.matmul(a, x)
            mm.execute()
            mm.execute(out=out)
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < 64 * 1024


def test_out_alias_check_follows_the_operands():
    """execute(out=) checks memory sharing once per (out, operands): reusing out is cheap, new operands that
    alias it are still refused."""
    a = sp.csr_array(rand((6, 5), density=0.5, seed=21))
    buf = np.zeros(6)
    mm = F.Matmul(a, np.ones(5)).plan()
    for _ in range(3):
        assert mm.execute(out=buf) is buf
        np.testing.assert_allclose(buf, a @ np.ones(5))
    mm.reset_operands(b=buf[:5])  # x now lives in out's memory
    with pytest.raises(ValueError, match="shares memory"):
        mm.execute(out=buf)
    other = np.empty(6)
    np.testing.assert_allclose(mm.execute(out=other), a @ buf[:5])


def test_summed_bounds_are_the_bounds_of_the_sum():
    """``summed_bounds(a, b, n)`` (bisection on ``a[r] + b[r]``) equals ``balanced_bounds(a + b, n)``: empty,
    one-row, skewed and mixed-width position buffers."""
    from frontend.ops._threads import summed_bounds

    rng = np.random.default_rng(17)
    for rows in (0, 1, 2, 7, 100, 1000):
        for skew in (False, True):
            la = rng.zipf(1.7, rows) if skew else rng.integers(0, 6, rows)
            lb = rng.integers(0, 3, rows)
            a = np.concatenate(([0], np.cumsum(la))).astype(np.int32)
            b = np.concatenate(([0], np.cumsum(lb))).astype(np.int64)
            for n in (1, 2, 3, 8):
                assert summed_bounds(a, b, n) == balanced_bounds(a.astype(np.int64) + b, n)
