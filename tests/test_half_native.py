"""float16/bfloat16 sparse x dense products on the half values as they are (emitter loads + arith.extf, f32
accumulation): no float32 copy of the operands, results in the half type, against torch float32 references."""
from __future__ import annotations

import numpy as np
import pytest
import torch

import frontend
from frontend import Tensor
from lowering.contraction import Contraction, TensorSpec
from lowering.dispatch import choose_path
from lowering.emitter.kernel import emit_contraction


def _f32(r: object) -> tuple[str, torch.Tensor]:
    """(dtype name, float32 torch values) of a result: a Tensor, a NumPy array or a torch tensor."""
    if isinstance(r, Tensor):
        r = r.to_dense()
    if isinstance(r, torch.Tensor):
        return str(r.dtype).replace("torch.", ""), r.float()
    arr = np.asarray(r)
    return str(arr.dtype), torch.from_numpy(arr.astype(np.float32))


def _matrix(m: int, n: int, seed: int) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    w = torch.randn(m, n, generator=g)
    w[w.abs() < 0.8] = 0
    if m > 2:
        w[1] = 0  # an empty row
    return w


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
@pytest.mark.parametrize("shape", [(6, 5, 3), (1, 1, 1), (4, 9, 2), (0, 3, 2)])
def test_half_csr_products_use_the_values_in_place(dtype: torch.dtype, shape: tuple[int, int, int]) -> None:
    m, n, k = shape
    w = _matrix(m, n, m * 7 + n).to(dtype)
    a = Tensor.from_package(w.to_sparse_csr())
    g = torch.Generator().manual_seed(3)
    tol = 1e-2 if dtype == torch.float16 else 4e-2
    for x in (torch.randn(n, generator=g).to(dtype), torch.randn(n, k, generator=g).to(dtype)):
        ref = (w.float() @ x.float()).to(dtype)  # f32 accumulation, rounded once, as torch's CPU kernels
        mm = frontend.Matmul(a, x)
        mm.plan()
        prepared = mm.backend.prepared
        assert prepared.in_elem == {torch.float16: "f16", torch.bfloat16: "bf16"}[dtype]
        assert prepared.tensors[0].val is a.val and not prepared.casts  # no float32 copy
        name = str(dtype).replace("torch.", "")
        for got in (mm.execute(), frontend.matmul(a, x)):
            kind, vals = _f32(got)
            assert kind == name
            torch.testing.assert_close(vals, ref.float(), rtol=tol, atol=tol)


def test_half_numpy_operands_and_fallbacks() -> None:
    """NumPy float16 operands too; c=, mixed dtypes and sparse results keep the float32-copy path."""
    import scipy.sparse as sps
    a32 = sps.random_array((7, 5), density=0.5, format="csr", rng=np.random.default_rng(0)).astype(np.float32)
    a = sps.csr_array((a32.data.astype(np.float16), a32.indices, a32.indptr), shape=a32.shape)
    x = np.random.default_rng(1).standard_normal((5, 4)).astype(np.float16)
    got = frontend.matmul(a, x)
    assert got.dtype == np.float16
    ref = (a.astype(np.float32) @ x.astype(np.float32)).astype(np.float16)
    np.testing.assert_allclose(got.astype(np.float32), ref.astype(np.float32), rtol=1e-2, atol=1e-2)
    mixed = frontend.matmul(a, x.astype(np.float32))  # float16 x float32 -> float32 (promotion copies a)
    assert mixed.dtype == np.float32
    np.testing.assert_allclose(mixed, a.astype(np.float32) @ x.astype(np.float32), rtol=1e-2, atol=1e-2)


def test_emitter_half_loads_rules() -> None:
    from frontend.format import NamedFormats
    spec = TensorSpec(NamedFormats.CSR, (4, 3), "f16")
    c = Contraction(("ik", "k"), (spec, TensorSpec(None, (3,), "f16")), "i", TensorSpec(None, (4,), "f32"))
    assert choose_path(c) == "emitter"
    assert "arith.extf" in emit_contraction(c) and "arith.extf" in emit_contraction(c, rows=True)
    bad = Contraction(("ik", "k"), (spec, TensorSpec(None, (3,), "f16")), "i", TensorSpec(None, (4,), "f64"))
    with pytest.raises(TypeError, match="output's element type f64"):
        emit_contraction(bad)
