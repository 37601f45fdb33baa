"""Moving a :class:`~frontend.tensor.Tensor`'s buffers between torch and the Tensor, without copies."""
from __future__ import annotations

from typing import Any

import numpy as np
import torch

from frontend.storage._buffers import as_torch as buffer_as_torch, nbytes, torch_buffer
from frontend.tensor._tensor import Tensor


def as_torch(b: Any) -> torch.Tensor:
    """A torch view of a buffer (NumPy arrays via ``torch.from_numpy``, sharing memory)."""
    if isinstance(b, torch.Tensor):
        return b
    if isinstance(b, np.ndarray):
        if not b.flags.writeable:  # e.g. a validated (frozen) index buffer: torch must not write into it
            b = b.copy()
        return buffer_as_torch(b)  # bfloat16 (ml_dtypes) too
    return torch.as_tensor(b)


def with_values(ust: Tensor, values: torch.Tensor) -> Tensor:
    """``ust``'s index buffers with other ``values`` (same length/shape)."""
    val = torch_buffer(values)
    return Tensor(ust.tensor_format, ust.shape, list(ust._pos), list(ust._crd), val,
                  index_type=ust.index_type, package="torch", device=str(values.device))


def map_buffers(ust: Tensor, fn: Any, values: torch.Tensor) -> Tensor:
    """A Tensor whose index buffers are ``fn(buffer)`` (torch in, torch out) and whose values are ``values``."""
    pos = [None if p is None else torch_buffer(fn(as_torch(p))) for p in ust._pos]
    crd = [None if c is None else torch_buffer(fn(as_torch(c))) for c in ust._crd]
    return Tensor(ust.tensor_format, ust.shape, pos, crd, torch_buffer(values), index_type=ust.index_type,
                  package="torch", device=str(values.device))


def same_memory(ust: Tensor, values: torch.Tensor) -> bool:
    """Whether ``ust``'s values buffer is ``values``'s memory (a parameter may be given new storage)."""
    val = ust.val
    if isinstance(val, np.ndarray):
        return (values.device.type == "cpu" and val.__array_interface__["data"][0] == values.data_ptr()
                and val.size == values.numel() and val.dtype.itemsize == values.element_size())
    return isinstance(val, torch.Tensor) and val.data_ptr() == values.data_ptr() and val.numel() == values.numel()


def storage_bytes(ust: Tensor) -> int:
    """Bytes held by the index and value buffers."""
    return sum(nbytes(b) for b in ust.buffers())
