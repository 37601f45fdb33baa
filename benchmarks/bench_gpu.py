"""GPU speed: SpMV on a large stencil, the delta-format sweep and block-sparse SpMM, against cuSPARSE and
cuBLAS (ratios from one run).

    .venv/bin/python benchmarks/bench_gpu.py [--rows 1500000] [--size 8192] [--quick]

Skipped (exit status 0, one line saying why) when no CUDA device or no CUDA-enabled torch exists.

1. SpMV, float32, a 7-point 3-D stencil with ``rows`` rows, all buffers on the device:
   torch.sparse CSR / COO (cuSPARSE) and cupyx CSR when CuPy is installed, against ours: CSR and COO
   through ``path="cusparse"`` (the library dispatch), CSR through ``"sparsifier-gpu"`` (MLIR's
   sparsifier, NVVM) and DIA (row-major diagonals, DIA-I) through ``"emitter-gpu"``; and the CPU path on
   the same matrix in host memory (``threads="auto"``), so the ratios compare GPU and CPU too.
2. The delta sweep (MACKO): ``size x size`` SpMV with uniformly random nonzeros, sparsity 50%..99%,
   float16 and float32: dense GEMV (torch.mv, cuBLAS) and torch CSR against ours DELTA(8) / DELTA(4).
3. Block-sparse SpMM (block-pruned weights): ``size x size`` with 16 x 16 blocks kept at 10% and 30%,
   times a ``size x 64`` dense matrix, float16 and float32: dense GEMM (torch.mm, cuBLAS) and torch BSR
   (cuSPARSE bsrmm) against ours BlockedELL (cuSPARSE's blocked-ELL SpMM, ``path="cusparse"``).
Times are medians of repeated, synchronized calls.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import scipy.sparse as sp


def median_time(fn: Callable[[], Any], sync: Callable[[], None], min_time: float = 0.3, reps: int = 100) -> float:
    fn()
    sync()
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < reps and (time.perf_counter() - start < min_time or len(times) < 5):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def stencil(rows: int, dtype: Any = np.float32) -> sp.dia_matrix:
    """7-point 3-D Laplacian-like band: offsets 0, +-1, +-s, +-s^2 with s = cbrt(rows)."""
    s = max(2, round(rows ** (1 / 3)))
    offsets = [0, 1, -1, s, -s, s * s, -s * s]
    data = -np.ones((len(offsets), rows), dtype=dtype)
    data[0] = 6.0
    return sp.dia_matrix((data, offsets), shape=(rows, rows))


def bench_stencil(rows: int, torch: Any) -> None:
    from frontend import NamedFormats as NF, Tensor
    from frontend.ops.gpu._matmul import gpu_matmul_plan, to_device
    from frontend.storage._convert import convert

    A = stencil(rows)
    csr = A.tocsr()
    csr.sort_indices()
    x_np = np.random.default_rng(0).standard_normal(rows).astype(np.float32)
    ref = csr @ x_np
    sync = torch.cuda.synchronize
    x = torch.from_numpy(x_np).cuda()
    t_csr = torch.sparse_csr_tensor(torch.from_numpy(csr.indptr).cuda(), torch.from_numpy(csr.indices).cuda(),
                                    torch.from_numpy(csr.data).cuda(), csr.shape)
    t_coo = t_csr.to_sparse_coo().coalesce()
    rows_out: list[tuple[str, float, np.ndarray]] = []
    rows_out.append(("torch.sparse CSR (cuSPARSE)", median_time(lambda: torch.mv(t_csr, x), sync),
                     torch.mv(t_csr, x).cpu().numpy()))
    rows_out.append(("torch.sparse COO (cuSPARSE)", median_time(lambda: torch.mv(t_coo, x), sync),
                     torch.mv(t_coo, x).cpu().numpy()))
    try:
        import cupy
        import cupyx.scipy.sparse as csp

        c_csr, c_x = csp.csr_matrix(csr), cupy.asarray(x_np)
        cs = cupy.cuda.Device().synchronize
        rows_out.append(("cupyx CSR (cuSPARSE)", median_time(lambda: c_csr @ c_x, cs), (c_csr @ c_x).get()))
    except ImportError:
        print("  (cupy not installed: no cupyx row)")
    base = Tensor.from_package(csr)
    ours = [("ours CSR  path=cusparse", base, "cusparse"), ("ours CSR  path=sparsifier-gpu", base, "sparsifier-gpu"),
            ("ours COO  path=cusparse", convert(base, NF.COO), "cusparse"),
            ("ours DIA-I path=emitter-gpu", convert(base, NF.DIAI), "emitter-gpu")]
    for label, t, path in ours:
        plan = gpu_matmul_plan(to_device(t), x, path=path).plan()
        rows_out.append((f"{label}", median_time(plan.execute, sync), plan.execute().cpu().numpy()))
    from frontend import Matmul

    cpu = Matmul(csr, x_np, threads="auto").plan()  # the CPU path on host buffers (same matrix)
    rows_out.append(("ours CSR  CPU (threads=auto)", median_time(cpu.execute, lambda: None), cpu.execute()))
    print(f"\nSpMV float32, 7-point stencil, {rows} rows, nnz {csr.nnz} (ms; ratio = torch CSR / this)")
    t_ref = rows_out[0][1]
    for label, t, y in rows_out:
        err = float(np.max(np.abs(y - ref)) / max(1.0, float(np.max(np.abs(ref)))))
        print(f"  {label:34s} {t * 1e3:9.3f} ms   {t_ref / t:6.2f}x   max rel err {err:.1e}")


def bench_delta(size: int, sparsities: list[float], torch: Any) -> None:
    from frontend import NamedFormats as NF, Tensor
    from frontend.ops.gpu._matmul import gpu_matmul_plan, to_device
    from frontend.storage._convert import convert

    sync = torch.cuda.synchronize
    rng = np.random.default_rng(1)
    for dtype in (np.float16, np.float32):
        print(f"\nDELTA SpMV {np.dtype(dtype).name}, {size} x {size} (ms; speedup = dense GEMV / DELTA)")
        print(f"{'sparsity':>8} {'dense':>8} {'torchCSR':>9} {'DELTA8':>8} {'DELTA4':>8}   speedup 8, 4")
        for s in sparsities:
            d = rng.random((size, size), dtype=np.float32)
            d[d < s] = 0
            d = d.astype(dtype)
            x_np = rng.random(size).astype(dtype)
            dense, x = torch.from_numpy(d).cuda(), torch.from_numpy(x_np).cuda()
            t_dense = median_time(lambda: torch.mv(dense, x), sync)
            t_csr = float("nan")
            if dtype == np.float32:
                tc = dense.to_sparse_csr()
                t_csr = median_time(lambda: torch.mv(tc, x), sync)
            base = Tensor.from_dense(d, NF.CSR)
            times = []
            for bits in (8, 4):
                plan = gpu_matmul_plan(to_device(convert(base, NF.DELTA(bits), max_fill=None)), x).plan()
                times.append(median_time(plan.execute, sync))
                err = float((plan.execute().float() - dense.float() @ x.float()).abs().max())
                assert err < (1.0 if dtype == np.float16 else 1e-2) * max(1.0, size * (1 - s) / 100), err
            print(f"{s:8.2f} {t_dense * 1e3:8.3f} {t_csr * 1e3:9.3f} {times[0] * 1e3:8.3f} {times[1] * 1e3:8.3f}"
                  f"   {t_dense / times[0]:5.2f}x {t_dense / times[1]:5.2f}x")


def bench_blocked(size: int, torch: Any, block: int = 16, n: int = 64) -> None:
    from frontend import NamedFormats as NF, Tensor
    from frontend.ops.gpu._matmul import gpu_matmul_plan, to_device

    sync = torch.cuda.synchronize
    rng = np.random.default_rng(2)
    nb = size // block
    print(f"\nblock-sparse SpMM, {size} x {size} @ {size} x {n}, {block}x{block} blocks (ms; speedup = dense / this)")
    print(f"{'dtype':>8} {'density':>8} {'dense':>8} {'torchBSR':>9} {'BlockedELL':>11}   speedup BSR, ELL")
    for dtype in (np.float16, np.float32):
        for density in (0.1, 0.3):
            keep = np.kron(rng.random((nb, nb)) < density, np.ones((block, block), bool))
            d = np.where(keep, rng.standard_normal((size, size)), 0).astype(dtype)
            dense = torch.from_numpy(d).cuda()
            b = torch.from_numpy(rng.standard_normal((size, n)).astype(dtype)).cuda()
            t_dense = median_time(lambda: torch.mm(dense, b), sync)
            bsr = dense.to_sparse_bsr((block, block))
            t_bsr = median_time(lambda: torch.mm(bsr, b), sync)
            plan = gpu_matmul_plan(to_device(Tensor.from_dense(d, NF.BlockedELL((block, block)))), b).plan()
            assert plan.path == "cusparse", plan.path
            t_ell = median_time(plan.execute, sync)
            err = float((plan.execute().float() - dense.float() @ b.float()).abs().max())
            assert err < (0.5 if dtype == np.float16 else 1e-2) * max(1.0, size * density / 100), err
            print(f"{np.dtype(dtype).name:>8} {density:8.2f} {t_dense * 1e3:8.3f} {t_bsr * 1e3:9.3f} "
                  f"{t_ell * 1e3:11.3f}   {t_dense / t_bsr:5.2f}x {t_dense / t_ell:5.2f}x")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rows", type=int, default=1_500_000)
    ap.add_argument("--size", type=int, default=8192)
    ap.add_argument("--quick", action="store_true", help="small problems (smoke run)")
    args = ap.parse_args()
    from mlir_bridge.gpu.cuda_driver import cuda_info

    info = cuda_info()
    if not info.available:
        print(f"bench_gpu: skipped: no CUDA device ({info.error})")
        return 0
    try:
        import torch
    except ImportError:
        print("bench_gpu: skipped: torch is not installed")
        return 0
    if not torch.cuda.is_available():
        print("bench_gpu: skipped: this torch build has no CUDA")
        return 0
    rows, size = (50_000, 2048) if args.quick else (args.rows, args.size)
    print(f"device: {torch.cuda.get_device_name(0)} ({info.chip(0)}), driver {info.driver_version}")
    bench_stencil(rows, torch)
    bench_delta(size, [0.5, 0.9, 0.95, 0.99] if not args.quick else [0.9, 0.99], torch)
    bench_blocked(size, torch)
    return 0


if __name__ == "__main__":
    sys.exit(main())
