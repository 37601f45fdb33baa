"""Where ``ptxas`` and ``fatbinary`` are: ``gpu-module-to-binary`` runs them to turn PTX into GPU objects.

Looked up per tool, first hit wins:

1. ``PATH`` (a CUDA toolkit the user set up);
2. the Python environment: ``<sys.prefix>/bin`` (conda's ``cuda-nvcc``), then NVIDIA's wheels under each
   ``site-packages``: ``nvidia/cuda_nvcc/bin`` (``nvidia-cuda-nvcc-cu12``, installed by the ``gpu`` extra:
   ``ptxas`` only), ``nvidia/cu13/bin`` (``nvidia-cuda-nvcc`` 13: ``ptxas`` and ``fatbinary``), any other
   ``nvidia/*/bin``;
3. ``$CUDA_ROOT`` / ``$CUDA_HOME`` / ``$CUDA_PATH`` ``/bin``, then ``/usr/local/cuda/bin``.

MLIR itself only looks at ``PATH`` (and the ``CUDA_*`` variables), so ``compile_env`` gives the compile
child a ``PATH`` that starts with a private folder holding links to exactly the tools found here: MLIR
then runs the tools this module reports. The first lookup of a given setting logs one line saying which
tools are used (logger ``mlir_bridge.gpu``). No ``mlir`` import.
"""
from __future__ import annotations

import atexit
import functools
import logging
import os
import shutil
import site
import subprocess
import sys
import sysconfig
import tempfile
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

TOOLS = ("ptxas", "fatbinary")
#: The wheel folders searched first under ``site-packages/nvidia`` (others follow, sorted).
WHEEL_DIRS = ("cuda_nvcc", "cu13", "cu12")
_CUDA_VARS = ("CUDA_ROOT", "CUDA_HOME", "CUDA_PATH")
_DEFAULT_TOOLKIT = "/usr/local/cuda"

log = logging.getLogger("mlir_bridge.gpu")
_lock = threading.Lock()
_logged: set[str] = set()
_farms: dict[tuple[str, ...], str] = {}


@dataclass(frozen=True)
class CudaTool:
    """One tool: where it is (None when missing) and which rule found it (``PATH``, ``environment``,
    ``CUDA_HOME`` ..., ``/usr/local/cuda``, or ``missing``)."""

    name: str
    path: Path | None
    source: str

    @property
    def found(self) -> bool:
        return self.path is not None

    def describe(self) -> str:
        return f"{self.name}: {self.path} ({self.source})" if self.path is not None else f"{self.name}: missing"


@dataclass(frozen=True)
class CudaTools:
    """``ptxas`` and ``fatbinary`` as found (``cuda_tools()``)."""

    ptxas: CudaTool
    fatbinary: CudaTool

    def describe(self) -> str:
        """One line: ``ptxas: /p/ptxas (environment); fatbinary: missing``."""
        return "; ".join(t.describe() for t in (self.ptxas, self.fatbinary))

    @property
    def executable_format(self) -> str:
        """The GPU object format these tools can make: ``fatbin`` (cubin + PTX) with both, ``bin`` (a cubin for
        the device's chip) with ``ptxas`` alone, ``""`` without ``ptxas``."""
        if not self.ptxas.found:
            return ""
        return "fatbin" if self.fatbinary.found else "bin"


def _site_dirs() -> list[str]:
    """``site-packages`` folders of this interpreter (venv first), without duplicates."""
    return list(_interpreter_site_dirs())


@functools.cache
def _interpreter_site_dirs() -> tuple[str, ...]:
    dirs = [sysconfig.get_paths().get(k, "") for k in ("purelib", "platlib")]
    try:
        dirs += site.getsitepackages()
    except AttributeError:  # some embedded/virtualenv interpreters lack it
        pass
    dirs += [p for p in sys.path if p.endswith("site-packages")]
    return tuple(d for d in dict.fromkeys(dirs) if d)


def environment_bin_dirs(prefix: str | None = None, site_dirs: Sequence[str] | None = None) -> list[Path]:
    """Folders of the Python environment that may hold CUDA tools, in search order (rule 2)."""
    prefix = sys.prefix if prefix is None else prefix
    out = [Path(prefix) / "bin"]
    for sdir in _site_dirs() if site_dirs is None else site_dirs:
        nvidia = Path(sdir) / "nvidia"
        if not nvidia.is_dir():
            continue
        named = [nvidia / name / "bin" for name in WHEEL_DIRS]
        out += [d for d in named if d.is_dir()]
        out += sorted(d for d in nvidia.glob("*/bin") if d.is_dir() and d not in named)
    return list(dict.fromkeys(out))


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def find_tool(name: str, *, path: str | None = None, prefix: str | None = None,
              site_dirs: Sequence[str] | None = None, environ: Mapping[str, str] | None = None) -> CudaTool:
    """Find ``name`` by the rules of the module docstring. ``path`` (a PATH value), ``prefix``,
    ``site_dirs`` and ``environ`` default to this process's; tests pass a fake environment layout."""
    environ = os.environ if environ is None else environ
    on_path = shutil.which(name, path=environ.get("PATH", os.defpath) if path is None else path)
    if on_path is not None:
        return CudaTool(name, Path(on_path), "PATH")
    for folder in environment_bin_dirs(prefix, site_dirs):
        if _executable(folder / name):
            return CudaTool(name, folder / name, "environment")
    roots = [(var, environ[var]) for var in _CUDA_VARS if environ.get(var)] + [(_DEFAULT_TOOLKIT, _DEFAULT_TOOLKIT)]
    for source, root in roots:
        candidate = Path(root) / "bin" / name
        if _executable(candidate):
            return CudaTool(name, candidate, source)
    return CudaTool(name, None, "missing")


def cuda_tools() -> CudaTools:
    """``ptxas`` and ``fatbinary`` for this process's current PATH and environment (logged once per answer)."""
    found = _cached(os.environ.get("PATH", os.defpath), sys.prefix, tuple(_site_dirs()),
                    tuple(os.environ.get(v, "") for v in _CUDA_VARS))
    line = found.describe()
    with _lock:
        first = line not in _logged
        _logged.add(line)
    if first:
        log.info("ust-mlir CUDA tools: %s", line)
    return found


@functools.lru_cache(maxsize=16)
def _cached(path: str, prefix: str, site_dirs: tuple[str, ...], cuda_vars: tuple[str, ...]) -> CudaTools:
    environ = {"PATH": path, **{v: val for v, val in zip(_CUDA_VARS, cuda_vars) if val}}
    ptxas, fatbinary = (find_tool(t, path=path, prefix=prefix, site_dirs=site_dirs, environ=environ) for t in TOOLS)
    return CudaTools(ptxas, fatbinary)


def release(tool: CudaTool) -> str:
    """The ``release`` line of ``tool --version`` (``Cuda compilation tools, release 12.9, V12.9.86``),
    ``none`` when missing, ``unknown`` when it does not say."""
    return _release(str(tool.path)) if tool.path is not None else "none"


@functools.lru_cache(maxsize=16)
def _release(path: str) -> str:
    try:
        text = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        text = ""
    lines = [ln.strip() for ln in text.splitlines() if "release" in ln]
    return lines[-1] if lines else "unknown"


def compile_env(tools: CudaTools | None = None) -> dict[str, str]:
    """Environment for the compile child so that MLIR runs ``tools``: ``{}`` when every found tool is the one
    PATH gives, else ``{"PATH": <folder of links to the found tools>:$PATH}``."""
    tools = cuda_tools() if tools is None else tools
    found = [t for t in (tools.ptxas, tools.fatbinary) if t.path is not None]
    if all(t.source == "PATH" for t in found):
        return {}
    return {"PATH": os.pathsep.join([_farm(found), os.environ.get("PATH", os.defpath)])}


def _farm(found: list[CudaTool]) -> str:
    key = tuple(f"{t.name}={t.path}" for t in found)
    with _lock:
        folder = _farms.get(key)
        if folder is None or not Path(folder).is_dir():
            folder = tempfile.mkdtemp(prefix="ust-mlir-cuda-tools-")
            for t in found:
                os.symlink(t.path, Path(folder) / t.name)  # type: ignore[arg-type]
            atexit.register(shutil.rmtree, folder, True)
            _farms[key] = folder
    return folder
