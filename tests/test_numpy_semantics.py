"""NumPy's array semantics in the elementwise operations and reductions: reductions over any axes with
``keepdims``/``dtype`` and NumPy's accumulator and result dtypes, broadcasting between sparse and dense
operands of any ranks, size-1 batch dimensions of sparse matmul operands and pydata GCXS of any rank, each
against NumPy on the dense equivalent."""
import inspect
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import frontend as F
from frontend import NamedFormats as NF, Tensor
from ops_util import dense

FORMATS2 = {"CSR": NF.CSR, "CSC": NF.CSC, "COO": NF.COO, "DCSR": NF.DCSR, "BSR": NF.BSR((2, 2)), "DIA": NF.DIAI,
            "DELTA": NF.DELTA(8), "ELL": NF.ELL, "NM": NF.NM(2, 4)}


def _cube() -> np.ndarray:
    d = np.zeros((3, 2, 4))
    d[0, 0, 1], d[2, 1, 3], d[1, 0, 0] = 5, 2, -1
    return d


@pytest.mark.parametrize("fmt", [NF.COO(3), NF.CSF(3)])
def test_reductions_over_non_adjacent_axes(fmt):
    d = _cube()
    t = Tensor.from_dense(d, fmt)
    for name in ("max", "min", "prod", "sum", "mean"):
        for axes in [(0, 2), (-1, -3), (1, 2)]:
            ref = getattr(np, name)(d, axis=axes)
            got = dense(getattr(F, name)(t, axes))
            np.testing.assert_allclose(got, ref, err_msg=f"{name} over {axes}")
    assert np.array_equal(dense(F.max(t, (0, 2))), [5.0, 2.0])  # the values once computed as [0, 2]
    stored = np.where(d != 0, d, -np.inf).max(axis=(0, 2))
    np.testing.assert_array_equal(dense(F.reduce(t, (0, 2), "max")), stored)  # over stored entries only
    perm = Tensor.from_dense(d, "(i, j, k) -> (k : dense, i : compressed, j : compressed)")
    np.testing.assert_array_equal(dense(F.max(perm, (1, 2))), d.max((1, 2)))  # levels k, i, j: j and k apart


def test_int32_sums_accumulate_in_int64():
    a = np.array([[2**30, 2**30], [2**30, 0]], dtype=np.int32)
    for x in (sp.csr_array(a), sp.csc_array(a), Tensor.from_dense(a, NF.COO)):
        for axis in (None, 0, 1):
            got = np.asarray(dense(F.sum(x, axis)))
            ref = a.sum(axis=axis)
            assert got.dtype == np.int64 and np.array_equal(got, ref), (type(x), axis)
    assert F.sum(sp.csr_array(a[:1])) == 2**31  # not -2147483648


@pytest.mark.parametrize("dtype", [np.bool_, np.int8, np.uint8, np.int16, np.uint16, np.int32, np.uint32,
                                   np.int64, np.uint64, np.float16, np.float32, np.float64])
def test_reduction_dtypes_follow_numpy(dtype):
    d = (np.arange(24).reshape(4, 6) % 5).astype(dtype)
    if np.dtype(dtype).kind == "u":
        d[0, 0] = np.iinfo(dtype).max  # the top of the range (uint64: the sign bit)
    t = Tensor.from_dense(d, NF.CSR)
    for name in ("sum", "prod", "max", "min", "mean"):
        for axis in (None,) if name != "sum" else (None, 0):
            ref = np.asarray(getattr(np, name)(d, axis=axis))
            got = np.asarray(dense(getattr(F, name)(t, axis)))
            assert got.dtype == ref.dtype, (name, axis, got.dtype, ref.dtype)
            tol = 1e-2 if np.dtype(dtype) == np.float16 else 1e-6
            np.testing.assert_allclose(got.astype(np.float64), ref.astype(np.float64), rtol=tol)


def test_keepdims_and_dtype_keywords():
    for name in ("sum", "prod", "max", "min", "mean"):
        params = inspect.signature(getattr(F, name)).parameters.values()
        assert [(p.name, p.kind.name, p.default) for p in params] == [
            ("a", "POSITIONAL_OR_KEYWORD", inspect.Parameter.empty), ("axis", "POSITIONAL_OR_KEYWORD", None),
            ("keepdims", "KEYWORD_ONLY", False), ("dtype", "KEYWORD_ONLY", None)]
    d = _cube()
    t = Tensor.from_dense(d, NF.COO(3))
    for name in ("sum", "prod", "max", "min", "mean"):
        for axis in (None, (0, 2)):
            for keepdims in (False, True):
                for dtype in (None, np.float32) if name in ("sum", "mean") else (None,):
                    ref = np.asarray(getattr(np, name)(d.astype(dtype) if dtype and name in ("max", "min") else d,
                                                       axis=axis, keepdims=keepdims,
                                                       **({"dtype": dtype} if name not in ("max", "min") else {})))
                    got = np.asarray(dense(getattr(F, name)(t, axis, keepdims=keepdims, dtype=dtype)))
                    assert got.shape == ref.shape and got.dtype == ref.dtype, (name, axis, keepdims, dtype)
                    np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


def test_empty_reductions_as_numpy():
    for shape, axis in [((0, 3), 0), ((0, 3), 1), ((3, 0), None), ((0, 0), 1), ((0, 0), None)]:
        d = np.zeros(shape)
        for x in (sp.csr_array(d), Tensor.from_dense(d, NF.COO)):
            for name in ("max", "min"):
                try:
                    ref = getattr(np, name)(d, axis=axis)
                except ValueError as e:
                    with pytest.raises(ValueError, match="zero-size array to reduction operation"):
                        getattr(F, name)(x, axis)
                    assert "which has no identity" in str(e)
                else:
                    assert np.asarray(dense(getattr(F, name)(x, axis))).shape == np.shape(ref)
            for name in ("sum", "prod"):
                np.testing.assert_array_equal(dense(getattr(F, name)(x, axis)), getattr(np, name)(d, axis=axis))
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's "mean of empty slice"
                ref = np.mean(d, axis=axis)
            np.testing.assert_array_equal(dense(F.mean(x, axis)), ref)


BROADCAST_PAIRS = [((3, 1), (3, 4)), ((2, 3, 4), (3, 4)), ((3, 1, 4), (3, 2, 4)), ((2, 2, 2), (1, 1, 1)),
                   ((3, 1), (1, 4)), ((0, 3), (1, 3))]


def _sparse(d: np.ndarray) -> Tensor:
    return Tensor.from_dense(d, {1: NF.SparseVector, 2: NF.CSR}.get(d.ndim) or NF.COO(d.ndim))


@pytest.mark.parametrize("sa,sb", BROADCAST_PAIRS)
def test_broadcasting_sparse_and_dense(sa, sb):
    rng = np.random.default_rng(len(sa) * 10 + len(sb))
    x = np.round(rng.standard_normal(sa) * (rng.random(sa) < 0.5), 1)
    y = np.round(rng.standard_normal(sb) * (rng.random(sb) < 0.5), 1)
    for p, q in ((x, y), (y, x)):
        for kinds in ("ss", "sd"):
            left = _sparse(p) if kinds[0] == "s" else p
            right = _sparse(q) if kinds[1] == "s" else q
            for name in ("add", "subtract", "multiply") if kinds == "ss" else ("multiply",):
                got = getattr(F, name)(left, right)
                ref = getattr(np, name)(p, q)
                np.testing.assert_array_equal(dense(got), ref, err_msg=f"{name} {p.shape} {q.shape} {kinds}")
                if kinds == "ss" or name == "multiply":  # NumPy's zero-preserving cases stay sparse
                    assert isinstance(got, Tensor) and got.is_sparse
                    both = np.broadcast_to(p != 0, ref.shape) | np.broadcast_to(q != 0, ref.shape)
                    union = int(np.count_nonzero(both))
                    assert got.nse <= union  # only stored entries repeated: no zeros created by the broadcast


def test_broadcasting_scipy_and_pydata():
    sparse = pytest.importorskip("sparse")
    a, b = np.array([[0.0, 1.5, 0.0, 2.0]]), np.arange(12.0).reshape(3, 4) * (np.arange(12).reshape(3, 4) % 2)
    got = F.add(sparse.COO.from_numpy(a), sparse.COO.from_numpy(b))
    assert isinstance(got, sparse.COO) and np.array_equal(got.todense(), a + b)
    got = F.add(sp.csr_array(a.T[:3]), sp.csr_array(b))
    np.testing.assert_array_equal(dense(got), a.T[:3] + b)
    cube = _cube()[:2, :2, :2]
    np.testing.assert_array_equal(F.add(_sparse(cube), np.full((1, 1, 1), 0.5)).to_dense(), cube + 0.5)
    got = F.subtract(sp.csr_array(b), a.T[:3])  # sparse - dense column: a dense result
    assert isinstance(got, np.ndarray) and np.array_equal(got, b - a.T[:3])


def test_binary_dtypes_follow_numpy():
    a = np.array([[0, 100, 0], [3, 0, -7]], dtype=np.int8)
    b = np.array([[1, 100, 0], [0, 0, 2]], dtype=np.int8)
    for name in ("add", "subtract", "multiply"):
        got = getattr(F, name)(Tensor.from_dense(a, NF.CSR), Tensor.from_dense(b, NF.CSR))
        ref = getattr(np, name)(a, b)  # int8 wraps (100 + 100 = -56)
        assert got.to_dense().dtype == np.int8 and np.array_equal(got.to_dense(), ref)
    m, n = a != 0, b != 0
    assert np.array_equal(dense(F.add(Tensor.from_dense(m, NF.CSR), n)), m | n)
    assert np.array_equal(dense(F.multiply(Tensor.from_dense(m, NF.CSR), n)), m & n)
    with pytest.raises(TypeError, match="boolean subtract"):
        F.subtract(Tensor.from_dense(m, NF.CSR), n)
    t = Tensor.from_dense(a.astype(np.int32), NF.CSR)
    got = F.multiply(t, 2.5)  # a Python float promotes int32 to float64, as NumPy
    assert got.to_dense().dtype == np.float64 and np.array_equal(got.to_dense(), a * 2.5)
    assert F.add(Tensor.from_dense(a, NF.COO), np.int8(1)).dtype == np.int8


@pytest.mark.parametrize("first", [True, False])
def test_size_one_batch_dimension_of_a_sparse_matmul_operand(first):
    rng = np.random.default_rng(7)
    shape = (1, 1, 5) if first else (1, 5, 6)
    small = np.round(rng.standard_normal(shape) * (rng.random(shape) < 0.6), 1)
    big = rng.standard_normal((3, 5, 6) if first else (3, 1, 5))
    for fmt in (NF.COO(3), NF.CSF(3)):
        s = Tensor.from_dense(small, fmt)
        got = F.matmul(s, big) if first else F.matmul(big, s)
        ref = small @ big if first else big @ small
        np.testing.assert_allclose(dense(got), ref, rtol=1e-12)


@pytest.mark.parametrize("axes", [(0,), (1,), (2,), (0, 2), (1, 2), (0, 1)])
def test_pydata_gcxs_of_rank_three(axes):
    sparse = pytest.importorskip("sparse")
    d = np.arange(24.0).reshape(2, 3, 4) * (np.arange(24).reshape(2, 3, 4) % 3 == 0)
    g = sparse.GCXS.from_numpy(d, compressed_axes=axes)
    t = Tensor.from_package(g)
    assert np.array_equal(t.to_dense(), d) and t.val is g.data  # the values are shared
    np.testing.assert_array_equal(F.sum(g, (0, 2)), d.sum((0, 2)))
    np.testing.assert_array_equal(F.max(g, 1), d.max(1))
    got = F.add(g, g)
    assert isinstance(got, sparse.COO) and np.array_equal(got.todense(), 2 * d)
    np.testing.assert_array_equal(F.multiply(g, d[0]).todense(), d * d[0])


def test_pydata_gcxs_of_rank_one_and_four():
    sparse = pytest.importorskip("sparse")
    v = np.array([0.0, 1.5, 0.0, 2.0])
    np.testing.assert_array_equal(Tensor.from_package(sparse.GCXS.from_numpy(v)).to_dense(), v)
    d = (np.arange(48.0).reshape(2, 3, 4, 2) % 5 == 1) * np.arange(48.0).reshape(2, 3, 4, 2)
    g = sparse.GCXS.from_numpy(d, compressed_axes=(1, 3))
    np.testing.assert_array_equal(F.sum(g, (0, 3)), d.sum((0, 3)))


@pytest.mark.parametrize("name", FORMATS2)
def test_same_matrix_same_answer_in_every_format(name):
    d = np.zeros((6, 8))
    d[0, :2], d[0, 5], d[2, 4:6], d[3, 7], d[5, 0] = [1, -2], 3, [4, 5], -6, 7  # rows 1, 4 empty; 2 of every 4
    t = Tensor.from_dense(d, FORMATS2[name])
    for fn, axis in (("sum", None), ("max", 0), ("prod", 1), ("mean", 0)):
        np.testing.assert_allclose(dense(getattr(F, fn)(t, axis, keepdims=True)),
                                   getattr(np, fn)(d, axis=axis, keepdims=True), err_msg=f"{fn} {axis}")
    col = np.arange(1.0, 7.0)[:, None]
    np.testing.assert_array_equal(dense(F.multiply(t, col)), d * col)
    np.testing.assert_array_equal(dense(F.add(t, Tensor.from_dense(d[:1], NF.CSR))), d + d[:1])
