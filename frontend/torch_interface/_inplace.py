"""In-place updates of a TorchUST's stored values: what ``torch.optim`` optimizers call on a TorchUST parameter.

Every in-place op keeps the pattern and acts on the stored values: ``W.mul_(2)``, ``W.add_(G, alpha=-lr)``,
``W.addcdiv_(m, d, value=-lr)``, ``W.lerp_(G, 0.1)``, ``W.copy_(V)``, ``W.zero_()``.  A tensor operand is
read at W's stored entries: a TorchUST of the same pattern gives its values as they are (no copy), any
other TorchUST or dense tensor is gathered there, and one with nonzeros outside the pattern is refused
(``ValueError``) where the update would have to write them (``add_``, ``copy_``, ...).  A scalar added in
place (``W.add_(eps)``) goes to the stored values only: the pattern is what the update keeps (torch.sparse
refuses the call).  ``*_like`` give the same pattern with new values, as torch does for compressed
layouts; ``sqrt``, ``maximum`` and ``div`` of two TorchUSTs of one pattern act on the stored values.
Optimizer state (momentum, Adam's moments) is then TorchUSTs of the parameter's pattern, i.e. one number per
stored value.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from ._elementwise import _scalar
from ._wrapper import TensorWrapper, densified_call


def _at(a: TensorWrapper, x: Any, what: str, inside: bool = True) -> Any:
    """``x`` read at ``a``'s stored entries: a scalar as it is, a tensor shaped like the stored values;
    ``inside``: refuse nonzeros of ``x`` outside the pattern."""
    if _scalar(x):
        return x
    if not isinstance(x, torch.Tensor):
        raise TypeError(f"{what}: expected a number or a tensor, got {type(x).__name__}")
    if isinstance(x, TensorWrapper) and (x is a or x.same_pattern(a)):
        return x._stored
    if inside:
        return a.values_like(x.expand(a.shape) if not isinstance(x, TensorWrapper) else x, what)
    dense = x.dense() if isinstance(x, TensorWrapper) else x.expand(a.shape)
    return a.gather_stored(dense.reshape(-1))


def zero_(a: TensorWrapper) -> TensorWrapper:
    a._stored.zero_()
    return a


def fill_(a: TensorWrapper, value: Any) -> TensorWrapper:
    """Fill the stored values (torch fills a compressed tensor's values the same way)."""
    a._stored.fill_(value)
    return a


def mul_(a: TensorWrapper, other: Any) -> TensorWrapper:
    a._stored.mul_(_at(a, other, "mul_", inside=False))
    return a


def div_(a: TensorWrapper, other: Any, *, rounding_mode: Any = None) -> TensorWrapper:
    a._stored.div_(_at(a, other, "div_", inside=False), rounding_mode=rounding_mode)
    return a


def add_(a: TensorWrapper, other: Any, *, alpha: Any = 1) -> TensorWrapper:
    a._stored.add_(_at(a, other, "add_"), alpha=alpha)
    return a


def sub_(a: TensorWrapper, other: Any, *, alpha: Any = 1) -> TensorWrapper:
    a._stored.sub_(_at(a, other, "sub_"), alpha=alpha)
    return a


def addcmul_(a: TensorWrapper, t1: Any, t2: Any, *, value: Any = 1) -> TensorWrapper:
    a._stored.addcmul_(_at(a, t1, "addcmul_"), _at(a, t2, "addcmul_", inside=False), value=value)
    return a


def addcdiv_(a: TensorWrapper, t1: Any, t2: Any, *, value: Any = 1) -> TensorWrapper:
    a._stored.addcdiv_(_at(a, t1, "addcdiv_"), _at(a, t2, "addcdiv_", inside=False), value=value)
    return a


def lerp_(a: TensorWrapper, end: Any, weight: Any) -> TensorWrapper:
    a._stored.lerp_(_at(a, end, "lerp_"), _at(a, weight, "lerp_", inside=False))
    return a


def copy_(a: TensorWrapper, src: Any, non_blocking: bool = False) -> TensorWrapper:
    a._stored.copy_(torch.as_tensor(_at(a, src, "copy_")).expand(a._stored.shape), non_blocking=non_blocking)
    return a


def _values_inplace(fn: Callable[[torch.Tensor], Any]) -> Callable[..., TensorWrapper]:
    def handler(a: TensorWrapper) -> TensorWrapper:
        fn(a._stored)
        return a
    return handler


abs_ = _values_inplace(torch.Tensor.abs_)
neg_ = _values_inplace(torch.Tensor.neg_)
relu_ = _values_inplace(torch.Tensor.relu_)
sqrt_ = _values_inplace(torch.Tensor.sqrt_)


def sqrt(a: TensorWrapper) -> TensorWrapper:
    """The square roots of the stored values (``sqrt(0) = 0``: the pattern is kept)."""
    return a.map(torch.sqrt)


def conj(a: TensorWrapper) -> TensorWrapper:
    """``a`` itself for real dtypes (as torch), else the conjugated values."""
    return a if not a.dtype.is_complex else a.map(torch.conj_physical)


def _pair(name: str, a: Any, b: Any, fn: Callable[[torch.Tensor, Any], torch.Tensor], out: Any) -> Any:
    """``fn`` on the stored values of a TorchUST and a TorchUST of the same pattern (or a scalar)."""
    s = a if isinstance(a, TensorWrapper) else b
    other = b if s is a else a
    if not (_scalar(other) or (isinstance(other, TensorWrapper) and other.same_pattern(s))):
        return densified_call(getattr(torch, name), (a, b), {}, "two TorchUSTs of one pattern or a scalar")
    ov = other._stored if isinstance(other, TensorWrapper) else other
    vals = fn(s._stored, ov) if s is a else fn(torch.as_tensor(ov, dtype=s.dtype, device=s.device), s._stored)
    if out is None:
        return s.with_values(s, vals)
    if not (isinstance(out, TensorWrapper) and out.same_pattern(s)):
        raise ValueError(f"{name}(out=...): out must be a TorchUST of the operands' pattern")
    out._stored.copy_(vals)
    return out


def maximum(a: Any, b: Any, *, out: Any = None) -> Any:
    """Elementwise maximum of two TorchUSTs of one pattern (absent entries are 0 in both)."""
    if _scalar(a) or _scalar(b):
        return densified_call(torch.maximum, (a, b), {}, "two TorchUSTs of one pattern")
    return _pair("maximum", a, b, torch.maximum, out)


def minimum(a: Any, b: Any, *, out: Any = None) -> Any:
    if _scalar(a) or _scalar(b):
        return densified_call(torch.minimum, (a, b), {}, "two TorchUSTs of one pattern")
    return _pair("minimum", a, b, torch.minimum, out)


def like(fn: Callable[..., torch.Tensor]) -> Callable[..., TensorWrapper]:
    """``torch.zeros_like``/``ones_like``/... of a TorchUST: the same pattern, ``fn`` of the stored values."""

    def handler(a: TensorWrapper, *args: Any, dtype: Any = None, layout: Any = None, device: Any = None,
                requires_grad: bool = False, memory_format: Any = None, **kwargs: Any) -> Any:
        if layout is not None and layout != a.layout:
            return densified_call(fn, (a, *args), {"layout": layout}, f"layout={layout}")
        vals = fn(a._stored.detach(), *args, dtype=dtype, device=device, **kwargs)
        out = a.map(lambda _: vals, (lambda i: i.to(vals.device)) if vals.device != a.device else None)
        if requires_grad:
            out._stored.requires_grad_(True)
        return out

    handler.__name__ = getattr(fn, "__name__", "like")
    return handler


HANDLED: tuple[tuple[tuple[Any, ...], Callable[..., Any]], ...] = (
    ((torch.Tensor.zero_,), zero_),
    ((torch.Tensor.fill_,), fill_),
    ((torch.Tensor.mul_, torch.Tensor.__imul__), mul_),
    ((torch.Tensor.div_, torch.Tensor.__itruediv__), div_),
    ((torch.Tensor.add_, torch.Tensor.__iadd__), add_),
    ((torch.Tensor.sub_, torch.Tensor.__isub__), sub_),
    ((torch.Tensor.addcmul_,), addcmul_),
    ((torch.Tensor.addcdiv_,), addcdiv_),
    ((torch.Tensor.lerp_,), lerp_),
    ((torch.Tensor.copy_,), copy_),
    ((torch.Tensor.abs_, torch.Tensor.absolute_), abs_),
    ((torch.Tensor.neg_, torch.Tensor.negative_), neg_),
    ((torch.Tensor.relu_, torch.relu_), relu_),
    ((torch.Tensor.sqrt_, torch.sqrt_), sqrt_),
    ((torch.sqrt, torch.Tensor.sqrt), sqrt),
    ((torch.conj, torch.Tensor.conj, torch.conj_physical, torch.Tensor.conj_physical, torch.resolve_conj,
      torch.Tensor.resolve_conj), conj),
    ((torch.maximum, torch.Tensor.maximum), maximum),
    ((torch.minimum, torch.Tensor.minimum), minimum),
    ((torch.zeros_like,), like(torch.zeros_like)),
    ((torch.ones_like,), like(torch.ones_like)),
    ((torch.empty_like,), like(torch.empty_like)),
    ((torch.full_like,), like(torch.full_like)),
    ((torch.rand_like,), like(torch.rand_like)),
    ((torch.randn_like,), like(torch.randn_like)),
)
