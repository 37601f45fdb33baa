"""Dense operands in any layout (slices, Fortran order, negative strides, reordered batch dimensions; NumPy and
torch), as matmul's ``b`` and ``c`` and as elementwise/reduction operands: the results NumPy and torch give,
and the caller's arrays unchanged (bytes and flags; ``c`` alone is updated, in place, as documented)."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import torch

import frontend

pytestmark = pytest.mark.filterwarnings("ignore:Sparse CSR tensor support:UserWarning")


def _sparse(shape: tuple[int, int], fmt: str, dtype, seed: int = 0) -> tuple[np.ndarray, object]:
    rng = np.random.default_rng(seed)
    d = np.where(rng.random(shape) < 0.4, rng.integers(1, 6, shape), 0).astype(dtype)
    if shape[0] > 2:
        d[1] = 0  # an empty row
    return d, sp.csr_array(d).asformat(fmt)


def _layouts(a: np.ndarray) -> dict[str, np.ndarray]:
    """``a``'s values in layouts no plain view covers: every other element of a wider array, reversed, F-ordered."""
    wide = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
    wide[..., ::2] = a
    out = {"step": wide[..., ::2], "reversed": np.flip(np.flip(a, -1).copy(), -1), "fortran": np.array(a, order="F")}
    if a.ndim == 2:
        tall = np.zeros((2 * a.shape[0], a.shape[1]), a.dtype)
        tall[::2] = a
        out["rows"] = tall[::2]
    for k, v in out.items():
        assert np.array_equal(v, a), k
    return out


def _state(x) -> tuple:
    if isinstance(x, torch.Tensor):
        return (x.clone(), x.stride(), x._version)
    return (x.tobytes(), x.strides, x.flags.writeable, x.flags.c_contiguous, x.flags.f_contiguous)


def _same(before: tuple, after: tuple) -> bool:
    return all(torch.equal(p, q) if isinstance(p, torch.Tensor) else p == q for p, q in zip(before, after))


CASES = [((0, 0), "csr", np.float64), ((1, 1), "csc", np.float32), ((6, 5), "coo", np.float64),
         ((5, 8), "csr", np.int64)]


@pytest.mark.parametrize(("shape", "fmt", "dtype"), CASES)
def test_strided_b(shape, fmt, dtype):
    d, a = _sparse(shape, fmt, dtype)
    rng = np.random.default_rng(1)
    x = rng.integers(0, 4, shape[1]).astype(dtype)
    X = rng.integers(0, 4, (shape[1], 3)).astype(dtype)
    for name, v in _layouts(x).items():
        before = _state(v)
        assert np.array_equal(frontend.matmul(a, v), d @ x), name
        assert _same(before, _state(v)), name
    for name, v in _layouts(X).items():
        before = _state(v)
        assert np.array_equal(frontend.matmul(a, v), d @ X), name
        assert _same(before, _state(v)), name


@pytest.mark.parametrize(("shape", "fmt", "dtype"), CASES[1:])
def test_strided_elementwise_and_sums(shape, fmt, dtype):
    d, a = _sparse(shape, fmt, dtype)
    e = np.random.default_rng(2).integers(0, 4, shape).astype(dtype)
    for name, v in _layouts(e).items():
        before = _state(v)
        assert np.array_equal(np.asarray(frontend.add(a, v)), d + e), name
        got = frontend.multiply(a, v)
        assert np.array_equal(got.toarray() if hasattr(got, "toarray") else got, d * e), name
        assert np.allclose(frontend.sum(v, axis=0), e.sum(axis=0)), name
        assert _same(before, _state(v)), name


@pytest.mark.parametrize(("shape", "fmt", "dtype"), CASES)
def test_c_in_any_layout(shape, fmt, dtype):
    d, a = _sparse(shape, fmt, dtype)
    X = np.random.default_rng(3).integers(0, 4, (shape[1], 3)).astype(dtype)
    c0 = np.random.default_rng(4).integers(0, 4, (shape[0], 3)).astype(dtype)
    for name, c in _layouts(c0).items():
        strides = c.strides
        got = frontend.matmul(a, X, c, beta=2)
        assert got is c and c.strides == strides, name
        assert np.array_equal(c, d @ X + 2 * c0), name


def test_c_in_any_layout_planned():
    d, a = _sparse((6, 5), "csr", np.float64)
    X = np.arange(15.0).reshape(5, 3)
    c = np.asfortranarray(np.ones((6, 3)))
    m = frontend.Matmul(a, X, c)
    m.execute()
    c[0, 0] = 10.0  # a change of c between calls is read
    want = np.ones((6, 3)) + d @ X
    want[0, 0] = 10.0
    m.execute()
    assert np.allclose(c, want + d @ X)


def test_read_only_strided_c_refused():
    _, a = _sparse((4, 3), "csr", np.float64)
    c = np.asfortranarray(np.ones((4, 2)))
    c.flags.writeable = False
    with pytest.raises(ValueError, match="writable"):
        frontend.matmul(a, np.ones((3, 2)), c)


def test_torch_strided_operands():
    g = torch.Generator().manual_seed(0)
    d = torch.where(torch.rand(6, 5, generator=g) < 0.5, torch.rand(6, 5, generator=g), 0).double()
    a = d.to_sparse_csr()
    x = torch.rand(10, generator=g, dtype=torch.float64)[::2]
    X = torch.rand(3, 5, generator=g, dtype=torch.float64).T
    before = [_state(x), _state(X)]
    assert torch.allclose(frontend.matmul(a, x), d @ x)
    assert torch.allclose(frontend.matmul(a, X), d @ X)
    assert torch.allclose(frontend.add(a, torch.ones(6, 10, dtype=torch.float64)[:, ::2]), d + 1)
    assert _same(before[0], _state(x)) and _same(before[1], _state(X))
    c = torch.ones(3, 6, dtype=torch.float64).T
    assert frontend.matmul(a, X, c) is c and torch.allclose(c, d @ X + 1)


@pytest.mark.parametrize("make", [lambda: torch.rand(4, 6, 5).transpose(0, 1),
                                  lambda: torch.rand(6, 5, 4).transpose(1, 2),
                                  lambda: torch.rand(5, 4, 6).permute(2, 1, 0),
                                  lambda: torch.rand(6, 4, 10)[:, :, ::2]])
def test_batched_b_with_reordered_batch_dimension(make):
    dense = torch.rand(6, 3, 4)
    dense[:, 0, 1] = 0
    dense[:, 2] = 0  # the same pattern in every batch (torch's batched CSR needs equal counts)
    a = dense.to_sparse_csr()
    b = make()
    before = _state(b)
    assert torch.allclose(frontend.matmul(a, b), dense @ b, atol=1e-6)
    assert _same(before, _state(b))
    nb = b.numpy()
    assert np.allclose(frontend.matmul(a, nb), (dense @ b).numpy(), atol=1e-6)
