"""How a validated tensor notices that its index buffers were changed in place (the memory-safety guarantee).

A kernel trusts a validated tensor's index buffers (positions, coordinates): one coordinate out of range would
make it read outside another buffer. Validation is O(nnz), so it is remembered per buffer set
(:mod:`._validate`); this module makes that memo notice in-place changes at O(1) per index buffer per call,
with certainty for every write that goes through NumPy or torch:

- NumPy index buffers (and the NumPy arrays they are views of) are **frozen** when validated
  (``flags.writeable = False``): writing into them raises NumPy's "assignment destination is read-only".
  NumPy refuses a writable view of a read-only base, so only the root of each chain needs checking. A
  caller who makes one writable again to change it (:func:`thaw`) is seen by the next call, which validates
  the buffers again (``ValueError`` naming the level when they are now wrong) and
  freezes them again.
- torch buffers, and NumPy views of torch CPU tensors (``.numpy()``): torch's version counter, which every
  in-place torch op bumps on any view of the storage (optimizer steps included), is recorded and compared.
- Values buffers are not guarded: kernels read as many values as the levels say, whatever the values are, so
  changing values in place (``A.data *= 2``, an optimizer step) is free and always seen.

Not covered (documented in the README): writes through a NumPy view of the same memory made *before*
validation (a sibling view of a frozen base), through another ``.numpy()`` view of a torch tensor, through raw
pointers (ctypes, DLPack consumers), and CuPy buffers (no version counter).
"""
from __future__ import annotations

import sys
from typing import Any

import numpy as np

#: (frozen NumPy arrays, ((torch tensor, its version at validation), ...)); None: nothing to guard
Guard = tuple[tuple[np.ndarray, ...], tuple[tuple[Any, int], ...]]
EMPTY: Guard = ((), ())


def _torch_root(a: np.ndarray) -> Any:
    """The torch tensor a NumPy array is a view of (through its base chain), else None."""
    b: Any = a
    while isinstance(b, np.ndarray) and b.base is not None:
        b = b.base
    torch = sys.modules.get("torch")
    return b if torch is not None and isinstance(b, torch.Tensor) else None


def freeze(index_buffers: list[Any]) -> Guard:
    """Freezes the NumPy index buffers (and their NumPy bases) and records torch versions; the guard to check."""
    frozen: list[np.ndarray] = []
    versions: list[tuple[Any, int]] = []
    torch = sys.modules.get("torch")
    for b in index_buffers:
        if isinstance(b, np.ndarray):
            root = _torch_root(b)
            if root is not None:
                versions.append((root, root._version))
                continue
            a: Any = b
            root = b
            while isinstance(a, np.ndarray):
                if a.flags.writeable:
                    a.flags.writeable = False
                root, a = a, a.base
            # NumPy refuses to make a view writable while its base is read-only, so the chain can only be
            # written after its root is made writable again: checking the root alone is enough
            if all(r is not root for r in frozen):
                frozen.append(root)
        elif torch is not None and isinstance(b, torch.Tensor):
            versions.append((b, b._version))
    if not frozen and not versions:
        return EMPTY
    return tuple(frozen), tuple(versions)


def intact(guard: Guard) -> bool:
    """Whether no guarded buffer can have changed since :func:`freeze` (O(1) per buffer)."""
    frozen, versions = guard
    for a in frozen:
        if a.flags.writeable:
            return False
    for t, v in versions:
        if t._version != v:
            return False
    return True


def thaw(array: Any) -> Any:
    """Makes a frozen NumPy index buffer (and the NumPy arrays it is a view of) writable again and returns it,
    to change it in place; the next operation that reads it validates it again."""
    chain: list[np.ndarray] = []
    a: Any = array
    while isinstance(a, np.ndarray):
        chain.append(a)
        a = a.base
    for a in reversed(chain):  # a base first: NumPy refuses a writable view of a read-only base
        if not a.flags.writeable:
            a.flags.writeable = True
    return array
