"""Two runs of the benchmark suite compared: how our time changed against the peers between them.

    .venv/bin/python benchmarks/suite_compare.py BEFORE.json AFTER.json [--ops spmv spmm16 ...] [--peer best]
    .venv/bin/python benchmarks/suite_compare.py B1.json,B2.json A1.json,A2.json   (several runs a side)

Each run's ``suite.json`` (``benchmarks/suite.py --out``) gives ours/peer per matrix and operation. Runs on a
shared machine differ in load and bandwidth, so the comparison divides each row's ours/peer ratio after by
the same ratio before: the peer's time in the same run cancels the machine's state. Per operation it prints
the geometric mean of that quotient over the matrices both runs measured (below 1: ours got faster relative to
the peer), the worst matrix, and each run's geometric mean of ours/peer. ``git show REV:benchmarks/results/
suite.json`` gives a committed run. Several runs of one side (comma-separated, e.g. each tree run twice,
alternately, in one window) are joined first: each contender's minimum time per row over them.
"""
from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

#: the peers a row may hold (its "optimize" column is ours too, not a peer)
PEERS = ("scipy", "torch", "mkl", "graphblas")


def ratios(run: dict[str, Any], peer: str) -> dict[tuple[str, str], float]:
    """``(op, matrix) -> ours / peer`` (``peer="best"``: the fastest peer of that row)."""
    found: dict[tuple[str, str], float] = {}
    for r in run["records"]:
        times = r.get("times", {})
        ours = times.get("ours")
        if peer == "best":
            peers = [t for k, t in times.items() if k in PEERS and t and r["status"].get(k) == "ok"]
            theirs = min(peers) if peers else None
        else:
            theirs = times.get(peer) if r.get("status", {}).get(peer) == "ok" else None
        if ours and theirs:
            found[(r["op"], r["matrix"])] = ours / theirs
    return found


def joined(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One run from several: per row (operation, matrix), each contender's minimum time over the runs where it
    measured ``ok``."""
    rows: dict[tuple[str, str], dict[str, Any]] = {}
    for run in runs:
        for r in run["records"]:
            key = (r["op"], r["matrix"])
            got = rows.setdefault(key, {"op": r["op"], "matrix": r["matrix"], "times": {}, "status": {}})
            for k, t in r.get("times", {}).items():
                ok = k == "ours" or r.get("status", {}).get(k) == "ok"
                if t and ok and (got["times"].get(k) is None or t < got["times"][k]):
                    got["times"][k], got["status"][k] = t, "ok"
    return {"records": list(rows.values())}


def geomean(xs: list[float]) -> float:
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def compare(before: dict[str, Any], after: dict[str, Any], ops: list[str] | None, peer: str) -> list[dict[str, Any]]:
    """One row per operation: matrices compared, geometric means before/after and of after/before, worst."""
    rb, ra = ratios(before, peer), ratios(after, peer)
    rows = []
    for op in ops or sorted({op for op, _ in ra}):
        keys = sorted(k for k in ra if k[0] == op and k in rb)
        if not keys:
            continue
        q = {k[1]: ra[k] / rb[k] for k in keys}
        worst = max(q, key=q.__getitem__)
        rows.append({"op": op, "matrices": len(keys), "before": geomean([rb[k] for k in keys]),
                     "after": geomean([ra[k] for k in keys]), "change": geomean(list(q.values())),
                     "worst": q[worst], "worst_matrix": worst})
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("before", help="suite.json of the run before (several: comma-separated)")
    ap.add_argument("after", help="suite.json of the run after (several: comma-separated)")
    ap.add_argument("--ops", nargs="*", default=None, help="operations to compare (default: every one)")
    ap.add_argument("--peer", default="best", help="scipy, torch, mkl, graphblas or best (default)")
    args = ap.parse_args()
    before, after = (joined([json.loads(Path(p).read_text()) for p in side.split(",")])
                     for side in (args.before, args.after))
    rows = compare(before, after, args.ops, args.peer)
    print(f"ours / {args.peer} peer, geometric mean over the matrices both runs measured")
    print("| op | matrices | before | after | after / before | worst (matrix) |")
    print("| --- | --- | --- | --- | --- | --- |")
    for r in rows:
        print(f"| {r['op']} | {r['matrices']} | {r['before']:.2f} | {r['after']:.2f} | {r['change']:.3f} | "
              f"{r['worst']:.2f} ({r['worst_matrix']}) |")
    every = geomean([r["change"] for r in rows for _ in range(r["matrices"])])
    print(f"all compared rows: after / before {every:.3f}")


if __name__ == "__main__":
    main()
