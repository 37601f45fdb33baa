"""What the emitter's kernels read for a coordinate written out of range after planning: for a level whose extent
is a power of two and 32- or 64-bit coordinates the coordinate masked with ``extent - 1``, otherwise clamped to
the last coordinate (unsigned: negative ones too). Either way an entry of the dense operand, and the same answer
every time: SpMV and SpMM against NumPy, int32 and int16 coordinates, float32 and float64 values."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sps

import frontend as F


def _reads(crd: np.ndarray, n: int) -> np.ndarray:
    """The column a kernel reads for each stored coordinate of a level of extent ``n``."""
    c = crd.astype(np.int64)
    if n & (n - 1) == 0 and crd.itemsize >= 4:
        return c & (n - 1)
    return np.where((c < 0) | (c >= n), n - 1, c)


@pytest.mark.parametrize("n", [64, 60, 1])
@pytest.mark.parametrize("crd_type", [np.int32, np.int16])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("columns", [0, 16])
def test_out_of_range_coordinates(n: int, crd_type: type, dtype: type, columns: int) -> None:
    a = sps.random(24, n, density=0.5, format="csr", dtype=dtype, random_state=n)
    a.sort_indices()
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((n, columns)) if columns else rng.standard_normal(n)).astype(dtype)
    t = F.Tensor.from_package(a).convert(crd_type=crd_type)
    plan = F.Matmul(t, x)
    tol = {"rtol": 1e-4, "atol": 1e-4} if dtype == np.float32 else {"rtol": 1e-12, "atol": 1e-12}
    np.testing.assert_allclose(plan.execute(), a @ x, **tol)
    crd = t.buffers()[1]
    if crd.size < 4:
        pytest.skip("too few entries to corrupt")
    crd[[0, 1, crd.size // 2, crd.size - 1]] = [n, 1000, -1, -n]
    rows = np.repeat(np.arange(a.shape[0]), np.diff(a.indptr))
    want = np.zeros((a.shape[0],) + x.shape[1:], np.float64)
    np.add.at(want, rows, a.data.astype(np.float64)[(slice(None),) + (None,) * (x.ndim - 1)]
              * x.astype(np.float64)[_reads(crd, n)])
    for _ in range(2):
        got = plan.execute()
        assert np.isfinite(got).all()
        np.testing.assert_allclose(got, want, **tol)
