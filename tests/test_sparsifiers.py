"""Sparsifiers against their definitions (NumPy), on dense tensors and on TorchUSTs in several formats."""
from __future__ import annotations

import copy

import numpy as np
import pytest
import torch
import torch.nn as nn
from torch.nn.utils import prune

from frontend.format import NamedFormats as N
from frontend.torch_interface import TorchUST, prune_model
from frontend.torch_interface.sparsifiers import (
    NM,
    BlockFraction,
    KeepAll,
    RandomFraction,
    ScalarFraction,
    ScalarThreshold,
    Sparsifier,
)

pytestmark = pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta state")

SHAPES = [(8, 12), (1, 1), (0, 4), (5, 16), (16, 8)]


def rand(shape, dtype=torch.float64, seed=0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(shape, generator=g, dtype=torch.float64).to(dtype)


# ----- references ------------------------------------------------------------------------------------------
def ref_threshold(a: np.ndarray, t: float) -> np.ndarray:
    return np.where(np.abs(a) > t, a, 0)


def ref_fraction(a: np.ndarray, f: float) -> np.ndarray:
    """Zero the round(f * size) smallest magnitudes (distinct magnitudes: randn)."""
    k = int(round(f * a.size))
    out = a.copy().reshape(-1)
    out[np.argsort(np.abs(out), kind="stable")[:k]] = 0
    return out.reshape(a.shape)


def ref_block(a: np.ndarray, f: float, bh: int, bw: int) -> np.ndarray:
    r, c = a.shape
    out = a.copy()
    norms = {(i, j): np.abs(a[i * bh:(i + 1) * bh, j * bw:(j + 1) * bw]).sum()
             for i in range(r // bh) for j in range(c // bw)}
    k = int(round(f * len(norms)))
    for i, j in sorted(norms, key=norms.get)[:k]:
        out[i * bh:(i + 1) * bh, j * bw:(j + 1) * bw] = 0
    return out


def ref_nm(a: np.ndarray, n: int, m: int) -> np.ndarray:
    out = np.zeros_like(a)
    for r in range(a.shape[0]):
        for g in range(0, a.shape[1], m):
            grp = a[r, g:g + m]
            keep = np.argsort(-np.abs(grp), kind="stable")[:n]
            out[r, g + keep] = grp[keep]
    return out


# ----- dense ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_dense_sparsifiers_match_definitions(shape, dtype):
    w = rand(shape, dtype)
    a = w.double().numpy()
    np.testing.assert_array_equal(KeepAll()(w).double().numpy(), a)
    np.testing.assert_array_equal(ScalarThreshold(0.5)(w).double().numpy(), ref_threshold(a, 0.5))
    for f in (0.0, 0.3, 0.75, 1.0):
        np.testing.assert_array_equal(ScalarFraction(f)(w).double().numpy(), ref_fraction(a, f))
    if shape[1] % 4 == 0:
        np.testing.assert_array_equal(NM(2, 4)(w).double().numpy(), ref_nm(a, 2, 4))
        np.testing.assert_array_equal(NM(1, 4)(w).double().numpy(), ref_nm(a, 1, 4))
    if shape[0] % 4 == 0 and shape[1] % 4 == 0:
        np.testing.assert_array_equal(BlockFraction(0.5, (4, 4))(w).double().numpy(), ref_block(a, 0.5, 4, 4))
        np.testing.assert_array_equal(BlockFraction(0.25, (2, 4))(w).double().numpy(), ref_block(a, 0.25, 2, 4))
    assert ScalarFraction(0.3)(w).dtype == dtype


@pytest.mark.parametrize("shape", [(8, 12), (1, 1), (0, 4), (33,)])
def test_random_fraction_drops_exact_count_and_seed_repeats(shape):
    w = rand(shape) + 10.0  # no zeros
    for f in (0.0, 0.4, 1.0):
        out = RandomFraction(f, seed=3)(w)
        n = w.numel()
        assert int((out == 0).sum()) == int(round(f * n))
        kept = out != 0
        torch.testing.assert_close(out[kept], w[kept])  # kept entries unchanged
        torch.testing.assert_close(RandomFraction(f, seed=3)(w), out)
    if w.numel() > 4:
        a, b = RandomFraction(0.5, seed=1)(w), RandomFraction(0.5, seed=2)(w)
        assert not torch.equal(a != 0, b != 0)


def test_nm_on_nd_weights_uses_flattened_rows():
    w = rand((4, 2, 2, 2))
    out = NM(2, 4)(w)
    np.testing.assert_array_equal(out.reshape(4, 8).numpy(), ref_nm(w.reshape(4, 8).numpy(), 2, 4))


def test_dense_sparsifier_is_differentiable():
    w = rand((6, 8)).requires_grad_(True)
    out = ScalarFraction(0.5)(w)
    out.sum().backward()
    torch.testing.assert_close(w.grad, (out != 0).double())


# ----- TorchUST ----------------------------------------------------------------------------------------------
FORMATS = [N.CSR, N.COO, N.CSC, N.BSR((2, 2)), N.DELTA(4)]
SPARSIFIERS = [KeepAll(), ScalarThreshold(0.7), ScalarFraction(0.8), RandomFraction(0.6, seed=5), NM(1, 4),
               BlockFraction(0.5, (2, 4))]


@pytest.mark.parametrize("fmt", FORMATS, ids=lambda f: f.name)
@pytest.mark.parametrize("sp", SPARSIFIERS, ids=repr)
@pytest.mark.parametrize("shape", [(8, 12), (4, 4)])
def test_torchust_drop_matches_dense_in_every_format(fmt, sp, shape):
    w = rand(shape)
    w[w.abs() < 0.4] = 0  # a pre-existing pattern
    tu = TorchUST.from_torch(w, fmt)
    out = sp(tu)
    assert isinstance(out, TorchUST) and out.tensor_format == fmt
    torch.testing.assert_close(out.dense(), sp(w))
    if fmt in (N.CSR, N.COO, N.CSC):
        assert out.ust.nse == int(torch.count_nonzero(sp(w)))


@pytest.mark.parametrize("fmt", [N.CSR, N.COO, N.BSR((2, 2))], ids=lambda f: f.name)
def test_prune_in_place_keeps_pattern_and_values_object(fmt):
    w = rand((8, 8))
    tu = TorchUST.from_torch(w, fmt)
    values = tu.values()
    nse = tu.ust.nse
    ScalarFraction(0.75).prune_(tu)
    assert tu.values() is values and tu.ust.nse == nse
    torch.testing.assert_close(tu.dense(), ScalarFraction(0.75)(w))


def test_torchust_empty_and_requires_grad():
    tu = TorchUST.from_torch(torch.zeros(3, 5, dtype=torch.float64).to_sparse_csr())
    out = ScalarFraction(0.5)(tu)
    assert out.ust.nse == 0 and tuple(out.shape) == (3, 5)
    tu = TorchUST.from_torch(rand((4, 4)).to_sparse_csr().requires_grad_(True))
    assert ScalarThreshold(0.5)(tu).values().requires_grad


# ----- subclassing, levels, errors --------------------------------------------------------------------------
class KeepDiagonal(Sparsifier):
    def mask(self, w):
        return torch.eye(*w.shape, dtype=torch.bool)


def test_subclass_works_on_dense_and_torchust():
    w = rand((5, 5))
    torch.testing.assert_close(KeepDiagonal()(w), torch.diag(torch.diag(w)))
    out = KeepDiagonal()(TorchUST.from_torch(w, N.COO))
    assert out.ust.nse == 5
    torch.testing.assert_close(out.dense(), torch.diag(torch.diag(w)))
    with pytest.raises(ValueError, match="no level to ramp"):
        KeepDiagonal().at(0.5)


def test_levels_and_ramp():
    assert ScalarFraction(0.8).at(0.5).fraction == pytest.approx(0.4)
    assert BlockFraction(0.6, (2, 2)).at(0.5).block == (2, 2)
    assert ScalarThreshold(0.2).at(0.5).threshold == pytest.approx(0.1)
    assert NM(2, 4).level == 0.5 and ScalarFraction(0.3).level == pytest.approx(0.3)
    assert KeepAll().at(0.3).level is None


def test_bad_arguments():
    with pytest.raises(ValueError, match="fraction"):
        ScalarFraction(1.5)
    with pytest.raises(ValueError, match="threshold"):
        ScalarThreshold(-1)
    with pytest.raises(ValueError, match="NM needs"):
        NM(5, 4)
    with pytest.raises(ValueError, match="block"):
        BlockFraction(0.5, (0, 2))
    with pytest.raises(ValueError, match="does not tile"):
        BlockFraction(0.5, (3, 3))(rand((4, 4)))
    with pytest.raises(ValueError, match="multiple of 4"):
        NM(2, 4)(rand((4, 6)))
    with pytest.raises(TypeError, match="torch tensor or a TorchUST"):
        ScalarFraction(0.5)(np.ones(3))


# ----- prune_model is built on them ---------------------------------------------------------------------------
def _mlp(seed=0):
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(16, 12), nn.ReLU(), nn.Linear(12, 8)).double()


def test_prune_model_equals_torch_l1_unstructured():
    ours = prune_model(_mlp(), amount=0.6)
    ref = _mlp()
    for mod in (ref[0], ref[2]):
        prune.l1_unstructured(mod, "weight", amount=0.6)
    for i in (0, 2):
        torch.testing.assert_close(ours[i].weight, ref[i].weight)


def test_prune_model_takes_a_sparsifier():
    m = prune_model(_mlp(), structured=ScalarThreshold(0.1))
    ref = copy.deepcopy(_mlp())
    torch.testing.assert_close(m[0].weight, ScalarThreshold(0.1)(ref[0].weight.detach()))
