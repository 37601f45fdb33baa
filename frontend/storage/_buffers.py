"""Package-neutral helpers for the buffers a :class:`~frontend.tensor.Tensor` holds.

Buffers are NumPy arrays (CPU), torch tensors (CUDA, or CPU ones not yet viewed) or CuPy arrays.  These
helpers move between the three *without copying* where the memory allows it and name the problem
(``ValueError``) when it does not.
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np


def package_of(x: Any) -> str | None:
    """``"numpy"``, ``"scipy"``, ``"torch"``, ``"cupy"`` or ``"sparse"`` (pydata) for an object of that
    package, else None."""
    return package_of_type(type(x))


def package_of_type(tx: type) -> str | None:
    """:func:`package_of` for objects of type ``tx``."""
    root = (tx.__module__ or "").split(".", 1)[0]
    if root == "numpy":
        return "numpy"
    if root == "scipy":
        return "scipy"
    if root == "torch":
        return "torch"
    if root in ("cupy", "cupyx"):
        return "cupy"
    if root == "sparse":  # pydata/sparse
        return "sparse"
    return None


def bfloat16() -> np.dtype:
    """NumPy's bfloat16 dtype (from ``ml_dtypes``, the package JAX and TensorFlow use for it)."""
    import ml_dtypes
    return np.dtype(ml_dtypes.bfloat16)


def is_bfloat16(dt: Any) -> bool:
    return str(dt) in ("bfloat16", "torch.bfloat16")


def is_torch(b: Any) -> bool:
    return package_of(b) == "torch"


def as_numpy(b: Any, what: str = "buffer") -> np.ndarray:
    """A NumPy view of a CPU buffer (torch CPU tensors via ``.numpy()``, sharing memory)."""
    if isinstance(b, np.ndarray):
        return b
    if is_torch(b):
        if b.device.type != "cpu":
            raise ValueError(f"{what} lives on {b.device}; NumPy/SciPy need CPU buffers (move it with "
                             ".cpu() first, which copies)")
        if b.is_conj() or b.is_neg():
            raise ValueError(f"{what} has a lazy conjugate/negative bit; call .resolve_conj() first (a copy)")
        if is_bfloat16(b.dtype):  # no NumPy equivalent in torch: the same memory as ml_dtypes' bfloat16
            import torch
            return b.detach().view(torch.int16).numpy().view(bfloat16())
        try:
            return b.detach().numpy()
        except TypeError:
            raise TypeError(f"{what}: torch dtype {b.dtype} has no NumPy equivalent, so a CPU tensor of it "
                            "cannot be viewed; convert it (e.g. .float(), a copy)") from None
    if package_of(b) == "cupy":
        raise ValueError(f"{what} is a CuPy array on the GPU; NumPy/SciPy need CPU buffers (cupy.asnumpy copies)")
    raise TypeError(f"{what}: expected an array, got {type(b).__name__}")


def as_torch(b: Any, what: str = "buffer") -> Any:
    """A torch view of a buffer: NumPy via ``torch.from_numpy``, CuPy via ``__cuda_array_interface__``."""
    import torch
    if isinstance(b, torch.Tensor):
        return b
    if isinstance(b, np.ndarray):
        if not b.flags.writeable:  # a read-only buffer of the caller's: shared as is, torch warns about it
            import warnings
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="The given NumPy array is not writable")
                return _from_numpy(torch, b)
        return _from_numpy(torch, b)
    if package_of(b) == "cupy":
        return torch.as_tensor(b, device=f"cuda:{b.device.id}")
    raise TypeError(f"{what}: expected an array, got {type(b).__name__}")


def _from_numpy(torch: Any, b: np.ndarray) -> Any:
    if is_bfloat16(b.dtype):  # ml_dtypes' bfloat16: the same bits as torch.bfloat16 (a view)
        return torch.from_numpy(b.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(b)


def as_cupy(b: Any, what: str = "buffer") -> Any:
    """A CuPy array of a buffer (torch CUDA tensors are viewed; CPU buffers are copied to the GPU)."""
    import cupy
    if isinstance(b, cupy.ndarray):
        return b
    if is_torch(b) and b.device.type == "cuda":
        return cupy.asarray(b.detach())
    return cupy.asarray(as_numpy(b, what))


def numpy_dtype(b: Any) -> np.dtype:
    """The NumPy dtype of a NumPy/torch/CuPy array's elements (``torch.int32`` -> ``int32``)."""
    dt = b.dtype
    if isinstance(dt, np.dtype):
        return dt
    return bfloat16() if is_bfloat16(dt) else np.dtype(str(dt).replace("torch.", ""))


def is_contiguous(b: Any) -> bool:
    """Whether a NumPy/torch/CuPy array is C-contiguous (True for objects that report no layout)."""
    if hasattr(b, "is_contiguous"):  # torch
        return bool(b.is_contiguous())
    flags = getattr(b, "flags", None)
    return bool(flags.c_contiguous) if flags is not None else True


def torch_buffer(b: Any, what: str = "torch buffer") -> Any:
    """How a Tensor keeps a torch tensor's memory: a NumPy view on the CPU (:func:`as_numpy`), the
    detached tensor itself on a GPU."""
    return as_numpy(b, what) if b.device.type == "cpu" else b.detach()


def device_ordinal(device: Any) -> int:
    """The device number of ``"cuda:N"`` (0 for ``"cuda"``)."""
    text = str(device)
    return int(text.split(":", 1)[1]) if ":" in text else 0


def check_index_buffers(buffers: Sequence[Any], what: str) -> np.dtype | None:
    """All index buffers contiguous, integer and of one dtype; returns that dtype (None if none)."""
    dtype = None
    for b in buffers:
        if b is None:
            continue
        if not is_contiguous(b):
            raise ValueError(f"{what}: index buffer of shape {tuple(b.shape)} is not contiguous; "
                             "make it contiguous first (a copy)")
        d = numpy_dtype(b)
        if d.kind not in "iu":
            raise ValueError(f"{what}: index buffers must be integers, got {d}")
        if dtype is not None and d != dtype:
            raise ValueError(f"{what}: index buffers mix {dtype} and {d}; use one index type")
        dtype = d
    return dtype


def nbytes(b: Any) -> int:
    """Bytes of a NumPy/torch/CuPy array's elements."""
    if hasattr(b, "nbytes"):
        return int(b.nbytes)
    return int(b.numel() * b.element_size())  # torch


def data_pointer(b: Any) -> int:
    """Address of a buffer's first element (NumPy, torch or CuPy; ``id`` for anything else)."""
    if isinstance(b, np.ndarray):
        return int(b.__array_interface__["data"][0])
    if hasattr(b, "data_ptr"):  # torch
        return int(b.data_ptr())
    if hasattr(b, "data") and hasattr(b.data, "ptr"):  # CuPy
        return int(b.data.ptr)
    return id(b)
