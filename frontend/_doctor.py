"""``python -m frontend doctor``: does this machine work, in one step?

Prints one line per check: the toolchain (MLIR bindings, mlir-opt / mlir-translate / opt / llc, the C compiler,
torch, torch-mlir, CuPy, ptxas / fatbinary), the compile cache folder, threads, the CUDA driver and device
(probed in a child process); then compiles (in a fresh cache folder) and runs one tiny product per available
path and checks it against numpy: on the CPU the sparsifier (CSC SpMV), the emitter (skew DIA-J SpMV), the
emitter's row-range kernel (CSR SpMV, what one-thread row-splittable products take) and the registered kernel
(SpGEMM CSR @ CSR); with a CUDA device ``cusparse``, ``blocked-ELL`` (cuSPARSE's blocked-ELL SpMM),
``sparsifier-gpu`` and ``emitter-gpu`` (CSR / BlockedELL 2x2 / CSR / DELTA(8) SpMV). A closing verdict and
one ``FAILED:`` line per failure follow.

Exit status (``EXIT_*``): 0 every check that applies passed (no GPU is fine); 1 something the CPU paths need is
missing or a CPU run failed; 3 the CPU works but a GPU check failed on a machine with a device (or with
``--require-gpu``: ptxas missing); 4 ``--require-gpu`` and no usable CUDA device.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import numpy as np

EXIT_OK, EXIT_CPU, EXIT_GPU, EXIT_NO_DEVICE = 0, 1, 3, 4


@dataclass(frozen=True)
class Check:
    """One line: ``status`` is ``ok``, ``missing``, ``FAIL`` or ``skip``; ``counts`` says which verdict a bad
    status fails (``"cpu"``, ``"gpu"`` or ``""`` for information only)."""

    name: str
    status: str
    detail: str
    counts: str = ""

    @property
    def failed(self) -> bool:
        return bool(self.counts) and self.status in ("missing", "FAIL")

    def line(self) -> str:
        return f"{self.status:<8}{self.name:<20}{self.detail}"


@dataclass
class Report:
    """The checks made, in order, and the exit status they give."""

    checks: list[Check] = field(default_factory=list)
    require_gpu: bool = False
    device: bool = False

    def add(self, check: Check) -> Check:
        self.checks.append(check)
        return check

    def exit_status(self) -> int:
        if any(c.failed and c.counts == "cpu" for c in self.checks):
            return EXIT_CPU
        if self.require_gpu and not self.device:
            return EXIT_NO_DEVICE
        return EXIT_GPU if any(c.failed and c.counts == "gpu" for c in self.checks) else EXIT_OK

    def verdict(self) -> str:
        cpu = "broken" if any(c.failed and c.counts == "cpu" for c in self.checks) else "ok"
        gpu_failed = any(c.failed and c.counts == "gpu" for c in self.checks)
        gpu = "broken" if gpu_failed else "ok" if self.device else "absent (no CUDA device)"
        return f"verdict: CPU {cpu}; GPU {gpu}"

    def failures(self) -> list[str]:
        lines = [f"FAILED: {c.name}: {c.detail}" for c in self.checks if c.failed]
        if self.require_gpu and not self.device:
            lines.append("FAILED: GPU required (--require-gpu) but no CUDA device was found")
        return lines


def _first_line(text: str) -> str:
    lines = [ln.strip() for ln in str(text).splitlines() if ln.strip()]
    return lines[0] if lines else ""


def _version_line(cmd: list[str]) -> str:
    """First line of ``cmd --version`` that says a version (raises OSError / CalledProcessError)."""
    out = subprocess.run(cmd + ["--version"], capture_output=True, text=True, timeout=60, check=True)
    lines = [ln.strip() for ln in (out.stdout + out.stderr).splitlines() if ln.strip()]
    said = [ln for ln in lines if "version" in ln.lower() or "release" in ln.lower()]
    return (said or lines or ["(no version)"])[0]


def _distribution(name: str) -> str:
    from importlib import metadata

    try:
        return f"{name} {metadata.version(name)}"
    except metadata.PackageNotFoundError:
        return name


# ----- the toolchain ----------------------------------------------------------------------------------------------
def toolchain_checks(report: Report) -> None:
    """MLIR bindings and tools, the C compiler, torch, torch-mlir, CuPy."""
    from mlir_bridge import toolchain

    try:
        import mlir_bridge.context  # noqa: F401 - loads the MLIR bindings (and libLLVM)

        versions = toolchain.toolchain_version().replace(";", ", ")
        report.add(Check("mlir bindings", "ok", f"{versions} ({toolchain.mlir_dir()})", "cpu"))
    except (ImportError, OSError) as err:
        report.add(Check("mlir bindings", "missing", f"{_first_line(str(err))} (run scripts/install.sh)", "cpu"))
    for name, needed in (("mlir-opt", False), ("mlir-translate", True), ("opt", True), ("llc", True)):
        why = "" if needed else " (used by hand to inspect IR; no path runs it)"
        try:
            path = toolchain.tool(name)
            report.add(Check(name, "ok", f"{_version_line([str(path)])} ({path})", "cpu" if needed else ""))
        except (ImportError, OSError, subprocess.SubprocessError) as err:
            report.add(Check(name, "missing", _first_line(str(err)) + why, "cpu" if needed else ""))
    cc = shutil.which("cc")
    try:
        if cc is None:
            raise FileNotFoundError("no `cc` on PATH (kernels are linked into shared objects with it)")
        report.add(Check("C compiler", "ok", f"{_version_line([cc])} ({cc})", "cpu"))
    except (OSError, subprocess.SubprocessError) as err:
        report.add(Check("C compiler", "missing", _first_line(str(err)), "cpu"))
    _import_check(report, "torch", "torch", "cpu", lambda m: f"{m.__version__} (CUDA build: {m.version.cuda})")
    _import_check(report, "torch-mlir", "torch_mlir", "cpu", lambda m: _distribution("torch-mlir").split()[-1])
    _import_check(report, "cupy", "cupy", "", lambda m: f"{m.__version__}",
                  missing="not installed (optional: pip install 'ust-mlir[gpu]'; torch alone also runs the GPU)")


def _import_check(report: Report, name: str, module: str, counts: str, describe: Callable[[Any], str],
                  missing: str = "not installed (run scripts/install.sh)") -> None:
    import importlib

    try:
        mod = importlib.import_module(module)
        report.add(Check(name, "ok", describe(mod), counts))
    except ImportError as err:
        report.add(Check(name, "missing", f"{missing}: {_first_line(str(err))}", counts))
    except Exception as err:  # noqa: BLE001 - a broken package is reported, not raised
        report.add(Check(name, "FAIL", f"import failed: {type(err).__name__}: {_first_line(str(err))}", counts))


def cuda_tool_checks(report: Report) -> None:
    """``ptxas`` (needed to build GPU objects) and ``fatbinary`` (optional: without it, cubins)."""
    from mlir_bridge.gpu.cuda_tools import cuda_tools, release

    tools = cuda_tools()
    ptxas, fatbinary = tools.ptxas, tools.fatbinary
    if ptxas.found:
        report.add(Check("ptxas", "ok", f"{release(ptxas)} ({ptxas.path}, from {ptxas.source})", "gpu"))
    else:
        report.add(Check("ptxas", "missing", "not on PATH, in this environment or under $CUDA_HOME: GPU kernels "
                                             "cannot be built (pip install 'ust-mlir[gpu]' brings it)", "gpu"))
    if fatbinary.found:
        report.add(Check("fatbinary", "ok", f"{release(fatbinary)} ({fatbinary.path}, from {fatbinary.source})"))
    else:
        report.add(Check("fatbinary", "missing", "GPU objects are cubins for the device's chip (no PTX to JIT)"))


# ----- the machine -------------------------------------------------------------------------------------------------
def cache_check(report: Report) -> None:
    """The compile cache folder: in use, trusted, writable."""
    from mlir_bridge import trust
    from mlir_bridge.cache import cache_dir

    root = cache_dir()
    if root is None:
        report.add(Check("cache", "missing", "off (UST_MLIR_CACHE=0): compiled modules are kept in memory only"))
        return
    problem = trust.folder_problem(root)
    try:
        root.mkdir(parents=True, exist_ok=True, mode=0o700)
        with tempfile.NamedTemporaryFile(dir=root, prefix=".doctor-"):
            pass
    except OSError as err:
        problem = problem or f"not writable ({err.strerror})"
    if problem is not None:
        report.add(Check("cache", "missing", f"{root}: {problem}; compiled modules are kept in memory only"))
    else:
        report.add(Check("cache", "ok", f"{root} (writable, private)"))


def threads_check(report: Report) -> None:
    from frontend.ops._threads import cpu_count
    from mlir_bridge.toolchain import distribution_library

    omp = distribution_library("intel-openmp", "libiomp5.so")
    detail = (f"{cpu_count()} cores usable by this process (threads='auto' runs up to that many row chunks); "
              f"OpenMP runtime for the solvers: {omp if omp is not None else 'missing (intel-openmp)'}")
    report.add(Check("threads", "ok", detail, ""))


def cuda_checks(report: Report) -> bool:
    """Driver and devices (``mlir_bridge.gpu.cuda_driver``: probed in a child process). True with a device."""
    from mlir_bridge.gpu.cuda_driver import cuda_info

    info = cuda_info()
    if info.driver_version:
        v = info.driver_version
        report.add(Check("cuda driver", "ok", f"{v} (CUDA {v // 1000}.{v % 1000 // 10})"))
    else:
        report.add(Check("cuda driver", "missing", info.error or "no driver"))
    if info.available:
        chips = ", ".join(info.chip(d) for d in range(info.device_count))
        report.add(Check("cuda device", "ok", f"{info.device_count} device(s): {chips}"))
    else:
        report.add(Check("cuda device", "missing", info.error or "none found"))
    report.device = info.available
    return info.available


# ----- runs --------------------------------------------------------------------------------------------------------
def _matrix() -> Any:
    """7 x 5 float64 CSR with an empty row (row 3)."""
    import scipy.sparse as sp

    dense = np.zeros((7, 5))
    dense[[0, 0, 1, 2, 4, 5, 6, 6], [0, 3, 1, 4, 2, 0, 1, 4]] = [1.5, -2.0, 3.0, 0.5, 4.0, -1.0, 2.5, 6.0]
    return sp.csr_array(dense)


def _check_run(report: Report, name: str, counts: str, run: Callable[[], tuple[str, Any, np.ndarray]]) -> None:
    try:
        path, got, want = run()
        got = np.asarray(got.toarray() if hasattr(got, "toarray") else got, dtype=np.float64)
        err = float(np.max(np.abs(got - want))) if want.size else 0.0
        if got.shape != want.shape or not np.allclose(got, want, rtol=1e-5, atol=1e-6):
            report.add(Check(name, "FAIL", f"path {path}: result differs from numpy (max abs error {err:.3g})",
                             counts))
        else:
            report.add(Check(name, "ok", f"path {path}: matches numpy (max abs error {err:.1e})", counts))
    except Exception as err:  # noqa: BLE001 - any failure is one line of the report
        report.add(Check(name, "FAIL", f"{type(err).__name__}: {_first_line(str(err))}", counts))


def cpu_runs(report: Report) -> None:
    """One compile-and-run per CPU path, against numpy."""
    from frontend.format import NamedFormats
    from frontend.ops._api import Matmul
    from frontend.tensor._tensor import Tensor

    a = _matrix()
    x = np.arange(1.0, 6.0)
    b = _matrix().T.tocsr()

    def run(op_a: Any, op_b: Any, want: np.ndarray, path: str) -> Callable[[], tuple[str, Any, np.ndarray]]:
        def go() -> tuple[str, Any, np.ndarray]:
            mm = Matmul(op_a, op_b, threads=1).plan()
            if mm.path != path:
                raise RuntimeError(f"expected path {path!r}, the dispatcher chose {mm.path!r}")
            out = mm.execute()
            return mm.path, out.to_dense() if isinstance(out, Tensor) else out, want
        return go

    dia = Tensor.from_package(a).convert(tensor_format=NamedFormats.SkewDIAJ)  # no row ranges to split
    _check_run(report, "cpu sparsifier", "cpu", run(a.tocsc(), x, a.toarray() @ x, "sparsifier"))
    _check_run(report, "cpu emitter", "cpu", run(dia, x, a.toarray() @ x, "emitter"))
    _check_run(report, "cpu emitter-rows", "cpu", run(a, x, a.toarray() @ x, "emitter-rows"))
    _check_run(report, "cpu kernel", "cpu", run(a, b, a.toarray() @ b.toarray(), "kernel:spgemm-csr"))


def gpu_runs(report: Report, device: bool) -> None:
    """One compile-and-run per GPU path (operands copied to the device, results back), against numpy."""
    if not device:
        for path in ("cusparse", "blocked-ELL", "sparsifier-gpu", "emitter-gpu"):
            report.add(Check(f"gpu {path}", "skip", "no CUDA device"))
        return
    from frontend.format import NamedFormats
    from frontend.ops._api import Matmul
    from frontend.tensor._tensor import Tensor

    a = _matrix()
    x = np.arange(1.0, 6.0)
    want = a.toarray() @ x

    def run(op_a: Any, op_x: Any, path: str, want: np.ndarray = want) -> Callable[[], tuple[str, Any, np.ndarray]]:
        def go() -> tuple[str, Any, np.ndarray]:
            mm = Matmul(op_a, op_x, device="cuda", path=path).plan()
            out = mm.execute()
            out = out.cpu().numpy() if hasattr(out, "cpu") else out.get() if hasattr(out, "get") else out
            return mm.path, out, want
        return go

    # cuSPARSE takes the package's own device layouts; the generated paths take host operands with
    # device="cuda" (copied to the device, the result copied back to numpy)
    _check_run(report, "gpu cusparse", "gpu", lambda: run(*_device_operands(a, x), "cusparse")())
    padded = np.zeros((8, 6))  # whole 2x2 blocks, as cuSPARSE's Blocked-ELL needs
    padded[:7, :5] = a.toarray()
    x6 = np.arange(1.0, 7.0)
    ell = Tensor.from_dense(padded, NamedFormats.BlockedELL((2, 2)))
    _check_run(report, "gpu blocked-ELL", "gpu", run(ell, x6, "cusparse", padded @ x6))
    _check_run(report, "gpu sparsifier-gpu", "gpu", run(a, x, "sparsifier-gpu"))
    delta = Tensor.from_package(a).convert(tensor_format=NamedFormats.DELTA(8))
    _check_run(report, "gpu emitter-gpu", "gpu", run(delta, x, "emitter-gpu"))


def _device_operands(a: Any, x: np.ndarray) -> tuple[Any, Any]:
    """``a`` (scipy CSR) and ``x`` on the device: torch CUDA tensors when torch has CUDA, else CuPy's."""
    try:
        import torch

        if torch.cuda.is_available():
            csr = torch.sparse_csr_tensor(torch.from_numpy(a.indptr), torch.from_numpy(a.indices),
                                          torch.from_numpy(a.data), a.shape)
            return csr.cuda(), torch.from_numpy(x).cuda()
    except ImportError:
        pass
    import cupy
    import cupyx.scipy.sparse as csp

    return csp.csr_matrix(a), cupy.asarray(x)


@contextmanager
def fresh_cache() -> Iterator[str]:
    """A private, empty compile cache folder for the runs (they must compile, not find a cached module)."""
    saved = os.environ.get("UST_MLIR_CACHE_DIR")
    folder = tempfile.mkdtemp(prefix="ust-mlir-doctor-")
    os.environ["UST_MLIR_CACHE_DIR"] = folder
    try:
        yield folder
    finally:
        if saved is None:
            os.environ.pop("UST_MLIR_CACHE_DIR", None)
        else:
            os.environ["UST_MLIR_CACHE_DIR"] = saved
        shutil.rmtree(folder, ignore_errors=True)


def diagnose(require_gpu: bool = False, out: Callable[[str], None] = print) -> Report:
    """Run every check, printing each line through ``out`` as it is made; returns the report."""
    report = Report(require_gpu=require_gpu)

    def section(title: str, *steps: Callable[[Report], Any]) -> None:
        out(f"-- {title}")
        for step in steps:
            start = len(report.checks)
            step(report)
            for check in report.checks[start:]:
                out(check.line())

    section("toolchain", toolchain_checks, cuda_tool_checks)
    section("machine", cache_check, threads_check, cuda_checks)
    if not require_gpu and not report.device:  # ptxas matters only where kernels can run
        report.checks = [Check(c.name, c.status, c.detail, "") if c.counts == "gpu" else c for c in report.checks]
    with fresh_cache():
        section("runs (tiny products, fresh cache, checked against numpy)", cpu_runs,
                lambda r: gpu_runs(r, r.device))
    out(report.verdict())
    for line in report.failures():
        out(line)
    return report


def main(require_gpu: bool = False) -> int:
    """``python -m frontend doctor [--require-gpu]``: print the report, return the exit status."""
    report = diagnose(require_gpu, out=lambda s: print(s, flush=True))
    sys.stdout.flush()
    return report.exit_status()
