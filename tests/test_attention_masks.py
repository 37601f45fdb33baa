"""Sparse attention masks: sliding window, BigBird, dynamic top-k, against their definitions."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from frontend.format import NamedFormats as N
from frontend.torch_interface import TorchUST
from frontend.torch_interface.attention import bigbird, mask_from_rows, sliding_window, topk_per_row

pytestmark = pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta state")


def dense(m: TorchUST) -> np.ndarray:
    return m.dense().numpy()


@pytest.mark.parametrize("n", [0, 1, 7, 16])
@pytest.mark.parametrize("window", [0, 2, 20])
@pytest.mark.parametrize("causal", [False, True])
def test_sliding_window(n, window, causal):
    m = sliding_window(n, window, causal=causal)
    i, j = np.indices((n, n))
    ok = (np.abs(i - j) <= window) & ((i >= j) if causal else True)
    np.testing.assert_array_equal(dense(m), ok.astype(np.float32))
    assert isinstance(m, TorchUST) and m.format_name == "CSR" and m.ust.nse == ok.sum()


@pytest.mark.parametrize("fmt", ["COO", N.BSR((4, 4)), "ELL", "(i, j) -> (i : compressed, j : compressed)"], ids=str)
def test_masks_in_other_formats_are_the_same_matrix(fmt):
    a = sliding_window(12, 1, dtype=torch.float64)
    b = sliding_window(12, 1, fmt=fmt, dtype=torch.float64)
    np.testing.assert_array_equal(dense(a), dense(b))


def test_bigbird():
    n, w, ng, nr = 20, 1, 2, 3
    m = dense(bigbird(n, w, ng, nr, seed=0))
    assert np.all(m[:ng] == 1) and np.all(m[:, :ng] == 1)  # global rows and columns
    i, j = np.indices((n, n))
    assert np.all(m[np.abs(i - j) <= w] == 1)  # the window
    extra = m.sum(1)[ng:] - np.array([(np.abs(r - np.arange(n)) <= w).sum() for r in range(ng, n)]) \
        - np.array([ng - ((np.abs(r - np.arange(ng)) <= w).sum()) for r in range(ng, n)])
    assert np.all(extra <= nr) and extra.sum() > 0  # up to nr random keys per query
    np.testing.assert_array_equal(m, dense(bigbird(n, w, ng, nr, seed=0)))  # seeded: reproducible
    assert set(np.unique(m)) <= {0.0, 1.0}
    assert dense(bigbird(1, 0, 0, 2, seed=1)).tolist() == [[1.0]]
    assert bigbird(0, 1, 1, 1).shape == (0, 0)


@pytest.mark.parametrize(("nq", "nk", "k"), [(6, 10, 3), (1, 1, 1), (5, 4, 9), (4, 7, 0), (0, 3, 2)])
def test_topk_per_row(nq, nk, k):
    g = torch.Generator().manual_seed(0)
    q, kk = torch.randn(nq, 2, generator=g), torch.randn(nk, 2, generator=g)
    m = dense(topk_per_row(q, kk, k))
    assert m.shape == (nq, nk)
    scores = (q @ kk.T).numpy()
    for r in range(nq):
        chosen = np.flatnonzero(m[r])
        assert len(chosen) == min(k, nk)
        if len(chosen) < nk and len(chosen):
            assert scores[r, chosen].min() >= np.delete(scores[r], chosen).max()


def test_bad_input():
    with pytest.raises(ValueError, match="window"):
        sliding_window(4, -1)
    with pytest.raises(ValueError, match="same rank"):
        topk_per_row(torch.ones(3, 2), torch.ones(3, 3), 1)
    with pytest.raises(TypeError, match="torch tensors"):
        topk_per_row(np.ones((3, 2)), torch.ones(3, 2), 1)
    with pytest.raises(ValueError, match="out of range"):
        mask_from_rows([torch.tensor([5])], (1, 3))
    with pytest.raises(ValueError, match="unknown format"):
        sliding_window(4, 1, fmt="NOPE")
