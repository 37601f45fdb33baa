"""``python -m frontend doctor``: passes on this CPU-only machine with the GPU reported absent, fails clearly when
a tool is made unavailable, and keeps the CPU verdict apart from "GPU required" (exit statuses)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from frontend import _doctor as doctor
from frontend._doctor import EXIT_CPU, EXIT_GPU, EXIT_NO_DEVICE, EXIT_OK, Check, Report
from mlir_bridge.gpu.cuda_driver import cuda_info

ROOT = Path(__file__).resolve().parent.parent
HAS_DEVICE = cuda_info().available


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    full = dict(os.environ, **(env or {}))
    full["PYTHONPATH"] = os.pathsep.join([str(ROOT)] + [p for p in [full.get("PYTHONPATH")] if p])
    return subprocess.run([sys.executable, "-m", "frontend", "doctor", *args], capture_output=True, text=True,
                          timeout=600, cwd=ROOT, env=full)


def _status(out: str, name: str) -> str:
    """The status word of the line for check ``name``."""
    for line in out.splitlines():
        if line[8:28].strip() == name:
            return line[:8].strip()
    raise AssertionError(f"no line for {name!r} in:\n{out}")


@pytest.mark.slow
@pytest.mark.skipif(HAS_DEVICE, reason="checks the CPU-only verdict")
def test_cli_passes_on_a_cpu_only_machine(tmp_path: Path) -> None:
    proc = _cli(env={"UST_MLIR_CACHE_DIR": str(tmp_path / "cache")})
    out = proc.stdout
    assert proc.returncode == EXIT_OK, out + proc.stderr
    for name in ("mlir bindings", "mlir-translate", "opt", "llc", "C compiler", "torch", "torch-mlir", "cache",
                 "threads", "cpu sparsifier", "cpu emitter", "cpu emitter-rows", "cpu kernel"):
        assert _status(out, name) == "ok", name
    for name in ("mlir-opt", "ptxas", "fatbinary", "cupy"):  # present or not: a line each
        assert _status(out, name) in ("ok", "missing")
    assert _status(out, "cuda device") == "missing"
    gpu_checks = ("cusparse", "blocked-ELL", "sparsifier-gpu", "emitter-gpu")
    assert [_status(out, f"gpu {p}") for p in gpu_checks] == ["skip"] * 4
    assert "path kernel:spgemm-csr: matches numpy" in out and "path emitter: matches numpy" in out
    assert "(writable, private)" in out and str(tmp_path / "cache") in out
    assert out.strip().splitlines()[-1] == "verdict: CPU ok; GPU absent (no CUDA device)"
    assert "FAILED" not in out


@pytest.mark.skipif(HAS_DEVICE, reason="checks the no-device verdict")
def test_require_gpu_without_device_keeps_the_cpu_verdict(monkeypatch: pytest.MonkeyPatch) -> None:
    ran: list[str] = []
    monkeypatch.setattr(doctor, "cpu_runs", lambda report: ran.append("cpu"))  # the runs are the CLI test's
    lines: list[str] = []
    report = doctor.diagnose(require_gpu=True, out=lines.append)
    assert ran == ["cpu"]
    assert report.exit_status() == EXIT_NO_DEVICE
    assert "verdict: CPU ok; GPU absent (no CUDA device)" in lines
    assert lines[-1] == "FAILED: GPU required (--require-gpu) but no CUDA device was found"
    assert doctor.diagnose(require_gpu=False, out=lines.append).exit_status() == EXIT_OK


def test_missing_c_compiler_fails_clearly(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no cc (nor anything else) on PATH
    monkeypatch.setattr(doctor, "cpu_runs", lambda report: None)
    lines: list[str] = []
    report = doctor.diagnose(out=lines.append)
    assert report.exit_status() == EXIT_CPU
    assert any(ln.startswith("missing C compiler") and "no `cc` on PATH" in ln for ln in lines)
    assert "FAILED: C compiler: no `cc` on PATH (kernels are linked into shared objects with it)" in lines
    assert "verdict: CPU broken; GPU absent (no CUDA device)" in lines


def test_broken_tool_and_failed_run_are_cpu_failures(monkeypatch: pytest.MonkeyPatch) -> None:
    from mlir_bridge import toolchain

    real = toolchain.tool
    monkeypatch.setattr(toolchain, "tool", lambda name: (_ for _ in ()).throw(FileNotFoundError(
        f"tool {name!r} not found")) if name == "llc" else real(name))
    report = Report()
    doctor.toolchain_checks(report)
    llc = next(c for c in report.checks if c.name == "llc")
    assert llc.status == "missing" and llc.failed and "tool 'llc' not found" in llc.detail
    assert report.exit_status() == EXIT_CPU
    # a run whose numbers differ from numpy, and one that raises
    report = Report()
    import numpy as np

    doctor._check_run(report, "cpu x", "cpu", lambda: ("sparsifier", np.ones(3), np.zeros(3)))
    doctor._check_run(report, "cpu y", "cpu", lambda: (_ for _ in ()).throw(RuntimeError("boom\nmore")))
    assert [c.status for c in report.checks] == ["FAIL", "FAIL"]
    assert "differs from numpy (max abs error 1)" in report.checks[0].detail
    assert report.checks[1].detail == "RuntimeError: boom"
    assert report.failures() == [f"FAILED: cpu x: {report.checks[0].detail}", "FAILED: cpu y: RuntimeError: boom"]


def test_exit_statuses_keep_cpu_and_gpu_apart() -> None:
    cpu_bad, gpu_bad = Check("cpu a", "FAIL", "x", "cpu"), Check("gpu b", "FAIL", "y", "gpu")
    info_missing = Check("cupy", "missing", "not installed", "")
    assert Report([info_missing]).exit_status() == EXIT_OK  # optional things missing: fine
    assert Report([cpu_bad, gpu_bad], device=True).exit_status() == EXIT_CPU
    assert Report([gpu_bad], device=True).exit_status() == EXIT_GPU
    assert Report([gpu_bad], device=True).verdict() == "verdict: CPU ok; GPU broken"
    assert Report([], require_gpu=True).exit_status() == EXIT_NO_DEVICE
    assert Report([cpu_bad], require_gpu=True).exit_status() == EXIT_CPU


@pytest.mark.skipif(HAS_DEVICE, reason="without a device ptxas decides nothing")
def test_missing_ptxas_counts_only_where_gpu_matters(monkeypatch: pytest.MonkeyPatch) -> None:
    from mlir_bridge.gpu import cuda_tools as ct

    missing = ct.CudaTools(ct.CudaTool("ptxas", None, "missing"), ct.CudaTool("fatbinary", None, "missing"))
    monkeypatch.setattr(ct, "cuda_tools", lambda: missing)
    monkeypatch.setattr(doctor, "cpu_runs", lambda report: None)
    lines: list[str] = []
    assert doctor.diagnose(out=lines.append).exit_status() == EXIT_OK
    assert any(ln.startswith("missing ptxas") and "ust-mlir[gpu]" in ln for ln in lines)
    report = doctor.diagnose(require_gpu=True, out=lines.append)
    assert report.exit_status() == EXIT_NO_DEVICE
    assert any(f.startswith("FAILED: ptxas: not on PATH") for f in report.failures())


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_DEVICE, reason="needs a CUDA device")
def test_cli_on_a_gpu_machine(tmp_path: Path) -> None:
    proc = _cli("--require-gpu", env={"UST_MLIR_CACHE_DIR": str(tmp_path / "cache")})
    assert proc.returncode == EXIT_OK, proc.stdout + proc.stderr
    for name in ("gpu cusparse", "gpu blocked-ELL", "gpu sparsifier-gpu", "gpu emitter-gpu", "cuda device",
                 "ptxas"):
        assert _status(proc.stdout, name) == "ok", name
