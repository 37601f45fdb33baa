"""Whether an operation goes to the GPU: cheap checks for the hot call path."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .._operands import package_of_type

_GPU_DEVICES = ("cuda", "gpu")
_HOST_PACKAGES = frozenset(("numpy", "scipy"))  # packages whose objects never live on a CUDA device


def on_cuda(x: Any) -> bool:
    """Whether ``x`` (array, sparse object or Tensor) lives on a CUDA device."""
    if x is None:
        return False
    package = package_of_type(type(x))
    if package == "tensor":
        return x.device.startswith("cuda")
    if package == "torch":
        return bool(getattr(x, "is_cuda", False))
    return package == "cupy"


def wants_gpu(objs: Sequence[Any], device: Any = None, target: str = "cpu") -> bool:
    """The GPU route: ``device="cuda[:N]"``/``target="gpu"`` asked for, or an operand on a CUDA device."""
    if device is not None:
        name = str(device).split(":", 1)[0]
        if name in _GPU_DEVICES:
            return True
        if name != "cpu":
            raise ValueError(f"device must be 'cpu' or 'cuda[:N]', got {device!r}")
    if target == "gpu":
        return True
    for x in objs:
        if x is not None and package_of_type(type(x)) not in _HOST_PACKAGES and on_cuda(x):
            return True
    return False
