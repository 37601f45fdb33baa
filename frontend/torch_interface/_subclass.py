"""``TorchUST``: the public torch tensor in any format, with torch functions routed to the compiled kernels.

Storage and methods come from :class:`._wrapper.TensorWrapper`.  ``__torch_function__`` looks torch
functions up in :data:`._handlers.HANDLERS` (products, views, copies, scalar arithmetic); metadata
queries run as on any tensor, and anything else is refused (or densified under
:func:`~frontend.torch_interface.allow_dense_fallback`).
"""
from __future__ import annotations

from typing import Any

import torch

from ._handlers import HANDLERS, is_metadata, property_handler
from ._wrapper import TensorWrapper, densified_call


class TorchUST(TensorWrapper):
    """A torch tensor stored in any format of the DSL (see :mod:`._wrapper`) on the compiled kernels."""

    @classmethod
    def __torch_function__(cls, func: Any, types: Any, args: tuple = (), kwargs: dict | None = None) -> Any:
        kwargs = kwargs or {}
        handler = HANDLERS.get(func) or property_handler(func)
        if handler is not None:
            return handler(*args, **kwargs)
        if is_metadata(func):
            with torch._C.DisableTorchFunctionSubclass():
                return func(*args, **kwargs)
        return densified_call(func, args, kwargs)
