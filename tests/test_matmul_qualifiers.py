"""``frontend.matmul``'s nvmath qualifiers against NumPy: ``conjugate_a``/``conjugate_b``, ``compute_type``
and torch.complex32 operands."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
import torch

import frontend
from frontend import NamedFormats, Tensor

pytestmark = [pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta state"),
              pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")]

RNG = np.random.default_rng(5)


def complex_sparse(m: int, n: int, fmt: str) -> sp.sparray:
    a = sp.random_array((m, n), density=0.5, rng=RNG) + 1j * sp.random_array((m, n), density=0.5, rng=RNG)
    dense = a.toarray()
    if m > 1:
        dense[1] = 0  # an empty row
    return sp.csr_array(dense).asformat(fmt)


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
@pytest.mark.parametrize("shape", [(5, 4), (1, 1), (3, 6)])
def test_conjugate_against_numpy(fmt: str, shape: tuple[int, int]) -> None:
    m, k = shape
    a = complex_sparse(m, k, fmt)
    b = RNG.standard_normal((k, 3)) + 1j * RNG.standard_normal((k, 3))
    ad = a.toarray()
    np.testing.assert_allclose(frontend.matmul(a, b, conjugate_a=True), ad.conj() @ b)
    np.testing.assert_allclose(frontend.matmul(a, b, conjugate_b=True), ad @ b.conj())
    np.testing.assert_allclose(frontend.matmul(a, b, conjugate_a=True, conjugate_b=True), ad.conj() @ b.conj())
    b2 = RNG.standard_normal((m, 2)) + 1j * RNG.standard_normal((m, 2))  # with the transpose: a^H @ b2
    np.testing.assert_allclose(frontend.matmul(a, b2, transpose_a=True, conjugate_a=True), ad.conj().T @ b2)
    assert np.iscomplexobj(ad)
    assert not np.shares_memory(a.data, frontend.matmul(a, b, conjugate_a=True))
    np.testing.assert_array_equal(a.toarray(), ad)  # the caller's values are not conjugated


def test_conjugate_of_a_real_operand_is_a_no_op_and_of_a_tensor_in_any_format() -> None:
    a = sp.random_array((4, 5), density=0.5, rng=RNG, format="csr")
    b = RNG.standard_normal((5, 2))
    np.testing.assert_allclose(frontend.matmul(a, b, conjugate_a=True, conjugate_b=True), a @ b)
    c = complex_sparse(4, 5, "csr")
    dense = c.toarray()
    for fmt in (NamedFormats.DELTA(8), NamedFormats.DIAI, NamedFormats.BSR((2, 1))):
        t = Tensor.from_package(c).convert(tensor_format=fmt)
        got = frontend.matmul(t, b.astype(np.complex128), conjugate_a=True)
        np.testing.assert_allclose(np.asarray(got.to_dense()), dense.conj() @ b)


def test_compute_type_accumulates_wider_and_keeps_the_operands_dtype() -> None:
    a = sp.csr_array(np.array([[1e8, 1.0, -1e8, 0.0], [0.0, 0.0, 0.0, 0.0], [3.0, 0.0, 0.0, 2.0]], np.float32))
    b = np.ones((4, 2), np.float32)
    want = a.toarray().astype(np.float64) @ b.astype(np.float64)
    got32 = frontend.matmul(a, b)
    got = frontend.matmul(a, b, compute_type=np.float64)
    assert got.dtype == np.float32
    np.testing.assert_array_equal(got, want.astype(np.float32))
    assert got32[0, 0] != want[0, 0]  # float32 accumulation loses the 1: the case the compute type is for
    c = np.full((3, 2), 0.5, np.float32)
    out = frontend.matmul(a, b, c, alpha=2.0, beta=1.0, compute_type="float64")
    assert out is c and c.dtype == np.float32
    np.testing.assert_array_equal(c, (2 * want + 0.5).astype(np.float32))
    tc = torch.from_numpy(b.copy())
    got_t = frontend.matmul(torch.from_numpy(a.toarray()).to_sparse_csr(), tc, compute_type=torch.float64)
    assert got_t.dtype == torch.float32
    np.testing.assert_array_equal(got_t.numpy(), want.astype(np.float32))


def test_compute_type_is_checked() -> None:
    a = sp.random_array((3, 3), density=0.5, rng=RNG, format="csr")
    with pytest.raises(ValueError, match="narrower"):
        frontend.matmul(a, np.ones((3, 1)), compute_type=np.float32)
    with pytest.raises(TypeError, match="not supported"):
        frontend.matmul(a, np.ones((3, 1)), compute_type=np.float16)
    with pytest.raises(TypeError, match="compute_type must be a dtype"):
        frontend.matmul(a, np.ones((3, 1)), compute_type="not a dtype")


@pytest.mark.parametrize("layout", ["csr", "coo"])
def test_complex32_operands_compute_in_complex64(layout: str) -> None:
    d = torch.randn(5, 4, dtype=torch.complex64) * (torch.rand(5, 4) > 0.5)
    d[2] = 0
    d32 = d.to(torch.complex32)
    a = d32.to_sparse_csr() if layout == "csr" else d32.to_sparse_coo()
    b32 = torch.randn(4, 3, dtype=torch.complex64).to(torch.complex32)
    a_np, b_np = d32.to(torch.complex64).numpy(), b32.to(torch.complex64).numpy()
    got = frontend.matmul(a, b32)
    assert got.dtype == torch.complex32
    np.testing.assert_allclose(got.to(torch.complex64).numpy(), a_np @ b_np, rtol=1e-2, atol=1e-2)
    conj = frontend.matmul(a, b32, conjugate_a=True)
    assert conj.dtype == torch.complex32
    np.testing.assert_allclose(conj.to(torch.complex64).numpy(), a_np.conj() @ b_np, rtol=1e-2, atol=1e-2)
    wide = frontend.matmul(a, b32.to(torch.complex64))  # complex32 with complex64: complex64, as torch promotes
    assert wide.dtype == torch.complex64
    np.testing.assert_allclose(wide.to(torch.complex64).numpy(), a_np @ b_np, rtol=1e-2, atol=1e-2)
