"""``Matmul.execute()``'s raw path (a planned row-range call run through a two-argument trampoline with a fresh
output): same values as scipy, a fresh array per call, and still right after the operands change."""
from __future__ import annotations

import ctypes

import numpy as np
import pytest
import scipy.sparse as sp

import frontend as F
from mlir_bridge import trampoline


def matrix(rows: int, cols: int, density: float, dtype: type, seed: int = 0) -> sp.csr_array:
    a = sp.random_array((rows, cols), density=density, format="csr", dtype=np.float64, random_state=seed)
    if rows > 2:  # an empty row
        a = a.tolil()
        a[1, :] = 0
        a = a.tocsr()
    return sp.csr_array(a.astype(dtype))


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("shape", [(1, 1), (7, 5), (64, 64), (300, 40), (0, 4), (4, 0)])
@pytest.mark.parametrize("threads", [None, 1, 2])
def test_fresh_results_match_scipy(dtype: type, shape: tuple[int, int], threads: int | None) -> None:
    a = matrix(*shape, 0.3, dtype)
    x = np.random.default_rng(1).standard_normal(shape[1]).astype(dtype)
    mm = F.Matmul(a, x, threads=threads).plan()
    first = mm.execute()
    second = mm.execute()
    tol = 1e-12 if dtype == np.float64 else 1e-4
    for got in (first, second):
        assert isinstance(got, np.ndarray) and got.dtype == dtype and got.shape == (shape[0],)
        np.testing.assert_allclose(got, a @ x, rtol=tol, atol=tol)
    if shape[0]:
        assert first is not second and not np.shares_memory(first, second)


def test_raw_path_is_taken_and_follows_new_operands() -> None:
    a = matrix(50, 30, 0.2, np.float64)
    x = np.arange(30.0)
    mm = F.Matmul(a, x).plan()
    assert mm.backend._fast is not None  # the planned CSR SpMV runs raw
    np.testing.assert_allclose(mm.execute(), a @ x)
    y = np.ones(30)
    mm.backend.rebind_dense(1, y)  # descriptors change in place: the raw runner sees them
    np.testing.assert_allclose(mm.execute(), a @ y)
    b = matrix(50, 30, 0.2, np.float64, seed=5)
    mm.reset_operands(b, x)
    np.testing.assert_allclose(mm.execute(), b @ x)
    out = np.full(50, np.nan)
    assert mm.execute(out=out) is out
    np.testing.assert_allclose(out, b @ x)
    mm.release()
    with pytest.raises(RuntimeError):
        mm.execute()


def test_trampoline_calls_with_integer_words() -> None:
    libc = ctypes.CDLL(None)
    memset = libc.memset
    memset.argtypes = [ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64]
    memset.restype = ctypes.c_void_p
    assert trampoline.packed(memset, (0, 0, 0)) is None  # a return value: not through a trampoline
    buf = (ctypes.c_uint8 * 16)()
    fill = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int64, ctypes.c_int64)(
        ctypes.cast(memset, ctypes.c_void_p).value)
    got = trampoline.packed(fill, (ctypes.addressof(buf), 7, 10))
    assert got is not None
    tramp, args, words = got
    tramp(*args)
    assert list(buf) == [7] * 10 + [0] * 6
    words[1] = 9  # the words are read at each call
    tramp(*args)
    assert list(buf)[:10] == [9] * 10
    floats = ctypes.CFUNCTYPE(None, ctypes.c_double)(ctypes.cast(memset, ctypes.c_void_p).value)
    assert trampoline.packed(floats, (1.0,)) is None  # a float argument travels in another register


@pytest.mark.parametrize("fmt", ["CSR", "DELTA8"])
def test_tensor_and_torch_callers_get_their_package(fmt: str) -> None:
    from frontend import Tensor
    from frontend.format import NamedFormats

    a = matrix(40, 33, 0.2, np.float64)
    t = Tensor.from_package(a)
    if fmt == "DELTA8":
        t = t.convert(tensor_format=NamedFormats.DELTA(8))
    x = np.random.default_rng(2).standard_normal(33)
    mm = F.Matmul(t, x).plan()
    got = mm.execute()
    assert isinstance(got, Tensor)
    np.testing.assert_allclose(got.to_package("numpy"), a @ x)
    np.testing.assert_allclose(mm.execute().to_package("numpy"), a @ x)
    torch = pytest.importorskip("torch")
    xt = torch.from_numpy(x)
    mt = F.Matmul(a, xt).plan()
    for _ in range(2):
        res = mt.execute()
        assert isinstance(res, torch.Tensor)
        np.testing.assert_allclose(res.numpy(), a @ x)
