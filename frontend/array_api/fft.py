"""The Array API ``fft`` extension on dense-format arrays (NumPy's ``fft`` over their buffers): a transform of a
sparse array is dense, so a sparse operand raises ``TypeError`` naming how to densify."""
from __future__ import annotations

from typing import Any

import numpy as np

from ._arrays import dense_only, wrap

_WHY = "its transform is dense"


def _transform(name: str) -> Any:
    fn = getattr(np.fft, name)

    def run(x: Any, /, *args: Any, **kwargs: Any) -> Any:
        return wrap(fn(dense_only(f"fft.{name}", x, _WHY), *args, **kwargs))
    run.__name__ = run.__qualname__ = name
    run.__doc__ = f"NumPy's ``fft.{name}`` of a dense-format array."
    return run


def fftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None, device: Any = None) -> Any:
    """The sample frequencies of an ``n``-point transform (a dense-format array)."""
    return wrap(np.fft.fftfreq(n, d=d).astype(dtype or np.float64))


def rfftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None, device: Any = None) -> Any:
    """The sample frequencies of an ``n``-point real transform (a dense-format array)."""
    return wrap(np.fft.rfftfreq(n, d=d).astype(dtype or np.float64))


fft, ifft, fftn, ifftn = (_transform(n) for n in ("fft", "ifft", "fftn", "ifftn"))
rfft, irfft, rfftn, irfftn = (_transform(n) for n in ("rfft", "irfft", "rfftn", "irfftn"))
hfft, ihfft, fftshift, ifftshift = (_transform(n) for n in ("hfft", "ihfft", "fftshift", "ifftshift"))

__all__ = ["fft", "fftfreq", "fftn", "fftshift", "hfft", "ifft", "ifftn", "ifftshift", "ihfft", "irfft", "irfftn",
           "rfft", "rfftfreq", "rfftn"]
