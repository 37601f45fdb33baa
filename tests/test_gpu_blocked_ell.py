"""BlockedELL through cuSPARSE's blocked-ELL SpMM: the layout rearrangement (checked against the layout's
documented meaning), the ctypes glue against a fake libcusparse that computes on the host
(tests/fake_cuda/fake_libcusparse.c), path choice, errors; the ``gpu`` tests run the real library."""
from __future__ import annotations

import ctypes
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from frontend import NamedFormats as N, Tensor
from frontend.format import TensorFormat
from frontend.ops.gpu._blocked_ell import cusparse_layout
from frontend.ops.gpu._library import library_matmul
from lowering.contraction import Contraction, TensorSpec
from lowering.gpu.dispatch import gpu_path
from lowering.gpu.library import library_fits, library_layout
from mlir_bridge.gpu.cuda_driver import cuda_info
from mlir_bridge.gpu.cusparse import BlockedEllOperand, Cusparse, CusparseError

ROOT = Path(__file__).resolve().parent.parent
HAS_DEVICE = cuda_info().available


def _matrix(rows: int, cols: int, seed: int, dtype: str = "float64") -> np.ndarray:
    """A sparse-ish matrix with an empty block row (rows 2-3) and an all-zero block column."""
    rng = np.random.default_rng(seed)
    d = rng.standard_normal((rows, cols))
    d[rng.random((rows, cols)) < 0.75] = 0
    d[2:4] = 0
    if cols > 2:
        d[:, :2] = 0
    return d.astype(dtype)


def _blocked_ell_reference(col_ind: np.ndarray, values: np.ndarray, block: int, b: np.ndarray) -> np.ndarray:
    """``A @ b`` read from cuSPARSE's Blocked-ELL arrays as its documentation defines them."""
    rows, ell_cols = values.shape
    out = np.zeros((rows, b.shape[1]), np.float64)
    for r in range(rows):
        for s in range(ell_cols // block):
            bc = int(col_ind[r // block, s])
            if bc >= 0:
                out[r] += values[r, s * block:(s + 1) * block].astype(np.float64) @ b[bc * block:(bc + 1) * block]
    return out


def _to(package: str, cuda: bool = False) -> Callable[[np.ndarray], Any]:
    """NumPy array -> the same values as a ``package`` array (torch CPU or CUDA, CuPy)."""
    if package == "numpy":
        return lambda a: a
    xp = pytest.importorskip(package)
    if package == "cupy":
        return xp.asarray  # type: ignore[no-any-return, unused-ignore]
    return lambda a: xp.from_numpy(np.array(a)).to("cuda" if cuda else "cpu")


def _blocked_ell(d: np.ndarray, block: int, package: str = "numpy", cuda: bool = False,
                 index_type: Any = np.int64) -> Tensor:
    """``d`` as BlockedELL((block, block)) whose buffers belong to ``package`` (on the host, or the GPU)."""
    t = Tensor.from_dense(d, N.BlockedELL((block, block)), index_type=index_type)
    if cuda:
        from frontend.ops.gpu._matmul import to_device

        return to_device(t, 0, package)
    wrap = _to(package)
    out = Tensor.from_buffers(t.tensor_format, t.shape, [None if p is None else wrap(p) for p in t._pos],
                              [None if c is None else wrap(c) for c in t._crd], wrap(t.val))
    assert type(out.val).__module__.split(".")[0] == package
    return out


CASES = [((8, 12), 2), ((12, 8), 4), ((1, 1), 1), ((6, 6), 3), ((16, 16), 4), ((0, 0), 2), ((4, 10), 2)]


@pytest.mark.parametrize("index_type", [np.int32, np.int64])
@pytest.mark.parametrize("package", ["numpy", "torch"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape,block", CASES)
def test_cusparse_layout_means_the_same_matrix(shape: tuple[int, int], block: int, dtype: str, package: str,
                                               index_type: Any) -> None:
    d = _matrix(*shape, seed=sum(shape) + block, dtype=dtype)
    t = _blocked_ell(d, block, package, index_type=index_type)
    col_ind, values, ell_cols = cusparse_layout(t)
    assert type(col_ind) is type(t.val) and type(values) is type(t.val)  # computed where the operand lives
    col_ind, values = np.asarray(col_ind), np.asarray(values)
    nbr = -(-shape[0] // block)
    assert col_ind.dtype == np.int32 and values.dtype == np.dtype(dtype)
    assert col_ind.shape == (nbr, ell_cols // block) and values.shape == (nbr * block, ell_cols)
    stored = np.diff(np.asarray(t._pos[1]).reshape(-1, 2), axis=1).ravel()
    for br in range(nbr):  # slots past a block row's count are empty (-1), never column 0
        assert (col_ind[br, stored[br]:] == -1).all() and (col_ind[br, :stored[br]] >= 0).all()
    b = np.random.default_rng(1).standard_normal((shape[1], 3))
    np.testing.assert_allclose(_blocked_ell_reference(col_ind, values, block, b), d.astype(np.float64) @ b,
                               rtol=1e-5, atol=1e-5)


@pytest.fixture()
def fake_cusparse(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> ctypes.CDLL:
    """The fake library, made the process's cuSPARSE for the test."""
    if shutil.which("cc") is None:
        pytest.skip("no C compiler")
    lib = tmp_path / "libfakecusparse.so"
    subprocess.run(["cc", "-shared", "-fPIC", "-O2", str(ROOT / "tests/fake_cuda/fake_libcusparse.c"), "-o",
                    str(lib)], check=True)
    fake = ctypes.CDLL(str(lib))
    fake.fake_log.restype = ctypes.c_char_p
    monkeypatch.setattr(Cusparse, "_loaded", Cusparse(fake, host_memory=True))
    return fake


@pytest.mark.parametrize("package", ["numpy", "torch"])
def test_spmm_and_spmv_through_the_fake_library(fake_cusparse: ctypes.CDLL, package: str) -> None:
    wrap = _to(package)
    rng = np.random.default_rng(7)
    for (rows, cols), block in [c for c in CASES if 0 not in c[0]]:
        for dtype in ("float32", "float64"):
            d = _matrix(rows, cols, rows * cols + block, dtype)
            t = _blocked_ell(d, block, package)
            b, x = rng.standard_normal((cols, 5)).astype(dtype), rng.standard_normal(cols).astype(dtype)
            tol: dict[str, Any] = dict(rtol=1e-5, atol=1e-5) if dtype == "float32" else dict(rtol=1e-12, atol=1e-12)
            got = library_matmul(t, "BlockedELL", wrap(b), package, alpha=2.0)
            assert tuple(got.shape) == (rows, 5)
            np.testing.assert_allclose(np.asarray(got), 2.0 * d @ b, **tol)
            y = library_matmul(t, "BlockedELL", wrap(x), package)
            assert tuple(y.shape) == (rows,)
            np.testing.assert_allclose(np.asarray(y), d @ x, **tol)
            c = wrap(np.ones(rows, dtype))
            assert library_matmul(t, "BlockedELL", wrap(x), package, c=c) is c  # accumulated in place
            np.testing.assert_allclose(np.asarray(c), 1.0 + d @ x, **tol)
            bt = wrap(np.ascontiguousarray(rng.standard_normal((5, cols)).astype(dtype).T))  # a strided b
            np.testing.assert_allclose(np.asarray(library_matmul(t, "BlockedELL", bt, package)), d @ np.asarray(bt),
                                       **tol)
    log = fake_cusparse.fake_log().decode()
    assert "rows 8 cols 12 block 2 ell_cols" in log and "rows 1 cols 1 block 1 ell_cols 1 n 1" in log
    assert fake_cusparse.fake_live() == 1  # every descriptor destroyed; the one handle stays


def test_library_errors_are_clear(fake_cusparse: ctypes.CDLL, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ValueError, match="divisible by the block size 2"):
        BlockedEllOperand(7, 8, 2, 4, 0, 0, "float32")
    with pytest.raises(TypeError, match="blocked-ELL SpMM takes"):
        BlockedEllOperand(8, 8, 2, 4, 0, 0, "int32")
    col = np.array([[5]], np.int32)  # block column 5 of a 2-block-wide matrix: the library refuses it
    val, b, c = np.ones((2, 2)), np.ones((4, 1)), np.zeros((2, 1))
    a = BlockedEllOperand(2, 4, 2, 2, col.ctypes.data, val.ctypes.data, "float64")
    with pytest.raises(CusparseError, match="cusparseSpMM failed: CUSPARSE_STATUS_INVALID_VALUE"):
        Cusparse.load().spmm_blocked_ell(a, b.ctypes.data, c.ctypes.data, 1,
                                         workspace=lambda n: (np.empty(n, np.uint8).ctypes.data, None))
    assert fake_cusparse.fake_live() == 1  # descriptors destroyed on the error path too
    monkeypatch.setattr(Cusparse, "_loaded", Cusparse(fake_cusparse))  # a real library reads device memory
    with pytest.raises(TypeError, match="torch CUDA tensors or CuPy arrays"):
        library_matmul(_blocked_ell(np.eye(4), 2), "BlockedELL", np.ones(4), "torch")
    monkeypatch.setattr(Cusparse, "_loaded", None)
    monkeypatch.setenv("UST_MLIR_CUSPARSE", "/nonexistent/libcusparse.so.12")
    with pytest.raises(RuntimeError, match="cuSPARSE .* cannot be loaded"):
        Cusparse.load()
    with pytest.raises(ValueError, match="square blocks"):
        cusparse_layout(Tensor.from_dense(np.eye(4), N.BlockedELL((2, 1))))


def _spmm(fmt: TensorFormat, shape: tuple[int, int], elem: str = "f32") -> Contraction:
    return Contraction(("ik", "kj"), (TensorSpec(fmt, shape, elem, 32, 32), TensorSpec(None, (shape[1], 3), elem)),
                       "ij", TensorSpec(None, (shape[0], 3), elem))


def test_path_choice() -> None:
    assert library_layout(N.BlockedELL((4, 4))) == "BlockedELL"
    assert library_layout(N.BlockedELL((2, 4))) is None  # cuSPARSE's blocks are square
    assert library_fits(N.BlockedELL((4, 4)), (8, 12)) and not library_fits(N.BlockedELL((4, 4)), (8, 10))
    for package in ("torch", "cupy"):
        assert gpu_path(_spmm(N.BlockedELL((2, 2)), (8, 6)), package=package) == "cusparse"
        assert gpu_path(_spmm(N.BlockedELL((2, 2)), (7, 6)), package=package) == "sparsifier-gpu"  # partial block
        assert gpu_path(_spmm(N.BlockedELL((2, 3)), (8, 6)), package=package) == "sparsifier-gpu"
        assert gpu_path(_spmm(N.BlockedELL((2, 2)), (8, 6), "i32"), package=package) == "sparsifier-gpu"
    with pytest.raises(ValueError, match="cusparse"):
        gpu_path(_spmm(N.BlockedELL((2, 2)), (7, 6)), "cusparse")


@pytest.mark.gpu
@pytest.mark.skipif(not HAS_DEVICE, reason="needs a CUDA device")
@pytest.mark.parametrize("dtype", ["float16", "float32", "float64"])
@pytest.mark.parametrize("package", ["torch", "cupy"])
def test_blocked_ell_on_the_gpu_matches_dense(package: str, dtype: str) -> None:
    from frontend.ops.gpu._matmul import gpu_matmul_plan

    to_dev = _to(package, cuda=True)
    rng = np.random.default_rng(3)
    for (rows, cols), block in [((64, 48), 16), ((8, 12), 2), ((256, 256), 8)]:
        d = _matrix(rows, cols, rows + block, dtype)
        t = _blocked_ell(d, block, package, cuda=True)
        b = rng.standard_normal((cols, 8)).astype(dtype)
        plan = gpu_matmul_plan(t, to_dev(b))
        assert plan.path == "cusparse"
        got = plan.execute()
        got = got.cpu().numpy() if package == "torch" else got.get()
        tol = 2e-2 if dtype == "float16" else 1e-5
        np.testing.assert_allclose(got.astype(np.float64), d.astype(np.float64) @ b.astype(np.float64),
                                   rtol=tol, atol=tol)
