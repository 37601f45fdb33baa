"""Is there a usable CUDA driver and device? Asked without ever risking the interpreter.

The probe loads ``libcuda.so.1`` with ctypes and calls ``cuInit`` / ``cuDeviceGetCount`` /
``cuDeviceGetAttribute`` / ``cuDriverGetVersion``. Unless this process already holds a CUDA
context (torch or CuPy initialised one, so the driver demonstrably works), it runs in a child
Python process: a broken driver then costs an error message, never this interpreter. The answer
is computed once per process. No ``mlir`` import.
"""
from __future__ import annotations

import ctypes
import functools
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

_CU_ATTR_CC_MAJOR = 75
_CU_ATTR_CC_MINOR = 76


@dataclass(frozen=True)
class CudaInfo:
    """What the probe found: ``error`` is empty when ``device_count > 0``."""

    driver_version: int = 0  # e.g. 12040 for CUDA 12.4
    device_count: int = 0
    capabilities: tuple[tuple[int, int], ...] = ()  # (major, minor) per device
    error: str = ""

    @property
    def available(self) -> bool:
        return self.device_count > 0 and not self.error

    def chip(self, device: int = 0) -> str:
        """``sm_XY`` of ``device`` (ValueError if there is no such device)."""
        if not 0 <= device < len(self.capabilities):
            raise ValueError(f"no CUDA device {device} (found {len(self.capabilities)})")
        major, minor = self.capabilities[device]
        return f"sm_{major}{minor}"


def probe_in_process() -> CudaInfo:
    """Query the driver with ctypes in this process (used by the child and when CUDA is live)."""
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError as err:
        return CudaInfo(error=f"the CUDA driver library libcuda.so.1 cannot be loaded ({err})")
    version, count = ctypes.c_int(0), ctypes.c_int(0)
    rc = cuda.cuDriverGetVersion(ctypes.byref(version))
    if rc != 0:
        return CudaInfo(error=f"cuDriverGetVersion failed (CUresult {rc})")
    rc = cuda.cuInit(0)
    if rc != 0:
        return CudaInfo(version.value, error=f"cuInit failed (CUresult {rc}; 100 = no device)")
    rc = cuda.cuDeviceGetCount(ctypes.byref(count))
    if rc != 0 or count.value == 0:
        return CudaInfo(version.value, error=f"no CUDA device (cuDeviceGetCount: CUresult {rc}, "
                                             f"count {count.value})")
    caps = []
    for dev in range(count.value):
        major, minor = ctypes.c_int(0), ctypes.c_int(0)
        cuda.cuDeviceGetAttribute(ctypes.byref(major), _CU_ATTR_CC_MAJOR, dev)
        cuda.cuDeviceGetAttribute(ctypes.byref(minor), _CU_ATTR_CC_MINOR, dev)
        caps.append((major.value, minor.value))
    return CudaInfo(version.value, count.value, tuple(caps))


def _cuda_already_live() -> bool:
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_initialized():
            return True
    except Exception:  # noqa: BLE001 - a broken torch build says nothing about the driver
        pass
    return False


def _probe_child() -> CudaInfo:
    code = ("import json, dataclasses; from mlir_bridge.gpu.cuda_driver import probe_in_process as p; "
            "print(json.dumps(dataclasses.asdict(p())))")
    env = dict(os.environ)
    root = str(Path(__file__).resolve().parent.parent)
    env["PYTHONPATH"] = os.pathsep.join([root] + [p for p in [env.get("PYTHONPATH")] if p])
    try:
        proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              timeout=120, env=env)
    except (OSError, subprocess.TimeoutExpired) as err:
        return CudaInfo(error=f"the CUDA probe could not run ({err})")
    if proc.returncode != 0:
        return CudaInfo(error=f"the CUDA probe died (exit status {proc.returncode}): "
                              f"{(proc.stderr or '').strip()[-500:]}")
    try:
        d = json.loads(proc.stdout.strip().splitlines()[-1])
        return CudaInfo(int(d["driver_version"]), int(d["device_count"]),
                        tuple((int(a), int(b)) for a, b in d["capabilities"]), str(d["error"]))
    except (ValueError, KeyError, IndexError, TypeError) as err:
        return CudaInfo(error=f"the CUDA probe answered nonsense ({err}): {proc.stdout[-300:]!r}")


@functools.cache
def cuda_info() -> CudaInfo:
    """The driver and devices of this machine (probed once, safely)."""
    return probe_in_process() if _cuda_already_live() else _probe_child()


def require_cuda_device(device: int = 0) -> CudaInfo:
    """Return ``cuda_info()`` or raise ``RuntimeError("no CUDA device ...")`` saying why."""
    info = cuda_info()
    if not info.available:
        raise RuntimeError(f"no CUDA device: {info.error or 'none found'}; GPU kernels cannot be loaded "
                           "or run here (compiling them and reading their PTX still works)")
    if not 0 <= device < info.device_count:
        raise RuntimeError(f"no CUDA device {device}: this machine has {info.device_count}")
    return info
