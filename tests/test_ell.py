"""ELL, blocked ELL and the blocked-outer/COO-inner hybrid: fixed-stride layout, lookup, products vs NumPy."""
from __future__ import annotations

import numpy as np
import pytest
import torch

from frontend import Tensor, ops as F
from frontend.format import NamedFormats as N, TensorFormat
from frontend.torch_interface import TorchUST

pytestmark = pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta state")

HYBRID = TensorFormat.parse(
    "(i, j) -> (i // 4 : dense, j // 4 : compressed, i % 4 : compressed(nonunique), j % 4 : singleton)")
FORMATS = [N.ELL, N.BlockedELL((2, 2)), N.BlockedELL((4, 4)), N.BlockedELL((2, 3)), HYBRID]
SHAPES = [(7, 9), (1, 1), (16, 12), (0, 4)]
ELL_SHAPES = [(5, 8), (12, 4), (4, 0)]


def matrix(shape, density=0.35, seed=0, dtype=np.float64) -> np.ndarray:
    rng = np.random.default_rng(seed)
    a = rng.standard_normal(shape)
    a[rng.random(shape) > density] = 0
    if shape[0] > 3:
        a[2] = 0  # an empty row
    return a.astype(dtype)


def result(r) -> np.ndarray:
    return r.to_dense() if isinstance(r, Tensor) else np.asarray(r)


def test_lookup_by_name():
    assert N.lookup("ELL") == N.ELL and N.ELL.name == "ELL"
    assert N.lookup("BlockedELL(4,4)") == N.BlockedELL((4, 4)) == N.lookup("BlockedELL((4, 4))")
    assert N.BlockedELL((2, 3)).name == "BlockedELL2x3"
    assert str(N.BlockedELL((4, 4))) == ("(i, j) -> (i // 4 : dense, j // 4 : loose_compressed, i % 4 : dense, "
                                         "j % 4 : dense)")
    with pytest.raises(ValueError, match="block shape"):
        N.BlockedELL((0, 4))


def test_ell_layout_has_a_fixed_row_stride():
    a = matrix((6, 10))
    t = Tensor.from_dense(a, N.ELL)
    pos, crd, val = np.asarray(t._pos[1]), np.asarray(t._crd[1]), np.asarray(t.val)
    counts = (a != 0).sum(1)
    k = counts.max()
    np.testing.assert_array_equal(pos[0::2], np.arange(6) * k)
    np.testing.assert_array_equal(pos[1::2] - pos[0::2], counts)
    assert len(crd) == len(val) == 6 * k
    for i in range(6):
        row = slice(i * k, i * k + counts[i])
        np.testing.assert_array_equal(crd[row], np.flatnonzero(a[i]))
        np.testing.assert_array_equal(val[row], a[i][a[i] != 0])
        pad = slice(i * k + counts[i], (i + 1) * k)
        assert np.all(val[pad] == 0) and np.all(crd[pad] == 0)  # padding: valid coordinate, zero value
    np.testing.assert_array_equal(t.to_dense(), a)


def test_blocked_ell_layout_has_a_fixed_block_stride():
    a = matrix((8, 12), density=0.15)
    t = Tensor.from_dense(a, N.BlockedELL((4, 4)))
    pos = np.asarray(t._pos[1])
    nblocks = np.array([[np.any(a[4 * r:4 * r + 4, 4 * c:4 * c + 4]) for c in range(3)] for r in range(2)]).sum(1)
    k = nblocks.max()
    np.testing.assert_array_equal(pos[0::2], np.arange(2) * k)
    np.testing.assert_array_equal(pos[1::2] - pos[0::2], nblocks)
    assert np.asarray(t.val).size == 2 * k * 16
    np.testing.assert_array_equal(t.to_dense(), a)


@pytest.mark.parametrize(("fmt", "shape"), [(f, s) for f in FORMATS for s in SHAPES]
                         + [(N.ELL, s) for s in ELL_SHAPES], ids=str)
def test_roundtrip_and_products_match_numpy(fmt, shape):
    a = matrix(shape)
    t = Tensor.from_dense(a, fmt)
    np.testing.assert_array_equal(t.to_dense(), a)
    rng = np.random.default_rng(1)
    x = rng.standard_normal(shape[1])
    X = rng.standard_normal((shape[1], 3))
    np.testing.assert_allclose(result(F.matmul(t, x)), a @ x, atol=1e-12)
    np.testing.assert_allclose(result(F.matmul(t, X)), a @ X, atol=1e-12)
    csr = result(F.matmul(Tensor.from_dense(a, N.CSR), X))
    np.testing.assert_allclose(result(F.matmul(t, X)), csr, atol=1e-12)  # same matrix, same answer


@pytest.mark.parametrize("fmt", [N.ELL, N.BlockedELL((2, 2)), HYBRID], ids=lambda f: f.name or "hybrid")
def test_float32_and_planned_matmul(fmt):
    a = matrix((9, 8), dtype=np.float32)
    X = np.random.default_rng(2).standard_normal((8, 5)).astype(np.float32)
    mm = F.Matmul(Tensor.from_dense(a, fmt), X)
    mm.plan()
    np.testing.assert_allclose(result(mm.execute()), a @ X, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("fmt", [N.ELL, N.BlockedELL((2, 2))], ids=lambda f: f.name)
def test_torchust_linear_and_weight_gradient(fmt):
    w = torch.from_numpy(matrix((6, 8)))
    x = torch.randn(5, 8, dtype=torch.float64)
    tu = TorchUST.from_torch(w, fmt).requires_grad_(True)
    y = torch.nn.functional.linear(x, tu)
    torch.testing.assert_close(y, x @ w.T)
    y.square().sum().backward()
    wd = w.clone().requires_grad_(True)
    (x @ wd.T).square().sum().backward()
    expected = tu.gather_stored(wd.grad.reshape(-1)).reshape(-1)  # zero at ELL padding slots
    torch.testing.assert_close(tu.values().grad.reshape(-1), expected)


# ----- the fixed-stride kernels (lowering.schedule: Contraction.stride) ----------------------------------------
def near_uniform(shape, k=3, seed=0, dtype=np.float64) -> np.ndarray:
    """``k`` random entries per row (a full ELL: fill 1.0, the fixed-stride walk is chosen)."""
    rng = np.random.default_rng(seed)
    a = np.zeros(shape)
    for i in range(shape[0]):
        a[i, rng.choice(shape[1], min(k, shape[1]), replace=False)] = rng.standard_normal(min(k, shape[1])) + 2.0
    return a.astype(dtype)


@pytest.mark.parametrize("fmt", [N.ELL, N.BlockedELL((2, 2))], ids=["ELL", "BlockedELL2x2"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("cols", [None, 3, 16])
def test_fixed_stride_chosen_for_full_rows_and_matches_numpy(fmt, dtype, cols):
    a = near_uniform((40, 30), dtype=dtype)
    rng = np.random.default_rng(1)
    x = (rng.standard_normal(30 if cols is None else (30, cols))).astype(dtype)
    m = F.Matmul(Tensor.from_dense(a, fmt), x)
    m.plan()
    assert ("fixed stride" in m.info.reason) == (cols is None)  # SpMM: measured no gain, the bounded walk
    ref = a.astype(np.float64) @ x.astype(np.float64)
    tol = 1e-4 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(result(m.execute()), ref, rtol=tol, atol=tol)
    csr = result(F.matmul(Tensor.from_dense(a, "CSR"), x))
    np.testing.assert_allclose(result(m.execute()), csr, rtol=tol, atol=tol)


def pad_with_nan(t: Tensor) -> None:
    """NaN in the values of every padding slot of an ELL / blocked-ELL tensor (slots ``hi_r .. lo_r + K``)."""
    pos, crd, val = np.asarray(t.pos(1)), np.asarray(t.crd(1)), np.asarray(t.val)
    rows = len(pos) // 2
    if not rows or not crd.size:
        return
    k, per = crd.size // rows, val.size // crd.size
    for r in range(rows):
        val[pos[2 * r + 1] * per:(pos[2 * r] + k) * per] = np.nan


@pytest.mark.parametrize("fmt", [N.ELL, N.BlockedELL((2, 2)), N.BlockedELL((2, 3))],
                         ids=["ELL", "BlockedELL2x2", "BlockedELL2x3"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("shape", SHAPES[:3] + ELL_SHAPES[:2], ids=str)
def test_fixed_stride_forced_walks_padding_as_zero(fmt, dtype, shape, monkeypatch):
    """Forced at any fill and for SpMM (empty rows, ragged rows: many padding slots at coordinate 0), with an
    x whose entry 0 is large and garbage in the padding slots' values: padding contributes nothing."""
    import lowering.schedule as schedule
    monkeypatch.setattr(schedule, "STRIDE_FILL", 0.0)
    monkeypatch.setattr(schedule, "STRIDE_MAX_COLUMNS", 16)
    a = matrix(shape, dtype=dtype)
    rng = np.random.default_rng(2)
    tol = 1e-4 if dtype == np.float32 else 1e-12
    for x in (rng.standard_normal(shape[1]), rng.standard_normal((shape[1], 5)), rng.standard_normal((shape[1], 16))):
        x = x.astype(dtype)
        if shape[1]:
            x[0] = 1e3
        t = Tensor.from_dense(a, fmt)
        pad_with_nan(t)
        m = F.Matmul(t, x)
        m.plan()
        assert ("fixed stride" in m.info.reason) == bool(a.any())
        ref = a.astype(np.float64) @ x.astype(np.float64)
        np.testing.assert_allclose(result(m.execute()), ref, rtol=tol, atol=tol * 1e3)


@pytest.mark.parametrize("semiring,ref", [("min-plus", lambda a, x: np.where(a != 0, a + x, np.inf).min(1)),
                                          ("max-plus", lambda a, x: np.where(a != 0, a + x, -np.inf).max(1))])
def test_semirings_on_ell_never_see_padding(semiring, ref, monkeypatch):
    """A semiring keeps the bounded walk (padding slots are no entries: 0 + x[0] would win a min)."""
    import lowering.schedule as schedule
    monkeypatch.setattr(schedule, "STRIDE_FILL", 0.0)
    a = matrix((9, 7), seed=3) + 0.0
    a[a != 0] = np.abs(a[a != 0]) + 1.0
    a[5, :] = 0
    a[6, :5] = 0
    x = np.arange(7, dtype=np.float64) - 50.0  # x[0] is the smallest: padding at column 0 would win a min
    m = F.Matmul(Tensor.from_dense(a, N.ELL), x, semiring=semiring)
    m.plan()
    assert "fixed stride" not in m.info.reason
    np.testing.assert_array_equal(result(m.execute()), ref(a, x[None, :]))
