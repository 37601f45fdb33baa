"""Zero-copy interop: NumPy, SciPy, PyTorch and CuPy objects <-> :class:`Tensor`.

:func:`from_package` views the buffers of a package object without copying them (the Tensor keeps the
object alive and remembers it); :func:`to_package` gives back an object of a package with the Tensor's
buffers.  Strided arrays (NumPy, torch, CuPy) become all-dense formats whose level order follows the
memory order: C order is ``(i, j) -> (i : dense, j : dense)``, Fortran order ``(i, j) -> (j : dense,
i : dense)``, any permuted array likewise (``val`` is then the C-contiguous transposed view). Arrays that are
no permutation of a contiguous block (``x[::2]``, ``X[:, ::2]``, negative strides) are copied into a new
C-ordered array (the Tensor then shares no memory with them).  Sparse layouts are listed in
:mod:`frontend.interop._scipy` and :mod:`frontend.interop._torch`; COO with unsorted or duplicate coordinates
(scipy, torch) gets a sorted, summed copy (:mod:`frontend.interop._canonical`), a scipy CSR/CSC with unsorted
or repeated indices within a row a sorted, summed copy (made on every call), and scipy's ``lil``/``dok`` arrays
are converted to CSR (a copy).

Index buffers that are not a plain view (non-contiguous, length mismatches) are refused with a ``ValueError``;
formats a package cannot hold raise a ``TypeError`` naming the package and the format.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from frontend.storage import _buffers
from frontend.storage._convert import package_index_type, with_index_type
from frontend.storage._protocol import StoredTensor, TensorT
from frontend.storage._validate import validate

from ._layouts import Layout, match_layout
from ._pydata import from_pydata, is_pydata, source_buffers as pydata_buffers, to_pydata
from ._scipy import from_scipy, needs_copy, source_buffers as scipy_buffers, to_scipy
from ._torch import from_torch_sparse, source_buffers as torch_buffers, to_torch
from ._view_cache import cached_view

PACKAGES = ("numpy", "scipy", "torch", "cupy", "sparse")  # "sparse": pydata/sparse


def _strided_order(shape: tuple[int, ...], strides: tuple[int, ...], c_contiguous: bool) -> tuple[int, ...] | None:
    """The level order (dimension per level) that could make the array C-contiguous: dimensions by
    decreasing stride (None for negative strides)."""
    n = len(strides)
    if c_contiguous:
        return tuple(range(n))
    if any(s < 0 for s, e in zip(strides, shape) if e > 1):
        return None
    return tuple(sorted(range(n), key=lambda d: (-strides[d] if shape[d] > 1 else 0, d)))


def _from_strided(x: Any, package: str, cls: type[TensorT]) -> TensorT:
    if package == "torch":
        if x.is_conj() or x.is_neg():
            raise ValueError("torch tensor has a lazy conjugate/negative bit; call .resolve_conj() first")
        strides, contiguous = tuple(x.stride()), bool(x.is_contiguous())
    else:
        item = x.dtype.itemsize
        strides, contiguous = tuple(s // item for s in x.strides), bool(x.flags.c_contiguous)
    perm = _strided_order(tuple(int(e) for e in x.shape), strides, contiguous)
    view = None if perm is None else x.permute(perm) if package == "torch" else x.transpose(perm)
    source = x
    if perm is None or not _buffers.is_contiguous(view):  # a slice, negative strides: a C-ordered copy (ours)
        view = x.contiguous() if package == "torch" else x.copy(order="C")
        perm, source = tuple(range(x.ndim)), None
    if package == "torch":
        device = str(x.device)
        val = _buffers.torch_buffer(view, "torch tensor")
    else:
        device = "cpu" if package == "numpy" else f"cuda:{x.device.id}"
        val = view
    lay = Layout("dense", perm=perm)
    return cls(lay.tensor_format(), tuple(x.shape), [None] * len(perm), [None] * len(perm), val,
               index_type=None, package=package, device=device, source=source)


def _reader(x: Any, cls: type[TensorT]) -> tuple[str, Callable[[], TensorT], list[Any] | None, str]:
    """``(package, build, source buffers to cache on or None, hint for invalid buffers)`` for ``x``; ``build``
    makes a ``cls``."""
    package = _buffers.package_of(x) or ""
    if package == "numpy" and hasattr(x, "strides"):
        import numpy as np
        arr = np.asarray(x) if isinstance(x, np.generic) else x  # NumPy scalars are immutable: 0-d array
        return package, lambda: _from_strided(arr, "numpy", cls), None, ""
    if package == "torch":
        import torch
        if isinstance(x, torch.Tensor):
            if x.layout == torch.strided:
                return package, lambda: _from_strided(x, "torch", cls), None, ""
            uncoalesced = x.layout == torch.sparse_coo and not x.is_coalesced()  # a sorted copy: not cached
            return (package, lambda: from_torch_sparse(x, cls), None if uncoalesced else torch_buffers(x),
                    "torch checks compressed indices only with check_invariants=True")
    if package == "sparse" and is_pydata(x):
        return (package, lambda: from_pydata(x, cls), pydata_buffers(x),
                "call .sum_duplicates() first (pydata/sparse sorts and deduplicates there)")
    sparse = False
    if package == "scipy":
        import scipy.sparse as sp
        sparse = sp.issparse(x)
    elif package == "cupy":
        import cupy
        if isinstance(x, cupy.ndarray):
            return package, lambda: _from_strided(x, "cupy", cls), None, ""
        import cupyx.scipy.sparse as csp
        sparse = csp.issparse(x)
    if sparse:
        copied = package == "scipy" and needs_copy(x)  # a copy follows no in-place change: not cached
        return (package, lambda: from_scipy(x, cls, package), None if copied else scipy_buffers(x),
                "call .sum_duplicates() first (it sorts and deduplicates)")
    if hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__"):  # a dense array of any other package
        import numpy as np
        try:
            arr = np.from_dlpack(x)  # zero-copy on the CPU; BufferError/RuntimeError for other devices
        except (BufferError, RuntimeError, TypeError) as err:
            raise TypeError(f"cannot view {type(x).__name__} through DLPack: {err}") from None
        return "numpy", lambda: _from_strided(arr, "numpy", cls), None, ""
    raise TypeError(f"cannot view a {type(x).__module__}.{type(x).__name__} as a Tensor (supported: NumPy "
                    "and CuPy arrays, SciPy/cupyx sparse arrays and matrices, torch tensors, pydata/sparse COO/GCXS, "
                    "dense CPU arrays of any package with __dlpack__)")


def from_package(x: Any, cls: type[TensorT]) -> TensorT:
    """A ``cls`` (:class:`Tensor` or a subclass) sharing ``x``'s buffers (NumPy/CuPy arrays, SciPy/cupyx
    sparse arrays and matrices, torch strided and sparse tensors), validated; viewing the same sparse object
    again reuses the checked views (:mod:`frontend.interop._view_cache`)."""
    package, build, buffers, hint = _reader(x, cls)

    def checked() -> TensorT:
        t = build()
        try:
            validate(t)
        except ValueError as e:
            kind = getattr(x, "format", None) or str(getattr(x, "layout", "")).replace("torch.", "")
            ordering = "increasing" in str(e) or "duplicate" in str(e)  # the hint is about sorting
            raise ValueError(f"{package} {kind} input: {e}{f'; {hint}' if hint and ordering else ''}") from None
        return t

    try:
        t = checked() if buffers is None else cached_view(x, buffers, checked, cls)
    except ValueError as err:
        t = _sorted_copy(x, package, cls, err)
    t._source_key = t.buffer_key()  # to_package: is the source still current?
    return t


def _sorted_copy(x: Any, package: str, cls: type[TensorT], err: ValueError) -> TensorT:
    """A view of a sorted, duplicate-free copy of SciPy CSR/CSC ``x`` whose indices are unsorted or repeated
    within a row (valid to SciPy; the kernels read each row's coordinates in order, once): the copy is the
    library's (``x`` is never changed), made again on every call so that values changed in place are seen.
    Re-raises ``err`` for anything else, or when the copy is not valid either (coordinates out of range)."""
    if package != "scipy" or getattr(x, "format", None) not in ("csr", "csc") or "increasing" not in str(err):
        raise err
    try:
        y = x.copy()
        y.sum_duplicates()  # SciPy's own, on our copy: sorts each row's indices and sums repeated ones
        t = from_scipy(y, cls, package)
        validate(t)
    except (ValueError, IndexError):
        raise err from None
    return t


def to_package(t: StoredTensor, package: str | None = None) -> Any:
    """An object of ``package`` (default: the one ``t`` came from) holding ``t``'s buffers.

    Returns the source object itself when ``t`` was viewed from it and still holds those buffers
    (``copy_`` may replace them); otherwise builds the package's
    native object: NumPy/CuPy arrays for dense formats, SciPy CSR/CSC/COO/BSR/DIA(J) arrays, torch
    strided/COO/CSR/CSC/BSR/BSC tensors (batched and hybrid too).  ``TypeError`` for a format the package
    has no object for."""
    target = package or t.package
    if target not in PACKAGES:
        raise ValueError(f"unknown package {target!r}; expected one of {', '.join(PACKAGES)}")
    if t._source is not None and target == t.package and t._source_key == t.buffer_key():
        return t._source  # the buffers are still the ones viewed from it
    layout = match_layout(t.tensor_format)
    if layout is not None and layout.kind != "dense" and (wide := package_index_type(t)) is not None:
        t = with_index_type(validate(t), wide)  # packages take one index type of at least 32 bits
    if layout is None:
        raise TypeError(f"{target} has no object for format {t.tensor_format}"
                        f"{f' ({t.tensor_format.name})' if t.tensor_format.name else ''}; convert it to a "
                        "dense, COO, CSR, CSC, BSR, BSC or DIAJ format first")
    _check_lengths(t, layout)
    validate(t)
    if target == "torch":
        return to_torch(t, layout)
    if target == "sparse":
        return to_pydata(t, layout)
    if target in ("scipy", "cupy") and layout.kind != "dense":
        return to_scipy(t, layout, target)
    if layout.kind != "dense":
        raise TypeError(f"numpy has no sparse arrays for format {t.tensor_format}; use package='scipy' or "
                        "'torch', or t.to_dense()")
    return to_scipy(t, layout, "cupy" if target == "cupy" else "numpy")


def _check_lengths(t: StoredTensor, layout: Layout) -> None:
    """Buffer lengths agree with the shape (cheap O(1) checks before a package sees them)."""
    fmt = t.tensor_format
    if layout.kind == "dense":
        want = tuple(fmt.level_extents(t.shape))
        if tuple(int(s) for s in t.val.shape) != want:
            raise ValueError(f"dense values have shape {tuple(t.val.shape)}, expected level extents {want}")
        return
    idx = [b for k in range(fmt.num_levels) for b in (t.pos(k), t.crd(k)) if b is not None]
    _buffers.check_index_buffers(idx, "tensor")
    if not _buffers.is_contiguous(t.val):
        raise ValueError("values buffer is not contiguous")
    if layout.kind == "coo":
        nnz = int(t.pos(0)[-1])
        lens = {int(t.crd(k).shape[0]) for k in range(layout.nsparse)}
        if lens != {nnz}:
            raise ValueError(f"COO positions end at {nnz} but coordinate buffers have lengths {sorted(lens)}")
    if layout.kind == "dia":
        ndiag = int(t.crd(0).shape[0])
        width = layout.width if layout.width is not None else t.shape[1]
        if int(t.val.shape[0]) != ndiag * width:
            raise ValueError(f"DIAJ needs {ndiag} x {width} values, got {int(t.val.shape[0])}")
