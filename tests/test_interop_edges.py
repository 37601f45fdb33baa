"""Issue 14: scipy BSR with unsorted block columns viewed without a copy."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sps

import frontend
from frontend import Tensor


def _unsorted_bsr(seed: int, shape: tuple[int, int], block: tuple[int, int]) -> tuple[np.ndarray, sps.bsr_array]:
    rng = np.random.default_rng(seed)
    for _ in range(50):
        d = rng.random(shape) * (rng.random(shape) > 0.6)
        d[0] = 0  # an empty block row part
        b = sps.bsr_array(sps.csr_array(d), blocksize=block)
        if not b.has_sorted_indices:
            return d, b
    pytest.skip("scipy sorted the block columns")


@pytest.mark.parametrize(("shape", "block"), [((6, 9), (2, 3)), ((8, 8), (2, 2)), ((8, 12), (4, 3))])
def test_unsorted_bsr_is_a_view_and_computes(shape: tuple[int, int], block: tuple[int, int]) -> None:
    d, b = _unsorted_bsr(0, shape, block)
    t = Tensor.from_package(b)
    assert not t.tensor_format.levels[1].ordered  # compressed(nonordered)
    assert t.crd(1) is b.indices and t.pos(1) is b.indptr
    assert t.val.ctypes.data == b.data.ctypes.data  # pointer identity: no copy
    assert "nonordered" in t.tensor_format.map_text()
    assert t.to_package() is b
    rng = np.random.default_rng(1)
    x, xs = rng.random(shape[1]), rng.random((shape[1], 3))
    np.testing.assert_allclose(frontend.matmul(b, x), d @ x)
    np.testing.assert_allclose(frontend.matmul(b, xs), d @ xs)
    np.testing.assert_allclose(t.to_dense(), d)
    np.testing.assert_allclose(t.convert("CSR").to_dense(), d)
    r = frontend.matmul(b, sps.csr_array(d.T))
    np.testing.assert_allclose(r.toarray(), d @ d.T)
    # the same matrix in the sorted BSR gives the same answers
    s = b.copy()
    s.sort_indices()
    np.testing.assert_allclose(frontend.matmul(s, xs), frontend.matmul(b, xs))
