"""The torch functions a TorchUST supports, each mapped to the compiled kernels (see :data:`HANDLERS`)."""
from __future__ import annotations

import numbers
from typing import Any, Callable

import torch
import torch.nn.functional as F

from frontend.torch_interface._products import kernel_matmul, sparse_dense, sparse_sparse
from frontend.torch_interface._subclass import TorchUST, densified_call

Handler = Callable[..., Any]
HANDLERS: dict[Any, Handler] = {}

_META = {"size", "dim", "numel", "nelement", "ndimension", "element_size", "is_floating_point",
         "is_complex", "get_device", "__len__", "__hash__", "is_contiguous", "type"}
_NOT_META_PROPS = {"data", "real", "imag", "T", "mT", "H", "mH"}


def is_metadata(func: Any) -> bool:
    """Functions that only read the wrapper's metadata (shape, dtype, device, ...)."""
    name = getattr(func, "__name__", "")
    if name == "__get__":
        return getattr(getattr(func, "__self__", None), "__name__", "") not in _NOT_META_PROPS
    return name in _META and func is getattr(torch.Tensor, name, None)


def property_handler(func: Any) -> Handler | None:
    """The handler of a property getter (``Tensor.T`` / ``Tensor.mT`` of a 2-D TorchUST), if any."""
    if getattr(func, "__name__", "") != "__get__":
        return None
    name = getattr(getattr(func, "__self__", None), "__name__", "")
    return t if name in ("T", "mT") else None


def _register(*funcs: Any) -> Callable[[Handler], Handler]:
    def deco(h: Handler) -> Handler:
        for f in funcs:
            HANDLERS[f] = h
        return h
    return deco


def _needs_grad(*xs: Any) -> bool:
    if not torch.is_grad_enabled():
        return False
    return any((x.values if isinstance(x, TorchUST) else x).requires_grad for x in xs
               if isinstance(x, torch.Tensor))


# ----- products ----------------------------------------------------------------------------------------
def product(a: Any, b: Any) -> Any:
    """``a @ b`` for 1-D/2-D operands, at least one a TorchUST."""
    ua, ub = isinstance(a, TorchUST), isinstance(b, TorchUST)
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


@_register(torch.mm, torch.Tensor.mm)
def mm(a: Any, b: Any) -> Any:
    _check_dims("mm", a, b, 2, 2)
    return product(a, b)


@_register(torch.mv, torch.Tensor.mv)
def mv(a: Any, v: Any) -> Any:
    _check_dims("mv", a, v, 2, 1)
    return product(a, v)


@_register(torch.dot, torch.Tensor.dot)
def dot(a: Any, b: Any) -> Any:
    _check_dims("dot", a, b, 1, 1)
    return product(a, b)


def _dense_if_sparse(x: Any) -> Any:
    return x.dense() if isinstance(x, TorchUST) else x


def _add_scaled(inp: Any, p: Any, beta: Any, alpha: Any) -> torch.Tensor:
    p = _dense_if_sparse(p)
    p = p if alpha == 1 else alpha * p
    if beta == 0:
        return p
    inp = _dense_if_sparse(inp)
    return p + (inp if beta == 1 else beta * inp)


def _addmm_like(inp: Any, m1: Any, m2: Any, beta: Any, alpha: Any, prod: Callable) -> Any:
    """``beta * inp + alpha * (m1 @ m2)``: fused into the kernel (``c``) when no gradient is needed."""
    if isinstance(inp, TorchUST) or _needs_grad(inp, m1, m2) or (isinstance(m1, TorchUST) and isinstance(m2, TorchUST)):
        return _add_scaled(inp, prod(m1, m2), beta, alpha)
    out_shape = torch.broadcast_shapes(_shape_of(m1, m2), inp.shape)
    dtype = (m1 if isinstance(m1, TorchUST) else m2).dtype
    c = (torch.zeros(out_shape, dtype=dtype, device=inp.device) if beta == 0
         else inp.expand(out_shape).to(dtype).clone(memory_format=torch.contiguous_format))
    return kernel_matmul(m1, m2, c=c, alpha=alpha, beta=beta)


def _shape_of(m1: Any, m2: Any) -> tuple:
    lead = tuple(m1.shape[:-1]) if m1.dim() >= 2 else ()
    tail = (m2.shape[-1],) if m2.dim() >= 2 else ()
    return lead + tail


@_register(torch.addmm, torch.Tensor.addmm)
def addmm(inp: Any, m1: Any, m2: Any, *, beta: Any = 1, alpha: Any = 1) -> Any:
    _check_dims("addmm", m1, m2, 2, 2)
    return _addmm_like(inp, m1, m2, beta, alpha, product)


@_register(torch.addmv, torch.Tensor.addmv)
def addmv(inp: Any, mat: Any, vec: Any, *, beta: Any = 1, alpha: Any = 1) -> Any:
    _check_dims("addmv", mat, vec, 2, 1)
    return _addmm_like(inp, mat, vec, beta, alpha, product)


def _batched(a: Any, b: Any) -> Any:
    """Batched products with a TorchUST of 3 or more dimensions (no gradient)."""
    s = a if isinstance(a, TorchUST) else b
    if _needs_grad(a, b):
        raise NotImplementedError(f"gradients of batched products with a {s.dim()}-D TorchUST "
                                  f"({s.format_name}) are not supported")
    return kernel_matmul(a, b)


@_register(torch.bmm, torch.Tensor.bmm)
def bmm(a: Any, b: Any) -> Any:
    _check_dims("bmm", a, b, 3, 3)
    return _batched(a, b)


@_register(torch.baddbmm, torch.Tensor.baddbmm)
def baddbmm(inp: Any, b1: Any, b2: Any, *, beta: Any = 1, alpha: Any = 1) -> Any:
    _check_dims("baddbmm", b1, b2, 3, 3)
    return _addmm_like(inp, b1, b2, beta, alpha, _batched)


@_register(torch.matmul, torch.Tensor.matmul, torch.Tensor.__matmul__)
def matmul(a: Any, b: Any) -> Any:
    if a.dim() == 0 or b.dim() == 0:
        raise RuntimeError("matmul: both arguments need at least 1 dimension")
    ua, ub = isinstance(a, TorchUST), isinstance(b, TorchUST)
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


@_register(torch.Tensor.__rmatmul__)
def rmatmul(a: Any, b: Any) -> Any:
    return matmul(b, a)


@_register(F.linear, torch._C._nn.linear)
def linear(inp: Any, weight: Any, bias: Any = None) -> Any:
    """``inp @ weight.T + bias`` for inputs of any leading shape."""
    if isinstance(weight, TorchUST):
        wshape = weight._shape
        if len(wshape) != 2:
            raise RuntimeError(f"linear: weight must be 2-D, got {len(wshape)}-D")
        if isinstance(inp, TorchUST):
            y = sparse_sparse(inp, weight.transposed())
            if bias is None:
                return y
            return densified_call(F.linear, (inp, weight, bias), {}, "bias with a sparse input and weight")
        k = wshape[1]
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
    if isinstance(bias, TorchUST):
        bias = bias.dense()
    return y.add_(bias) if not (_needs_grad(inp, weight, bias) or y.requires_grad) else y + bias


# ----- views, copies, conversions ----------------------------------------------------------------------------
def _transpose2d(a: TorchUST, d0: int, d1: int) -> TorchUST:
    if a.dim() != 2:
        return densified_call(torch.transpose, (a, d0, d1), {}, f"{a.dim()}-D transpose")
    d0, d1 = d0 % 2, d1 % 2
    return a if d0 == d1 else a.transposed()


@_register(torch.t, torch.Tensor.t)
def t(a: TorchUST) -> Any:
    if a.dim() < 2:
        return a
    return _transpose2d(a, 0, 1)


@_register(torch.transpose, torch.Tensor.transpose)
def transpose(a: TorchUST, dim0: int, dim1: int) -> Any:
    return _transpose2d(a, dim0, dim1)


@_register(torch.Tensor.detach, torch.detach)
def detach(a: TorchUST) -> TorchUST:
    return a.map(lambda v: v.detach())


@_register(torch.Tensor.clone, torch.clone)
def clone(a: TorchUST, *, memory_format: Any = None) -> TorchUST:
    return a.map(torch.clone, torch.clone)


@_register(torch.Tensor.to)
def to(a: TorchUST, *args: Any, **kwargs: Any) -> TorchUST:
    device, dtype, non_blocking, _ = torch._C._nn._parse_to(*args, **kwargs)
    device = device if device is not None else a.device
    dtype = dtype if dtype is not None else a.dtype
    if device == a.device and dtype == a.dtype and not kwargs.get("copy", False):
        return a
    return a.map(lambda v: v.to(device=device, dtype=dtype, non_blocking=non_blocking),
                 (lambda i: i.to(device)) if device != a.device else None)


@_register(torch.Tensor.double)
def double(a: TorchUST) -> TorchUST:
    return to(a, torch.float64)


@_register(torch.Tensor.float)
def float_(a: TorchUST) -> TorchUST:
    return to(a, torch.float32)


@_register(torch.Tensor.cpu)
def cpu(a: TorchUST) -> TorchUST:
    return to(a, "cpu")


@_register(torch.Tensor.cuda)
def cuda(a: TorchUST, device: Any = None) -> TorchUST:
    return to(a, torch.device("cuda" if device is None else device))


@_register(torch.Tensor.to_dense)
def to_dense(a: TorchUST, dtype: Any = None, *, masked_grad: Any = None) -> torch.Tensor:
    if _needs_grad(a) and a.dim() == 2:  # differentiable: S @ I through the kernels
        out = sparse_dense(a, torch.eye(a.shape[1], dtype=a.dtype, device=a.device), "left")
    else:
        out = a.dense()
    return out if dtype is None else out.to(dtype)


@_register(torch.Tensor.requires_grad_)
def requires_grad_(a: TorchUST, requires_grad: bool = True) -> TorchUST:
    a.values.requires_grad_(requires_grad)
    return a


@_register(torch.Tensor.__repr__, torch.Tensor.__str__)
def repr_(a: TorchUST, *args: Any, **kwargs: Any) -> str:
    return TorchUST.__repr__(a)


@_register(torch.Tensor.__format__)
def format_(a: TorchUST, spec: str) -> str:
    return TorchUST.__repr__(a)


@_register(torch.Tensor.__deepcopy__)
def deepcopy(a: TorchUST, memo: dict) -> TorchUST:
    return TorchUST.__deepcopy__(a, memo)


# ----- scalar arithmetic and reductions -------------------------------------------------------------------
def _scalar(x: Any) -> bool:
    return isinstance(x, numbers.Number) or (isinstance(x, torch.Tensor) and not isinstance(x, TorchUST)
                                             and x.dim() == 0)


def _scaled(func: Any, a: Any, b: Any, op: Callable, reverse_ok: bool) -> Any:
    if isinstance(a, TorchUST) and _scalar(b):
        return a.map(lambda v: op(v, b))
    if reverse_ok and isinstance(b, TorchUST) and _scalar(a):
        return b.map(lambda v: op(v, a))
    return densified_call(func, (a, b), {}, "only multiplication/division by a scalar")


@_register(torch.mul, torch.Tensor.mul, torch.Tensor.__mul__, torch.Tensor.__rmul__)
def mul(a: Any, b: Any) -> Any:
    return _scaled(torch.mul, a, b, torch.mul, True)


@_register(torch.div, torch.Tensor.div, torch.Tensor.__truediv__)
def div(a: Any, b: Any, *, rounding_mode: Any = None) -> Any:
    if rounding_mode is not None:
        return densified_call(torch.div, (a, b), {"rounding_mode": rounding_mode}, "rounding_mode")
    return _scaled(torch.div, a, b, torch.div, False)


@_register(torch.neg, torch.Tensor.neg, torch.Tensor.__neg__)
def neg(a: TorchUST) -> TorchUST:
    return a.map(torch.neg)


@_register(torch.sum, torch.Tensor.sum)
def sum_(a: TorchUST, dim: Any = None, keepdim: bool = False, *, dtype: Any = None) -> Any:
    if dim is None or (isinstance(dim, (tuple, list)) and sorted(d % a.dim() for d in dim) == list(range(a.dim()))):
        out = a.values.sum(dtype=dtype)
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
