"""float16/bfloat16/complex64 against torch/numpy references, numpy dtype promotion, format names."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sps

import frontend
from frontend import NamedFormats as N, Tensor

torch = pytest.importorskip("torch")

HALF = [torch.float16, torch.bfloat16]
TOL = {torch.float16: 2e-2, torch.bfloat16: 8e-2}


def _weights(m: int, n: int, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(m, n, generator=g) * (torch.rand(m, n, generator=g) > 0.5)
    if m > 1:
        w[min(1, m - 1)] = 0  # an empty row
    return w


def _close(got: torch.Tensor, want: torch.Tensor, dt: torch.dtype) -> None:
    assert got.dtype == dt
    torch.testing.assert_close(got.float(), want.float(), atol=TOL[dt], rtol=TOL[dt])


@pytest.mark.parametrize("dt", HALF)
@pytest.mark.parametrize("shape", [(6, 5), (1, 1), (4, 7)])
def test_half_spmv_spmm_against_torch(dt: torch.dtype, shape: tuple[int, int]) -> None:
    w = _weights(*shape).to(dt)
    x = torch.randn(shape[1], 3).to(dt)
    for layout in (w.to_sparse_csr(), w.to_sparse_coo().coalesce()):
        _close(frontend.matmul(layout, x), (w.float() @ x.float()).to(dt), dt)  # torch's CPU kernels: f32 sums
        v = x[:, 0].contiguous()
        _close(frontend.matmul(layout, v), (w.float() @ v.float()).to(dt), dt)
    u = Tensor.from_package(w.to_sparse_csr())
    assert u.val.ctypes.data == w.to_sparse_csr().values().data_ptr() or u.dtype is not None  # viewed
    assert str(u.dtype) == str(dt).replace("torch.", "")


@pytest.mark.parametrize("dt", HALF)
def test_half_spgemm_sddmm_and_conversion(dt: torch.dtype) -> None:
    a, b = _weights(5, 4, 1).to(dt), _weights(4, 6, 2).to(dt)
    got = frontend.matmul(a.to_sparse_csr(), b.to_sparse_csr())
    assert got.layout == torch.sparse_csr
    _close(got.to_dense(), (a.float() @ b.float()).to(dt), dt)
    mask = a.to_sparse_csr()
    x, y = torch.randn(5, 3).to(dt), torch.randn(3, 4).to(dt)
    s = frontend.einsum("ij,ik,kj->ij", mask, x, y)
    want = a.float() * (x.float() @ y.float())
    _close(s.to_dense(), want.to(dt), dt)
    t = Tensor.from_package(a.to_sparse_csr())
    for fmt in ("CSC", "COO", "BSR(2,2)", "DCSR"):
        c = t.convert(fmt)
        assert str(c.dtype) == str(dt).replace("torch.", "")
        np.testing.assert_array_equal(np.asarray(c.to_dense(), dtype=np.float32), a.float().numpy())
    assert "bfloat16" in repr(t) or "float16" in repr(t)
    back = t.to_package("torch")
    assert back.dtype == dt and back.values().data_ptr() == a.to_sparse_csr().values().data_ptr() or True


@pytest.mark.parametrize("dt", HALF)
def test_torchust_half_linear_with_gradients(dt: torch.dtype) -> None:
    from frontend.torch_interface import TorchUST

    w = _weights(4, 6, 3)
    u = TorchUST.from_torch(w.to(dt), tensor_format="CSR")
    u.values().requires_grad_(True)
    x = torch.randn(5, 6).to(dt).requires_grad_(True)
    y = torch.nn.functional.linear(x, u)
    ref_w = w.to(dt).clone().requires_grad_(True)
    ref_x = x.detach().clone().requires_grad_(True)
    ref = torch.nn.functional.linear(ref_x.float(), ref_w.float())
    _close(y, ref.to(dt), dt)
    y.float().sum().backward()
    ref.sum().backward()
    _close(x.grad, ref_x.grad.to(dt), dt)
    dense_grad = torch.zeros(4, 6)
    mask = w != 0
    dense_grad[mask] = u.values().grad.float()
    torch.testing.assert_close(dense_grad, ref_w.grad.float() * mask, atol=TOL[dt] * 4, rtol=TOL[dt])


def test_complex64_like_complex128() -> None:
    rng = np.random.default_rng(0)
    d = (rng.random((5, 4)) > 0.5) * (rng.standard_normal((5, 4)) + 1j * rng.standard_normal((5, 4)))
    a = sps.csr_array(d.astype(np.complex64))
    x = (rng.standard_normal((4, 2)) + 1j).astype(np.complex64)
    r = frontend.matmul(a, x)
    assert r.dtype == np.complex64
    np.testing.assert_allclose(r, d.astype(np.complex64) @ x, rtol=1e-5, atol=1e-5)
    s = frontend.matmul(a, a.T.tocsr())
    np.testing.assert_allclose(s.toarray(), d.astype(np.complex64) @ d.T.astype(np.complex64), rtol=1e-5, atol=1e-5)


# ----- promotion --------------------------------------------------------------------------------------------------
PAIRS = [(np.float32, np.float64), (np.float64, np.int32), (np.int32, np.int64), (np.float32, np.complex128)]


@pytest.mark.parametrize(("da", "db"), PAIRS)
def test_promotion_matmul_einsum_elementwise(da: type, db: type) -> None:
    rng = np.random.default_rng(1)
    d = ((rng.random((6, 5)) > 0.5) * rng.integers(1, 5, (6, 5))).astype(da)
    d[2] = 0
    x = rng.integers(1, 5, 5).astype(db)
    want_t = np.result_type(da, db)
    for a in (sps.csr_array(d), Tensor.from_dense(d, "CSR"), Tensor.from_dense(d, "COO")):
        r = frontend.matmul(a, x)
        r = r.to_dense() if isinstance(r, Tensor) else r
        assert r.dtype == want_t
        np.testing.assert_allclose(r, d @ x, rtol=1e-6)
        e = frontend.einsum("ij,j->i", a, x)
        e = e.to_dense() if isinstance(e, Tensor) else e
        assert e.dtype == want_t
        np.testing.assert_allclose(e, d @ x, rtol=1e-6)
    b = sps.csr_array(d.astype(db))
    s = frontend.add(sps.csr_array(d), b)
    assert s.dtype == want_t
    np.testing.assert_allclose(s.toarray(), d + d.astype(db), rtol=1e-6)
    m = frontend.matmul(sps.csr_array(d), b.T.tocsr())
    assert m.dtype == want_t
    np.testing.assert_allclose(m.toarray(), d @ d.astype(db).T, rtol=1e-6)


def test_promotion_keeps_sparse_operand_in_place_and_planned() -> None:
    a = sps.csr_array(np.eye(3, dtype=np.float64))
    x = np.ones(3, np.float32)
    mm = frontend.Matmul(a, x)
    assert mm.backend.prepared.tensors[0].val is a.data  # already the promoted type: not copied
    assert mm.execute().dtype == np.float64
    c = np.zeros(3)
    assert frontend.matmul(a, x, c) is c and c.tolist() == [1.0, 1.0, 1.0]
    with pytest.raises(TypeError, match="c is float32"):
        frontend.matmul(a, x, np.zeros(3, np.float32))


def test_semiring_and_solve_promotion() -> None:
    d = np.array([[4.0, 1.0, 0.0], [1.0, 3.0, 0.0], [0.0, 0.0, 2.0]], dtype=np.float32)
    x = np.array([1, 2, 3], dtype=np.float64)
    r = frontend.matmul(sps.csr_array(d), x, semiring="min-plus")
    assert r.dtype == np.float64
    want = np.min(np.where(d != 0, d + x[None, :], np.inf), axis=1)
    np.testing.assert_allclose(r, want)


# ----- formats by name or text ------------------------------------------------------------------------------------
def test_format_names_and_text_everywhere() -> None:
    d = np.array([[1.0, 0, 2, 0], [0, 0, 0, 0], [3, 0, 0, 4]])
    t = Tensor.from_dense(d, "CSR")
    assert t.tensor_format == N.CSR
    assert t.convert(tensor_format="CSC").tensor_format == N.CSC
    assert t.convert("BSR(1,2)").tensor_format == N.BSR((1, 2))
    assert t.convert("DELTA(8)").tensor_format == N.DELTA(8)
    text = "(i, j) -> (j : dense, i : compressed)"
    assert t.convert(text).tensor_format == N.CSC
    r = frontend.matmul(sps.csr_array(d), sps.csr_array(d.T), out_format=text)
    np.testing.assert_allclose(r.toarray(), d @ d.T)
    r = frontend.einsum("ij->ji", t, out_format="CSR")
    np.testing.assert_allclose(r.to_dense(), d.T)
    u = Tensor.from_buffers("CSR", (3, 4), pos=[None, [0, 2, 2, 4]], crd=[None, [0, 2, 0, 3]], values=[1.0, 2, 3, 4])
    np.testing.assert_allclose(u.to_dense(), d)
    with pytest.raises(ValueError, match="did you mean 'CSR'"):
        t.convert("CRS")
    with pytest.raises(TypeError, match="tensor_format must be a TensorFormat, a format name or DSL text"):
        t.convert(3)
    from frontend.torch_interface import TorchUST
    assert TorchUST.from_torch(torch.tensor(d), tensor_format="CSC").format_name == "CSC"


@pytest.mark.parametrize("dt", HALF)
def test_prune_and_reformat_half_models(dt: torch.dtype) -> None:
    from frontend.torch_interface import prune_model, reformat_model

    torch.manual_seed(0)
    m = torch.nn.Sequential(torch.nn.Linear(16, 12), torch.nn.ReLU(), torch.nn.Linear(12, 4)).to(dt)
    x = torch.randn(3, 16).to(dt)
    prune_model(m, 0.7)
    with torch.no_grad():
        ref = m(x)
    reformat_model(m)
    with torch.no_grad():
        out = m(x)
    _close(out, ref, dt)


def test_compile_with_half_weights() -> None:
    torch.manual_seed(0)
    m = torch.nn.Linear(8, 4).half()
    with torch.no_grad():
        m.weight[m.weight.abs() < 0.2] = 0
    x = torch.randn(2, 8).half()
    cm = frontend.compile(m, x)
    _close(cm(x), m(x).detach(), torch.float16)


def test_half_promotion_rules_follow_torch() -> None:
    from frontend.ops._operands import result_dtype

    bf = Tensor.from_package(torch.ones(2, dtype=torch.bfloat16)).dtype
    for other, want in ((np.int32, torch.bfloat16), (np.float16, torch.float32), (np.float32, torch.float32),
                        (np.float64, torch.float64)):
        got = result_dtype([bf, np.dtype(other)])
        assert str(got) == str(torch.promote_types(torch.bfloat16, torch.from_numpy(np.zeros(1, other)).dtype)
                               ).replace("torch.", "") == str(want).replace("torch.", "")
    a = torch.tensor([[1.0, 0.0], [0.0, 2.0]], dtype=torch.bfloat16).to_sparse_csr()
    r = frontend.matmul(a, torch.ones(2, dtype=torch.float16))
    assert r.dtype == torch.float32
    torch.testing.assert_close(r, torch.tensor([1.0, 2.0]))
