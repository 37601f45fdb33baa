"""GPU target without a GPU: lowering to NVVM/PTX (checked by ptxas), device-resident host code, atomics,
launch grids, cached GPU binaries, path choice, the vendor-library glue (on CPU torch), and a clear
error when no device exists. Tests marked ``gpu`` run the kernels (``make test-gpu``; skipped without one).
"""
from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pytest

from frontend import NamedFormats as N
from frontend.format import TensorFormat
from lowering.contraction import Contraction, TensorSpec
from lowering.gpu.dispatch import gpu_path, library_layout, lower_gpu
from lowering.gpu.pipeline import DEFAULT_CHIPS, GpuPipeline
from mlir_bridge import CompileError, lower_stages
from mlir_bridge.gpu import GPU, MODULE_SEPARATOR, build_gpu, gpu_assembly
from mlir_bridge.gpu.cuda_driver import cuda_info

ROOT = Path(__file__).resolve().parent.parent
PTXAS = shutil.which("ptxas")
HAS_DEVICE = cuda_info().available
CHIPS = ("sm_80", "sm_90")

FORMATS = {
    "CSR": N.CSR, "CSC": N.CSC, "COO": N.COO, "DCSR": N.DCSR, "BSR": N.BSR((2, 2)), "Dense": None,
}
#: formats whose outer level the sparsifier cannot parallelize (no kernel; cuSPARSE or CPU instead)
NO_KERNEL = {"COO", "DCSR"}
CSR3 = TensorFormat.parse("(i, j, k) -> (i : dense, j : compressed, k : compressed)")


def _spec(fmt, shape, elem):  # noqa: ANN001, ANN202
    return TensorSpec(fmt, shape, elem, 32, 32)


#: op -> (subscripts, output subscripts, operand specs given the format and element type, output shape)
OPS = {
    "spmv": (("ik", "k"), "i", lambda f, e: (_spec(f, (8, 6), e), _spec(None, (6,), e)), (8,)),
    "spmv_t": (("ki", "k"), "i", lambda f, e: (_spec(f, (8, 6), e), _spec(None, (8,), e)), (6,)),
    "spmm": (("ik", "kj"), "ij", lambda f, e: (_spec(f, (8, 6), e), _spec(None, (6, 4), e)), (8, 4)),
    "spgemm": (("ik", "kj"), "ij", lambda f, e: (_spec(f, (8, 6), e), _spec(N.CSR, (6, 4), e)), (8, 4)),
    "sampled": (("ij", "ij"), "ij", lambda f, e: (_spec(f, (8, 6), e), _spec(None, (8, 6), e)), (8, 6)),
    # dense @ sparse (activations @ sparse weights): the dense operand's rows are the parallel loop
    "dense_sparse": (("ik", "kj"), "ij", lambda f, e: (_spec(None, (8, 6), e), _spec(f, (6, 4), e)), (8, 4)),
}


def _contraction(op: str, fmt_name: str, elem: str = "f32") -> Contraction:
    subs, out, operands, oshape = OPS[op]
    return Contraction(subs, operands(FORMATS[fmt_name], elem), out, TensorSpec(None, oshape, elem))


@functools.cache
def _ptx(op: str, fmt_name: str, elem: str, chip: str) -> str:
    low = lower_gpu(_contraction(op, fmt_name, elem), chip)
    return gpu_assembly(low.text, low.pipeline)


def _ptxas(ptx: str, chip: str) -> None:
    if PTXAS is None:
        pytest.skip("ptxas (CUDA toolkit) is not on PATH: PTX cannot be assembled here")
    for module in ptx.split(MODULE_SEPARATOR):  # one PTX module per gpu.module
        with tempfile.TemporaryDirectory() as d:
            path = Path(d) / "k.ptx"
            path.write_text(module)
            proc = subprocess.run([PTXAS, f"-arch={chip}", str(path), "-o", str(Path(d) / "k.cubin")],
                                  capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stderr


# ----- every op x format family compiles to PTX that ptxas accepts ------------------------------------------
@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("fmt_name", list(FORMATS))
@pytest.mark.parametrize("op", list(OPS))
def test_ptx_per_op_and_format(op: str, fmt_name: str, chip: str) -> None:
    if fmt_name in NO_KERNEL and op != "dense_sparse":
        with pytest.raises(CompileError, match="no GPU kernel") as info:
            _ptx(op, fmt_name, "f32", chip)
        assert info.value.stage == "gpu-kernels"
        return
    ptx = _ptx(op, fmt_name, "f32", chip)
    assert f".target {chip}" in ptx and ".entry" in ptx
    _ptxas(ptx, chip)


@pytest.mark.parametrize("elem", ["f16", "f64"])
@pytest.mark.parametrize("fmt_name", ["CSR", "CSC", "BSR"])
def test_ptx_other_element_types(fmt_name: str, elem: str) -> None:
    ptx = _ptx("spmv", fmt_name, elem, "sm_80")
    _ptxas(ptx, "sm_80")
    width = {"f16": "f16", "f64": "f64"}[elem]
    assert (f"atom.global.add.noftz.{width}" in ptx or f"atom.global.add.{width}" in ptx) == (fmt_name == "CSC")


def test_einsum_3d_tensor_times_vector() -> None:
    c = Contraction(("ijk", "k"), (_spec(CSR3, (4, 5, 6), "f32"), _spec(None, (6,), "f32")), "ij",
                    TensorSpec(None, (4, 5), "f32"))
    low = lower_gpu(c, "sm_90")
    _ptxas(gpu_assembly(low.text, low.pipeline), "sm_90")


# ----- emitter formats (range / delta levels) ---------------------------------------------------------------------
EMITTER_FORMATS = {"DELTA8": N.DELTA(8), "DELTA4": N.DELTA(4), "DIAI": N.DIAI, "SkewDIAI": N.SkewDIAI}


@functools.cache
def _emitter_ptx(name: str, rows: int, op: str, chip: str) -> str:
    fmt = EMITTER_FORMATS[name]
    rhs = (rows,) if op == "spmv" else (rows, 3)
    out = (rows,) if op == "spmv" else (rows, 3)
    c = Contraction(("ik", "k") if op == "spmv" else ("ik", "kj"),
                    (_spec(fmt, (rows, rows), "f32"), _spec(None, rhs, "f32")), "i" if op == "spmv" else "ij",
                    TensorSpec(None, out, "f32"))
    assert gpu_path(c) == "emitter-gpu"
    low = lower_gpu(c, chip, "emitter-gpu")
    return gpu_assembly(low.text, low.pipeline)


_EMITTER_CASES = [(name, 64, op, chip) for name in EMITTER_FORMATS for op in ("spmv", "spmm") for chip in CHIPS] + [
    (name, 5000, "spmv", "sm_90") for name in EMITTER_FORMATS]  # several row tiles, once per format


@pytest.mark.parametrize("name, rows, op, chip", _EMITTER_CASES)
def test_emitter_formats_ptx(name: str, rows: int, op: str, chip: str) -> None:
    _ptxas(_emitter_ptx(name, rows, op, chip), chip)


def test_emitter_format_whose_loops_cannot_be_parallel_is_refused() -> None:
    # DIAJ walks columns: outputs y[i] of different iterations collide, the emitter emits no parallel loop
    c = Contraction(("ik", "k"), (_spec(N.DIAJ, (64, 64), "f32"), _spec(None, (64,), "f32")), "i",
                    TensorSpec(None, (64,), "f32"))
    with pytest.raises(CompileError, match="no GPU kernel"):
        low = lower_gpu(c, "sm_90", "emitter-gpu")
        gpu_assembly(low.text, low.pipeline)


def test_delta_plan_through_the_frontend() -> None:
    from frontend.ops.gpu._matmul import gpu_matmul_plan
    from frontend.tensor import Tensor

    rng = np.random.default_rng(0)
    d = rng.random((300, 200)).astype(np.float32)
    d[d < 0.9] = 0
    plan = gpu_matmul_plan(Tensor.from_dense(d, N.DELTA(8)), np.ones(200, np.float32), device="cuda", chip="sm_80")
    assert plan.path == "emitter-gpu"
    assert ".target sm_80" in plan.ptx
    assert plan.plan()._build.so_path.exists()


# ----- what the GPU lowering does to the host code and the kernels ----------------------------------------------
@functools.cache
def _stages(op: str, fmt_name: str, rows: int = 8) -> dict[str, str]:
    subs, out, _, _ = OPS[op]
    c = Contraction(subs, (_spec(FORMATS[fmt_name], (rows, 6), "f32"), _spec(None, (6,), "f32")), out,
                    TensorSpec(None, (rows,), "f32"))
    low = lower_gpu(c, "sm_90", gpu_format="isa")
    return dict(lower_stages(low.text, low.pipeline))


def _host(text: str) -> str:
    return text[text.index("func.func @main"):]


def test_device_resident_host_code_has_no_staging_copies() -> None:
    resident = _host(_stages("spmv", "CSR")["device-resident"])
    assert "gpu.launch_func" in resident
    for word in ("gpu.memcpy", "gpu.alloc", "memref.load", "memref.store"):
        assert word not in resident, word
    # the kernel takes the function's own arguments (the caller's device buffers)
    assert "args(%arg" in resident


def test_staged_pipeline_keeps_the_sparsifier_copies() -> None:
    c = _contraction("spmv", "CSR")
    low = lower_gpu(c, "sm_90", gpu_format="isa")
    staged = GpuPipeline(gpu_chip="sm_90", gpu_format="isa", resident=False)
    stages = dict(lower_stages(low.text, staged))
    assert "gpu.memcpy" in _host(stages["gpu-grid"])


def test_scatter_becomes_atomic_only_where_the_format_forces_it() -> None:
    assert "memref.atomic_rmw" in _stages("spmv", "CSC")["gpu-atomics"]  # y[crd[p]] += ...: races
    assert "memref.atomic_rmw" not in _stages("spmv", "CSR")["gpu-atomics"]  # one thread per row
    assert "memref.atomic_rmw" not in _stages("spmv", "BSR")["gpu-atomics"]


def test_launch_grid_covers_every_row() -> None:
    text = _host(_stages("spmv", "CSR", rows=2000)["gpu-grid"])
    launch = next(ln for ln in text.splitlines() if "gpu.launch_func" in ln)
    blocks = launch.split("blocks in (")[1].split(",")[0]
    assert f"{blocks} = arith.constant 8 : index" in text  # ceil(2000 / 256)


def test_host_reads_of_device_buffers_are_refused() -> None:
    # sparse results are assembled by host code: no device-resident lowering exists
    c = Contraction(("ik", "kj"), (_spec(N.CSR, (8, 6), "f32"), _spec(N.CSR, (6, 4), "f32")), "ij",
                    _spec(N.CSR, (8, 4), "f32"))
    with pytest.raises(ValueError, match="sparse results"):
        lower_gpu(c, "sm_90")


def test_gpu_pipeline_options() -> None:
    p = GpuPipeline(gpu_chip="sm_80", gpu_format="isa")
    assert "chip=sm_80" in p.describe() and "format=isa" in p.describe()
    assert "nvvm-attach-target" in p.pass_pipeline()
    assert GpuPipeline(gpu_chip="sm_80").describe() != GpuPipeline(gpu_chip="sm_90").describe()
    for bad in (dict(parallelization_strategy="none"), dict(gpu_chip="sm90"), dict(gpu_format="exe"),
                dict(num_threads=4), dict(vl=8)):
        with pytest.raises(ValueError):
            GpuPipeline(**bad)
    chips = [p.gpu_chip for p in GpuPipeline.for_chips()]
    assert chips == ([cuda_info().chip(0)] if HAS_DEVICE else list(DEFAULT_CHIPS))


# ----- cache ----------------------------------------------------------------------------------------------------
def test_gpu_binaries_are_cached_on_disk_keyed_by_chip_and_cuda_versions() -> None:
    c = _contraction("spmm", "CSR")
    builds = {}
    for chip in CHIPS:
        low = lower_gpu(c, chip)
        builds[chip] = build_gpu(low.text, low.pipeline)
        assert builds[chip].so_path.exists()
        assert builds[chip].so_path.parent == Path(os.environ["UST_MLIR_CACHE_DIR"])
        meta = json.loads((builds[chip].so_path.parent / f"{builds[chip].key}.json").read_text())
        assert meta["device"] == "cuda"
        blob = builds[chip].so_path.read_bytes()
        assert bytes.fromhex("50ed55ba") in blob  # the embedded fatbin's magic number
    assert builds["sm_80"].key != builds["sm_90"].key
    fp = GPU.fingerprint()
    assert "driver=" in fp and "ptxas=" in fp
    # a second process finds the binary on disk
    code = ("from lowering.gpu.dispatch import lower_gpu; from mlir_bridge.gpu import build_gpu; "
            "import tests.test_gpu_lowering as t; low = lower_gpu(t._contraction('spmm', 'CSR'), 'sm_80'); "
            "print(build_gpu(low.text, low.pipeline).so_path)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == str(builds["sm_80"].so_path)


# ----- paths ------------------------------------------------------------------------------------------------------
def test_path_choice() -> None:
    assert gpu_path(_contraction("spmv", "CSR")) == "cusparse"
    assert gpu_path(_contraction("spmm", "BSR")) == "cusparse"
    assert gpu_path(_contraction("spmv", "COO")) == "cusparse"
    assert gpu_path(_contraction("spmv", "CSC")) == "sparsifier-gpu"  # torch would convert CSC every call
    assert gpu_path(_contraction("spmv", "CSC"), package="cupy") == "cusparse"
    assert gpu_path(_contraction("spmv", "BSR"), package="cupy") == "sparsifier-gpu"  # cupyx has no BSR
    assert gpu_path(_contraction("spmv", "DCSR")) == "sparsifier-gpu"
    assert gpu_path(_contraction("spgemm", "CSR")) == "sparsifier-gpu"
    assert gpu_path(_contraction("sampled", "CSR")) == "sparsifier-gpu"
    assert gpu_path(_contraction("spmv", "CSR"), "sparsifier-gpu") == "sparsifier-gpu"
    with pytest.raises(ValueError, match="cusparse"):
        gpu_path(_contraction("spmv", "DCSR"), "cusparse")
    with pytest.raises(ValueError):
        gpu_path(_contraction("spmv", "CSR"), "magic")
    assert [library_layout(f) for f in (N.CSR, N.CSC, N.COO, N.BSR((2, 3)), N.DCSR, N.Dense(2))] == \
        ["CSR", "CSC", "COO", "BSR", None, None]


def test_plan_introspection_without_a_device() -> None:
    import scipy.sparse as sp

    from frontend.ops.gpu._matmul import gpu_matmul_plan

    a = sp.random(40, 30, density=0.1, format="csr", dtype=np.float32, random_state=1)
    x = np.ones(30, np.float32)
    plan = gpu_matmul_plan(a, x, device="cuda")
    assert plan.path == "cusparse"
    forced = gpu_matmul_plan(a, x, device="cuda", path="sparsifier-gpu", chip="sm_80")
    assert forced.path == "sparsifier-gpu"
    assert "linalg.generic" in forced.mlir and "#sparse_tensor.encoding" in forced.mlir
    assert ".target sm_80" in forced.ptx
    names = [n for n, _ in forced.stages()]
    assert names[0] == "input" and "gpu-kernels" in names and names[-1] == "ptx"
    t = gpu_matmul_plan(a, np.ones(40, np.float32), device="cuda", transpose_a=True, path="sparsifier-gpu")
    assert library_layout(t.tensors[0].tensor_format) == "CSC"  # CSR^T viewed as CSC, same buffers
    assert "atom.global.add.f32" in t.ptx


@pytest.mark.parametrize("option", ["epilog", "prolog", "semiring"])
def test_semiring_prolog_epilog_compile_for_the_gpu(option: str) -> None:
    import scipy.sparse as sp

    from frontend.ops.gpu._matmul import gpu_matmul_plan

    a = sp.random(40, 30, density=0.1, format="csr", dtype=np.float32, random_state=2)
    kw = {"epilog": dict(epilog=lambda v: v * 2.0), "prolog": dict(prolog=lambda v: v + 1.0),
          "semiring": dict(semiring="min-plus")}[option]
    plan = gpu_matmul_plan(a, np.ones(30, np.float32), device="cuda", chip="sm_90", **kw)
    assert plan.path == "sparsifier-gpu"
    _ptxas(plan.ptx, "sm_90")


def test_vendor_library_glue_on_cpu_torch() -> None:
    torch = pytest.importorskip("torch")
    from frontend.ops.gpu._library import library_matmul
    from frontend.tensor import Tensor

    dense = torch.tensor([[1., 0, 2, 0], [0, 0, 0, 0], [3, 4, 0, 5], [0, 0, 6, 0]], dtype=torch.float64)
    x, xs = torch.arange(4, dtype=torch.float64), torch.arange(8, dtype=torch.float64).reshape(4, 2)
    objs = {"CSR": dense.to_sparse_csr(), "CSC": dense.to_sparse_csc(), "COO": dense.to_sparse().coalesce(),
            "BSR": dense.to_sparse_bsr((2, 2))}
    for layout, m in objs.items():
        t = Tensor.from_package(m)
        assert library_layout(t.tensor_format) == layout
        for b in (x, xs):
            got = library_matmul(t, layout, b, "torch", alpha=2.0)
            torch.testing.assert_close(got, 2.0 * (dense @ b))
        c = torch.ones(4, dtype=torch.float64)
        assert library_matmul(t, layout, x, "torch", c=c) is c
        torch.testing.assert_close(c, 1.0 + dense @ x)


# ----- no device: a clear error, never a dead interpreter ---------------------------------------------------------
@pytest.mark.skipif(HAS_DEVICE, reason="this machine has a CUDA device")
def test_execution_without_a_device_raises_runtime_error() -> None:
    code = """
import numpy as np, scipy.sparse as sp
from frontend.ops.gpu._matmul import gpu_matmul_plan
from lowering.gpu.dispatch import lower_gpu
from mlir_bridge.gpu import build_gpu, load_gpu
a = sp.random(20, 10, density=0.2, format="csr", dtype=np.float32, random_state=0)
plan = gpu_matmul_plan(a, np.ones(10, np.float32), device="cuda", path="sparsifier-gpu").plan()
for call in (plan.execute, lambda: load_gpu(plan._build)):
    try:
        call()
    except RuntimeError as err:
        assert str(err).startswith("no CUDA device"), err
        print("ok")
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=300,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["ok", "ok"]


# ----- on a GPU ------------------------------------------------------------------------------------------------------
def _cuda_torch():  # noqa: ANN202
    torch = pytest.importorskip("torch")
    if not HAS_DEVICE or not torch.cuda.is_available():
        pytest.skip("no CUDA device (or torch without CUDA)")
    return torch


def _gpu_operand(torch, name: str, dense, dtype):  # noqa: ANN001, ANN202
    d = dense.to(device="cuda", dtype=dtype)
    return {"CSR": lambda: d.to_sparse_csr(), "CSC": lambda: d.to_sparse_csc(),
            "COO": lambda: d.to_sparse().coalesce(), "BSR": lambda: d.to_sparse_bsr((2, 2)),
            "Dense": lambda: d}[name]()


def _matrix(torch, rows: int, cols: int, seed: int):  # noqa: ANN001, ANN202
    g = torch.Generator().manual_seed(seed)
    m = torch.rand(rows, cols, generator=g, dtype=torch.float64)
    m[m < 0.8] = 0
    m[1] = 0  # an empty row
    return m


@pytest.mark.gpu
@pytest.mark.parametrize("dtype_name", ["float32", "float64"])
@pytest.mark.parametrize("path", ["auto", "sparsifier-gpu"])
@pytest.mark.parametrize("fmt_name", ["CSR", "CSC", "COO", "BSR", "Dense"])
def test_gpu_matmul_matches_torch_dense(fmt_name: str, path: str, dtype_name: str) -> None:
    torch = _cuda_torch()
    from frontend.ops import _api as ops

    if fmt_name in ("COO",) and path == "sparsifier-gpu":
        pytest.skip("the sparsifier has no GPU kernel for COO (cuSPARSE runs it)")
    dtype = getattr(torch, dtype_name)
    for rows, cols in ((64, 48), (1, 1), (7, 10)):
        dense = _matrix(torch, rows + rows % 2, cols + cols % 2, rows)
        a = _gpu_operand(torch, fmt_name, dense, dtype)
        ref = dense.to(device="cuda", dtype=dtype)
        x = torch.rand(dense.shape[1], device="cuda", dtype=dtype)
        xs = torch.rand(dense.shape[1], 3, device="cuda", dtype=dtype)
        tol = dict(rtol=1e-4, atol=1e-4) if dtype == torch.float32 else {}
        from frontend.ops.gpu._matmul import gpu_matmul_plan

        plan = gpu_matmul_plan(a, x, path=path)
        y = plan.execute()
        assert y.is_cuda and y.dtype == dtype
        torch.testing.assert_close(y, ref @ x, **tol)
        torch.testing.assert_close(gpu_matmul_plan(a, xs, path=path).execute(), ref @ xs, **tol)
        # through frontend.matmul (CUDA operands route to the GPU), with c, alpha and beta
        c = torch.ones(dense.shape[0], device="cuda", dtype=dtype)
        got = ops.matmul(a, x, c, alpha=2.0, beta=3.0)
        assert got is c
        torch.testing.assert_close(c, 3.0 + 2.0 * (ref @ x), **tol)


@pytest.mark.gpu
def test_gpu_explicit_stream_device_request_and_einsum() -> None:
    torch = _cuda_torch()
    from frontend.ops import _api as ops
    from frontend.ops.gpu._matmul import gpu_matmul_plan

    dense = _matrix(torch, 300, 200, 5)
    a = dense.to("cuda").to_sparse_csr()
    x = torch.rand(200, device="cuda", dtype=torch.float64)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        y = gpu_matmul_plan(a, x, path="sparsifier-gpu", stream=s).execute()
    s.synchronize()
    torch.testing.assert_close(y, dense.to("cuda") @ x)
    # CPU operands with device="cuda": computed on the GPU, returned like the inputs
    y_np = ops.matmul(dense.numpy(), x.cpu().numpy(), device="cuda")
    np.testing.assert_allclose(y_np, dense.numpy() @ x.cpu().numpy(), rtol=1e-10)
    b = torch.rand(300, 200, device="cuda", dtype=torch.float64)
    got = ops.einsum("ij,ij->ij", a, b)
    torch.testing.assert_close(got, dense.to("cuda") * b)


@pytest.mark.gpu
@pytest.mark.parametrize("name", ["DELTA8", "DIAI"])
def test_gpu_emitter_formats_match_numpy(name: str) -> None:
    _cuda_torch()
    from frontend.ops.gpu._matmul import gpu_matmul_plan
    from frontend.tensor import Tensor

    rng = np.random.default_rng(1)
    for n in (50, 5000):
        d = rng.random((n, n)).astype(np.float32)
        d = np.triu(np.tril(d, 3), -3) if name == "DIAI" else np.where(d > 0.99, d, 0).astype(np.float32)
        x = rng.random(n).astype(np.float32)
        y = gpu_matmul_plan(Tensor.from_dense(d, EMITTER_FORMATS[name]), x, device="cuda").execute()
        np.testing.assert_allclose(y, d @ x, rtol=1e-4, atol=1e-4)


@pytest.mark.gpu
def test_gpu_cupy_operands() -> None:
    cupy = pytest.importorskip("cupy")
    if not HAS_DEVICE:
        pytest.skip("no CUDA device")
    import cupyx.scipy.sparse as csp
    import scipy.sparse as sp

    from frontend.ops.gpu._matmul import gpu_matmul_plan

    a = sp.random(100, 80, density=0.05, format="csr", dtype=np.float32, random_state=3)
    x = np.random.default_rng(0).random(80, dtype=np.float32)
    for path in ("auto", "sparsifier-gpu"):
        y = gpu_matmul_plan(csp.csr_matrix(a), cupy.asarray(x), path=path).execute()
        assert isinstance(y, cupy.ndarray)
        np.testing.assert_allclose(y.get(), a @ x, rtol=1e-5, atol=1e-5)


def test_matmul_class_routes_to_the_gpu_plan() -> None:
    import scipy.sparse as sp

    from frontend.ops import _api as ops
    from frontend.ops.gpu._matmul import GpuMatmul

    a = sp.random(40, 30, density=0.1, format="csr", dtype=np.float32, random_state=4)
    x = np.ones(40, np.float32)
    with ops.Matmul(a, x, device="cuda", transpose_a=True) as mm:
        assert isinstance(mm.backend, GpuMatmul) and mm.path == "sparsifier-gpu"  # CSC with torch: generated code
        assert library_layout(mm.backend.tensors[0].tensor_format) == "CSC"
        mm.reset_operands(a=a * 2.0)
        assert library_layout(mm.backend.tensors[0].tensor_format) == "CSC"
        with pytest.raises(ValueError):
            mm.reset_operands(b=np.ones(41, np.float32))
    assert isinstance(ops.Matmul(a, np.ones(30, np.float32)), ops.Matmul)  # CPU operands stay on the CPU
    with pytest.raises(ValueError, match="device"):
        ops.matmul(a, np.ones(30, np.float32), device="tpu")


def test_stream_shim_uses_the_callers_stream_or_forwards(tmp_path: Path) -> None:
    """The shim linked into GPU modules, against a fake runtime (no GPU needed)."""
    import ctypes

    from mlir_bridge.gpu import STREAM_SHIM

    if shutil.which("cc") is None:
        pytest.skip("no C compiler")
    (tmp_path / "fake.c").write_text(
        "int creates, syncs, destroys;\n"
        "void *mgpuStreamCreate(void) { creates++; return (void *)0x1234; }\n"
        "void mgpuStreamSynchronize(void *s) { syncs++; }\n"
        "void mgpuStreamDestroy(void *s) { destroys++; }\n")
    (tmp_path / "module.c").write_text(
        "void *mgpuStreamCreate(void); void mgpuStreamSynchronize(void *); void mgpuStreamDestroy(void *);\n"
        "void *run(void) { void *s = mgpuStreamCreate(); mgpuStreamSynchronize(s); mgpuStreamDestroy(s);"
        " return s; }\n")
    cc = ["cc", "-shared", "-fPIC", "-O2"]
    subprocess.run(cc + [str(tmp_path / "fake.c"), "-o", str(tmp_path / "libfake.so")], check=True)
    subprocess.run(cc + ['-DUST_RUNTIME="libfake.so"', str(tmp_path / "module.c"), str(STREAM_SHIM), "-o",
                         str(tmp_path / "libmodule.so"),
                         f"-L{tmp_path}", f"-Wl,-rpath,{tmp_path}", "-lfake", "-ldl"], check=True)
    mod = ctypes.CDLL(str(tmp_path / "libmodule.so"), mode=ctypes.RTLD_LOCAL)
    fake = ctypes.CDLL(str(tmp_path / "libfake.so"))
    mod.run.restype = ctypes.c_void_p
    counts = lambda: [ctypes.c_int.in_dll(fake, n).value for n in ("creates", "syncs", "destroys")]  # noqa: E731
    assert mod.run() == 0x1234 and counts() == [1, 1, 1]  # not active: the runtime's own stream
    mod.ust_set_stream(ctypes.c_void_p(0x99), 1)
    assert mod.run() == 0x99 and counts() == [1, 1, 1]  # active: the caller's stream, no wait, no destroy
    mod.ust_set_stream(None, 0)
    assert mod.run() == 0x1234 and counts() == [2, 2, 2]


def test_host_side_against_a_fake_cuda_driver(tmp_path: Path) -> None:
    """Everything but the device: load (fatbin), argument passing, launch grid, the caller's stream.

    A fake libcuda.so.1 (tests/fake_cuda/fake_libcuda.c) records what the MLIR CUDA runtime asks of it.
    """
    if shutil.which("cc") is None:
        pytest.skip("no C compiler")
    lib = tmp_path / "libcuda.so.1"
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", str(ROOT / "tests/fake_cuda/fake_libcuda.c"), "-o", str(lib)],
                   check=True)
    env = dict(os.environ, LD_LIBRARY_PATH=str(tmp_path), PYTHONPATH=str(ROOT),
               UST_MLIR_CACHE_DIR=str(tmp_path / "cache"))  # the fake driver's version keys its own entries
    proc = subprocess.run([sys.executable, str(ROOT / "tests/fake_cuda/run_with_fake_driver.py")],
                          capture_output=True, text=True, cwd=ROOT, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(proc.stdout.strip().splitlines()[-1])
    assert seen["info"] == [1, "sm_90"]
    for name, kernel in (("csr", "kernel0"), ("dense", "main_kernel"), ("delta", "main_kernel")):
        case = seen[name]
        assert "load fatbin" in case["load"], case
        launches = [ln for ln in case["on_stream"].splitlines() if ln.startswith("launch")]
        assert launches and all(f"launch {kernel} " in ln for ln in launches), case
        assert all("stream 0x777" in ln for ln in launches), case  # the caller's stream
        assert "stream-create" not in case["on_stream"] and "stream-sync" not in case["on_stream"], case
        assert "memcpy" not in case["on_stream"] and "alloc" not in case["on_stream"], case  # zero-copy
        own = case["own"]
        assert "stream-create" in own and "stream-sync" in own and "stream-destroy" in own, case
        params = {int(p, 16) for p in launches[0].split("params")[1].split()}  # the first 25 only
        expected = case["pointers"] if name != "delta" else case["pointers"][:-1]  # y lies beyond those
        for ptr in expected:  # every argument buffer reaches the kernel as itself
            assert int(ptr, 16) in params, (name, ptr, launches[0])
    csr_launch = next(ln for ln in seen["csr"]["on_stream"].splitlines() if ln.startswith("launch"))
    assert "grid 8 1 1 block 256 1 1" in csr_launch  # ceil(2000 / 256) blocks


def test_gpu_plan_input_errors() -> None:
    import scipy.sparse as sp

    from frontend.ops.gpu._matmul import gpu_matmul_plan

    a = sp.random(10, 8, density=0.3, format="csr", dtype=np.float32, random_state=5)
    x = np.ones(8, np.float32)
    with pytest.raises(ValueError, match="shape"):
        gpu_matmul_plan(a, x, np.zeros(11, np.float32), device="cuda")
    with pytest.raises(TypeError, match="dtype"):
        gpu_matmul_plan(a, x, np.zeros(10, np.float64), device="cuda")
    with pytest.raises(TypeError, match="dtype"):
        gpu_matmul_plan(a, np.ones(8, np.float64), device="cuda")
    with pytest.raises(ValueError, match="dense"):
        gpu_matmul_plan(a, a.T.tocsr(), device="cuda", out_format=N.CSR)
    with pytest.raises(ValueError, match="2-D a"):
        gpu_matmul_plan(np.ones((2, 3, 4), np.float32), np.ones(4, np.float32), device="cuda")


def test_print_mlir_shows_the_gpu_module_and_ptx() -> None:
    import io

    import scipy.sparse as sp

    from frontend.ops import _api as ops

    a = sp.random(30, 20, density=0.2, format="csr", dtype=np.float32, random_state=6)
    for stage, needle in (("ptx", ".entry kernel0"), ("gpu", "gpu.module @sparse_kernels"),
                          ("linalg", "linalg.generic")):
        buf = io.StringIO()
        ops.print_mlir(a, np.ones(20, np.float32), device="cuda", stage=stage, file=buf)
        assert needle in buf.getvalue(), stage


@pytest.mark.parametrize("spmm", [False, True])
def test_dia_row_kernel_runs_correctly_on_the_cpu(spmm: bool) -> None:
    """The GPU's DIA-I loops are plain memref code: compiled for the CPU they must match numpy."""
    from frontend.tensor import Tensor
    from lowering.gpu.dia import applies, dia_rows_module
    from lowering.pipelines import Pipeline
    from mlir_bridge import compile_module

    rng = np.random.default_rng(7)
    for m, n in ((7, 5), (5, 9), (1, 1), (40, 40)):
        d = np.triu(np.tril(rng.random((m, n)), 2), -3).astype(np.float32)
        t = Tensor.from_dense(d, N.DIAI, index_type=np.int32)
        b = rng.random((n, 3) if spmm else n).astype(np.float32)
        c = Contraction(("ik", "kj") if spmm else ("ik", "k"),
                        (_spec(N.DIAI, (m, n), "f32"), _spec(None, b.shape, "f32")),
                        "ij" if spmm else "i", TensorSpec(None, (m, 3) if spmm else (m,), "f32"), init="c")
        assert applies(c)
        out = np.ones((m, 3) if spmm else m, np.float32)
        compile_module(dia_rows_module(c), Pipeline()).function("main")(t.pos(0), t.crd(0), t.val, b, out)
        np.testing.assert_allclose(out, 1 + d @ b, rtol=1e-5, atol=1e-5)
    low = lower_gpu(c, "sm_90", "emitter-gpu")
    assert "scf.parallel (%i)" in low.text  # the GPU path uses these very loops
    _ptxas(gpu_assembly(low.text, low.pipeline), "sm_90")


def test_compile_module_for_the_gpu_target_without_a_device_raises_clearly():
    """``compile_module(..., target="gpu")`` checks for a driver before loading anything."""
    import mlir_bridge as mb
    import mlir_bridge.gpu  # noqa: F401 - registers the "gpu" target
    from mlir_bridge.gpu.cuda_driver import cuda_info

    if cuda_info().available:
        pytest.skip("a CUDA device is present")
    with pytest.raises(RuntimeError, match="no CUDA device"):
        mb.compile_module("module {}", "builtin.module(canonicalize)", target="gpu")
