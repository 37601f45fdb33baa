"""DELTA(b) SpMV against numpy's dense GEMV at equal threads (the goal: DELTA(8) >= 1.3x dense at 50%).

    .venv/bin/python benchmarks/bench_delta.py [--size 8192] [--sparsity 0.5] [--bits 2 4 8] [--threads 1 2]
                                               [--rounds 15] [--quick] [--out benchmarks/results/delta_gemv.md]

One child process per thread count (numpy's BLAS threads are fixed when numpy loads:
``OPENBLAS_NUM_THREADS``/``OMP_NUM_THREADS``/``MKL_NUM_THREADS`` are set before the import). In each, a
``size x size`` float32 matrix with uniformly random nonzeros: numpy ``W @ x`` against our
``Matmul(DELTA(b), x, threads=n)``, planned once, timed round-robin, minimum of ``rounds`` rounds (one
thread: ``time.thread_time``; more: ``time.perf_counter``, after a pause of ``SETTLE_S`` so that the
other side's idle threads have stopped spinning, one untimed call and ``BURST`` timed ones). Also printed:
the bytes each side reads (dense: 4 per element; DELTA: values plus the gap buffer, bit-packed for b < 8,
plus positions) and the ratio of bytes, the bound of the speedup where both run at the memory bandwidth.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

SETTLE_S = 0.3
"""Pause before each timed multi-thread call: OpenBLAS's idle workers spin (``sched_yield``) for about
0.1 s after a GEMV, and OpenMP teams for their own wait time; a contender timed right after the other one
would share the cores with those spinners."""
BURST = 3
"""Timed calls per contender and round after the pause (the first call after it, untimed, wakes the threads)."""


def child(size: int, sparsity: float, bits: list[int], threads: int, rounds: int) -> list[dict]:
    import time

    import numpy as np

    from frontend import Matmul, NamedFormats as NF, Tensor

    rng = np.random.default_rng(0)
    w = rng.standard_normal((size, size)).astype(np.float32)
    w[rng.random((size, size)) < sparsity] = 0.0
    x = rng.standard_normal(size).astype(np.float32)
    ref = w.astype(np.float64) @ x.astype(np.float64)
    clock = time.thread_time if threads == 1 else time.perf_counter
    fns = {"dense": lambda: w @ x}
    stored = {}
    for b in bits:
        t = Tensor.from_dense(w, NF.DELTA(b), index_type=np.int32)
        mm = Matmul(t, x, threads=threads).plan()
        y = np.asarray(mm.execute().to_dense(), dtype=np.float64)
        assert np.abs(y - ref).max() <= 1e-3 * max(1.0, np.abs(ref).max()), b
        fns[f"delta{b}"] = mm.execute
        stored[b] = (t.nse, t.crd(1).nbytes + t.pos(1).nbytes + t.val.nbytes, mm.path)
    best = {k: float("inf") for k in fns}
    settle = SETTLE_S if threads > 1 else 0.0
    for _ in range(rounds):
        for k, fn in fns.items():
            if settle:
                time.sleep(settle)
                fn()  # wakes this side's threads; the next calls find them spinning, as back-to-back calls do
            for _ in range(BURST if settle else 1):
                t0 = clock()
                fn()
                best[k] = min(best[k], clock() - t0)
    dense_bytes = w.nbytes
    return [{"threads": threads, "bits": b, "nnz": int(np.count_nonzero(w)), "stored": stored[b][0],
             "bytes": stored[b][1], "path": stored[b][2], "dense_ms": best["dense"] * 1e3,
             "ours_ms": best[f"delta{b}"] * 1e3, "speedup": best["dense"] / best[f"delta{b}"],
             "byte_bound": dense_bytes / stored[b][1]} for b in bits]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--size", type=int, default=8192)
    ap.add_argument("--sparsity", type=float, default=0.5)
    ap.add_argument("--bits", type=int, nargs="+", default=[2, 4, 8])
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--quick", action="store_true", help="2048 x 2048, 5 rounds")
    ap.add_argument("--out", default=None, help="markdown table to write")
    ap.add_argument("--child", type=int, default=0, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.quick:
        args.size, args.rounds = 2048, 5
    if args.child:
        print(json.dumps(child(args.size, args.sparsity, args.bits, args.child, args.rounds)))
        return
    rows: list[dict] = []
    for n in args.threads:
        env = dict(os.environ, OPENBLAS_NUM_THREADS=str(n), OMP_NUM_THREADS=str(n), MKL_NUM_THREADS=str(n))
        cmd = [sys.executable, os.path.abspath(__file__), "--size", str(args.size), "--sparsity",
               str(args.sparsity), "--rounds", str(args.rounds), "--child", str(n), "--bits", *map(str, args.bits)]
        out = subprocess.run(cmd, env=env, check=True, capture_output=True, text=True).stdout
        rows += json.loads(out.strip().splitlines()[-1])
    head = (f"float32 SpMV, {args.size} x {args.size}, {100 * args.sparsity:.0f}% zeros (uniformly random); "
            f"min of {args.rounds} interleaved rounds; numpy dense GEMV and ours at the same threads")
    lines = [head, "", "| threads | format | stored entries (of nnz) | bytes read (MB) | dense GEMV ms | ours ms "
             "| speedup over dense | byte-ratio bound | path |", "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(f"| {r['threads']} | DELTA({r['bits']}) | {r['stored']} ({r['nnz']}) | {r['bytes'] / 1e6:.1f} "
                     f"| {r['dense_ms']:.2f} | {r['ours_ms']:.2f} | {r['speedup']:.2f}x | {r['byte_bound']:.2f}x "
                     f"| {r['path']} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        with open(args.out, "w") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
