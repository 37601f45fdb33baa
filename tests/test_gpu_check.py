"""``make gpu-check`` (benchmarks/gpu_check.py): without a device it stops after the doctor with one line and
writes nothing; the report it writes on a GPU machine holds versions, device, doctor, per-test outcomes and
the benchmark tables (built here from a junit file pytest writes)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from mlir_bridge.gpu.cuda_driver import cuda_info

ROOT = Path(__file__).resolve().parent.parent
HAS_DEVICE = cuda_info().available


def _gpu_check_module():  # noqa: ANN202 - the script as a module
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        import gpu_check
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))
    return gpu_check


def test_make_target_runs_the_script() -> None:
    proc = subprocess.run(["make", "-n", "gpu-check", "VENV=/nonexistent-venv"], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert "/nonexistent-venv/bin/python benchmarks/gpu_check.py" in proc.stdout


@pytest.mark.slow
@pytest.mark.skipif(HAS_DEVICE, reason="checks the no-device stop")
def test_stops_after_doctor_without_a_device(tmp_path: Path) -> None:
    env = dict(os.environ, UST_MLIR_CACHE_DIR=str(tmp_path / "cache"))
    proc = subprocess.run([sys.executable, "benchmarks/gpu_check.py", "--results", str(tmp_path / "results")],
                          cwd=ROOT, capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.strip().splitlines()
    assert lines[-1].startswith("gpu-check: no CUDA device found (") and "stopped after doctor" in lines[-1]
    assert lines[-2] == "FAILED: GPU required (--require-gpu) but no CUDA device was found"
    assert "passed" not in proc.stdout and "bench_gpu" not in proc.stdout  # neither tests nor benchmark ran
    assert not (tmp_path / "results").exists()


def test_report_holds_versions_tests_and_benchmark(tmp_path: Path) -> None:
    gc = _gpu_check_module()
    (tmp_path / "test_x.py").write_text(
        "import pytest\n"
        "def test_ok():\n    assert 1 + 1 == 2\n"
        "def test_bad():\n    assert 1 + 1 == 3, 'arith'\n"
        "@pytest.mark.skip(reason='nope')\ndef test_skipped():\n    pass\n")
    junit = tmp_path / "junit.xml"
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path / "test_x.py"),
                    f"--junitxml={junit}", "-o", "addopts="], cwd=tmp_path, capture_output=True, timeout=120)
    tests = gc.test_outcomes(junit)
    assert sorted((n.split("::")[-1], o) for n, o, _ in tests) == [
        ("test_bad", "failed"), ("test_ok", "passed"), ("test_skipped", "skipped")]
    bench = "SpMV float32 ...\n  torch.sparse CSR (cuSPARSE)    1.000 ms   1.00x\n  ours CSR  CPU (threads=auto) ..."
    path = gc.write_report(tmp_path / "res", "sm_90", "ok      cpu sparsifier ...\nverdict: CPU ok; GPU ok", tests,
                           1, bench, 0)
    text = path.read_text()
    assert path.parent == tmp_path / "res" and path.name.startswith("gpu_check_sm_90_")
    assert list((tmp_path / "res").iterdir()) == [path]  # one report file
    for part in ("## Versions", "- torch ", "xtc-mlir-python-bindings", "CUDA tools: ptxas",
                 "verdict: CPU ok; GPU ok", "exit status 1): 1 passed, 1 failed, 0 error, 1 skipped",
                 "test_bad` | failed | ", "ours CSR  CPU (threads=auto)", "bench_gpu.py (exit status 0)"):
        assert part in text, part
