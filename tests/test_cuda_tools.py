"""Finding ptxas / fatbinary: PATH first, then the Python environment (NVIDIA's wheels, a fake layout here),
then CUDA_HOME & co.; the compile child runs exactly the tools found (a recording ptxas proves it); without
fatbinary GPU objects are cubins; without ptxas a clear CompileError."""
from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

import pytest

from frontend import NamedFormats as N
from lowering.contraction import Contraction, TensorSpec
from lowering.gpu.dispatch import lower_gpu
from mlir_bridge import CompileError
from mlir_bridge.gpu import cuda_tools as ct, target as gpu_target
from mlir_bridge.gpu.cuda_tools import CudaTool, CudaTools, compile_env, environment_bin_dirs, find_tool

REAL_PTXAS = shutil.which("ptxas")


def _tool(folder: Path, name: str, body: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\n" + (body or f"echo 'Cuda compilation tools, release 12.9, V12.9.86 ({name})'\n"))
    path.chmod(0o755)
    return path


def _venv(root: Path) -> tuple[Path, Path]:
    """A fake environment: (prefix, site-packages) laid out like a venv with the wheels' folders."""
    site = root / "venv" / "lib" / "python3.12" / "site-packages"
    site.mkdir(parents=True)
    return root / "venv", site


def test_environment_wheel_found_when_path_lacks_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(ct, "_DEFAULT_TOOLKIT", str(tmp_path / "no-toolkit"))
    prefix, site = _venv(tmp_path)
    ptxas = _tool(site / "nvidia" / "cuda_nvcc" / "bin", "ptxas")  # nvidia-cuda-nvcc-cu12's layout
    empty = tmp_path / "empty"
    empty.mkdir()
    kw = dict(path=str(empty), prefix=str(prefix), site_dirs=[str(site)], environ={})
    found = find_tool("ptxas", **kw)
    assert found == CudaTool("ptxas", ptxas, "environment") and found.found
    assert find_tool("fatbinary", **kw).source == "missing"
    # the cu13 wheel carries both; cuda_nvcc is searched first
    _tool(site / "nvidia" / "cu13" / "bin", "ptxas")
    fatbinary = _tool(site / "nvidia" / "cu13" / "bin", "fatbinary")
    assert find_tool("ptxas", **kw).path == ptxas
    assert find_tool("fatbinary", **kw) == CudaTool("fatbinary", fatbinary, "environment")
    assert environment_bin_dirs(str(prefix), [str(site)])[:3] == [
        prefix / "bin", site / "nvidia" / "cuda_nvcc" / "bin", site / "nvidia" / "cu13" / "bin"]


def test_search_order_path_prefix_cuda_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    prefix, site = _venv(tmp_path)
    monkeypatch.setattr(ct, "_DEFAULT_TOOLKIT", str(tmp_path / "no-toolkit"))
    on_path = _tool(tmp_path / "sysbin", "ptxas")
    in_prefix = _tool(prefix / "bin", "ptxas")  # conda's cuda-nvcc
    in_wheel = _tool(site / "nvidia" / "cuda_nvcc" / "bin", "ptxas")
    in_home = _tool(tmp_path / "cuda" / "bin", "ptxas")
    kw = dict(prefix=str(prefix), site_dirs=[str(site)], environ={"CUDA_HOME": str(tmp_path / "cuda")})
    assert find_tool("ptxas", path=str(on_path.parent), **kw) == CudaTool("ptxas", on_path, "PATH")
    assert find_tool("ptxas", path="", **kw) == CudaTool("ptxas", in_prefix, "environment")
    in_prefix.unlink()
    assert find_tool("ptxas", path="", **kw).path == in_wheel
    in_wheel.unlink()
    assert find_tool("ptxas", path="", **kw) == CudaTool("ptxas", in_home, "CUDA_HOME")
    assert find_tool("ptxas", path="", prefix=str(prefix), site_dirs=[str(site)], environ={}).source == "missing"
    in_home.chmod(0o644)  # not executable: not a tool
    assert find_tool("ptxas", path="", **kw).source == "missing"


def test_describe_and_formats() -> None:
    p = CudaTool("ptxas", Path("/x/ptxas"), "environment")
    f_missing = CudaTool("fatbinary", None, "missing")
    tools = CudaTools(p, f_missing)
    assert tools.describe() == "ptxas: /x/ptxas (environment); fatbinary: missing"
    assert tools.executable_format == "bin"
    assert CudaTools(p, CudaTool("fatbinary", Path("/x/fatbinary"), "PATH")).executable_format == "fatbin"
    assert CudaTools(CudaTool("ptxas", None, "missing"), f_missing).executable_format == ""


def test_compile_env_links_exactly_the_found_tools(tmp_path: Path) -> None:
    both_on_path = CudaTools(CudaTool("ptxas", Path("/usr/bin/ptxas"), "PATH"),
                             CudaTool("fatbinary", Path("/usr/bin/fatbinary"), "PATH"))
    assert compile_env(both_on_path) == {}
    wheel = _tool(tmp_path / "nvidia" / "cuda_nvcc" / "bin", "ptxas")
    mixed = CudaTools(CudaTool("ptxas", wheel, "environment"), CudaTool("fatbinary", None, "missing"))
    env = compile_env(mixed)
    farm = Path(env["PATH"].split(os.pathsep)[0])
    assert sorted(p.name for p in farm.iterdir()) == ["ptxas"]
    assert (farm / "ptxas").resolve() == wheel.resolve()
    assert env["PATH"].endswith(os.environ.get("PATH", os.defpath))
    assert compile_env(mixed) == env  # one folder per answer


def _spmv(chip: str, rows: int) -> tuple[str, object]:
    c = Contraction(("ik", "k"), (TensorSpec(N.CSR, (rows, 6), "f32", 32, 32), TensorSpec(None, (6,), "f32", 32, 32)),
                    "i", TensorSpec(None, (rows,), "f32"))
    low = lower_gpu(c, chip)
    return low.text, low.pipeline


@pytest.fixture
def no_cuda_on_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """PATH without ptxas/fatbinary, no CUDA_* variables or default toolkit, a fake venv, a fresh cache."""
    keep = [d for d in os.environ.get("PATH", "").split(os.pathsep)
            if d and not (Path(d, "ptxas").exists() or Path(d, "fatbinary").exists())]
    monkeypatch.setenv("PATH", os.pathsep.join(keep))
    for var in ("CUDA_ROOT", "CUDA_HOME", "CUDA_PATH"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(ct, "_DEFAULT_TOOLKIT", str(tmp_path / "no-toolkit"))
    prefix, site = _venv(tmp_path)
    monkeypatch.setattr(ct.sys, "prefix", str(prefix))
    monkeypatch.setattr(ct, "_site_dirs", lambda: [str(site)])
    monkeypatch.setenv("UST_MLIR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(gpu_target, "_builds", {})
    return prefix, site


@pytest.mark.skipif(REAL_PTXAS is None, reason="ptxas (CUDA toolkit) is not on PATH: nothing to wrap")
def test_build_runs_the_environment_ptxas(no_cuda_on_path: tuple[Path, Path], tmp_path: Path,
                                          caplog: pytest.LogCaptureFixture) -> None:
    _, site = no_cuda_on_path
    calls = tmp_path / "calls.txt"
    _tool(site / "nvidia" / "cuda_nvcc" / "bin", "ptxas", f'echo "$@" >> {calls}\nexec {REAL_PTXAS} "$@"\n')
    with caplog.at_level(logging.INFO, logger="mlir_bridge.gpu"):
        tools = ct.cuda_tools()
        build = gpu_target.build_gpu(*_spmv("sm_80", 11))
    assert tools.ptxas.source == "environment" and not tools.fatbinary.found
    said = [r.getMessage() for r in caplog.records]
    assert any("ptxas: " + str(site) in m and "(environment)" in m for m in said)
    assert any("fatbinary not found: building cubins" in m for m in said)
    # MLIR ran the environment's ptxas (nothing else is reachable) to make a cubin for sm_80
    used = [ln for ln in calls.read_text().splitlines() if "-arch" in ln]
    assert len(used) == 1 and "sm_80" in used[0] and "--version" not in used[0]
    assert build.so_path.exists() and b".nv.info" in build.so_path.read_bytes()


def test_build_without_ptxas_says_where_it_looked(no_cuda_on_path: tuple[Path, Path]) -> None:
    assert not ct.cuda_tools().ptxas.found
    with pytest.raises(CompileError, match="ptxas not found: not on PATH, not in this Python environment") as info:
        gpu_target.build_gpu(*_spmv("sm_90", 13))
    assert info.value.stage == "gpu-binary" and "nvidia-cuda-nvcc-cu12" in info.value.message
    assert "ptxas=none" in gpu_target.toolkit_version()
    # reading PTX needs no ptxas
    text, pipeline = _spmv("sm_90", 13)
    assert ".entry" in gpu_target.gpu_assembly(text, pipeline)
