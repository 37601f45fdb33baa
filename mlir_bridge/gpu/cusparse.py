"""cuSPARSE's blocked-ELL SpMM through ctypes: ``C = alpha * A @ B + beta * C`` on device pointers.

Neither torch nor CuPy exposes cuSPARSE's Blocked-ELL matrix, so this module calls the library itself:
``cusparseCreateBlockedEll`` + ``cusparseCreateDnMat`` (row-major ``B`` and ``C``) + ``cusparseSpMM`` with
``CUSPARSE_SPMM_BLOCKED_ELL_ALG1``. ``A`` is in cuSPARSE's layout (:class:`BlockedEllOperand`): block column
indices ``[rows / block][ell_cols / block]`` (int32, ``-1`` for an empty slot) and values as a row-major
``rows x ell_cols`` matrix. The library is found by soname (torch's and CuPy's CUDA wheels carry
``libcusparse.so.12``), through ``cuda.pathfinder`` or in the NVIDIA wheels, or at ``UST_MLIR_CUSPARSE``;
the tests point that at a fake that computes on the host.
One handle per device; each call sets the caller's stream on it and returns without waiting.
No ``mlir`` import.
"""
from __future__ import annotations

import ctypes
import os
import sys
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

#: cudaDataType_t of the value types cuSPARSE's blocked-ELL SpMM takes, and the compute type of each.
CUDA_TYPES = {"float16": 2, "bfloat16": 14, "float32": 0, "float64": 1}
_COMPUTE = {"float16": "float32", "bfloat16": "float32", "float32": "float32", "float64": "float64"}
_INDEX_32I, _BASE_ZERO, _NON_TRANSPOSE, _ORDER_ROW, _BLOCKED_ELL_ALG1 = 2, 0, 0, 2, 13
_SONAMES = ("libcusparse.so.12", "libcusparse.so.13", "libcusparse.so")
_STATUS = {1: "NOT_INITIALIZED", 2: "ALLOC_FAILED", 3: "INVALID_VALUE", 4: "ARCH_MISMATCH",
           6: "EXECUTION_FAILED", 7: "INTERNAL_ERROR", 8: "MATRIX_TYPE_NOT_SUPPORTED", 10: "NOT_SUPPORTED",
           11: "INSUFFICIENT_RESOURCES"}
_P, _I64, _I32 = ctypes.c_void_p, ctypes.c_int64, ctypes.c_int
_SIGNATURES: dict[str, list[Any]] = {
    "cusparseCreate": [ctypes.POINTER(_P)],
    "cusparseSetStream": [_P, _P],
    "cusparseCreateBlockedEll": [ctypes.POINTER(_P), _I64, _I64, _I64, _I64, _P, _P, _I32, _I32, _I32],
    "cusparseCreateDnMat": [ctypes.POINTER(_P), _I64, _I64, _I64, _P, _I32, _I32],
    "cusparseDestroySpMat": [_P],
    "cusparseDestroyDnMat": [_P],
    "cusparseSpMM_bufferSize": [_P, _I32, _I32, _P, _P, _P, _P, _P, _I32, _I32, ctypes.POINTER(ctypes.c_size_t)],
    "cusparseSpMM": [_P, _I32, _I32, _P, _P, _P, _P, _P, _I32, _I32, _P],
}


class CusparseError(RuntimeError):
    """A cuSPARSE call returned an error status."""


@dataclass(frozen=True)
class BlockedEllOperand:
    """A matrix in cuSPARSE's Blocked-ELL layout on the device (pointers) and its sizes."""

    rows: int
    cols: int
    block: int
    ell_cols: int
    col_ind: int  # int32[rows / block][ell_cols / block], -1 for empty slots
    values: int  # dtype[rows][ell_cols], row-major
    dtype: str  # a key of CUDA_TYPES

    def __post_init__(self) -> None:
        if self.dtype not in CUDA_TYPES:
            raise TypeError(f"cuSPARSE's blocked-ELL SpMM takes {sorted(CUDA_TYPES)}, not {self.dtype}")
        if self.block <= 0 or self.rows % self.block or self.cols % self.block or self.ell_cols % self.block:
            raise ValueError(f"Blocked-ELL needs rows, cols and ell_cols divisible by the block size {self.block}, "
                             f"got {self.rows} x {self.cols} with {self.ell_cols} ELL columns")


def _candidates() -> list[str]:
    """Where cuSPARSE may be: ``UST_MLIR_CUSPARSE`` alone when set; else the sonames (found at once when torch
    or CuPy already loaded the library), what ``cuda.pathfinder`` (a CuPy dependency) locates, and the
    NVIDIA wheels' ``lib`` folders on ``sys.path``."""
    path = os.environ.get("UST_MLIR_CUSPARSE")
    if path:
        return [path]
    found = list(_SONAMES)
    try:
        from cuda.pathfinder import load_nvidia_dynamic_lib

        found.append(str(load_nvidia_dynamic_lib("cusparse").abs_path))
    except Exception:  # noqa: BLE001 - not installed, or it found nothing: the other candidates remain
        pass
    for root in sys.path:
        found += sorted(str(p) for p in Path(root or ".").glob("nvidia/*/lib/libcusparse.so*"))
    return found


def _find_library() -> ctypes.CDLL:
    errors = []
    for name in _candidates():
        try:
            return ctypes.CDLL(name)
        except OSError as err:
            errors.append(str(err))
    raise RuntimeError("cuSPARSE (libcusparse.so.12) cannot be loaded: install torch's or CuPy's CUDA build "
                       f"(pip install 'ust-mlir[gpu]') or set UST_MLIR_CUSPARSE; {'; '.join(errors)}")


class Cusparse:
    """The blocked-ELL SpMM of one loaded cuSPARSE library (``Cusparse.load()`` for the process's one)."""

    _loaded: Cusparse | None = None
    _load_lock = threading.Lock()

    def __init__(self, lib: ctypes.CDLL, host_memory: bool = False) -> None:
        """``host_memory``: ``lib`` computes on host addresses (a test double), so host arrays may be passed."""
        self.lib = lib
        self.host_memory = host_memory
        for name, argtypes in _SIGNATURES.items():
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = argtypes, ctypes.c_int
        self._handles: dict[int, int] = {}
        self._lock = threading.Lock()  # a handle's stream is set and used under it

    @classmethod
    def load(cls) -> Cusparse:
        """The process's cuSPARSE (RuntimeError naming what to install when it is missing)."""
        with cls._load_lock:
            if cls._loaded is None:
                cls._loaded = cls(_find_library())
            return cls._loaded

    def _check(self, name: str, *args: Any) -> None:
        status = getattr(self.lib, name)(*args)
        if status != 0:
            raise CusparseError(f"{name} failed: CUSPARSE_STATUS_{_STATUS.get(status, status)}")

    def _handle(self, device: int) -> int:
        handle = self._handles.get(device)
        if handle is None:  # created on the caller's current device, which is ``device``
            h = _P()
            self._check("cusparseCreate", ctypes.byref(h))
            handle = self._handles[device] = int(h.value or 0)
        return handle

    def spmm_blocked_ell(self, a: BlockedEllOperand, b: int, c: int, n: int, *, alpha: float = 1.0,
                         beta: float = 0.0, stream: int = 0, device: int = 0,
                         workspace: Callable[[int], tuple[int, Any]]) -> Any:
        """Queue ``c = alpha * a @ b + beta * c`` on ``stream``: ``b`` (``a.cols x n``) and ``c``
        (``a.rows x n``) are row-major device arrays of ``a.dtype``; ``workspace(nbytes)`` allocates the
        library's buffer and returns ``(pointer, owner)``. Returns the owner, to keep until the stream has run."""
        value = CUDA_TYPES[a.dtype]
        compute = CUDA_TYPES[_COMPUTE[a.dtype]]
        scalar = ctypes.c_double if _COMPUTE[a.dtype] == "float64" else ctypes.c_float
        al, be = scalar(alpha), scalar(beta)
        mat, mb, mc = _P(), _P(), _P()
        with self._lock:
            handle = self._handle(device)
            self._check("cusparseSetStream", handle, stream)
            self._check("cusparseCreateBlockedEll", ctypes.byref(mat), a.rows, a.cols, a.block, a.ell_cols,
                        a.col_ind, a.values, _INDEX_32I, _BASE_ZERO, value)
            try:
                self._check("cusparseCreateDnMat", ctypes.byref(mb), a.cols, n, n, b, value, _ORDER_ROW)
                self._check("cusparseCreateDnMat", ctypes.byref(mc), a.rows, n, n, c, value, _ORDER_ROW)
                args = (handle, _NON_TRANSPOSE, _NON_TRANSPOSE, ctypes.byref(al), mat, mb, ctypes.byref(be), mc,
                        compute, _BLOCKED_ELL_ALG1)
                size = ctypes.c_size_t(0)
                self._check("cusparseSpMM_bufferSize", *args, ctypes.byref(size))
                pointer, owner = workspace(max(int(size.value), 1))
                self._check("cusparseSpMM", *args, pointer)
            finally:
                for name, d in (("cusparseDestroyDnMat", mc), ("cusparseDestroyDnMat", mb),
                                ("cusparseDestroySpMat", mat)):
                    if d.value:
                        self._check(name, d)
        return owner
