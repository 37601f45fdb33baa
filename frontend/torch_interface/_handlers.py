"""The torch functions a TorchUST supports, each mapped to the compiled kernels (see :data:`HANDLERS`).

Handlers take and return :class:`._wrapper.TensorWrapper` (TorchUST's base): new wrappers are built by
their operands' methods (``map``, ``transposed``) and the products, so this module never imports TorchUST.
"""
from __future__ import annotations

import numbers
from collections.abc import Callable
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from . import _inplace, _sparse_api
from ._einsum import einsum
from ._elementwise import HANDLED, _scatter as scatter_dense
from ._products import kernel_matmul, sparse_dense, sparse_sparse, sparse_sparse_dense
from ._wrapper import TensorWrapper, densified_call

Handler = Callable[..., Any]

_META = {"size", "dim", "numel", "nelement", "ndimension", "element_size", "is_floating_point",
         "is_complex", "get_device", "__len__", "__hash__", "is_contiguous", "type"}
_NOT_META_PROPS = {"data", "real", "imag", "T", "mT", "H", "mH"}


def is_metadata(func: Any) -> bool:
    """Functions that only read the wrapper's metadata (shape, dtype, device, ...)."""
    name = getattr(func, "__name__", "")
    if name == "__get__":
        return getattr(getattr(func, "__self__", None), "__name__", "") not in _NOT_META_PROPS
    return (name in _META and func is getattr(torch.Tensor, name, None)) or func in _META_FUNCTIONS


_META_FUNCTIONS = {torch.is_complex, torch.is_floating_point, torch.numel, torch.is_conj, torch.Tensor.is_conj,
                   torch.is_neg, torch.Tensor.is_neg, torch.Tensor.is_inference, torch.is_inference}


def property_handler(func: Any) -> Handler | None:
    """The handler of a property getter (``Tensor.T`` / ``Tensor.mT`` of a 2-D TorchUST), if any."""
    if getattr(func, "__name__", "") != "__get__":
        return None
    name = getattr(getattr(func, "__self__", None), "__name__", "")
    return t if name in ("T", "mT") else None


def _needs_grad(*xs: Any) -> bool:
    if not torch.is_grad_enabled():
        return False
    return any((x.values() if isinstance(x, TensorWrapper) else x).requires_grad for x in xs
               if isinstance(x, torch.Tensor))


SERIAL_ADD_MAX = 1 << 20  # elements: smaller in-place sums of a product run on the calling thread


def add_into(y: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """``y += t`` (broadcast) for a product ``y`` nothing differentiates. Below :data:`SERIAL_ADD_MAX` CPU
    float elements NumPy adds on the calling thread: torch splits such an add across its threads, and on a
    busy machine waiting for the second thread costs milliseconds where the add itself takes microseconds."""
    if (y.numel() < SERIAL_ADD_MAX and y.device.type == "cpu" and t.device.type == "cpu" and y.dtype == t.dtype
            and y.dtype in (torch.float32, torch.float64) and t.layout == torch.strided):
        yn = y.numpy()
        try:
            np.add(yn, t.detach().numpy(), out=yn)
            return y
        except ValueError:  # shapes that do not broadcast: torch's own error below
            pass
    return y.add_(t)


# ----- products ----------------------------------------------------------------------------------------
def product(a: Any, b: Any) -> Any:
    """``a @ b`` for 1-D/2-D operands, at least one a TorchUST."""
    ua, ub = isinstance(a, TensorWrapper), isinstance(b, TensorWrapper)
    if ua and ub:
        return sparse_sparse(a, b)
    if ua and a.dim() == 2:
        return sparse_dense(a, b, "left")
    if ub and b.dim() == 2:
        return sparse_dense(b, a, "right")
    if _needs_grad(a, b):
        s = a if ua else b
        raise NotImplementedError(f"gradients of products with a {s.dim()}-D TorchUST ({s.format_name}) are "
                                  "not supported (2-D sparse operands only)")
    return kernel_matmul(a, b)


def _check_dims(name: str, a: Any, b: Any, da: int, db: int) -> None:
    if a.dim() != da or b.dim() != db:
        raise RuntimeError(f"{name}: expected {da}-D and {db}-D operands, got {a.dim()}-D and {b.dim()}-D")


def mm(a: Any, b: Any) -> Any:
    _check_dims("mm", a, b, 2, 2)
    return product(a, b)


def mv(a: Any, v: Any) -> Any:
    _check_dims("mv", a, v, 2, 1)
    return product(a, v)


def dot(a: Any, b: Any) -> Any:
    _check_dims("dot", a, b, 1, 1)
    return product(a, b)


def _dense_if_sparse(x: Any) -> Any:
    return x.dense() if isinstance(x, TensorWrapper) else x


def _add_scaled(inp: Any, p: Any, beta: Any, alpha: Any) -> torch.Tensor:
    p = _dense_if_sparse(p)
    p = p if alpha == 1 else alpha * p
    if beta == 0:
        return p
    inp = _dense_if_sparse(inp)
    return p + (inp if beta == 1 else beta * inp)


def _addmm_like(inp: Any, m1: Any, m2: Any, beta: Any, alpha: Any, prod: Callable) -> Any:
    """``beta * inp + alpha * (m1 @ m2)``; batched products without gradients fuse it into the kernel (``c``)."""
    both_sparse = isinstance(m1, TensorWrapper) and isinstance(m2, TensorWrapper)
    if isinstance(inp, TensorWrapper) or _needs_grad(inp, m1, m2) or both_sparse:
        return _add_scaled(inp, prod(m1, m2), beta, alpha)
    if prod is product:  # the planned product (right kernel orientation for x @ W^T), then the sum in place
        p = prod(m1, m2)
        if alpha != 1:
            p.mul_(alpha)
        return p if beta == 0 else add_into(p, inp if beta == 1 else beta * inp)
    out_shape = torch.broadcast_shapes(_shape_of(m1, m2), inp.shape)
    dtype = (m1 if isinstance(m1, TensorWrapper) else m2).dtype
    c = (torch.zeros(out_shape, dtype=dtype, device=inp.device) if beta == 0
         else inp.expand(out_shape).to(dtype).clone(memory_format=torch.contiguous_format))
    return kernel_matmul(m1, m2, c=c, alpha=alpha, beta=beta)


def _shape_of(m1: Any, m2: Any) -> tuple:
    lead = tuple(m1.shape[:-1]) if m1.dim() >= 2 else ()
    tail = (m2.shape[-1],) if m2.dim() >= 2 else ()
    return lead + tail


def addmm(inp: Any, m1: Any, m2: Any, *, beta: Any = 1, alpha: Any = 1) -> Any:
    _check_dims("addmm", m1, m2, 2, 2)
    return _addmm_like(inp, m1, m2, beta, alpha, product)


def addmv(inp: Any, mat: Any, vec: Any, *, beta: Any = 1, alpha: Any = 1) -> Any:
    _check_dims("addmv", mat, vec, 2, 1)
    return _addmm_like(inp, mat, vec, beta, alpha, product)


def _batched(a: Any, b: Any) -> Any:
    """Batched products with a TorchUST of 3 or more dimensions (no gradient)."""
    s = a if isinstance(a, TensorWrapper) else b
    if _needs_grad(a, b):
        raise NotImplementedError(f"gradients of batched products with a {s.dim()}-D TorchUST "
                                  f"({s.format_name}) are not supported")
    return kernel_matmul(a, b)


def bmm(a: Any, b: Any) -> Any:
    _check_dims("bmm", a, b, 3, 3)
    return _batched(a, b)


def baddbmm(inp: Any, b1: Any, b2: Any, *, beta: Any = 1, alpha: Any = 1) -> Any:
    _check_dims("baddbmm", b1, b2, 3, 3)
    return _addmm_like(inp, b1, b2, beta, alpha, _batched)


def matmul(a: Any, b: Any) -> Any:
    if a.dim() == 0 or b.dim() == 0:
        raise RuntimeError("matmul: both arguments need at least 1 dimension")
    ua, ub = isinstance(a, TensorWrapper), isinstance(b, TensorWrapper)
    if a.dim() <= 2 and b.dim() <= 2:
        return product(a, b)
    if ub and not ua and b.dim() == 2:      # (..., m, k) @ S(k, n)
        k = a.shape[-1]
        y = sparse_dense(b, a.reshape(-1, k), "right")
        return y.reshape(*a.shape[:-1], b.shape[1])
    if ua and not ub and a.dim() == 2:      # S(m, k) @ (..., k, n)
        k, n = b.shape[-2], b.shape[-1]
        lead = b.shape[:-2]
        d = b.movedim(-2, 0).reshape(k, -1)
        y = sparse_dense(a, d, "left")
        return y.reshape(a.shape[0], *lead, n).movedim(0, -2)
    return _batched(a, b)


def rmatmul(a: Any, b: Any) -> Any:
    return matmul(b, a)


def linear(inp: Any, weight: Any, bias: Any = None) -> Any:
    """``inp @ weight.T + bias`` for inputs of any leading shape."""
    if isinstance(weight, TensorWrapper):
        wshape = weight._shape
        if len(wshape) != 2:
            raise RuntimeError(f"linear: weight must be 2-D, got {len(wshape)}-D")
        k = wshape[1]
        if isinstance(inp, TensorWrapper):  # sparse x sparse -> dense, differentiable in both
            if inp.dim() != 2:
                return densified_call(F.linear, (inp, weight, bias), {}, f"{inp.dim()}-D sparse input")
            if inp.shape[-1] != k:
                raise RuntimeError(f"linear: input has {inp.shape[-1]} features, weight expects {k}")
            y = sparse_sparse_dense(inp, weight.transposed())
            return y if bias is None else y + (bias.dense() if isinstance(bias, TensorWrapper) else bias)
        shape = inp.shape
        if shape[-1] != k:
            raise RuntimeError(f"linear: input has {shape[-1]} features, weight expects {k}")
        y = sparse_dense(weight, inp if len(shape) == 2 else inp.reshape(-1, k), "right", transpose=True)
        if len(shape) != 2:
            y = y.reshape(*shape[:-1], wshape[0])
    else:  # a sparse input, dense weight
        if inp.dim() != 2:
            return densified_call(F.linear, (inp, weight, bias), {}, f"{inp.dim()}-D sparse input")
        y = sparse_dense(inp, weight.t(), "left")
    if bias is None:
        return y
    if isinstance(bias, TensorWrapper):
        bias = bias.dense()
    return add_into(y, bias) if not (_needs_grad(inp, weight, bias) or y.requires_grad) else y + bias


# ----- views, copies, conversions ----------------------------------------------------------------------------
def _transpose2d(a: TensorWrapper, d0: int, d1: int) -> TensorWrapper:
    if a.dim() != 2:
        return densified_call(torch.transpose, (a, d0, d1), {}, f"{a.dim()}-D transpose")
    d0, d1 = d0 % 2, d1 % 2
    return a if d0 == d1 else a.transposed()


def t(a: TensorWrapper) -> Any:
    if a.dim() < 2:
        return a
    return _transpose2d(a, 0, 1)


def transpose(a: TensorWrapper, dim0: int, dim1: int) -> Any:
    return _transpose2d(a, dim0, dim1)


def detach(a: TensorWrapper) -> TensorWrapper:
    return a.map(lambda v: v.detach())


def clone(a: TensorWrapper, *, memory_format: Any = None) -> TensorWrapper:
    return a.map(torch.clone, torch.clone)


def to(a: TensorWrapper, *args: Any, **kwargs: Any) -> TensorWrapper:
    device, dtype, non_blocking, _ = torch._C._nn._parse_to(*args, **kwargs)
    device = device if device is not None else a.device
    dtype = dtype if dtype is not None else a.dtype
    if device == a.device and dtype == a.dtype and not kwargs.get("copy", False):
        return a
    return a.map(lambda v: v.to(device=device, dtype=dtype, non_blocking=non_blocking),
                 (lambda i: i.to(device)) if device != a.device else None)


def double(a: TensorWrapper) -> TensorWrapper:
    return to(a, torch.float64)


def float_(a: TensorWrapper) -> TensorWrapper:
    return to(a, torch.float32)


def cpu(a: TensorWrapper) -> TensorWrapper:
    return to(a, "cpu")


def cuda(a: TensorWrapper, device: Any = None) -> TensorWrapper:
    return to(a, torch.device("cuda" if device is None else device))


def to_dense(a: TensorWrapper, dtype: Any = None, *, masked_grad: Any = None) -> torch.Tensor:
    if _needs_grad(a) and a.dim() == 2:  # differentiable: S @ I through the kernels
        out = sparse_dense(a, torch.eye(a.shape[1], dtype=a.dtype, device=a.device), "left")
    elif _needs_grad(a):  # differentiable: the entries scattered
        out = scatter_dense(a, tuple(a.shape), a.dtype)
    else:
        out = a.dense()
    return out if dtype is None else out.to(dtype)


def requires_grad_(a: TensorWrapper, requires_grad: bool = True) -> TensorWrapper:
    a.values().requires_grad_(requires_grad)
    return a


def repr_(a: TensorWrapper, *args: Any, **kwargs: Any) -> str:
    return TensorWrapper.__repr__(a)


def format_(a: TensorWrapper, spec: str) -> str:
    return TensorWrapper.__repr__(a)


def deepcopy(a: TensorWrapper, memo: dict) -> TensorWrapper:
    return TensorWrapper.__deepcopy__(a, memo)


# ----- scalar arithmetic and reductions -------------------------------------------------------------------
def _scalar(x: Any) -> bool:
    return isinstance(x, numbers.Number) or (isinstance(x, torch.Tensor) and not isinstance(x, TensorWrapper)
                                             and x.dim() == 0)


def _scaled(func: Any, a: Any, b: Any, op: Callable, reverse_ok: bool) -> Any:
    if isinstance(a, TensorWrapper) and _scalar(b):
        return a.map(lambda v: op(v, b))
    if reverse_ok and isinstance(b, TensorWrapper) and _scalar(a):
        return b.map(lambda v: op(v, a))
    if isinstance(a, TensorWrapper) and isinstance(b, TensorWrapper) and b.same_pattern(a):
        return a.with_values(a, op(a.values(), b.values()))  # stored values by stored values (one pattern)
    return densified_call(func, (a, b), {}, "division by a scalar or by a TorchUST of the same pattern")


def div(a: Any, b: Any, *, rounding_mode: Any = None) -> Any:
    if rounding_mode is not None:
        return densified_call(torch.div, (a, b), {"rounding_mode": rounding_mode}, "rounding_mode")
    return _scaled(torch.div, a, b, torch.div, False)


def sum_(a: TensorWrapper, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Any:
    if dim is None or (isinstance(dim, (tuple, list)) and sorted(d % a.dim() for d in dim) == list(range(a.dim()))):
        out = a.values().sum(dtype=dtype)
        return out.reshape((1,) * a.dim()) if keepdim else out
    if isinstance(dim, (tuple, list)):
        if len(dim) != 1:
            return densified_call(torch.sum, (a, dim), {"keepdim": keepdim}, "partial multi-dim sums")
        dim = dim[0]
    if a.dim() != 2:
        return densified_call(torch.sum, (a, dim), {"keepdim": keepdim}, f"sum over one dim of {a.dim()}-D")
    d = dim % 2
    ones = torch.ones(a.shape[d], dtype=a.dtype, device=a.device)
    out = sparse_dense(a, ones, "left") if d == 1 else sparse_dense(a, ones, "right")
    out = out if dtype is None else out.to(dtype)
    return out.unsqueeze(d) if keepdim else out


# ----- the table TorchUST.__torch_function__ looks functions up in ---------------------------------------------
_FUNCTIONS: tuple[tuple[tuple[Any, ...], Handler], ...] = (
    ((torch.mm, torch.Tensor.mm), mm),
    ((torch.mv, torch.Tensor.mv), mv),
    ((torch.dot, torch.Tensor.dot), dot),
    ((torch.addmm, torch.Tensor.addmm), addmm),
    ((torch.addmv, torch.Tensor.addmv), addmv),
    ((torch.bmm, torch.Tensor.bmm), bmm),
    ((torch.baddbmm, torch.Tensor.baddbmm), baddbmm),
    ((torch.matmul, torch.Tensor.matmul, torch.Tensor.__matmul__), matmul),
    ((torch.Tensor.__rmatmul__,), rmatmul),
    ((F.linear, torch._C._nn.linear), linear),
    ((torch.t, torch.Tensor.t), t),
    ((torch.transpose, torch.Tensor.transpose), transpose),
    ((torch.Tensor.detach, torch.detach), detach),
    ((torch.Tensor.clone, torch.clone), clone),
    ((torch.Tensor.to,), to),
    ((torch.Tensor.double,), double),
    ((torch.Tensor.float,), float_),
    ((torch.Tensor.cpu,), cpu),
    ((torch.Tensor.cuda,), cuda),
    ((torch.Tensor.to_dense,), to_dense),
    ((torch.Tensor.requires_grad_,), requires_grad_),
    ((torch.Tensor.__repr__, torch.Tensor.__str__), repr_),
    ((torch.Tensor.__format__,), format_),
    ((torch.Tensor.__deepcopy__,), deepcopy),
    ((torch.div, torch.Tensor.div, torch.Tensor.__truediv__), div),
    ((torch.sum, torch.Tensor.sum), sum_),
    ((torch.einsum,), einsum),
) + HANDLED + _inplace.HANDLED + _sparse_api.HANDLED
HANDLERS: dict[Any, Handler] = {f: h for funcs, h in _FUNCTIONS for f in funcs}
