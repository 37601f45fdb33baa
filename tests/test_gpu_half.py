"""Half precision on the GPU: float16 / bfloat16 SpMV and SpMM for CSR, BSR (the sparsifier) and DELTA (the
emitter; fp16 DELTA SpMV is the MACKO case) lower to PTX that ``ptxas`` accepts and computes in the half type.
Tests marked ``gpu`` run them against torch (``make test-gpu``)."""
from __future__ import annotations

import functools
import re

import numpy as np
import pytest

from frontend import NamedFormats as N
from lowering.contraction import Contraction, TensorSpec
from lowering.gpu.dispatch import gpu_path, lower_gpu
from mlir_bridge.gpu import gpu_assembly
from test_gpu_lowering import HAS_DEVICE, _ptxas

FORMATS = {"CSR": N.CSR, "BSR": N.BSR((2, 2)), "DELTA8": N.DELTA(8)}
ARITH = re.compile(r"\b(?:add|mul|fma)(?:\.rn)?\.(b?f16)\b")


def _contraction(fmt_name: str, op: str, elem: str) -> Contraction:
    spec = functools.partial(TensorSpec, pos_width=32, crd_width=32)
    rhs, out = ((6,), (8,)) if op == "spmv" else ((6, 4), (8, 4))
    return Contraction(("ik", "k") if op == "spmv" else ("ik", "kj"),
                       (spec(FORMATS[fmt_name], (8, 6), elem), spec(None, rhs, elem)), "i" if op == "spmv" else "ij",
                       TensorSpec(None, out, elem))


def _generated_path(fmt_name: str) -> str:
    """The generated-code path (auto picks cuSPARSE for float16 CSR/BSR: the library takes them)."""
    return "emitter-gpu" if fmt_name == "DELTA8" else "sparsifier-gpu"


@functools.cache
def _ptx(fmt_name: str, op: str, elem: str, chip: str) -> str:
    c = _contraction(fmt_name, op, elem)
    low = lower_gpu(c, chip, gpu_path(c, _generated_path(fmt_name)))
    return gpu_assembly(low.text, low.pipeline)


_CASES = [(f, op, e, "sm_90") for e in ("f16", "bf16") for f in FORMATS for op in ("spmv", "spmm")] + [
    (f, "spmv", "bf16", "sm_80") for f in FORMATS]  # sm_80: the first chip with bf16 arithmetic


@pytest.mark.parametrize("fmt_name, op, elem, chip", _CASES)
def test_half_precision_ptx(fmt_name: str, op: str, elem: str, chip: str) -> None:
    auto = gpu_path(_contraction(fmt_name, op, elem))
    assert auto == ("cusparse" if elem == "f16" and fmt_name != "DELTA8" else _generated_path(fmt_name))
    ptx = _ptx(fmt_name, op, elem, chip)
    assert f".target {chip}" in ptx and ".entry" in ptx
    # products and sums in the element type itself: no float32 detour
    assert set(ARITH.findall(ptx)) == {elem}, sorted(set(ARITH.findall(ptx)))
    assert not re.search(r"cvt(\.\w+)?\.f32\.b?f16", ptx)
    _ptxas(ptx, chip)


def test_float16_plans_through_the_frontend_without_a_device() -> None:
    torch = pytest.importorskip("torch")
    from frontend import Matmul, Tensor

    dense = torch.rand(8, 6)
    dense[dense < 0.5] = 0
    a16, x16 = dense.half(), torch.rand(6).half()
    delta = Tensor.from_package(a16.to_sparse_csr()).convert(tensor_format=N.DELTA(8))
    for a, path in ((a16.to_sparse_csr(), "sparsifier-gpu"), (a16.to_sparse_bsr((2, 2)), "sparsifier-gpu"),
                    (delta, "emitter-gpu")):
        mm = Matmul(a, x16, device="cuda", path=path)
        assert mm.path == path and set(ARITH.findall(mm.ptx)) == {"f16"}


# ----- on a GPU ------------------------------------------------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("dtype_name", ["float16", "bfloat16"])
@pytest.mark.parametrize("fmt_name", list(FORMATS))
def test_gpu_half_matches_torch(fmt_name: str, dtype_name: str) -> None:
    torch = pytest.importorskip("torch")
    if not HAS_DEVICE or not torch.cuda.is_available():
        pytest.skip("no CUDA device (or torch without CUDA)")
    from frontend import Tensor
    from frontend.ops.gpu._matmul import gpu_matmul_plan

    dtype = getattr(torch, dtype_name)
    if fmt_name == "DELTA8" and dtype == torch.bfloat16:
        pytest.skip("a bfloat16 DELTA tensor needs bfloat16 host buffers, which NumPy lacks (CPU dtype work)")
    rng = np.random.default_rng(3)
    for rows, cols in ((64, 48), (2, 2), (10, 6)):
        d = rng.random((rows, cols))
        d[d < 0.7] = 0
        d[1] = 0  # an empty row
        tol = dict(rtol=2e-2, atol=2e-2 * max(1, cols // 8))
        for rhs in ((cols,), (cols, 3)):
            x = rng.random(rhs)
            ref = d @ x
            if fmt_name == "DELTA8":  # host operands, device="cuda": copied over, the result comes back
                y = gpu_matmul_plan(Tensor.from_dense(d.astype(np.float16), N.DELTA(8)), x.astype(np.float16),
                                    device="cuda").execute()
                assert y.dtype == np.float16
                np.testing.assert_allclose(y.astype(np.float64), ref, **tol)
                continue
            dense = torch.from_numpy(d).to("cuda", dtype)
            a = dense.to_sparse_csr() if fmt_name == "CSR" else dense.to_sparse_bsr((2, 2))
            y = gpu_matmul_plan(a, torch.from_numpy(x).to("cuda", dtype), path="sparsifier-gpu").execute()
            assert y.is_cuda and y.dtype == dtype
            torch.testing.assert_close(y.double().cpu(), torch.from_numpy(ref), **tol)
