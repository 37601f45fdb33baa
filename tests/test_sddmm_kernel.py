"""The threaded SDDMM kernel (lowering.kernels.sddmm, frontend.ops._sddmm): values against NumPy for CSR, CSC and
COO (Tensors and SciPy objects), f32/f64, several k, empty rows and matrices, 1x1, non-square, forced thread
splits; routing by structure (other formats keep the generic path with the same values); TorchUST products."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import scipy.sparse as sp
import torch

import frontend as F
from frontend import NamedFormats as N, Tensor
from frontend.ops import _sddmm
from frontend.ops._elementwise_kernels import recorded_kernels
from lowering.kernels import sddmm as kernel_text
from ops_util import dense, rand, tensor

FORMS = ("ij,ik,kj->ij", "ij,ik,jk->ij")


def _factors(m: int, n: int, k: int, dtype: Any, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((m, k)).astype(dtype), rng.standard_normal((k, n)).astype(dtype)


def _tol(dtype: Any) -> float:
    return 1e-4 if np.dtype(dtype) == np.float32 else 1e-11


def _check(got: Any, ref: np.ndarray, dtype: Any) -> None:
    d = dense(got)
    assert d.shape == ref.shape
    np.testing.assert_allclose(d, ref, rtol=_tol(dtype), atol=_tol(dtype))


def _ran_kernel(fn: Any) -> tuple[Any, bool]:
    """``fn()``'s result and whether the SDDMM kernel ran."""
    with recorded_kernels() as ks:
        out = fn()
    return out, any("@sddmm" in getattr(k, "text", "") for k in ks)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("fmt", [N.CSR, N.CSC, N.COO])
@pytest.mark.parametrize("k", [1, 3, 16, 64])
@pytest.mark.parametrize("form", FORMS)
def test_tensor_formats_match_numpy(dtype: Any, fmt: Any, k: int, form: str) -> None:
    a = rand((9, 7), density=0.5, dtype=dtype, seed=k)  # row 1 empty
    x, y = _factors(9, 7, k, dtype, seed=k)
    got, ran = _ran_kernel(lambda: F.einsum(form, tensor(a, fmt), x, y if form.endswith("kj->ij") else y.T.copy()))
    assert ran and isinstance(got, Tensor) and got.tensor_format == fmt and got.dtype == dtype
    _check(got, a * (x @ y), dtype)


@pytest.mark.parametrize("kind", ["csr_array", "csc_array", "coo_array", "csr_matrix"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_scipy_in_scipy_out(kind: str, dtype: Any) -> None:
    a = rand((12, 10), density=0.3, dtype=dtype, seed=3)
    s = getattr(sp, kind)(a)
    x, y = _factors(12, 10, 16, dtype)
    got, ran = _ran_kernel(lambda: F.einsum("ij,ik,kj->ij", s, x, y))
    assert ran and got.format == s.format and got.dtype == dtype and got.nnz == s.nnz
    _check(got, a * (x @ y), dtype)
    assert got.toarray().shape == (12, 10)
    if hasattr(s, "indices"):  # the result owns its index arrays
        assert not np.shares_memory(got.indices, s.indices)


@pytest.mark.parametrize("fmt", [N.CSR, N.CSC, N.COO])
@pytest.mark.parametrize("shape", [(0, 0), (0, 5), (4, 0), (1, 1), (3, 8), (8, 3)])
def test_edge_shapes(fmt: Any, shape: tuple[int, int]) -> None:
    a = rand(shape, density=0.6, seed=5) if 0 not in shape else np.zeros(shape)
    x, y = _factors(shape[0], shape[1], 4, np.float64)
    got = F.einsum("ij,ik,kj->ij", tensor(a, fmt), x, y)
    _check(got, a * (x @ y), np.float64)


@pytest.mark.parametrize("fmt", [N.CSR, N.COO])
def test_all_zero_and_k_zero(fmt: Any) -> None:
    a = np.zeros((5, 6))
    x, y = _factors(5, 6, 3, np.float64)
    assert dense(F.einsum("ij,ik,kj->ij", tensor(a, fmt), x, y)).sum() == 0
    b = rand((5, 6), seed=2)
    _check(F.einsum("ij,ik,kj->ij", tensor(b, fmt), np.zeros((5, 0)), np.zeros((0, 6))), np.zeros((5, 6)), np.float64)


@pytest.mark.parametrize("threads", [1, 2, 3, 7, None])
@pytest.mark.parametrize("fmt", [N.CSR, N.CSC, N.COO])
def test_forced_thread_splits(threads: Any, fmt: Any) -> None:
    a = rand((41, 37), density=0.3, seed=7)
    a[5:9] = 0  # a run of empty rows inside a chunk
    x, y = _factors(41, 37, 19, np.float64)
    got = F.einsum("ij,ik,kj->ij", tensor(a, fmt), x, y, threads=threads)
    _check(got, a * (x @ y), np.float64)


def test_multi_chunk_above_the_threshold(monkeypatch: pytest.MonkeyPatch) -> None:
    """threads=None splits into every core's chunks from the threshold (lowered here): same values."""
    monkeypatch.setattr(_sddmm, "SDDMM_PARALLEL_MIN", 1)
    monkeypatch.setattr(_sddmm, "TRANSPOSE_KERNEL_MIN", 1)
    monkeypatch.setattr(_sddmm, "cpu_count", lambda: 3)
    a = rand((50, 44), density=0.2, seed=8)
    x, y = _factors(50, 44, 5, np.float32)
    for fmt in (N.CSR, N.CSC, N.COO):
        _check(F.einsum("ij,ik,kj->ij", tensor(a.astype(np.float32), fmt), x, y), a * (x @ y), np.float32)


def test_compiled_transpose_matches_numpy() -> None:
    p = _sddmm.pattern_of(tensor(rand((3, 3), seed=1), N.CSR))
    assert p is not None
    for k, n, threads in ((16, 1000, 1), (3, 6000, 2), (64, 300, 1), (5, 1, 1)):
        y = np.random.default_rng(k).standard_normal((k, n))
        _sddmm.TRANSPOSE_KERNEL_MIN, old = 1, _sddmm.TRANSPOSE_KERNEL_MIN
        try:
            yt = _sddmm.transposed(y, p, threads)
        finally:
            _sddmm.TRANSPOSE_KERNEL_MIN = old
        assert yt.flags.c_contiguous and np.array_equal(yt, y.T)


@pytest.mark.parametrize("fmt", [N.DCSR, N.BSR((2, 2)), N.DIAI, N.DCSC, N.DELTA(8)])
def test_other_formats_keep_the_generic_path(fmt: Any) -> None:
    a = rand((8, 6), density=0.5, seed=4)
    x, y = _factors(8, 6, 3, np.float64)
    got, ran = _ran_kernel(lambda: F.einsum("ij,ik,kj->ij", tensor(a, fmt), x, y))
    assert not ran
    _check(got, a * (x @ y), np.float64)
    ref = dense(F.einsum("ij,ik,kj->ij", tensor(a, N.CSR), x, y))  # same matrix, same answer
    np.testing.assert_allclose(dense(got), ref, rtol=1e-12, atol=1e-12)


def test_other_operands_keep_the_generic_path() -> None:
    a = rand((6, 5), seed=1)
    x, y = _factors(6, 5, 4, np.float64)
    for args, kwargs in (((sp.csr_array(a), x.astype(np.float32), y), {}),   # mixed dtypes: promoted
                         ((sp.csr_array(a), x, y), {"out_format": N.Dense(2)}),  # another result format
                         ((sp.csr_array(a), x, y), {"semiring": "min-plus"})):
        got, ran = _ran_kernel(lambda: F.einsum("ij,ik,kj->ij", *args, **kwargs))  # noqa: B023
        assert not ran
    _check(F.einsum("ij,ik,kj->ij", sp.csr_array(a), x.astype(np.float32), y), a * (x @ y), np.float32)
    got, ran = _ran_kernel(lambda: F.einsum("ij,ik,kj->ij", tensor(a.astype(np.int64), N.CSR), x.astype(np.int64),
                                            y.astype(np.int64)))
    assert not ran


@pytest.mark.parametrize("fmt", [N.CSR, N.COO])
def test_bad_shapes_name_both(fmt: Any) -> None:
    a = tensor(rand((4, 5), seed=1), fmt)
    with pytest.raises(ValueError, match=r"\(4, 5\).*X \(4, 3\).*Y \(2, 5\)"):
        F.einsum("ij,ik,kj->ij", a, np.ones((4, 3)), np.ones((2, 5)))
    with pytest.raises(ValueError, match=r"X \(3, 3\)"):
        F.einsum("ij,ik,kj->ij", a, np.ones((3, 3)), np.ones((3, 5)))
    with pytest.raises(ValueError, match=r"Y \(4, 3\)"):
        F.einsum("ij,ik,jk->ij", a, np.ones((4, 3)), np.ones((4, 3)))


def test_index_types_and_letters() -> None:
    a = rand((7, 9), seed=6)
    x, y = _factors(7, 9, 8, np.float64)
    for it in (np.int32, np.int64):
        t = Tensor.from_dense(a, N.CSR, index_type=it)
        _check(F.einsum("ab,ac,cb->ab", t, x, y), a * (x @ y), np.float64)
        _check(F.einsum(" pq , pr , qr -> pq ", t, x, y.T.copy()), a * (x @ y), np.float64)
    assert _sddmm.canonical("ij,ik,kj->ij") == "ab,ac,cb->ab"


@pytest.mark.parametrize("elem", ["f32", "f64"])
@pytest.mark.parametrize("rows", ["compressed", "coordinates"])
@pytest.mark.parametrize("unroll,lanes", [(1, 1), (3, 2), (4, None)])
def test_kernel_variants(elem: str, rows: str, unroll: int, lanes: Any) -> None:
    """Every unroll/lane combination of the generator against NumPy (scaled and not)."""
    from frontend.ops._elementwise_kernels import row_kernel_for

    dtype = np.float32 if elem == "f32" else np.float64
    s = sp.random(13, 11, density=0.4, format="csr", random_state=2, dtype=dtype)
    c = s.tocoo()
    x, y = _factors(13, 11, 11, dtype)
    yt = np.ascontiguousarray(y.T)
    ref = (x @ y)[c.row, c.col]
    for scaled in (True, False):
        text = kernel_text.build(elem, "i32", "i32", rows=rows, scaled=scaled, lanes=lanes, unroll=unroll)
        fn = row_kernel_for(("sddmm-test", elem, rows, scaled, unroll, lanes), lambda: text).function("sddmm")  # noqa: B023
        out = np.empty(s.nnz, dtype)
        if rows == "compressed":
            fn(s.indptr, s.indices, s.data, x, yt, out, 0, 13)
        else:
            fn(c.row.astype(np.int32), c.col.astype(np.int32), c.data, x, yt, out, 0, c.nnz)
        np.testing.assert_allclose(out, ref * (c.data if scaled else 1), rtol=_tol(dtype), atol=_tol(dtype))
    with pytest.raises(ValueError, match="f32 or f64"):
        kernel_text.build("i32", "i32", "i32", rows=rows, scaled=True)


def test_print_mlir_names_the_kernel(capsys: pytest.CaptureFixture) -> None:
    F.print_mlir(sp.csr_array(rand((4, 4), seed=1)), np.ones((4, 2)), np.ones((2, 4)), subscripts="ij,ik,kj->ij",
                 stage="linalg")
    text = capsys.readouterr().out
    assert text.startswith(f"// {_sddmm.PATH}") and "func.func @sddmm" in text


# ----- TorchUST ------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", [N.CSR, N.CSC, N.COO, N.BSR((2, 2))])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_torch_sampled_addmm_values_and_grads(fmt: Any, dtype: torch.dtype) -> None:
    from frontend.torch_interface import TorchUST

    a = rand((6, 8), density=0.5, seed=9)
    dense_a = torch.tensor(a, dtype=dtype)
    s = TorchUST.from_torch(dense_a, fmt)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(6, 5, dtype=dtype, generator=g, requires_grad=True)
    y = torch.randn(5, 8, dtype=dtype, generator=g, requires_grad=True)
    out, ran = _ran_kernel(lambda: torch.sparse.sampled_addmm(s, x, y, beta=0.5, alpha=2.0))
    assert ran == (fmt != N.BSR((2, 2)))  # BSR keeps the generic sampled path
    mask = dense_a != 0
    ref = torch.where(mask, 0.5 * dense_a + 2.0 * (x @ y), torch.zeros((), dtype=dtype))
    tol = 1e-4 if dtype == torch.float32 else 1e-10
    torch.testing.assert_close(out.to_dense(), ref.detach(), rtol=tol, atol=tol)
    out.to_dense().sum().backward()
    gx, gy = x.grad.clone(), y.grad.clone()
    x.grad = y.grad = None
    ref.sum().backward()
    torch.testing.assert_close(gx, x.grad, rtol=tol, atol=tol)
    torch.testing.assert_close(gy, y.grad, rtol=tol, atol=tol)
