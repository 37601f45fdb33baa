"""Run the per-area benchmarks (``make bench-all``): each ``bench_*.py`` in a fresh interpreter, one after another.

    .venv/bin/python benchmarks/run.py [--quick] [--only ops solve ...]

Each script prints its own table; ``bench_ops.py`` also writes ``benchmarks/results/ops.json``. A summary of
which scripts ran, their wall time and exit status is printed at the end and written to
``benchmarks/results/run.json``. ``--quick`` is passed to scripts that accept it. ``make bench`` runs the
cross-peer suite instead (``benchmarks/suite.py``).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent


def scripts(only: list[str] | None) -> list[Path]:
    found = sorted(HERE.glob("bench_*.py"))
    if only:
        found = [p for p in found if p.stem[len("bench_"):] in only]
    return found


def accepts_quick(path: Path) -> bool:
    return '"--quick"' in path.read_text()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true", help="small sizes where a script supports it")
    p.add_argument("--only", nargs="+", help="script names without bench_ (e.g. ops solve)")
    args = p.parse_args(argv)
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""),
               MPLBACKEND="Agg")
    summary = []
    for path in scripts(args.only):
        cmd = [sys.executable, str(path)] + (["--quick"] if args.quick and accepts_quick(path) else [])
        print(f"\n===== {path.name} {' '.join(cmd[2:])}", flush=True)
        t0 = time.perf_counter()
        code = subprocess.run(cmd, cwd=ROOT, env=env).returncode
        summary.append({"script": path.name, "seconds": round(time.perf_counter() - t0, 1), "exit": code})
    print("\n===== summary")
    print(f"{'script':<22} {'seconds':>8}  status")
    for s in summary:
        print(f"{s['script']:<22} {s['seconds']:8.1f}  {'ok' if s['exit'] == 0 else 'FAILED (' + str(s['exit']) + ')'}")
    out = HERE / "results" / "run.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(summary, indent=1))
    return 0 if all(s["exit"] == 0 for s in summary) else 1


if __name__ == "__main__":
    sys.exit(main())
