"""DELTA SpMV walks: the 16-entry prefetching step of unpacked delta rows, and rows walked
together (``lowering.emitter.interleave``, off by default, forced here) against scipy."""
from __future__ import annotations

import re
from collections.abc import Iterator

import numpy as np
import pytest
import scipy.sparse as sp

from frontend import Matmul, NamedFormats as NF, Tensor
from lowering.emitter import interleave, rules


@pytest.fixture(params=[1, 2, 3])
def rows(request) -> Iterator[int]:
    """Rows walked together (1: the default one at a time); restored afterwards."""
    before = interleave.ROWS
    interleave.set_rows(request.param)
    yield request.param
    interleave.set_rows(before)


def matrix(m: int, n: int, dtype, seed: int) -> np.ndarray:
    """Row ``i`` keeps ``i % 41`` random entries (every remainder of the 16-entry step and of a pair's common
    length), row 1 is empty, row 3 has one entry at the far right (a gap >= 256 needs padding entries)."""
    rng = np.random.default_rng(seed)
    a = np.zeros((m, n), dtype)
    for i in range(m):
        k = min(i % 41, n)
        a[i, rng.choice(n, k, replace=False)] = rng.standard_normal(k)
    if m > 1:
        a[1] = 0
    if m > 3 and n > 0:
        a[3] = 0
        a[3, n - 1] = 2.5
    return a


SHAPES = [(7, 13), (9, 300), (40, 41), (45, 700), (1, 1), (0, 4), (4, 0), (2, 300), (3, 1)]


@pytest.mark.parametrize("bits", [8, 16])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_spmv_against_scipy(rows, bits, dtype):
    tol = 1e-4 if dtype == np.float32 else 1e-12
    for shape in SHAPES:  # odd and even row counts, non-square, 1x1, empty, long gaps
        a = matrix(*shape, dtype, seed=sum(shape) + bits)
        t = Tensor.from_dense(a, NF.DELTA(bits), index_type=np.int32)
        x = np.random.default_rng(shape[1]).standard_normal(shape[1]).astype(dtype)
        want = sp.csr_matrix(a.astype(np.float64)) @ x.astype(np.float64)
        for threads in (1, 2):
            got = np.asarray(Matmul(t, x, threads=threads).plan().execute().to_dense())
            assert got.dtype == dtype and got.shape == (shape[0],)
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=f"{shape} threads={threads}")


def test_alpha_beta_c_and_same_answer_as_csr(rows):
    a = matrix(31, 600, np.float64, seed=3)
    x = np.random.default_rng(4).standard_normal(600)
    c = np.random.default_rng(5).standard_normal(31)
    want = 2.5 * (sp.csr_matrix(a) @ x) - 0.5 * c
    for fmt in (NF.DELTA(8), NF.CSR):
        r = Matmul(Tensor.from_dense(a, fmt), x, c.copy(), alpha=2.5, beta=-0.5).plan().execute()
        got = np.asarray(r if isinstance(r, np.ndarray) else r.to_dense())
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12)


def test_rows_walked_together_only_when_asked():
    """The grouped walk (recognizable by its inline-asm barrier) is emitted for unpacked DELTA SpMV only
    when turned on, never for packed DELTA(4); the default walk steps 16 entries per prefetch."""
    a = matrix(32, 64, np.float32, seed=0)
    x = np.ones(64, np.float32)
    before = interleave.ROWS
    try:
        default = Matmul(Tensor.from_dense(a, NF.DELTA(8)), x, threads=1).mlir
        assert "llvm.inline_asm" not in default and default.count("memref.prefetch") == 2
        span = re.search(rf"(%c\d+) = arith.constant {rules.DELTA_SPAN} : index", default)
        assert span is not None and f"step {span.group(1)}" in default
        interleave.set_rows(2)
        assert "llvm.inline_asm" in Matmul(Tensor.from_dense(a, NF.DELTA(8)), x, threads=1).mlir
        assert "llvm.inline_asm" not in Matmul(Tensor.from_dense(a, NF.DELTA(4)), x, threads=1).mlir
    finally:
        interleave.set_rows(before)


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_set_rows_rejects_bad_values(bad):
    with pytest.raises(ValueError, match="rows must be a positive int"):
        interleave.set_rows(bad)
