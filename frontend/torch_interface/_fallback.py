"""Refusing unsupported torch operations on a TorchUST, or densifying them when the user opts in."""
from __future__ import annotations

import contextlib
import threading
import warnings
from collections.abc import Iterator

_state = threading.local()


class DenseFallbackWarning(UserWarning):
    """Issued when an unsupported operation runs on a densified copy of a TorchUST."""


def dense_fallback_enabled() -> bool:
    """Whether the calling thread is inside :func:`allow_dense_fallback`."""
    return getattr(_state, "depth", 0) > 0


@contextlib.contextmanager
def allow_dense_fallback() -> Iterator[None]:
    """Inside this block, torch operations TorchUST does not support run on a dense copy (with a
    :class:`DenseFallbackWarning`) instead of raising ``NotImplementedError``."""
    _state.depth = getattr(_state, "depth", 0) + 1
    try:
        yield
    finally:
        _state.depth -= 1


def op_name(func: object) -> str:
    """A readable name of a torch function, method or aten overload."""
    name = getattr(func, "__name__", None)
    if name == "__get__":
        owner = getattr(func, "__self__", None)
        return f"Tensor.{getattr(owner, '__name__', owner)}"
    qual = getattr(func, "__qualname__", None) or name
    if qual is None:
        return str(func)
    module = getattr(func, "__module__", "") or ""
    if qual.startswith("_VariableFunctionsClass."):
        return "torch." + qual.split(".", 1)[1]
    if qual.startswith("TensorBase.") or qual.startswith("Tensor."):
        return "Tensor." + qual.split(".", 1)[1]
    if module.startswith("torch.nn.functional"):
        return f"torch.nn.functional.{qual}"
    if module.startswith("torch") and "." not in qual:
        return f"torch.{qual}"
    return str(func) if not name else qual


def refuse_or_warn(func: object, format_name: str, detail: str = "") -> None:
    """Raise ``NotImplementedError`` for ``func`` on a TorchUST in ``format_name``, unless dense fallback
    is allowed, in which case warn (the caller then densifies)."""
    extra = f" ({detail})" if detail else ""
    msg = (f"{op_name(func)} is not supported on a TorchUST in format {format_name}{extra}; "
           "use frontend.torch_interface.allow_dense_fallback() to run it on a dense copy")
    if not dense_fallback_enabled():
        raise NotImplementedError(msg)
    warnings.warn(f"{op_name(func)} on a TorchUST in format {format_name}{extra}: running on a dense copy",
                  DenseFallbackWarning, stacklevel=4)
