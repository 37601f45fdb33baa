"""Operands of the operations: package objects and Tensors viewed as Tensors (fast paths for the hot call),
dtype and device checks, free transposes (format views), and results back in the callers' package."""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from frontend.format import NamedFormats, TensorFormat, index_width, mlir_type
from frontend.interop._scipy import canonical_compressed
from frontend.interop._view_cache import shared_view
from frontend.storage._buffers import as_torch, data_pointer, numpy_dtype, package_of_type as buffer_package_of_type
from frontend.storage._layout import to_host
from frontend.tensor._tensor import Tensor

from ._kernel_cache import dense_tensor, row_major

ELEMS = {np.dtype(t): mlir_type(t) for t in ("float32", "float64", "complex64", "complex128", "int32",
                                            "int64")}


def delegate(objs: Sequence[Any]) -> Any:
    """The first operand whose type carries ``__ust_function__`` (a ``frontend.distributed.DistributedTensor``):
    operations hand the whole call to it (``hook(op, args, kwargs)``), so this layer never imports it."""
    for x in objs:
        if getattr(type(x), "__ust_function__", None) is not None:
            return x
    return None


def c_dtypes(c: Any) -> tuple[Any, ...]:
    """``c``'s dtype as the extra dtype of :func:`promoted` (none without ``c``)."""
    return () if c is None else (numpy_dtype(c),) if hasattr(c, "dtype") else ()


def as_tensor(x: Any, what: str) -> Tensor:
    """``x`` as a Tensor (package objects are viewed without copying)."""
    if isinstance(x, Tensor):
        return x
    if isinstance(x, (int, float, complex)) or x is None:
        raise TypeError(f"{what} must be an array, a sparse matrix or a Tensor, got {type(x).__name__}")
    try:
        return Tensor.from_package(x)
    except TypeError as err:
        raise TypeError(f"{what}: {err}") from None


def operand(x: Any, what: str) -> Tensor:
    """Like :func:`as_tensor`, with fast paths for the hot call: C-contiguous numpy arrays are wrapped
    directly, scipy sparse objects are viewed (and validated) once per buffer set (frontend.interop's view
    cache). Sparse Tensors are validated (cached per buffer set) before any kernel sees them."""
    tx = type(x)
    if tx is Tensor:
        if not row_major(x.tensor_format) and x.is_sparse:
            validate_sparse((x,))
        return x
    if tx is np.ndarray and x.flags.c_contiguous:
        return dense_tensor(x)
    view = shared_view(x)  # a SciPy matrix viewed (and validated) before, with the same buffers
    if view is not None:
        return view
    t = as_tensor(x, what)
    if t.is_sparse:
        validate_sparse((t,))
    return t


def promoted(tensors: Sequence[Tensor], also: Sequence[Any] = ()) -> list[Tensor]:
    """The operands in NumPy's promoted type ``np.result_type`` of their dtypes (and the dtypes ``also``, e.g.
    ``c``'s): operands already of that type are returned as they are (no copy); the others are **copied**:
    a sparse operand gets a cast copy of its values over the same index buffers, a dense one a cast copy
    of its array. A :class:`Matmul` makes the copies when it is created (so later in-place changes of a
    copied operand's values are not seen); ``matmul``/``einsum`` on every call."""
    dts = [numpy_dtype(t.val) for t in tensors]
    first = dts[0]
    if all(d == first for d in dts) and all(np.dtype(d) == first for d in also) and first in ELEMS:
        return list(tensors)
    want = result_dtype(dts + [np.dtype(d) for d in also])
    if str(want) in HALF:  # kernels compute in float32 (as torch's CPU kernels accumulate); results cast back
        want = np.dtype(np.float32)
    if want not in ELEMS:
        raise TypeError(f"operand dtypes {', '.join(str(d) for d in dts)} promote to {want}, which is not "
                        f"supported (supported: {', '.join(str(d) for d in ELEMS)})")
    return [t if d == want else cast_values(t, want) for t, d in zip(tensors, dts)]


HALF = ("float16", "bfloat16")


def result_dtype(dtypes: Sequence[Any]) -> np.dtype:
    """``np.result_type`` of ``dtypes``; with bfloat16 (which NumPy promotes with nothing but floats of
    ml_dtypes) torch's rule: bfloat16 with integers stays bfloat16, with float16 gives float32, with wider
    types the wider type."""
    brain = [d for d in dtypes if str(d) == "bfloat16"]
    if not brain:
        return np.result_type(*dtypes)
    rest = [np.dtype(d) for d in dtypes if str(d) != "bfloat16"]
    if all(d.kind in "biu" for d in rest):
        return np.dtype(brain[0])
    return np.result_type(np.float32, *rest)


#: MLIR element type of each half dtype the emitter loads directly (widened to f32 after the load).
HALF_ELEMS = {"float16": "f16", "bfloat16": "bf16"}


def half_elem(tensors: Sequence[Tensor]) -> str | None:
    """``"f16"``/``"bf16"`` when every operand has that one half dtype, else None."""
    dts = {numpy_dtype(t.val) for t in tensors}
    if len(dts) != 1:
        return None
    dt = dts.pop()
    return HALF_ELEMS.get(str(dt)) if dt.itemsize == 2 else None  # (str of a dtype: microseconds)


def native_half(tensors: Sequence[Tensor], options: Any) -> bool:
    """Whether a matmul of half operands runs on them as they are (no float32 copy of the values): one
    half dtype, the first operand stored (sparse) and the second a row-major dense array, a dense result,
    plain arithmetic. The emitter then loads f16/bf16 values and accumulates in f32 (the result is cast
    back to the half type, as torch's CPU kernels do)."""
    return (len(tensors) == 2 and half_elem(tensors) is not None and tensors[0].is_sparse
            and row_major(tensors[1].tensor_format) and options.out_format is None
            and options.semiring is None and options.prolog is None and options.epilog is None)


def half_result(tensors: Sequence[Tensor]) -> np.dtype | None:
    """The half type (float16 or bfloat16) results come back in when the operands promote to one, else
    None: such operations run on float32 copies of the values and cast their result back."""
    want = result_dtype([numpy_dtype(t.val) for t in tensors])
    return want if str(want) in HALF else None


def cast_values(t: Tensor, dtype: np.dtype) -> Tensor:
    """``t`` with its values cast to ``dtype`` (a copy) over the same index buffers (still validated)."""
    return _with_values(t, np.asarray(to_host(t.val)).astype(dtype))  # (a NumPy view first: torch bfloat16)


def aligned(values: Any, alignment: int) -> bool:
    """Whether the buffer of ``values`` (a NumPy or CPU torch array) starts at a multiple of ``alignment`` bytes."""
    return data_pointer(values) % alignment == 0


def aligned_copy(t: Tensor, alignment: int) -> Tensor:
    """``t`` with a copy of its values whose buffer starts at a multiple of ``alignment`` bytes."""
    src = np.asarray(to_host(t.val))
    raw = np.empty(src.nbytes + alignment, np.uint8)
    start = -raw.ctypes.data % alignment
    val = raw[start:start + src.nbytes].view(src.dtype).reshape(src.shape)
    np.copyto(val, src)
    return _with_values(t, val)


def _with_values(t: Tensor, val: np.ndarray) -> Tensor:
    if isinstance(val, np.ndarray) and not val.flags.c_contiguous:  # e.g. a complex buffer's .real view
        val = np.ascontiguousarray(val)
    new = Tensor(t.tensor_format, t.shape, t._pos, t._crd, val, index_type=t.index_type, package=t.package,
                 device=t.device)
    if t._validated is not None:
        new._validated, new._guard = new.buffer_key(), t._guard
    return new


def elem_of(tensors: Sequence[Tensor], names: Sequence[str]) -> str:
    dt = np.dtype(tensors[0].dtype)
    for t, n in zip(tensors, names):
        d = np.dtype(t.dtype)
        if d != dt:
            raise TypeError(f"dtype mismatch: {names[0]} is {dt}, {n} is {d} (operands are promoted by "
                            "frontend.ops._operands.promoted before this check)")
    try:
        return ELEMS[dt]
    except KeyError:
        raise TypeError(f"dtype {dt} is not supported (supported: {', '.join(str(d) for d in ELEMS)})") from None


def result_shape(subscripts: Sequence[str], tensors: Sequence[Tensor], names: Sequence[str],
                 out_subs: str) -> tuple[int, ...]:
    """The result's shape; ValueError when an operand's rank differs from its subscripts or a letter
    has two extents."""
    extents: dict[str, int] = {}
    for s, t, n in zip(subscripts, tensors, names):
        if len(s) != t.ndim:
            raise ValueError(f"{n} has {t.ndim} dimensions but subscripts {s!r}")
        for ch, e in zip(s, t.shape):
            if extents.setdefault(ch, e) != e:
                raise ValueError(f"dimension {ch!r} has extent {extents[ch]} in one operand and {e} in "
                                 f"{n} (shapes {[tt.shape for tt in tensors]})")
    return tuple(extents[ch] for ch in out_subs)


def check_cpu(t: Tensor, what: str) -> None:
    if t.device != "cpu":
        raise ValueError(f"{what} lives on {t.device}; the CPU target needs CPU buffers")


_PERMUTED: dict[tuple[TensorFormat, tuple[int, ...]], TensorFormat] = {}  # (format, perm) -> permuted format; one each


def permuted(t: Tensor, perm: Sequence[int]) -> Tensor:
    """The same buffers viewed with dimensions reordered (``perm[d]`` = old dimension of new ``d``)."""
    perm = tuple(perm)
    if perm == tuple(range(len(perm))):
        return t
    fmt = t.tensor_format
    key = (fmt, perm)
    new = _PERMUTED.get(key)
    if new is None:
        new = TensorFormat([fmt.dimensions[p] for p in perm], fmt.levels)
        _PERMUTED[key] = new
    return Tensor(new, [t.shape[p] for p in perm], t._pos, t._crd, t._val, index_type=t.index_type,
                  package=t.package, device=t.device)


def squeezed(t: Tensor, axes: Sequence[int], what: str) -> Tensor:
    """Drop size-1 broadcast axes of a dense operand."""
    if not axes:
        return t
    if not row_major(t.tensor_format):
        raise ValueError(f"{what}: broadcasting a size-1 batch dimension needs a dense row-major operand; "
                         f"give a sparse operand of shape {t.shape} without it")
    return dense_tensor(np.asarray(t.val).reshape([s for d, s in enumerate(t.shape) if d not in axes]))


_PACKAGE_OF_TYPE: dict[type, str | None] = {}  # operand type -> "tensor" or its package; one entry per type seen


def package_of_type(tx: type) -> str | None:
    """``"tensor"`` for Tensors, else the package of objects of type ``tx`` (memoized per type)."""
    root = _PACKAGE_OF_TYPE.get(tx, "")
    if root == "":
        root = _PACKAGE_OF_TYPE[tx] = "tensor" if issubclass(tx, Tensor) else buffer_package_of_type(tx)
    return root


def result_package(objs: Sequence[Any]) -> str | None:
    """None for Tensor results, else the package results come back in."""
    found = "numpy"
    for x in objs:
        if x is None:
            continue
        root = package_of_type(type(x))
        if root == "tensor":
            return None
        if root == "torch":
            found = "torch"
        elif root in ("scipy", "sparse") and found not in ("torch", "sparse"):
            found = root  # pydata/sparse inputs get pydata/sparse results
    return found


_SCIPY_COMPRESSED = {NamedFormats.CSR: "csr_array", NamedFormats.CSC: "csc_array"}


def to_caller_package(result: Any, package: str | None) -> Any:
    """``result`` (a NumPy array or a Tensor) as the callers' package gives it back: a SciPy/torch object for a
    ``package`` of the operands, the Tensor or array itself otherwise."""
    if isinstance(result, Tensor):
        if package is None:
            return result
        if package == "sparse":
            try:
                return result.to_package("sparse")
            except TypeError:
                return result
        kind = _SCIPY_COMPRESSED.get(result.tensor_format) if package in ("scipy", "numpy") else None
        if kind is not None:  # kernel-built CSR/CSC: straight into scipy (the buffers are valid by construction)
            return _compressed_to_scipy(kind, result)
        try:
            return result.to_package("scipy" if package == "numpy" else package)
        except TypeError:
            return result  # no such object in that package (e.g. DCSR in scipy): the Tensor itself
    if package is None:
        return dense_tensor(result)
    if package == "torch":
        return as_torch(result) if result.ndim else as_torch(np.ascontiguousarray(result.reshape(1))).reshape(())
    return result if result.ndim else result[()]


def _compressed_to_scipy(kind: str, t: Tensor) -> Any:
    """A kernel-built CSR/CSC ``t`` as scipy's ``kind``: without the constructor's checks (a few microseconds of
    a small SpGEMM) when its buffers are exactly sized, through the constructor otherwise."""
    val, crd, pos = t.val, t.crd(1), t.pos(1)
    if pos.ndim == 1 and pos.shape[0] and crd.shape[0] == val.shape[0] == int(pos[-1]):
        return canonical_compressed(kind, val, crd, pos, t.shape)
    import scipy.sparse as sps
    return getattr(sps, kind)((val, crd, pos), shape=t.shape)


def operand_key(t: Tensor) -> tuple:
    fmt = t.tensor_format
    if row_major(fmt):
        return (None, t.shape, t.dtype)
    return (fmt.structure_key(), t.shape, t.dtype, t.index_type, t.crd_type)


def out_width(tensors: Sequence[Tensor]) -> int:
    """Index width of a sparse result: the first sparse operand's positions width, at least 32 (a result of
    narrow operands may hold more entries than they do); 64 without a sparse operand."""
    for t in tensors:
        if t.is_sparse and t.index_type is not None:
            return max(index_width(t.index_type), 32)
    return 64


def validate_sparse(tensors: Sequence[Tensor]) -> None:
    """Check sparse operands' buffers before a kernel reads them (cached per buffer set)."""
    from frontend.storage._validate import validate

    for t in tensors:
        if t.is_sparse:
            validate(t)
