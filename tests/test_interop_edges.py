"""scipy BSR with unsorted block columns viewed without a copy."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sps

import frontend
from frontend import Tensor


def _unsorted_bsr(seed: int, shape: tuple[int, int], block: tuple[int, int]) -> tuple[np.ndarray, sps.bsr_array]:
    rng = np.random.default_rng(seed)
    for _ in range(50):
        d = rng.random(shape) * (rng.random(shape) > 0.6)
        d[0] = 0  # an empty block row part
        b = sps.bsr_array(sps.csr_array(d), blocksize=block)
        if not b.has_sorted_indices:
            return d, b
    pytest.skip("scipy sorted the block columns")


@pytest.mark.parametrize(("shape", "block"), [((6, 9), (2, 3)), ((8, 8), (2, 2)), ((8, 12), (4, 3))])
def test_unsorted_bsr_is_a_view_and_computes(shape: tuple[int, int], block: tuple[int, int]) -> None:
    d, b = _unsorted_bsr(0, shape, block)
    t = Tensor.from_package(b)
    assert not t.tensor_format.levels[1].ordered  # compressed(nonordered)
    assert t.crd(1) is b.indices and t.pos(1) is b.indptr
    assert t.val.ctypes.data == b.data.ctypes.data  # pointer identity: no copy
    assert "nonordered" in t.tensor_format.map_text()
    assert t.to_package() is b
    rng = np.random.default_rng(1)
    x, xs = rng.random(shape[1]), rng.random((shape[1], 3))
    np.testing.assert_allclose(frontend.matmul(b, x), d @ x)
    np.testing.assert_allclose(frontend.matmul(b, xs), d @ xs)
    np.testing.assert_allclose(t.to_dense(), d)
    np.testing.assert_allclose(t.convert("CSR").to_dense(), d)
    r = frontend.matmul(b, sps.csr_array(d.T))
    np.testing.assert_allclose(r.toarray(), d @ d.T)
    # the same matrix in the sorted BSR gives the same answers
    s = b.copy()
    s.sort_indices()
    np.testing.assert_allclose(frontend.matmul(s, xs), frontend.matmul(b, xs))


# ----- pydata/sparse ------------------------------------------------------------------------------------------------
def _pydata_inputs() -> tuple[np.ndarray, list]:
    sparse = pytest.importorskip("sparse")  # in the dev extra (scripts/install.sh installs it)
    rng = np.random.default_rng(2)
    d = rng.random((5, 4)) * (rng.random((5, 4)) > 0.5)
    d[1] = 0  # an empty row
    return d, [sparse.COO.from_numpy(d), sparse.GCXS.from_numpy(d, compressed_axes=(0,)),
               sparse.GCXS.from_numpy(d, compressed_axes=(1,))]


def test_pydata_sparse_views_both_ways() -> None:
    sparse = pytest.importorskip("sparse")
    d, objs = _pydata_inputs()
    for x, name in zip(objs, ("COO", "CSR", "CSC")):
        t = Tensor.from_package(x)
        assert t.tensor_format.name == name
        assert t.val.ctypes.data == x.data.ctypes.data  # pointer identity: no copy
        assert t.to_package() is x
        np.testing.assert_allclose(t.to_dense(), d)
    csr = Tensor.from_dense(d, "CSR")
    g = csr.to_package("sparse")
    assert isinstance(g, sparse.GCXS) and g.indices is csr.crd(1) and g.data is csr.val
    np.testing.assert_allclose(g.todense(), d)
    coo = Tensor.from_package(objs[0])
    again = type(coo)(coo.tensor_format, coo.shape, coo._pos, coo._crd, coo.val, package="numpy")
    back = again.to_package("sparse")
    assert back.coords is objs[0].coords and back.data is objs[0].data  # the same coords array, not a stack
    c3 = sparse.COO.from_numpy(np.arange(24.0).reshape(2, 3, 4) % 5)
    np.testing.assert_allclose(Tensor.from_package(c3).to_dense(), c3.todense())
    with pytest.raises(ValueError, match="not C-contiguous"):
        Tensor.from_package(sparse.COO.from_numpy(d).T)


def test_pydata_sparse_operations_return_pydata() -> None:
    sparse = pytest.importorskip("sparse")
    d, objs = _pydata_inputs()
    x = np.arange(1.0, 5.0)
    for a in objs:
        np.testing.assert_allclose(frontend.matmul(a, x), d @ x)  # dense result: a numpy array, as pydata gives
        other = sparse.GCXS.from_numpy(d.T, compressed_axes=(0,))
        r = frontend.matmul(a, other)
        assert isinstance(r, sparse.SparseArray)
        np.testing.assert_allclose(r.todense(), d @ d.T)
    s = frontend.add(objs[1], objs[1])
    assert isinstance(s, sparse.SparseArray)
    np.testing.assert_allclose(s.todense(), 2 * d)


class _DLPackOnly:
    """A dense array of some other package: only the DLPack protocol."""

    def __init__(self, a: np.ndarray) -> None:
        self._a = a

    def __dlpack__(self, **kwargs: object) -> object:
        return self._a.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple:
        return self._a.__dlpack_device__()


def test_dlpack_dense_operands() -> None:
    d = np.array([[1.0, 0, 2], [0, 0, 0], [3, 0, 4]])
    x = np.arange(3.0)
    t = Tensor.from_package(_DLPackOnly(x))
    assert t.val.ctypes.data == x.ctypes.data  # viewed, not copied
    np.testing.assert_allclose(frontend.matmul(sps.csr_array(d), _DLPackOnly(x)), d @ x)
    with pytest.raises(TypeError, match="cannot view"):
        Tensor.from_package(object())
