"""The keyword options of ``matmul`` / ``Matmul`` / ``einsum`` as one object, the GPU-only ones, and nvmath's
qualifiers (conjugation, compute type, complex32 operands) applied to the operands."""
from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from frontend.format import TensorFormat, as_format
from frontend.storage._buffers import numpy_dtype
from frontend.tensor._tensor import Tensor

from ._operands import ELEMS, cast_values, operand, result_dtype, result_package, to_caller_package


def pipeline_key(pipeline: Any) -> Any:
    """A hashable description of a custom pipeline (a Pipeline, pass-pipeline string or Stage list)."""
    if pipeline is None or isinstance(pipeline, str):
        return pipeline
    if hasattr(pipeline, "describe"):
        return pipeline.describe()
    return tuple(s.describe() for s in pipeline)


@dataclass(frozen=True, init=False)
class MatmulOptions:
    """``alpha * op(a) @ op(b) + beta * c`` and how it runs; the defaults are those of :func:`frontend.matmul`
    (``einsum`` uses ``semiring``, ``out_format``, ``prolog``, ``epilog``, ``target``, ``pipeline``, ``device``)."""

    alpha: Any
    beta: Any
    transpose_a: bool
    transpose_b: bool
    semiring: Any
    out_format: TensorFormat | None
    prolog: Callable | None
    epilog: Callable | None
    target: str
    pipeline: Any
    device: Any
    threads: int | str | None

    def __init__(self, alpha: Any = 1, beta: Any = None, transpose_a: bool = False, transpose_b: bool = False,
                 semiring: Any = None, out_format: TensorFormat | str | None = None, prolog: Callable | None = None,
                 epilog: Callable | None = None, target: str = "cpu", pipeline: Any = None, device: Any = None,
                 threads: int | str | None = None) -> None:
        # one dict update instead of a frozen __setattr__ per field: this runs on every matmul call
        if out_format is not None and not isinstance(out_format, TensorFormat):
            out_format = as_format(out_format, "out_format")  # a name or DSL text
        self.__dict__.update(alpha=alpha, beta=beta, transpose_a=transpose_a, transpose_b=transpose_b,
                             semiring=semiring, out_format=out_format, prolog=prolog, epilog=epilog, target=target,
                             pipeline=pipeline, device=device, threads=threads)

    def key(self) -> tuple:
        """The structural part (cache keys): which scalings apply (not alpha's and beta's values), the
        transposes, functions, formats, target, pipeline and threads."""
        beta = self.beta
        return (self.alpha == 1, beta is None or beta == 1, beta == 0, self.transpose_a, self.transpose_b,
                self.semiring, self.out_format, self.prolog, self.epilog, self.target, pipeline_key(self.pipeline),
                self.threads)


@dataclass(frozen=True)
class GpuOptions:
    """GPU-only choices: the lowering ``path`` (``"auto"``, ``"cusparse"``, ``"sparsifier-gpu"``,
    ``"emitter-gpu"``), the ``chip`` to compile for (None: this machine's) and the CUDA ``stream`` runs use."""

    path: str = "auto"
    chip: str | None = None
    stream: Any = None

    def is_default(self) -> bool:
        return self.path == "auto" and self.chip is None and self.stream is None


DEFAULT_GPU_OPTIONS = GpuOptions()


# ----- nvmath's qualifiers: conjugation, compute type, complex32 --------------------------------------------------
_HALF_WITH_COMPLEX32 = ("torch.complex32", "torch.float16")  # operand dtypes whose product stays complex32


def has_complex32(objs: Sequence[Any]) -> bool:
    """Whether an operand is a torch tensor of dtype ``torch.complex32`` (no NumPy equivalent)."""
    for x in objs:
        dt = getattr(x, "dtype", None)
        if dt is not None and not isinstance(dt, np.dtype) and str(dt) == "torch.complex32":
            return True
    return False


def _compute_dtype(compute_type: Any, operands: np.dtype) -> np.dtype:
    """``compute_type`` as a NumPy dtype, refused when narrower than the operands' promoted dtype."""
    name = str(compute_type).replace("torch.", "") if type(compute_type).__module__.startswith("torch") else None
    try:
        ct = np.dtype(name if name is not None else compute_type)
    except TypeError:
        raise TypeError(f"compute_type must be a dtype (e.g. np.float64), got {compute_type!r}") from None
    if ct not in ELEMS:
        raise TypeError(f"compute_type {ct} is not supported (supported: {', '.join(str(d) for d in ELEMS)})")
    if np.result_type(ct, operands) != ct:
        raise ValueError(f"compute_type {ct} is narrower than the operands' dtype {operands}; pass a dtype at "
                         f"least as wide (e.g. {np.result_type(ct, operands)})")
    return ct


def _conjugated(t: Tensor) -> Tensor:
    """``t`` with conjugated values (a copy over the same index buffers); ``t`` itself when real."""
    if not np.issubdtype(numpy_dtype(t.val), np.complexfloating):
        return t
    out = cast_values(t, numpy_dtype(t.val))
    np.conjugate(out.val, out=out.val)
    return out


def qualified_matmul(run: Callable[..., Any], operands: tuple[Any, Any, Any], qualifiers: tuple[bool, bool, Any],
                     out: Any, kw: dict) -> Any:
    """``run`` (:func:`frontend.matmul`) with nvmath's qualifiers ``(conjugate_a, conjugate_b, compute_type)``
    and complex32 operands: the operands' values conjugated and/or widened (copies), the product computed in
    the compute type (complex64 for complex32), the result cast back to the operands' dtype (``c``'s when
    given, which is updated in place and returned)."""
    torch = cast(Any, sys.modules.get("torch"))  # loaded whenever an operand is a torch tensor
    a, b, c = operands
    conjugate_a, conjugate_b, compute_type = qualifiers
    half_complex = has_complex32(operands)
    half_result = all(str(getattr(x, "dtype", "")) in _HALF_WITH_COMPLEX32 for x in operands if x is not None)
    if half_complex:
        a, b = (x.to(torch.complex64) if has_complex32((x,)) else x for x in (a, b))
    package = result_package((a, b, c))
    ta, tb = operand(a, "a"), operand(b, "b")
    dts = [numpy_dtype(ta.val), numpy_dtype(tb.val)]
    c_np: Any = None
    if c is not None:
        is_torch = torch is not None and isinstance(c, torch.Tensor)
        c_np = c.numpy() if is_torch and c.dtype != torch.complex32 else c
        dts.append(np.dtype(np.complex64) if half_complex and c_np is c else numpy_dtype(c_np))
    want = result_dtype(dts)
    ct = _compute_dtype(compute_type, want) if compute_type is not None else want
    ta, tb = (t if numpy_dtype(t.val) == ct else cast_values(t, ct) for t in (ta, tb))
    if conjugate_a:
        ta = _conjugated(ta)
    if conjugate_b:
        tb = _conjugated(tb)
    if c is not None:
        wide = np.array(c.to(torch.complex64).numpy() if c_np is c and half_complex else c_np, dtype=ct)
        run(ta, tb, wide, **kw)
        if is_torch:
            c.copy_(torch.from_numpy(wide))
        else:
            c[...] = wide
        result: Any = c
    else:
        r = run(ta, tb, **kw)
        if isinstance(r, Tensor) and not r.is_sparse:
            r = np.asarray(r.to_dense())
        if isinstance(r, Tensor):
            r = r if numpy_dtype(r.val) == want else cast_values(r, want)
        else:
            r = np.asarray(r).astype(want, copy=False)
        result = to_caller_package(r, package)
        if half_complex and half_result and isinstance(result, torch.Tensor):
            result = result.to(torch.complex32)
    if out is not None:
        np.copyto(out, np.asarray(result))
        return out
    return result
