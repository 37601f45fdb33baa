"""Remembers the Tensor views made of a package object, so viewing it again costs O(1).

Validation (:mod:`frontend.storage._validate`) is remembered per buffer *objects*; a fresh view of the same SciPy
matrix or torch tensor would create new view objects and pay the O(nnz) checks again.  This cache keeps,
per source object (by ``id``, dropped when the object is garbage collected), the buffers of its last
view and a signature of the source's own buffers (address, shape, dtype); as long as the signature is
unchanged a new Tensor over the *same* buffer objects is returned, which validation recognises.
The entries hold only the buffers, never the source object itself.
"""
from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any

from frontend.storage._buffers import data_pointer
from frontend.storage._protocol import TensorT

_ENTRIES: dict[int, tuple[tuple, dict]] = {}
_LOCK = threading.Lock()


def _signature(buffers: list[Any]) -> tuple:
    return tuple((data_pointer(b), tuple(b.shape), str(b.dtype)) for b in buffers)


def _forget(key: int) -> None:
    with _LOCK:
        _ENTRIES.pop(key, None)


def cached_view(x: Any, source_buffers: list[Any], build: Callable[[], TensorT], cls: type[TensorT]) -> TensorT:
    """``build()``'s tensor, or a ``cls`` over the buffers of the last view of ``x`` if they still alias it."""
    sig = _signature(source_buffers) + (tuple(x.shape),)
    with _LOCK:
        hit = _ENTRIES.get(id(x))
    if hit is not None and hit[0] == sig:
        state = hit[1]
        t = cls(state["fmt"], state["shape"], state["pos"], state["crd"], state["val"],
                index_type=state["index_type"], package=state["package"], device=state["device"], source=x)
        t._validated = state["validated"]
        return t
    t = build()
    state = {"fmt": t.tensor_format, "shape": t.shape, "pos": list(t._pos), "crd": list(t._crd), "val": t.val,
             "index_type": t.index_type, "package": t.package, "device": t.device,
             "validated": getattr(t, "_validated", None)}
    try:
        weakref.finalize(x, _forget, id(x))
    except TypeError:  # no weak references to this type: don't cache
        return t
    with _LOCK:
        _ENTRIES[id(x)] = (sig, state)
    return t
