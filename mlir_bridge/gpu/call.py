"""Calling device-resident GPU kernels on torch CUDA tensors and CuPy arrays, zero-copy.

Arguments are passed as their data pointers (wrapped in NumPy arrays that only carry the address:
the host never reads them; ``GpuPipeline(resident=True)`` proved at compile time that host code does
not touch argument buffers). Streams: the module's stream calls are redirected to the caller's stream
(``stream=`` or the package's current stream; ``stream_shim.c``), so kernels are queued on it in
order with the caller's other work and the call returns without waiting, like a torch or CuPy op.
No ``mlir`` import.
"""
from __future__ import annotations

import ctypes
import functools
from typing import Any

import numpy as np

from mlir_bridge import toolchain
from mlir_bridge.module import CompiledModule, Function

_NUMPY = {"float16": np.float16, "float32": np.float32, "float64": np.float64, "int8": np.int8,
          "int16": np.int16, "int32": np.int32, "int64": np.int64, "complex64": np.complex64,
          "complex128": np.complex128, "uint8": np.int8, "uint16": np.int16, "uint32": np.int32}
#: unsigned buffers (delta gaps) are passed as the signless integers kernels take


class _Address:
    """``__array_interface__`` of device memory (a NumPy array over it is never dereferenced)."""

    __slots__ = ("__array_interface__",)

    def __init__(self, ptr: int, shape: tuple[int, ...], dtype: np.dtype) -> None:
        self.__array_interface__ = {"data": (ptr, False), "shape": shape, "typestr": dtype.str, "version": 3}


def package_of(x: Any) -> str | None:
    """``"torch"`` / ``"cupy"`` for a CUDA tensor / CuPy array, else None."""
    root = (type(x).__module__ or "").split(".", 1)[0]
    if root == "torch" and getattr(x, "is_cuda", False):
        return "torch"
    if root == "cupy" and hasattr(x, "__cuda_array_interface__"):
        return "cupy"
    return None


def device_index(x: Any) -> int:
    """CUDA device ordinal of a torch CUDA tensor or CuPy array."""
    if package_of(x) == "torch":
        return int(x.device.index or 0)
    return int(x.device.id)


def address_view(x: Any, what: str) -> np.ndarray:
    """A NumPy array carrying the device address, shape and dtype of ``x`` (never read on the host)."""
    pkg = package_of(x)
    if pkg is None:
        raise TypeError(f"{what}: a GPU kernel needs a torch CUDA tensor or a CuPy array, got "
                        f"{type(x).__module__}.{type(x).__name__}")
    if pkg == "torch":
        if not x.is_contiguous():
            raise ValueError(f"{what}: the CUDA tensor must be contiguous")
        name = str(x.dtype).replace("torch.", "")
        ptr = x.data_ptr()
    else:
        if not x.flags.c_contiguous:
            raise ValueError(f"{what}: the CuPy array must be C-contiguous")
        name = str(x.dtype)
        ptr = int(x.data.ptr)
    if name not in _NUMPY:
        raise TypeError(f"{what}: dtype {name} cannot be passed to a kernel")
    return np.asarray(_Address(ptr, tuple(int(s) for s in x.shape), np.dtype(_NUMPY[name])))


def stream_handle(stream: Any, package: str, device: int) -> int:
    """The ``CUstream`` of ``stream`` (torch/CuPy stream or an int), else of the package's current stream
    on ``device`` (0 is the legacy default stream)."""
    if stream is None:
        if package == "torch":
            import torch

            stream = torch.cuda.current_stream(device)
        else:
            import cupy

            with cupy.cuda.Device(device):
                stream = cupy.cuda.get_current_stream()
    if isinstance(stream, int):
        return stream
    for attr in ("cuda_stream", "ptr"):  # torch.cuda.Stream, cupy.cuda.Stream
        if hasattr(stream, attr):
            return int(getattr(stream, attr))
    raise TypeError(f"stream must be a torch or CuPy CUDA stream or a CUstream int, got {type(stream).__name__}")


@functools.cache
def _runtime() -> ctypes.CDLL:
    """``libmlir_cuda_runtime.so`` (the very library the kernels' shared objects link)."""
    lib = ctypes.CDLL(str(toolchain.runtime_lib_dir() / "libmlir_cuda_runtime.so"))
    lib.mgpuSetDefaultDevice.argtypes = [ctypes.c_int32]
    lib.mgpuSetDefaultDevice.restype = None
    return lib


def set_device(device: int) -> None:
    """Make ``device`` the MLIR CUDA runtime's device (streams, module loads) for this process."""
    _runtime().mgpuSetDefaultDevice(device)


class GpuFunction:
    """A device-resident kernel function: ``f(*cuda_arrays, stream=None)`` runs it in place."""

    def __init__(self, module: CompiledModule, name: str, device: int = 0) -> None:
        self.module = module
        self.device = device
        self.function: Function = module.function(name)

    @property
    def signature(self) -> Any:
        return self.function.signature

    def __call__(self, *args: Any, stream: Any = None) -> None:
        views, device, package = [], None, None
        for i, a in enumerate(args):
            if self.signature.args[i].kind == "scalar":
                views.append(a)
                continue
            view = address_view(a, f"argument {i} of @{self.function.name}")
            dev = device_index(a)
            if device is None:
                device, package = dev, package_of(a)
            elif dev != device:
                raise ValueError(f"argument {i} of @{self.function.name} is on cuda:{dev}, others on cuda:{device}")
            views.append(view)
        if device is None:
            raise ValueError(f"@{self.function.name} got no device buffer")
        if device != self.device:
            raise ValueError(f"@{self.function.name} was loaded for cuda:{self.device}, the buffers are on "
                             f"cuda:{device}")
        set_device(device)
        handle = stream_handle(stream, package or "torch", device)
        lib = self.module._lib
        lib.ust_set_stream(ctypes.c_void_p(handle), 1)
        try:
            self.function(*views)  # results alias the arguments: nothing to decode or free
        finally:
            lib.ust_set_stream(None, 0)
