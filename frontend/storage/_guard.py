"""What a validated tensor knows about later in-place changes of its index buffers (the memory-safety guarantee).

Validation is O(nnz), so it is remembered per buffer set (:mod:`._validate`). The caller's buffers are never
frozen or otherwise changed, so an index buffer may be written in place after validation (``A.indices[0] = 5``,
scipy's ``sort_indices()``). What notices that:

- torch buffers, and NumPy views of torch CPU tensors (``.numpy()``): torch's version counter, which every
  in-place torch op bumps on any view of the storage (optimizer steps included), is recorded at validation and
  compared in O(1): a buffer changed by torch is validated again before the next kernel reads it.
- NumPy buffers have no version counter, and a write through a NumPy view of a torch CPU tensor (or through
  raw pointers) does not move torch's: host buffers are *unwatched*, whatever their package. Kernels that are
  bounds-safe whatever the index buffers hold (``Kernel.bounds_safe``: the emitter, SpGEMM, the hand-written row
  kernels (union, intersection, row sums, softmax) and SDDMM, every position range and coordinate clamped in the
  generated code), and the conversions :func:`._direct.bounds_safe` names, read them as they are; every other
  kernel checks them again before each call (:func:`._validate.validate_now`: a compare with a copy, a full
  validation when they differ). Only CUDA torch
  buffers count as watched (their version counter is the only way to write them short of raw pointers).
- Values buffers are not watched: kernels read as many values as the levels say, whatever the values are, so
  changing values in place (``A.data *= 2``, an optimizer step) is free and always seen.
"""
from __future__ import annotations

import sys
from typing import Any

import numpy as np

#: ((torch tensor, its version at validation), ...), and whether every index buffer is watched (a CUDA torch
#: tensor; False: some are host or CuPy buffers, which can change without a version counter seeing it)
Guard = tuple[tuple[tuple[Any, int], ...], bool]
EMPTY: Guard = ((), True)
#: The guard of index buffers none of which torch watches (NumPy arrays of the library's own)
UNWATCHED: Guard = ((), False)


def _torch_root(a: np.ndarray) -> Any:
    """The torch tensor a NumPy array is a view of (through its base chain), else None."""
    b: Any = a
    while isinstance(b, np.ndarray) and b.base is not None:
        b = b.base
    torch = sys.modules.get("torch")
    return b if torch is not None and isinstance(b, torch.Tensor) else None


def record(index_buffers: list[Any]) -> Guard:
    """The guard of ``index_buffers`` as they are now: torch versions, and whether every buffer is watched."""
    versions: list[tuple[Any, int]] = []
    watched = True
    torch = sys.modules.get("torch")
    for b in index_buffers:
        root = _torch_root(b) if isinstance(b, np.ndarray) else b
        if torch is not None and isinstance(root, torch.Tensor):
            versions.append((root, root._version))
            watched = watched and root is b and root.device.type == "cuda"
        else:
            watched = False
    if not versions and watched:
        return EMPTY
    return tuple(versions), watched


def intact(guard: Guard) -> bool:
    """Whether no torch-watched buffer changed since :func:`record` (O(1) per buffer)."""
    for t, v in guard[0]:
        if t._version != v:
            return False
    return True


def thaw(array: Any) -> Any:
    """Returns ``array`` unchanged. Deprecated no-op kept for one release: validated index buffers are no
    longer made read-only, so there is nothing to make writable again."""
    return array
