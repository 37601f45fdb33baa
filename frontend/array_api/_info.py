"""``__array_namespace_info__``: the devices (the CPU), the dtypes and the capabilities of the namespace."""
from __future__ import annotations

from typing import Any

import numpy as np

from ._arrays import check_device
from ._dtypes import DTYPES

_KINDS = ("bool", "signed integer", "unsigned integer", "integral", "real floating", "complex floating",
          "numeric")


class Info:
    """What ``__array_namespace_info__()`` returns (the standard's inspection API)."""

    __module__ = "frontend.array_api"

    def capabilities(self) -> dict[str, Any]:
        """Boolean indexing and data-dependent shapes (``nonzero``, ``unique_*``) are available."""
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": None}

    def default_device(self) -> str:
        return "cpu"

    def devices(self) -> list[str]:
        return ["cpu"]

    def default_dtypes(self, *, device: Any = None) -> dict[str, np.dtype]:
        check_device(device)
        return {"real floating": DTYPES["float64"], "complex floating": DTYPES["complex128"],
                "integral": DTYPES["int64"], "indexing": DTYPES["int64"]}

    def dtypes(self, *, device: Any = None, kind: Any = None) -> dict[str, np.dtype]:
        """The dtypes of ``kind`` (None: all; a kind name, a dtype or a tuple of them), by name."""
        check_device(device)
        if kind is None:
            return dict(DTYPES)
        if isinstance(kind, str) and kind not in _KINDS:
            raise ValueError(f"unknown dtype kind {kind!r} (kinds: {', '.join(_KINDS)})")
        return {name: dt for name, dt in DTYPES.items() if np.isdtype(dt, kind)}


def __array_namespace_info__() -> Info:
    """The namespace's inspection object."""
    return Info()
