"""SpMM's dense operand read from a 64-byte-aligned copy when it is misaligned (``Schedule.realign``):
chosen from the stored operand's statistics, results equal to scipy's, copies refreshed per execute."""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
import scipy.sparse as sp

import frontend as F
from frontend import NamedFormats as N, Tensor
from lowering.schedule import (
    AUTO_MIN_WORK,
    REALIGN_BYTES,
    REALIGN_FAR,
    REALIGN_NEAR,
    REALIGN_SMALL,
    RUN_SHARE,
    STENCIL_BANDWIDTH,
    choose_schedule,
)
from test_variants import spmv_contraction, stats


def misaligned(shape: tuple[int, ...], dtype: type, offset: int = 16, seed: int = 0) -> np.ndarray:
    """Random values in a C-contiguous array starting ``offset`` bytes after a 64-byte boundary."""
    size = int(np.prod(shape)) * np.dtype(dtype).itemsize
    raw = np.empty(size + 2 * REALIGN_BYTES, np.uint8)
    start = -raw.ctypes.data % REALIGN_BYTES + offset
    a = raw[start:start + size].view(dtype).reshape(shape)
    a[...] = np.random.default_rng(seed).standard_normal(shape)
    assert a.size == 0 or a.ctypes.data % REALIGN_BYTES == offset
    return a


def pruned(m: int, k: int, density: float, dtype: type, seed: int = 1) -> sp.csr_array:
    """Random entries at ``density`` with rows 0 and 3 empty."""
    a = sp.random_array((m, k), density=density, format="csr", dtype=dtype, rng=seed).tolil()
    for r in (0, 3):
        if r < m:
            a[r, :] = 0
    return sp.csr_array(a)


FORMATS = {"CSR": N.CSR, "BSR": N.BSR((2, 2)), "COO": N.COO, "CSC": N.CSC}


@pytest.mark.parametrize("name", FORMATS)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("cols", [16, 64])
def test_matches_scipy_misaligned_or_not(name, dtype, cols):
    a = pruned(300, 256, 0.5, dtype)
    t = Tensor.from_package(a).convert(tensor_format=FORMATS[name])
    for offset in (0, 16, 48):
        x = misaligned((256, cols), dtype, offset)
        want = a.toarray().astype(np.float64) @ x.astype(np.float64)
        got = F.Matmul(t, x).plan().execute().to_dense()
        np.testing.assert_allclose(got, want, rtol=1e-4 if dtype == np.float32 else 1e-10, atol=1e-3)
        np.testing.assert_allclose(F.matmul(t, x).to_dense(), want, rtol=1e-4 if dtype == np.float32 else 1e-10,
                                   atol=1e-3)


def test_csr_realigns_and_execute_sees_new_values():
    a = pruned(512, 512, 0.5, np.float32)
    x = misaligned((512, 16), np.float32)
    mm = F.Matmul(a, x).plan()
    assert f"{REALIGN_BYTES}-byte-aligned" in mm.info.reason
    np.testing.assert_allclose(mm.execute(), a @ x, rtol=1e-4, atol=1e-4)
    x[...] = np.arange(x.size, dtype=np.float32).reshape(x.shape) % 7  # in place: the copy is refreshed
    np.testing.assert_allclose(mm.execute(), a @ x, rtol=1e-4, atol=1e-4)
    out = np.empty((512, 16), np.float32)
    assert mm.execute(out=out) is out
    np.testing.assert_allclose(out, a @ x, rtol=1e-4, atol=1e-4)


def test_one_shot_calls_use_each_calls_operand():
    """``frontend.matmul`` replays a cached template: each call copies its own operand, never an earlier one's."""
    a = pruned(512, 512, 0.5, np.float64)
    for seed in range(3):
        x = misaligned((512, 16), np.float64, 16 * (seed + 1), seed)
        np.testing.assert_allclose(F.matmul(a, x), a @ x, rtol=1e-10)


def test_promoted_and_misaligned_operand():
    """float32 sparse x float64 dense: promoted copy of the sparse values, aligned copy of the dense one."""
    a = pruned(512, 512, 0.5, np.float32)
    x = misaligned((512, 16), np.float64)
    mm = F.Matmul(a, x).plan()
    want = a.toarray().astype(np.float64) @ x
    np.testing.assert_allclose(mm.execute(), want, rtol=1e-5)
    x *= 2
    np.testing.assert_allclose(mm.execute(), 2 * want, rtol=1e-5)


def test_edge_shapes():
    for m, k in ((0, 16), (1, 1), (5, 0), (7, 33)):
        a = pruned(m, k, 0.6, np.float64) if m and k else sp.csr_array((m, k))
        x = misaligned((k, 16), np.float64)
        np.testing.assert_allclose(F.Matmul(a, x).plan().execute(), a.toarray() @ x, atol=1e-12)


def test_rule():
    spmm = spmv_contraction(m=4096, n=4096, cols=16)  # f64 rows of 128 bytes: score = reuse / 2
    many = stats(rows=4096, mean=4 * REALIGN_NEAR)
    many = dataclasses.replace(many, cols=4096, bandwidth=0.3)
    assert choose_schedule(spmm, many, 1, None).realign
    few = dataclasses.replace(many, nnz=int(4096 * REALIGN_NEAR))  # score REALIGN_NEAR / 2, operand in cache
    assert not choose_schedule(spmm, few, 1, None).realign
    assert not choose_schedule(spmm, dataclasses.replace(many, runs=RUN_SHARE), 1, None).realign
    assert not choose_schedule(spmv_contraction(m=4096, n=4096), many, 1, None).realign  # SpMV: no dense rows
    big = spmv_contraction(m=4096, n=REALIGN_SMALL, cols=16)  # operand out of cache: from REALIGN_FAR on
    far = spread_stats(rows=4096, cols=REALIGN_SMALL, nnz=int(2 * REALIGN_FAR * REALIGN_SMALL), bandwidth=0.3)
    assert choose_schedule(big, far, 1, None).realign
    stencil = dataclasses.replace(far, bandwidth=STENCIL_BANDWIDTH / 2)
    assert not choose_schedule(big, stencil, 1, None).realign
    tiny = stats(rows=8, mean=4)
    assert tiny.nnz * 16 < AUTO_MIN_WORK
    assert not choose_schedule(spmv_contraction(m=8, n=8, cols=16), tiny, 1, None).realign


def spread_stats(rows: int, cols: int, nnz: int, bandwidth: float):
    mean = nnz / rows
    return dataclasses.replace(stats(rows=rows, mean=mean), cols=cols, nnz=nnz, bandwidth=bandwidth)
