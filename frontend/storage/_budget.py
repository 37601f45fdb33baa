"""How many bytes an operation may allocate, and the ``MemoryError`` raised before it allocates more.

Compiled kernels allocate their results and workspaces themselves (a sparse result's positions, the
sparsifier's expanded row of the innermost result dimension, a dense result), sized by the operands'
extents. :func:`storage_bytes` estimates what a format takes for a shape (the part every tensor of that
shape pays, whatever its entries: dense levels, positions under them), and :func:`require` compares a
request with the memory this process can still get (``MemAvailable``, and the address-space limit
``RLIMIT_AS`` when one is set), so that an operation on extents no memory holds raises
``MemoryError`` naming it, the size and the operand shapes instead of failing inside a kernel.
"""
from __future__ import annotations

import math
import os
import resource
from collections.abc import Sequence
from typing import Any

#: Requests up to this many bytes are never refused (no system query on the common path).
FREE_BELOW = 1 << 28

#: Extents above this count as hypersparse when an operand's stored entries are far fewer.
HYPERSPARSE_EXTENT = 1 << 24

#: Bytes per position or coordinate assumed by the estimates (int64, what generated code uses).
INDEX_BYTES = 8


def available_bytes() -> int:
    """Bytes this process can still allocate: ``MemAvailable`` of ``/proc/meminfo``, lowered to what the
    address-space limit leaves when one is set (a large number where neither is known)."""
    avail = 1 << 62
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    avail = int(line.split()[1]) * 1024
                    break
    except OSError:
        pass
    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    if soft != resource.RLIM_INFINITY:
        try:
            with open("/proc/self/statm") as f:
                used = int(f.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
        except OSError:
            used = 0
        avail = min(avail, soft - used)
    return max(avail, 0)


def _size(nbytes: int) -> str:
    for unit, shift in (("EiB", 60), ("PiB", 50), ("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if nbytes >= 1 << shift:
            return f"{nbytes / (1 << shift):.1f} {unit}"
    return f"{nbytes} bytes"


def require(what: str, nbytes: int, shapes: Sequence[Sequence[int]]) -> None:
    """``MemoryError`` when ``what`` needs more than :func:`available_bytes` (requests up to
    :data:`FREE_BELOW` always pass)."""
    if nbytes <= FREE_BELOW:
        return
    avail = available_bytes()
    if nbytes > avail:
        operands = ", ".join(str(tuple(int(e) for e in s)) for s in shapes)
        raise MemoryError(f"{what}: its result and workspace need {_size(nbytes)} ({nbytes} bytes) for operands "
                          f"of shapes {operands}, more than the {_size(avail)} this process can allocate; "
                          "a format whose storage follows the stored entries (COO, DCSR) or smaller extents "
                          "avoid it")


def storage_bytes(fmt: Any, shape: Sequence[int], entries: int, itemsize: int) -> int:
    """Bytes ``fmt`` (None: row-major dense) takes for ``shape`` holding ``entries`` entries: dense levels
    multiply the slots, compressed levels store positions per parent and at most ``entries`` children,
    structured levels ``n`` slots per group of ``m``. With ``entries=0`` it is the part no tensor of this
    shape avoids."""
    if fmt is None or fmt.is_dense:
        return math.prod(int(e) for e in shape) * itemsize
    parents, total = 1, 0
    for lv, e in zip(fmt.levels, fmt.level_extents(shape)):
        kind = lv.format.value
        e = int(e)
        if kind in ("dense", "batch", "range"):
            parents *= e
        elif kind in ("compressed", "delta"):
            total += (parents + 1) * INDEX_BYTES
            parents = min(entries, parents * e)
            total += parents * INDEX_BYTES
        elif kind == "loose_compressed":
            total += 2 * parents * INDEX_BYTES
            parents = min(entries, parents * e)
            total += parents * INDEX_BYTES
        elif kind == "singleton":
            total += parents * INDEX_BYTES
        elif kind == "structured":
            n, m = lv.structure
            parents *= -(-e // m) * n
            total += parents * INDEX_BYTES
    return total + parents * itemsize


def workspace_bytes(fmt: Any, shape: Sequence[int], itemsize: int) -> int:
    """The sparsifier's workspace for a sparse result of ``shape`` (its expanded innermost dimension: values,
    a filled flag and the coordinates list); 0 for dense results and vectors."""
    if fmt is None or fmt.is_dense or len(shape) < 2:
        return 0
    return int(fmt.level_extents(shape)[-1]) * (itemsize + 1 + INDEX_BYTES)


def is_hypersparse(tensors: Sequence[Any]) -> bool:
    """Whether a stored operand has an extent over :data:`HYPERSPARSE_EXTENT` and 16 times its stored entries:
    per-row (or per-extent) work and memory would dwarf its entries."""
    for t in tensors:
        if getattr(t, "is_sparse", False):
            limit = 16 * (t.nse + 1)
            if any(e > HYPERSPARSE_EXTENT and e > limit for e in t.shape):
                return True
    return False
