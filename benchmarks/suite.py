"""The benchmark suite (``make bench``): matrix families x operations against scipy, torch, Intel MKL
(``sparse_dot_mkl``) and SuiteSparse:GraphBLAS (``python-graphblas``), all in one run.

    .venv/bin/python benchmarks/suite.py [--quick] [--only FAMILY/OP ...] [--repeats N] [--peers scipy torch]

Families (``benchmarks/suitekit/matrices.py``): tiny, pyamg (real example matrices), poisson (2-D 1000^2,
3-D 100^3), random (uniform 1M rows 10M nnz; 2000^2 at 1%), powerlaw (1M rows, ~30M nnz), banded (11
diagonals, 1M rows), block4x4, shape (tall-skinny, short-wide), pruned (4096^2 float32 at 50/70/90/95%).
Operations (``suitekit/ops.py``): spmv, spmm16, spmm64, spgemm, sddmm, minplus, maxplus, dia, delta, trsv, cg;
(``suitekit/elementwise.py``): add, multiply, rowsum (sum along axis 1), softmax (over each row's entries).
To fit a full run in about 20 minutes, SpMM x 64 runs on matrices up to 6M nonzeros, SDDMM up to 12M,
SpGEMM up to 50M multiply-adds (5M with ``--quick``), CG at most 200 iterations above 100,000 rows.
``--only`` takes ``FAMILY``, ``FAMILY/OP`` or ``/OP`` (shell-style wildcards); ``--quick`` uses smaller
sizes and 3 repeats. A peer that is not installed is "n/a".

Each row: our result is checked against every peer's first (a mismatch is marked loudly), then the
contenders run round-robin and the minimum per call is kept (``suitekit/timing.py``); "% of bound" is the
time to stream the bytes the operation must move at the read bandwidth measured at the start, over the
time taken. SpMV, SpMM and CG rows also time ``optimize`` (``Matmul(..., optimize=True)``; CG: the solver
layout the chosen storage implies) where it chooses another storage than the default's, and give the bytes
moved in CSR and in the chosen storage, and optimize's share of the bound against both. Results go to
``benchmarks/results/suite.json`` and ``suite.md``, never into a tracked document:
the README quotes a table refreshed deliberately, with its date and command. ``make bench-all`` runs the older
per-area scripts (``benchmarks/run.py``: each ``bench_*.py``).
"""
from __future__ import annotations

import argparse
import fnmatch
import gc
import os
import platform
import resource
import shlex
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]
# Idle OpenMP threads sleep instead of spinning: otherwise MKL's (200 ms by default) or torch's spinning
# threads steal the cores from the next contender of the round-robin. Set them to override.
os.environ.setdefault("KMP_BLOCKTIME", "0")
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from suitekit.elementwise import ELEMENTWISE_OPS  # noqa: E402
from suitekit.matrices import FAMILIES, Case  # noqa: E402
from suitekit.ops import OPS, Bench, Settings, Skip  # noqa: E402
from suitekit.peers import PEER_NAMES, Peers, load_peers  # noqa: E402
from suitekit.report import Record, print_report, summarize, write_results  # noqa: E402
from suitekit.timing import call_time, read_bandwidth, round_robin  # noqa: E402

ALL_OPS = {**OPS, **ELEMENTWISE_OPS}


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="smaller matrices, fewer repeats")
    p.add_argument("--only", nargs="+", default=["*"], metavar="FAMILY/OP", help="e.g. tiny, poisson/cg, /spmv")
    p.add_argument("--repeats", type=int, default=None, help="rounds per row (default 5, --quick 3)")
    p.add_argument("--budget", type=float, default=2.0, help="seconds per row after which repeats stop (min 2)")
    p.add_argument("--peers", nargs="+", default=list(PEER_NAMES), choices=PEER_NAMES)
    p.add_argument("--threads", default="none", help="our threads= for matmul-family kernels (default: none, i.e. "
                   "the library's default, which uses every core above measured size thresholds)")
    p.add_argument("--bandwidth-mb", type=int, default=800, help="buffer summed to measure read bandwidth")
    p.add_argument("--out", type=Path, default=HERE / "results", help="folder for suite.json and suite.md")
    args = p.parse_args(argv)
    args.repeats = args.repeats or (3 if args.quick else 5)
    args.threads = None if args.threads == "none" else int(args.threads) if args.threads.isdigit() else args.threads
    return args


def selected(patterns: list[str], family: str, op: str = "*") -> bool:
    for pat in patterns:
        fam, _, o = pat.partition("/")
        if fnmatch.fnmatch(family, fam or "*") and (op == "*" or fnmatch.fnmatch(op, o or "*")):
            return True
    return False


def run_row(case: Case, op: str, bench: Bench, peers: Peers, bandwidth: float, args: argparse.Namespace) -> Record:
    """Checks every peer against ours, then times them all round-robin."""
    status: dict[str, str] = {p: "n/a" for p in ("optimize", *PEER_NAMES)}
    single: dict[str, float] = {}
    ours_result: Any = None
    for who, c in bench.contenders.items():
        try:
            single[who], out = call_time(c.run)
            if single[who] < 0.05:  # the first call of a small operation can include one-time work: time another
                single[who], out = call_time(c.run)
            result = c.result(out)
        except Exception as err:  # noqa: BLE001 - a failing contender is reported, the suite goes on
            status[who] = f"error: {type(err).__name__}: {err}".splitlines()[0][:160]
            continue
        if who == "ours":
            ours_result, status[who] = result, "ok"
        elif ours_result is not None:
            status[who] = "ok" if bench.same(ours_result, result) else "mismatch"
        else:
            status[who] = "ok (unchecked)"
    runs = {who: bench.contenders[who].run for who in single}
    times: dict[str, float | None] = dict.fromkeys(("ours", "optimize", *PEER_NAMES))
    times.update(round_robin(runs, single, args.repeats, args.budget))
    nbytes = float(bench.bytes()) if "ours" in single else None
    bound = None if nbytes is None else nbytes / bandwidth
    pct = {who: None if t is None or bound is None else 100 * bound / t for who, t in times.items()}
    chosen_bytes = float(bench.chosen_bytes()) if bench.chosen_bytes is not None and "ours" in single else None
    opt_t = times["optimize"]
    pct_chosen = None if opt_t is None or chosen_bytes is None else 100 * chosen_bytes / bandwidth / opt_t
    peer_times = {p: t for p, t in times.items() if p in PEER_NAMES and t is not None and status[p] == "ok"}
    best = min(peer_times, key=peer_times.__getitem__) if peer_times else None
    ratio = times["ours"] / peer_times[best] if best and times["ours"] is not None else None
    return {"family": case.family, "matrix": case.name, "op": op, "rows": case.matrix.shape[0],
            "cols": case.matrix.shape[1], "nnz": case.nnz, "dtype": str(case.matrix.dtype), "bytes": nbytes,
            "bound_s": bound, "note": bench.note, "times": times, "status": status, "pct_bound": pct,
            "best_peer": best, "ratio": ratio, "chosen": bench.chosen, "chosen_bytes": chosen_bytes,
            "pct_chosen": pct_chosen}


def progress(rec: Record, start: float) -> str:
    parts = [f"{who} {t * 1e3:.3f}ms" for who, t in rec["times"].items() if t is not None]
    flags = [f"{who}: {st}" for who, st in rec["status"].items() if st not in ("ok", "n/a")]
    ratio = "" if rec["ratio"] is None else f"  ours/best {rec['ratio']:.2f}"
    return (f"[{time.perf_counter() - start:6.0f}s] {rec['op']:<7} {rec['matrix']:<34} " + ", ".join(parts) + ratio
            + ("  !! " + "; ".join(flags) if flags else ""))


def machine(peers: Peers, threads: Any) -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as fh:
            cpu = next(line.split(":", 1)[1].strip() for line in fh if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    mem = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    ours = (f"threads={threads!r} (None is the default: row-parallel matmul kernels, SpGEMM and the CG/BiCGSTAB/"
            f"GMRES iterations on up to {os.cpu_count()} threads above measured size thresholds; einsum and other "
            "sparse results: 1)")
    return {"cpu": cpu, "cores": os.cpu_count(), "memory_gb": round(mem), "python": platform.python_version(),
            "threads": {"ours": ours, **peers.threads()}, "missing_peers": peers.missing}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    start = time.perf_counter()
    peers = load_peers(tuple(args.peers))
    for name, why in peers.missing.items():
        print(f"peer {name}: n/a ({why})")
    bandwidth, how = read_bandwidth(peers.get("torch"), args.bandwidth_mb)
    print(f"read bandwidth {bandwidth / 1e9:.1f} GB/s ({how})", flush=True)
    settings = Settings(threads=args.threads, spgemm_max_flops=5e6 if args.quick else 50e6)
    records: list[Record] = []
    for family, cases in FAMILIES.items():
        if not selected(args.only, family):
            continue
        for case in cases(args.quick):
            for op, build in ALL_OPS.items():
                if not selected(args.only, family, op):
                    continue
                try:
                    bench = build(case, peers, settings)
                except Skip:
                    continue
                records.append(run_row(case, op, bench, peers, bandwidth, args))
                print(progress(records[-1], start), flush=True)
                del bench
            if case.nnz > 1_000_000:  # a full collection costs ~0.2 s with torch loaded: only to free big ones
                del case
                gc.collect()
    summary = summarize(records)
    print_report(records, summary)
    wall = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    meta = {**machine(peers, args.threads), "bandwidth_gbs": bandwidth / 1e9, "bandwidth_how": how,
            "command": "benchmarks/suite.py " + shlex.join(argv if argv is not None else sys.argv[1:]),
            "wall_s": wall, "peak_rss_mb": peak}
    write_results(args.out, meta, records, summary)
    print(f"\nwall {wall:.0f} s, peak RSS {peak:.0f} MB; results in {args.out}/suite.json and suite.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
