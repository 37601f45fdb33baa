"""frontend.einsum: contractions, sampled products, batches, transpositions; sparse stays sparse."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import frontend as F
from frontend import NamedFormats as N, Tensor
from ops_util import close, dense, rand, tensor

A = rand((5, 6), seed=1)
B = rand((6, 4), seed=2)


@pytest.mark.parametrize("fa,fb", [(N.CSR, N.CSR), (N.DCSR, N.CSR), (N.CSC, N.CSC), (N.COO, N.CSR)])
def test_sparse_times_sparse_stays_sparse(fa, fb):
    r = F.einsum("ik,kj->ij", tensor(A, fa), tensor(B, fb))
    assert isinstance(r, Tensor) and r.is_sparse and close(r, A @ B)


def test_sparse_times_dense_is_dense():
    r = F.einsum("ik,kj->ij", sp.csr_array(A), B)
    assert isinstance(r, np.ndarray) and np.allclose(r, A @ B)
    r = F.einsum("ik,kj", sp.csr_array(A), B)  # implicit output
    assert np.allclose(r, A @ B)


def test_sampled_products():
    s = rand((5, 4), seed=3)
    d = rand((5, 4), density=1.0, seed=4)
    r = F.einsum("ij,ij->ij", sp.csr_array(s), d)           # element-wise, sparse pattern kept
    assert r.format == "csr" and np.allclose(r.toarray(), s * d) and r.nnz == np.count_nonzero(s)
    x, y = rand((5, 6), density=1.0, seed=5), rand((6, 4), density=1.0, seed=6)
    r = F.einsum("ij,ik,kj->ij", tensor(s, N.CSR), x, y)    # SDDMM: S * (X @ Y) at S's entries
    assert r.is_sparse and close(r, s * (x @ y))
    r = F.einsum("ij,ij->ij", tensor(s, N.CSR), tensor(rand((5, 4), seed=7), N.DCSR))
    assert r.is_sparse and close(r, s * rand((5, 4), seed=7))


def test_batched_and_3d():
    a3, b3 = rand((2, 3, 4), seed=8), rand((2, 4, 5), seed=9)
    assert close(F.einsum("bij,bjk->bik", tensor(a3, N.CSF(3)), b3), a3 @ b3)
    assert close(F.einsum("bij,bjk->bik", tensor(a3, N.BatchedCSR), b3), a3 @ b3)
    v = rand((4,), density=1.0, seed=10)
    assert close(F.einsum("ijk,k->ij", tensor(a3, N.COO(3)), v), a3 @ v)
    r = F.einsum("bij,bjk->bik", tensor(a3, N.CSF(3)), tensor(b3, N.CSF(3)))
    assert r.is_sparse and close(r, a3 @ b3)


@pytest.mark.parametrize("src", [N.CSR, N.CSC, N.COO, N.DCSR])
@pytest.mark.parametrize("dst", [None, N.CSR, N.CSC, N.DCSC])
def test_transposition(src, dst):
    r = F.einsum("ij->ji", tensor(A, src), out_format=dst)
    assert r.is_sparse and r.shape == (6, 5) and close(r, A.T)
    if dst is not None:
        assert r.tensor_format == dst


def test_transposition_entries_match_scipy():
    a = sp.csr_array(A)
    a.indptr, a.indices = a.indptr.astype(np.int32), a.indices.astype(np.int32)
    r = F.einsum("ij->ji", a)
    ref = sp.csr_array(A.T)
    assert r.format == "csr"
    np.testing.assert_array_equal(r.indptr, ref.indptr)
    np.testing.assert_array_equal(r.indices, ref.indices)
    np.testing.assert_array_equal(r.data, ref.data)


def test_format_change_and_reductions():
    r = F.einsum("ij->ij", tensor(A, N.CSR), out_format=N.CSC)
    assert r.tensor_format == N.CSC and close(r, A)
    assert np.allclose(F.einsum("ij->i", sp.csr_array(A)), A.sum(1))
    assert np.isclose(dense(F.einsum("ij,ij->", sp.csr_array(A), A)), (A * A).sum())


def test_einsum_semiring():
    r = F.einsum("ik,kj->ij", sp.csr_array(A), np.ones((6, 4)), semiring="max-plus")
    ref = np.where((A != 0).any(1, keepdims=True), np.where(A != 0, A, -np.inf).max(1, keepdims=True) + 1,
                   -np.inf) * np.ones((1, 4))
    assert np.array_equal(r, ref)


def test_einsum_errors():
    with pytest.raises(ValueError, match="name 2 operands"):
        F.einsum("ik,kj->ij", A)
    with pytest.raises(ValueError, match="extent"):
        F.einsum("ik,kj->ij", A, A)
    with pytest.raises(ValueError, match="appear in the inputs"):
        F.einsum("ik,kj->iz", A, B)
    with pytest.raises(ValueError, match="diagonal"):
        F.einsum("ii->i", np.eye(3))
    with pytest.raises(ValueError, match="has 2 dimensions"):
        F.einsum("ijk,k->ij", A, B[:, 0].copy())
    mixed = F.einsum("ik,kj->ij", A, B.astype(np.float32))  # numpy promotion
    assert np.asarray(mixed).dtype == np.result_type(A.dtype, np.float32)
    with pytest.raises(TypeError, match="not supported"):
        F.einsum("ik,kj->ij", A.astype(np.uint16), B.astype(np.uint16))


def test_print_mlir_einsum(capsys):
    F.print_mlir(sp.csr_array(A), B, subscripts="ik,kj->ij", stage="sparsified")
    out = capsys.readouterr().out
    assert "sparsified" in out and "scf.for" in out and "linalg.generic {" not in out
