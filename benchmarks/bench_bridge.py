"""mlir_bridge benchmark: compile time, warm-disk-cache first call, call overhead, kernel speed vs scipy.

    .venv/bin/python benchmarks/bench_bridge.py [--json out.json]

Uses a fresh temporary cache folder. Times are medians of repeated runs, in the same process
as the scipy reference.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
import uuid
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "tests")]

FRESH = """
import time, sys
t0 = time.perf_counter()
import numpy as np
import mlir_bridge as mb
from lowering.pipelines import Pipeline
from bridge_kernels import spmv
text = spmv(4, 4, name=sys.argv[1])
t1 = time.perf_counter()
fn = mb.compile_module(text, Pipeline()).function(sys.argv[1])
y = fn(np.array([0, 1, 2, 3, 4]), np.array([0, 1, 2, 3]), np.ones(4), np.ones(4), np.zeros(4))
t2 = time.perf_counter()
assert y.tolist() == [1.0] * 4
print((t1 - t0) * 1e3, (t2 - t1) * 1e3, mb.cache_info().disk_hits, int("mlir" in sys.modules))
"""


def per_call_us(fn, number: int, repeat: int = 7) -> float:
    return min(timeit.repeat(fn, number=number, repeat=repeat)) / number * 1e6


def rss() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def main() -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="also write the results to this file")
    opts = parser.parse_args()
    os.environ["UST_MLIR_CACHE_DIR"] = tempfile.mkdtemp(prefix="ust-bench-cache-")

    import scipy.sparse as sp

    import mlir_bridge as mb
    from bridge_kernels import csr_buffers, random_csr, spgemm, spmv
    from lowering.pipelines import Pipeline

    pipe, res = Pipeline(), {}

    t = time.perf_counter()
    mb.compile_module(spmv(4, 4, name="spmv_first"), pipe)
    res["compile_first_ms"] = (time.perf_counter() - t) * 1e3  # includes importing mlir
    samples = []
    for i in range(5):
        t = time.perf_counter()
        mb.compile_module(spmv(2000, 2000, name=f"spmv_c{i}"), pipe)
        samples.append((time.perf_counter() - t) * 1e3)
    res["compile_spmv_ms"] = statistics.median(samples)
    t = time.perf_counter()
    mb.compile_module(spgemm(64, 64, 64), pipe)
    res["compile_spgemm_ms"] = (time.perf_counter() - t) * 1e3

    name = f"spmv_fresh_{uuid.uuid4().hex[:8]}"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "tests")]))
    subprocess.run([sys.executable, "-c", FRESH, name], env=env, check=True, capture_output=True)  # fills the cache
    runs = [subprocess.run([sys.executable, "-c", FRESH, name], env=env, check=True, capture_output=True,
                           text=True).stdout.split() for _ in range(5)]
    assert all(r[2:] == ["1", "0"] for r in runs), "expected disk-cache hits without importing mlir"
    res["fresh_process_imports_ms"] = statistics.median(float(r[0]) for r in runs)
    res["fresh_process_first_call_ms"] = statistics.median(float(r[1]) for r in runs)

    fn = mb.compile_module(spmv(4, 4), pipe).function("spmv")
    a = random_csr(4, 4, 0.5, seed=0)
    args = (*csr_buffers(a), np.ones(4), np.zeros(4))
    bound = fn.bind(*args)
    res["call_4x4_us"] = per_call_us(lambda: fn(*args), 20000)
    res["bound_call_4x4_us"] = per_call_us(bound, 50000)
    raw = fn._cfn
    raw_args = list(bound._cargs)
    res["raw_ctypes_4x4_us"] = per_call_us(lambda: raw(*raw_args), 50000)  # the floor: ctypes + kernel

    n = 2000
    big = random_csr(n, n, 0.01, seed=1)
    x, y = np.random.default_rng(1).standard_normal(n), np.zeros(n)
    fbig = mb.compile_module(spmv(n, n), pipe).function("spmv")
    pos, crd, val = csr_buffers(big)
    bbig = fbig.bind(pos, crd, val, x, y)
    y[:] = 0
    np.testing.assert_allclose(bbig(), big @ x, rtol=1e-10)
    res["spmv_2000_bound_us"] = per_call_us(bbig, 2000)
    res["spmv_2000_call_us"] = per_call_us(lambda: fbig(pos, crd, val, x, y), 2000)
    res["spmv_2000_scipy_us"] = per_call_us(lambda: big @ x, 2000)
    vec = Pipeline(vl=8, reassociate_fp_reductions=True, enable_index_optimizations=True)
    fvec = mb.compile_module(spmv(n, n), vec).function("spmv")
    res["spmv_2000_vl8_bound_us"] = per_call_us(fvec.bind(pos, crd, val, x, y), 2000)
    res["spmv_2000_nnz"] = big.nnz

    g = mb.compile_module(spgemm(64, 64, 64), pipe).function("spgemm")
    m = random_csr(64, 64, 0.05, seed=2)
    gargs = (*csr_buffers(m), *csr_buffers(m))
    for _ in range(500):
        g(*gargs)
        fn(*args)
    before = rss()
    for _ in range(10000):
        g(*gargs)
        fn(*args)
    res["rss_growth_10k_calls_mib"] = (rss() - before) / 2**20
    res["spgemm_64_call_us"] = per_call_us(lambda: g(*gargs), 2000)
    sm = sp.csr_matrix(m)
    res["spgemm_64_scipy_us"] = per_call_us(lambda: sm @ sm, 2000)

    rows = [
        ("compile CSR SpMV, first in process (incl. import mlir)", res["compile_first_ms"], "ms"),
        ("compile CSR SpMV 2000x2000 (median of 5)", res["compile_spmv_ms"], "ms"),
        ("compile CSR x CSR -> CSR SpGEMM (i1 workaround)", res["compile_spgemm_ms"], "ms"),
        ("fresh process, warm disk cache: imports", res["fresh_process_imports_ms"], "ms"),
        ("fresh process, warm disk cache: compile_module -> first SpMV result", res["fresh_process_first_call_ms"],
         "ms"),
        ("4x4 CSR SpMV, fn(*args) (plain call, total)", res["call_4x4_us"], "us"),
        ("4x4 CSR SpMV, fn.bind(...)() (bound call, total)", res["bound_call_4x4_us"], "us"),
        ("4x4 CSR SpMV, raw ctypes call with prebuilt args (floor)", res["raw_ctypes_4x4_us"], "us"),
        (f"2000x2000 1% CSR SpMV (nnz={big.nnz}), bound call", res["spmv_2000_bound_us"], "us"),
        ("2000x2000 1% CSR SpMV, bound call, Pipeline(vl=8, reassoc, idx32)", res["spmv_2000_vl8_bound_us"], "us"),
        ("2000x2000 1% CSR SpMV, plain call", res["spmv_2000_call_us"], "us"),
        ("2000x2000 1% CSR SpMV, scipy A @ x", res["spmv_2000_scipy_us"], "us"),
        ("64x64 5% SpGEMM, plain call (kernel-allocated results)", res["spgemm_64_call_us"], "us"),
        ("64x64 5% SpGEMM, scipy A @ A", res["spgemm_64_scipy_us"], "us"),
        ("RSS growth over 10k SpGEMM + 10k SpMV calls", res["rss_growth_10k_calls_mib"], "MiB"),
    ]
    width = max(len(r[0]) for r in rows)
    print(f"{'measurement':<{width}}  {'value':>10}")
    for label, value, unit in rows:
        print(f"{label:<{width}}  {value:>10.2f} {unit}")
    print(f"SpMV 2000 bound call / scipy: {res['spmv_2000_bound_us'] / res['spmv_2000_scipy_us']:.2f}x time")
    if opts.json:
        Path(opts.json).write_text(json.dumps(res, indent=1))
    return res


if __name__ == "__main__":
    main()
