"""COO with unsorted or repeated coordinates (scipy, uncoalesced torch), scipy CSR/CSC with unsorted or repeated
indices within a row, and scipy lil/dok arrays: accepted by
matmul, the elementwise operations and reductions, with the results scipy and torch give, and the caller's
objects left exactly as they were (bytes, flags, scipy's canonical-format attributes)."""
from __future__ import annotations

import gc

import numpy as np
import pytest
import scipy.sparse as sp
import torch

import frontend
from frontend.interop import _canonical

pytestmark = pytest.mark.filterwarnings("ignore:Sparse invariant checks:UserWarning")

#: (shape, dtype) pairs: 0x0, 1x1, non-square both ways, square; every dtype family once or more
CASES = [((0, 0), np.float64), ((1, 1), np.float32), ((7, 5), np.int64), ((5, 9), np.float64),
         ((12, 12), np.float32)]


def _dense(shape: tuple[int, int], dtype, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    d = np.where(rng.random(shape) < 0.35, rng.integers(1, 9, shape), 0).astype(dtype)
    if shape[0] > 2:
        d[1] = 0  # an empty row
    return d


def _noncanonical(d: np.ndarray, seed: int) -> sp.coo_array:
    """A scipy COO of ``d`` with its entries shuffled and some split into two repeated coordinates."""
    rng = np.random.default_rng(seed)
    r, c = np.nonzero(d)
    v = d[r, c]
    half = v // 2 if v.dtype.kind in "iu" else v / 2
    split = rng.random(r.shape[0]) < 0.5
    rows = np.concatenate([r, r[split]])
    cols = np.concatenate([c, c[split]])
    vals = np.concatenate([np.where(split, v - half, v), half[split]]).astype(d.dtype)
    perm = rng.permutation(rows.shape[0])
    a = sp.coo_array((vals[perm], (rows[perm], cols[perm])), shape=d.shape)
    assert not a.has_canonical_format
    return a


def _state(obj) -> list:
    """Everything of ``obj`` the library must not change: its buffers' bytes and flags, scipy's attributes."""
    if isinstance(obj, torch.Tensor):
        return [obj._indices().clone(), obj._values().clone(), obj.is_coalesced(), obj._version]
    out: list = [obj.format, getattr(obj, "has_canonical_format", None)]
    if obj.format == "coo":
        arrays = [*obj.coords, obj.data]
    elif obj.format == "lil":
        return out + [[list(r) for r in obj.rows], [list(d) for d in obj.data]]
    elif obj.format == "dok":
        return out + [sorted(dict(obj).items())]
    else:
        arrays = [obj.indptr, obj.indices, obj.data]
    return out + [(a.tobytes(), a.dtype, a.flags.writeable, a.flags.c_contiguous) for a in arrays]


def _same_state(before: list, after: list) -> bool:
    return len(before) == len(after) and all(
        torch.equal(x, y) if isinstance(x, torch.Tensor) else x == y for x, y in zip(before, after))


def _array(x) -> np.ndarray:
    return x.toarray() if hasattr(x, "toarray") else np.asarray(x)


@pytest.mark.parametrize(("shape", "dtype"), CASES)
def test_scipy_noncanonical_coo_matmul(shape, dtype):
    d = _dense(shape, dtype, 1)
    a = _noncanonical(d, 2)
    before = _state(a)
    rng = np.random.default_rng(3)
    x = rng.integers(0, 5, shape[1]).astype(dtype)
    X = rng.integers(0, 5, (shape[1], 3)).astype(dtype)
    assert np.array_equal(frontend.matmul(a, x), d @ x)
    assert np.array_equal(frontend.matmul(a, X), d @ X)
    assert _same_state(before, _state(a))


@pytest.mark.parametrize(("shape", "dtype"), [CASES[0], CASES[2], CASES[4]])
def test_scipy_noncanonical_coo_elementwise_and_sums(shape, dtype):
    d, e = _dense(shape, dtype, 1), _dense(shape, dtype, 4)
    a, b = _noncanonical(d, 2), _noncanonical(e, 5)
    before = [_state(a), _state(b)]
    total = frontend.add(a, b)
    assert isinstance(total, sp.sparray) and np.array_equal(_array(total), d + e)
    assert np.array_equal(_array(frontend.multiply(a, b)), d * e)
    for axis in (None, 0):
        assert np.allclose(frontend.sum(a, axis=axis), d.sum(axis=axis))
    # (scipy's own a.sum/a.multiply would sort a in place: references come from the dense arrays)
    assert _same_state(before[0], _state(a)) and _same_state(before[1], _state(b))


def _noncanonical_compressed(d: np.ndarray, kind: str, seed: int):
    """A scipy CSR/CSC of ``d`` with each row's (column's) entries shuffled and some split into two repeated
    indices."""
    coo = _noncanonical(d, seed)
    major = coo.coords[0] if kind == "csr" else coo.coords[1]
    order = np.argsort(major, kind="stable")  # grouped by row (column), shuffled inside
    minor = (coo.coords[1] if kind == "csr" else coo.coords[0])[order]
    counts = np.bincount(major, minlength=d.shape[0] if kind == "csr" else d.shape[1])
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int32)
    m = getattr(sp, kind + "_array")((coo.data[order], minor.astype(np.int32), indptr), shape=d.shape)
    return m


@pytest.mark.parametrize("kind", ["csr", "csc"])
@pytest.mark.parametrize(("shape", "dtype"), CASES)
def test_scipy_noncanonical_compressed(kind, shape, dtype):
    d, e = _dense(shape, dtype, 6), _dense(shape, dtype, 7)
    a, b = _noncanonical_compressed(d, kind, 8), _noncanonical_compressed(e, kind, 9)
    if shape[0] > 2:
        assert not sp.csr_array(a).has_canonical_format  # (asked of a copy: a's own attributes stay unset)
    before = [_state(a), _state(b), dict(vars(a))]
    rng = np.random.default_rng(3)
    x, X = rng.integers(0, 5, shape[1]).astype(dtype), rng.integers(0, 5, (shape[1], 3)).astype(dtype)
    assert np.array_equal(frontend.matmul(a, x), d @ x)
    assert np.array_equal(frontend.matmul(a, X), d @ X)
    total = frontend.add(a, b)
    assert isinstance(total, sp.sparray) and np.array_equal(_array(total), d + e)
    assert np.array_equal(_array(frontend.multiply(a, b)), d * e)
    for axis in (None, 0, 1):
        assert np.allclose(frontend.sum(a, axis=axis), d.sum(axis=axis))
    assert np.array_equal(frontend.Tensor.from_package(a).to_dense(), d)
    assert _same_state(before[0], _state(a)) and _same_state(before[1], _state(b)) and before[2] == vars(a)
    if a.nnz:  # values changed in place are seen (the sorted copy is made again on every call)
        a.data[:] = a.data * 2
        assert np.array_equal(frontend.matmul(a, x), (2 * d) @ x)


def test_scipy_random_array_coo_matmul():
    a = sp.random_array((40, 30), density=0.2, format="coo", rng=0)
    assert not a.has_canonical_format
    before = _state(a)
    x = np.random.default_rng(0).random(30)
    assert np.allclose(frontend.matmul(a, x), a @ x)
    assert np.allclose(frontend.matmul(a.T, np.ones(40)), a.T @ np.ones(40))
    assert _same_state(before, _state(a))


def test_sorted_copy_is_remembered_and_follows_changes():
    d = _dense((9, 7), np.float64, 6)
    a = _noncanonical(d, 7)
    x = np.arange(7.0)
    assert np.allclose(frontend.matmul(a, x), d @ x)
    entry = _canonical._ENTRIES[id(a.coords[0])]
    assert np.allclose(frontend.matmul(a, x), d @ x)
    assert _canonical._ENTRIES[id(a.coords[0])] is entry  # the same buffers: the sorting is reused
    a.data *= 2  # values changed in place are seen
    assert np.allclose(frontend.matmul(a, x), 2 * d @ x)
    a.coords[1][:] = a.coords[1][::-1].copy()  # coordinates changed in place: sorted again
    assert np.allclose(frontend.matmul(a, x), a.toarray() @ x)
    key = id(a.coords[0])
    del a
    gc.collect()
    assert key not in _canonical._ENTRIES  # dropped with its source


def test_out_of_range_coordinates_refused():
    a = sp.coo_array((np.ones(2), (np.array([3, 0]), np.array([0, 1]))), shape=(4, 2))
    a.coords[0][0] = 9
    with pytest.raises(ValueError, match="outside"):
        frontend.matmul(a, np.ones(2))


def _uncoalesced(d: torch.Tensor, seed: int) -> torch.Tensor:
    """A torch COO of ``d`` with its entries shuffled and every other one split into two repeated ones."""
    g = torch.Generator().manual_seed(seed)
    idx = d.nonzero().T
    vals = d[tuple(idx)].clone()
    rep = torch.arange(0, vals.shape[0], 2)
    vals[rep] /= 2
    idx, vals = torch.cat([idx, idx[:, rep]], 1), torch.cat([vals, vals[rep]])
    perm = torch.randperm(vals.shape[0], generator=g)
    t = torch.sparse_coo_tensor(idx[:, perm], vals[perm], d.shape)
    assert not t.is_coalesced() or not vals.shape[0]
    return t


@pytest.mark.parametrize(("shape", "dtype"), [((0, 0), torch.float64), ((1, 1), torch.float32),
                                             ((6, 4), torch.float64)])
def test_torch_uncoalesced_coo(shape, dtype):
    g = torch.Generator().manual_seed(0)
    d = torch.where(torch.rand(shape, generator=g) < 0.4, torch.rand(shape, generator=g) + 1, 0).to(dtype)
    if shape[0] > 2:
        d[1] = 0
    t = _uncoalesced(d, 1)
    assert torch.allclose(t.to_dense(), d)
    before = _state(t)
    x = torch.rand(shape[1], generator=g, dtype=dtype)
    X = torch.rand(shape[1], 3, generator=g, dtype=dtype)
    assert torch.allclose(frontend.matmul(t, x), torch.sparse.mm(t, x[:, None])[:, 0])
    assert torch.allclose(frontend.matmul(t, X), torch.sparse.mm(t, X))
    total = frontend.add(t, t)
    assert total.layout == torch.sparse_coo and torch.allclose(total.to_dense(), 2 * d)
    if shape[0] > 2:
        assert torch.allclose(frontend.multiply(t, t).to_dense(), d * d)
    assert torch.allclose(frontend.sum(t, axis=1), d.sum(1))
    assert _same_state(before, _state(t))


@pytest.mark.parametrize("kind", ["lil_array", "dok_array", "lil_matrix", "dok_matrix"])
@pytest.mark.parametrize("shape", [(0, 0), (1, 1), (4, 7)])
def test_lil_dok(kind, shape):
    d = _dense(shape, np.float64, 8)
    a = getattr(sp, kind)(d)
    before = _state(a)
    x = np.arange(shape[1], dtype=np.float64)
    assert np.allclose(frontend.matmul(a, x), d @ x)
    total = frontend.add(a, a)
    assert sp.issparse(total) and np.allclose(_array(total), 2 * d)
    assert np.allclose(np.asarray(frontend.sum(a, axis=1)).ravel(), d.sum(axis=1))
    assert _same_state(before, _state(a))
