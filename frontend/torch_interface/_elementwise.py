"""Elementwise torch functions on a TorchUST, differentiable in the stored values (autograd to ``.values()``).

- ``add``/``sub`` of two TorchUSTs (the union of the patterns) and ``mul`` (the intersection) run on the
  compiled :func:`frontend.ops.add`/``subtract``/``multiply`` kernels; when a gradient is needed the result's
  values are re-expressed as a gather of the operands' values (``index_add``/products over the entry maps
  between the patterns), so torch's autograd differentiates them.
- ``add``/``sub`` with a dense tensor or a scalar give a dense tensor (the compiled kernel; a scatter of the
  stored values into the dense operand under autograd); ``mul`` with a dense tensor is sampled: the sparse
  operand's pattern with ``v * d[i, j]`` gathered at its entries.
- ``relu``, ``abs``, ``neg``, ``tanh``, ``sigmoid`` and ``exp`` run on the stored entries only;
  ``torch.sparse.softmax``/``log_softmax`` reduce over each row's (fibre's) stored entries;
  ``torch.sparse.sampled_addmm`` samples ``mat1 @ mat2`` at the entries (SDDMM kernel, gradients to both
  dense factors through the SpMM kernels).

Padding (block fill, diagonal fill, delta gaps) is never an entry: a stored zero of a format that stores
padding is left out of every op above and stays zero (see :meth:`._wrapper.TensorWrapper.entries`).
"""
from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from typing import Any

import torch

from frontend.ops import _elementwise as ew

from ._products import dense_arg, kernel_matmul, sddmm, to_torch
from ._wrapper import TensorWrapper, densified_call


def _needs_grad(*xs: Any) -> bool:
    if not torch.is_grad_enabled():
        return False
    return any((x.values() if isinstance(x, TensorWrapper) else x).requires_grad for x in xs
               if isinstance(x, torch.Tensor))


def _scalar(x: Any) -> bool:
    return isinstance(x, numbers.Number) or (isinstance(x, torch.Tensor) and not isinstance(x, TensorWrapper)
                                             and x.dim() == 0)


def _flat_keys(dims: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
    """Row-major flat positions of ``(ndim, n)`` coordinates."""
    key = torch.zeros(dims.shape[1], dtype=torch.int64, device=dims.device)
    for d, size in enumerate(shape):
        key = key * size + dims[d]
    return key


def _locate(table: torch.Tensor, query: torch.Tensor) -> torch.Tensor:
    """For each of ``query``'s keys, its position in ``table`` (unique keys), or -1 when absent."""
    if table.numel() == 0:
        return torch.full_like(query, -1)
    sorted_keys, order = torch.sort(table)
    at = torch.searchsorted(sorted_keys, query).clamp_(max=table.numel() - 1)
    return torch.where(sorted_keys[at] == query, order[at], torch.full_like(at, -1))


def _with_entry_values(s: TensorWrapper, index: torch.Tensor, vals: torch.Tensor) -> TensorWrapper:
    """``s``'s structure with ``vals`` at storage positions ``index`` and zeros elsewhere (differentiable)."""
    flat = s.values().reshape(-1)
    if index.numel() == flat.numel() and vals.dtype == flat.dtype and bool((index[1:] > index[:-1]).all()):
        out = vals  # every stored value is an entry, in storage order
    else:
        out = torch.zeros(flat.shape, dtype=vals.dtype, device=vals.device).index_put((index,), vals)
    return s.with_values(s, out.reshape(s.values().shape))


def _entry_values(s: TensorWrapper) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(index, dims, values)`` of ``s``'s entries (padding left out); values keep their autograd history."""
    index, dims = s.entries()
    return index, dims, s.values().reshape(-1)[index]


def _promoted(x: Any, dtype: torch.dtype) -> Any:
    if isinstance(x, TensorWrapper):
        return x if x.dtype == dtype else x.map(lambda v: v.to(dtype))
    if isinstance(x, torch.Tensor):
        return x if x.dtype == dtype else x.to(dtype)
    return x


def _check_same_shape(name: str, a: TensorWrapper, b: TensorWrapper) -> None:
    if tuple(a.shape) != tuple(b.shape):
        raise ValueError(f"{name}: TorchUST operands of shapes {tuple(a.shape)} and {tuple(b.shape)} differ "
                         "(sparse operands do not broadcast)")


# ----- two TorchUSTs: union and intersection -----------------------------------------------------------------
_KERNELS: dict[str, Callable[..., Any]] = {"add": ew.add, "sub": ew.subtract, "mul": ew.multiply}


def _sparse_sparse(op: str, a: TensorWrapper, b: TensorWrapper) -> TensorWrapper:
    """``a + b`` / ``a - b`` (union) or ``a * b`` (intersection) of two TorchUSTs, on the compiled kernels."""
    _check_same_shape({"add": "add", "sub": "sub", "mul": "mul"}[op], a, b)
    dtype = torch.promote_types(a.dtype, b.dtype)
    a, b = _promoted(a, dtype), _promoted(b, dtype)
    out = to_torch(_KERNELS[op](a.ust, b.ust), type(a), a.device)
    if not _needs_grad(a, b):
        return out
    shape = tuple(a.shape)
    ia, da, va = _entry_values(a)
    ib, db, vb = _entry_values(b)
    io, do = out.entry_coordinates()
    ko = _flat_keys(do, shape)
    if op == "mul":  # every result entry is in both operands
        pa, pb = _locate(_flat_keys(da, shape), ko), _locate(_flat_keys(db, shape), ko)
        keep = (pa >= 0) & (pb >= 0)
        return _with_entry_values(out, io[keep], va[pa[keep]] * vb[pb[keep]])
    vals = torch.zeros(io.numel(), dtype=dtype, device=va.device)
    for dims, v, sign in ((da, va, 1), (db, vb, 1 if op == "add" else -1)):
        where = _locate(ko, _flat_keys(dims, shape))
        keep = where >= 0
        vals = vals.index_add(0, where[keep], v[keep] if sign == 1 else -v[keep])
    return _with_entry_values(out, io, vals)


# ----- a TorchUST with a dense tensor or a scalar -----------------------------------------------------------------
def _scatter(s: TensorWrapper, shape: tuple[int, ...], dtype: torch.dtype) -> torch.Tensor:
    """``s`` as a dense tensor (differentiable in ``s.values()``)."""
    _, dims, v = _entry_values(s)
    out = torch.zeros(shape, dtype=dtype, device=v.device)
    return out.index_put(tuple(dims), v.to(dtype), accumulate=True)


def _sparse_plus_dense(s: TensorWrapper, d: Any, sign: int, s_first: bool) -> torch.Tensor:
    """``s + sign * d`` (``s_first``) or ``d + sign * s``: a dense tensor."""
    if _scalar(d):
        d = torch.as_tensor(d, device=s.device)
        if not d.is_floating_point() and not d.is_complex() and s.dtype.is_floating_point:
            d = d.to(s.dtype)
    dtype = torch.promote_types(s.dtype, d.dtype)
    shape = tuple(torch.broadcast_shapes(tuple(s.shape), tuple(d.shape)))
    if shape != tuple(s.shape):
        return densified_call(torch.add, (s, d), {}, f"a dense operand of shape {tuple(d.shape)} broadcasting "
                                                      f"the TorchUST of shape {tuple(s.shape)}")
    if not _needs_grad(s, d):  # the compiled kernel
        s2, d2 = _promoted(s, dtype).ust, dense_arg(_promoted(d, dtype).expand(shape))
        if sign == 1:
            res = ew.add(s2, d2)
        else:
            res = ew.subtract(s2, d2) if s_first else ew.subtract(d2, s2)
        return to_torch(res, type(s), s.device)
    sd, d = _scatter(s, shape, dtype), d.to(dtype)
    if s_first:
        return sd + d if sign == 1 else sd - d
    return d + sd if sign == 1 else d - sd


def _signed_sum(a: Any, b: Any, alpha: Any, sign: int) -> Any:
    """``a + sign * alpha * b`` with at least one TorchUST (``add``: sign 1, ``sub``: sign -1)."""
    if alpha != 1:
        b = mul(b, alpha) if isinstance(b, TensorWrapper) else b * alpha
    ua, ub = isinstance(a, TensorWrapper), isinstance(b, TensorWrapper)
    if ua and ub:
        return _sparse_sparse("add" if sign == 1 else "sub", a, b)
    return _sparse_plus_dense(a, b, sign, True) if ua else _sparse_plus_dense(b, a, sign, False)


def add(a: Any, b: Any, *, alpha: Any = 1) -> Any:
    """``a + alpha * b`` with at least one TorchUST."""
    return _signed_sum(a, b, alpha, 1)


def sub(a: Any, b: Any, *, alpha: Any = 1) -> Any:
    """``a - alpha * b`` with at least one TorchUST."""
    return _signed_sum(a, b, alpha, -1)


def rsub(a: Any, b: Any, *, alpha: Any = 1) -> Any:
    """``b - alpha * a`` (``Tensor.__rsub__``)."""
    return sub(b, a, alpha=alpha)


def _sampled(s: TensorWrapper, d: torch.Tensor) -> TensorWrapper:
    """``s * d`` for a dense ``d`` broadcasting to ``s``'s shape: ``s``'s pattern, ``v * d[i, j]``."""
    dtype = torch.promote_types(s.dtype, d.dtype)
    shape = tuple(s.shape)
    if tuple(torch.broadcast_shapes(shape, tuple(d.shape))) != shape:
        return densified_call(torch.mul, (s, d), {}, f"a dense operand of shape {tuple(d.shape)} broadcasting "
                                                      f"the TorchUST of shape {shape}")
    s = _promoted(s, dtype)
    index, dims, v = _entry_values(s)
    g = d.to(dtype).expand(shape)[tuple(dims)]
    return _with_entry_values(s, index, v * g)


def mul(a: Any, b: Any) -> Any:
    """``a * b``: scalars scale the values, a dense tensor samples (the TorchUST's pattern), two TorchUSTs
    intersect."""
    ua, ub = isinstance(a, TensorWrapper), isinstance(b, TensorWrapper)
    if ua and ub:
        return _sparse_sparse("mul", a, b)
    s, other = (a, b) if ua else (b, a)
    if _scalar(other):
        return s.map(lambda v: torch.mul(v, other))
    if isinstance(other, torch.Tensor):
        return _sampled(s, other)
    return densified_call(torch.mul, (a, b), {}, f"a {type(other).__name__} operand")


# ----- functions of the stored values -----------------------------------------------------------------------------
def _unary(fn: Callable[[torch.Tensor], torch.Tensor], zero_preserving: bool) -> Callable[..., Any]:
    """A handler running ``fn`` on the stored entries (``fn(0) != 0`` functions skip padding)."""

    def handler(a: TensorWrapper, inplace: bool = False) -> Any:
        if inplace:
            return densified_call(fn, (a,), {"inplace": True}, "in-place")
        if zero_preserving:
            return a.map(fn)
        index, _, v = _entry_values(a)
        return _with_entry_values(a, index, fn(v))

    handler.__name__ = getattr(fn, "__name__", "unary")
    return handler


relu = _unary(torch.relu, True)
abs_ = _unary(torch.abs, True)
neg = _unary(torch.neg, True)
tanh = _unary(torch.tanh, True)
sigmoid = _unary(torch.sigmoid, False)
exp = _unary(torch.exp, False)


# ----- softmax over stored entries ----------------------------------------------------------------------------------
def _softmax(a: TensorWrapper, dim: int, dtype: Any, logarithm: bool) -> TensorWrapper:
    nd = a.dim()
    if not -nd <= dim < nd:
        raise IndexError(f"softmax: dim {dim} is out of range for a {nd}-D TorchUST")
    dim %= nd
    if dtype is not None:
        a = _promoted(a, dtype)
    if not a.dtype.is_floating_point:
        raise TypeError(f"softmax needs a floating-point TorchUST, got {a.dtype}")
    index, dims, v = _entry_values(a)
    others = [d for d in range(nd) if d != dim]
    group = _flat_keys(dims[others], tuple(a.shape[d] for d in others))
    n = math.prod(a.shape[d] for d in others)
    m = torch.full((n,), -math.inf, dtype=v.dtype, device=v.device)
    m = m.scatter_reduce(0, group, v.detach(), "amax", include_self=True)  # a shift: no gradient needed
    z = v - m[group]
    e = torch.exp(z)
    total = torch.zeros(n, dtype=v.dtype, device=v.device).index_add(0, group, e)
    out = z - torch.log(total)[group] if logarithm else e / total[group]
    return _with_entry_values(a, index, out)


def softmax(a: TensorWrapper, dim: int, dtype: Any = None) -> TensorWrapper:
    """``torch.sparse.softmax``: over each fibre's stored entries (absent entries count as minus infinity)."""
    return _softmax(a, dim, dtype, False)


def log_softmax(a: TensorWrapper, dim: int, dtype: Any = None) -> TensorWrapper:
    """``torch.sparse.log_softmax`` over each fibre's stored entries."""
    return _softmax(a, dim, dtype, True)


# ----- sampled dense-dense product ------------------------------------------------------------------------------------
class _Holder:
    __slots__ = ("ust",)

    def __init__(self, ust: TensorWrapper) -> None:
        self.ust = ust


class _SDDMM(torch.autograd.Function):
    """``(x @ y)`` at S's stored positions (S's storage order); gradients ``G @ y^T`` and ``x^T @ G`` with
    ``G`` the incoming gradient on S's pattern (two SpMM kernels)."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, y: torch.Tensor, holder: _Holder) -> torch.Tensor:
        ctx.holder = holder
        ctx.save_for_backward(x, y)
        return sddmm(holder.ust, x, y.t())

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple:
        x, y = ctx.saved_tensors
        s = ctx.holder.ust
        g = s.with_values(s, grad.detach().contiguous())
        gx = kernel_matmul(g, dense_arg(y.t())) if ctx.needs_input_grad[0] else None
        gy = kernel_matmul(g.transposed(), dense_arg(x)).t() if ctx.needs_input_grad[1] else None
        return gx, gy, None


def sampled_addmm(inp: Any, mat1: Any, mat2: Any, *, beta: Any = 1, alpha: Any = 1, out: Any = None) -> Any:
    """``beta * inp + alpha * (mat1 @ mat2)`` at the stored entries of the 2-D TorchUST ``inp``."""
    if out is not None or not isinstance(inp, TensorWrapper) or any(isinstance(m, TensorWrapper) for m in (mat1, mat2)):
        return densified_call(torch.sparse.sampled_addmm, (inp, mat1, mat2), {"beta": beta, "alpha": alpha},
                              "a sparse input with dense factors, no out=")
    if inp.dim() != 2 or mat1.dim() != 2 or mat2.dim() != 2:
        raise ValueError(f"sampled_addmm: expected 2-D operands, got {inp.dim()}-D, {mat1.dim()}-D and "
                         f"{mat2.dim()}-D")
    if mat1.shape[1] != mat2.shape[0] or (mat1.shape[0], mat2.shape[1]) != tuple(inp.shape):
        raise ValueError(f"sampled_addmm: mat1 {tuple(mat1.shape)} @ mat2 {tuple(mat2.shape)} does not give the "
                         f"input's shape {tuple(inp.shape)}")
    dtype = torch.promote_types(inp.dtype, torch.promote_types(mat1.dtype, mat2.dtype))
    s, x, y = _promoted(inp, dtype), mat1.to(dtype), mat2.to(dtype)
    holder = _Holder(s)
    if _needs_grad(x, y):
        prod = _SDDMM.apply(x, y, holder)
    else:
        prod = sddmm(holder.ust, dense_arg(x), dense_arg(y.t()))
    flat = s.values().reshape(-1)
    total = (flat if beta == 1 else beta * flat) if beta != 0 else torch.zeros_like(flat)
    total = total + (prod.reshape(-1) if alpha == 1 else alpha * prod.reshape(-1))
    index, _ = s.entries()
    return _with_entry_values(s, index, total[index])


HANDLED: tuple[tuple[tuple[Any, ...], Callable[..., Any]], ...] = (
    ((torch.add, torch.Tensor.add, torch.Tensor.__add__, torch.Tensor.__radd__), add),
    ((torch.sub, torch.subtract, torch.Tensor.sub, torch.Tensor.subtract, torch.Tensor.__sub__), sub),
    ((torch.Tensor.__rsub__, torch.rsub), rsub),
    ((torch.mul, torch.multiply, torch.Tensor.mul, torch.Tensor.multiply, torch.Tensor.__mul__,
      torch.Tensor.__rmul__), mul),
    ((torch.relu, torch.Tensor.relu, torch.nn.functional.relu), relu),
    ((torch.abs, torch.absolute, torch.Tensor.abs, torch.Tensor.absolute, torch.Tensor.__abs__), abs_),
    ((torch.neg, torch.negative, torch.Tensor.neg, torch.Tensor.negative, torch.Tensor.__neg__), neg),
    ((torch.tanh, torch.Tensor.tanh, torch.nn.functional.tanh), tanh),
    ((torch.sigmoid, torch.Tensor.sigmoid, torch.nn.functional.sigmoid), sigmoid),
    ((torch.exp, torch.Tensor.exp), exp),
    ((torch.sparse.softmax,), softmax),
    ((torch.sparse.log_softmax,), log_softmax),
    ((torch.sparse.sampled_addmm,), sampled_addmm),
)
