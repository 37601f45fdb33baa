"""frontend.distributed on a 2-worker local Dask cluster against one process (frontend and scipy).

Measures, each contender timed in the same run, interleaved, best of ``--repeats`` rounds:
- SpMV and SpMM (8 columns) on a 1M-row matrix (2-D Poisson 1000^2, 5 entries a row; ``--quick``: 200^2);
- CG on 2-D Poisson 1000^2: time per iteration (``--iterations`` fixed iterations, no preconditioner);
- the coordination overhead per CG iteration: distributed CG on a tiny system (Poisson 16^2), where the
  arithmetic is negligible, so the time per iteration is the driver's steps, the tasks and the messages;
- bytes per CG iteration: the halo entries exchanged (measured by the solve's accounting) and the dot
  products' scalars; Dask's own task messages are not counted.
Then a cost model from these numbers (docs/distributed.md): SpMV and CG time per iteration on 8, 64 and 512
nodes for a 1e10-nonzero matrix (3-D 7-point Poisson, 1-D row blocks) at ``--bandwidth`` GB/s.

Run: ``.venv/bin/python benchmarks/bench_distributed.py [--quick]`` (about 2 minutes on 2 idle cores).
On a 2-core machine the two workers and the one-process peer share the same two cores, so the distributed
time can show overhead, not speed-up; the cost model is where the node counts come in.
"""
from __future__ import annotations

import argparse
import os
import time
import warnings
from collections.abc import Callable

for _var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

import frontend as F  # noqa: E402
from frontend import distributed as fd  # noqa: E402


def poisson2d(k: int) -> sp.csr_array:
    t = sp.diags_array([-1.0, 2.0, -1.0], offsets=[-1, 0, 1], shape=(k, k))
    return sp.csr_array(sp.kron(sp.eye_array(k), t) + sp.kron(t, sp.eye_array(k)))


def best(fns: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """Seconds per call of each function: min over interleaved rounds (one warm-up call each)."""
    for f in fns.values():
        f()
    times = {k: float("inf") for k in fns}
    for _ in range(repeats):
        for k, f in fns.items():
            t0 = time.perf_counter()
            f()
            times[k] = min(times[k], time.perf_counter() - t0)
    return times


def line(name: str, times: dict[str, float], ref: str) -> None:
    cells = "  ".join(f"{k} {v * 1e3:8.2f} ms ({times[ref] / v:4.2f}x)" for k, v in times.items())
    print(f"{name:<26} {cells}")


def products(client: object, k: int, repeats: int) -> None:
    a = poisson2d(k)
    d = fd.from_package(a, partitions=2, client=client)
    x, b = np.random.default_rng(0).random(a.shape[1]), np.random.default_rng(1).random((a.shape[1], 8))
    print(f"matrix: Poisson {k}^2, {a.shape[0]} rows, {a.nnz} entries; partitions {d.bounds}")
    line("SpMV", best({"scipy": lambda: a @ x, "1-proc": lambda: F.matmul(a, x),
                       "1-proc 1thr": lambda: F.matmul(a, x, threads=1), "dask 2w": lambda: F.matmul(d, x)},
                      repeats), "scipy")
    line("SpMM (8 columns)", best({"scipy": lambda: a @ b, "1-proc": lambda: F.matmul(a, b),
                                   "1-proc 1thr": lambda: F.matmul(a, b, threads=1),
                                   "dask 2w": lambda: F.matmul(d, b)}, repeats), "scipy")


def cg_per_iteration(client: object, k: int, iterations: int, repeats: int) -> tuple[float, float, dict]:
    """Seconds per CG iteration: distributed and one process; the distributed solve's info."""
    a = poisson2d(k)
    d = fd.from_package(a, partitions=2, client=client)
    b = np.ones(a.shape[0])
    solver = F.Solve(a, method="cg", maxiter=iterations, on_failure="warn").plan()

    def one() -> None:
        solver.execute(b)

    def dist() -> None:
        F.solve(d, b, method="cg", maxiter=iterations, tol=1e-300, on_failure="warn")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = best({"1-proc": one, "dask 2w": dist}, repeats)
    info = dict(d.solve_info or {})
    # the solve adds a setup step and a final residual step: per iteration, count the iterations' steps only
    return t["dask 2w"] / iterations, t["1-proc"] / iterations, info


def model(rate_nnz_s: float, step_s: float, task_s: float, bandwidth_gb_s: float) -> None:
    """CG and SpMV time per iteration for a 1e10-nonzero 3-D 7-point Poisson matrix on P nodes."""
    nnz = 1e10
    rows = nnz / 7
    n_side = rows ** (1 / 3)
    plane = n_side ** 2  # entries a row block exchanges with each neighbour per SpMV (1-D row blocks)
    print(f"\ncost model: 1e10 nonzeros (3-D Poisson, {rows:.3g} rows, {n_side:.0f}^3), {bandwidth_gb_s:g} GB/s "
          f"links, {rate_nnz_s / 1e6:.0f} M nonzeros/s per core x 16 cores per node, driver step {step_s * 1e3:.2f} "
          f"ms + {task_s * 1e3:.2f} ms per task")
    print(f"{'nodes':>6} {'compute/SpMV':>13} {'halo/SpMV':>10} {'coord/step':>11} {'SpMV':>9} {'CG iter':>9}")
    for p in (8, 64, 512):
        compute = nnz / p / (rate_nnz_s * 16)
        halo = 2 * plane * 8 / (bandwidth_gb_s * 1e9)
        tasks = 2 * p + 2 * p  # a step's partition tasks plus its halo tasks (two neighbours each)
        coord = step_s + task_s * tasks
        spmv = compute + halo + coord
        cg = compute * 1.4 + halo + 2 * coord  # + the vector updates (~0.4 of an SpMV's bytes)
        print(f"{p:>6} {compute * 1e3:>10.2f} ms {halo * 1e3:>7.2f} ms {coord * 1e3:>8.2f} ms {spmv * 1e3:>6.1f} ms "
              f"{cg * 1e3:>6.1f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="Poisson 200^2 instead of 1000^2")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=50)
    parser.add_argument("--bandwidth", type=float, default=12.5, help="link bandwidth in GB/s (100 Gb/s)")
    args = parser.parse_args()
    k = 200 if args.quick else 1000
    client = fd.start_local(2, threads_per_worker=1)
    try:
        print(f"2-worker LocalCluster (processes, 1 thread each) on {os.cpu_count()} cores; load {os.getloadavg()}")
        products(client, k, args.repeats)
        dist_it, one_it, info = cg_per_iteration(client, k, args.iterations, max(2, args.repeats // 2))
        print(f"{'CG per iteration':<26} 1-proc {one_it * 1e3:8.3f} ms  dask 2w {dist_it * 1e3:8.3f} ms "
              f"({one_it / dist_it:4.2f}x)")
        tiny, _, tiny_info = cg_per_iteration(client, 16, 200, 3)
        steps = tiny_info["steps"] / max(1, tiny_info["iterations"])
        print(f"{'coordination per CG iter':<26} {tiny * 1e3:.2f} ms (Poisson 16^2: {steps:.2f} steps an "
              f"iteration, target <= 5 ms)")
        halo = info["halo_bytes"] / max(1, info["iterations"])
        scalars = 2 * 2 * 2 * 16  # two reductions an iteration, two partitions, up to two complex scalars each
        print(f"{'bytes per CG iteration':<26} halo {halo:.0f} B + scalars {scalars} B (vector: "
              f"{k * k * 8} B); steps {info['steps']} for {info['iterations']} iterations")
        rate = 5 * k * k * 2 / max(one_it, 1e-9)  # nonzeros per second of one process (~2 SpMV-equivalents)
        per_step = tiny / 2
        model(rate / 2, per_step * 0.5, per_step * 0.5 / 6, args.bandwidth)
    finally:
        client.close()


if __name__ == "__main__":
    main()
