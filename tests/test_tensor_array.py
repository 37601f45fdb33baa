"""Tensor as an array: operators, methods, indexing, NumPy's ufuncs and array functions against NumPy on the
dense equivalent, for every format family (CSR, CSC, COO, DCSR, BSR, DIA, DELTA, ELL, N:M, 3-D COO)."""
from __future__ import annotations

import re

import numpy as np
import pytest

import frontend as F
from frontend import NamedFormats as NF, Tensor
from frontend.tensor import _operators

FORMATS = {"CSR": NF.CSR, "CSC": NF.CSC, "COO": NF.COO, "DCSR": NF.DCSR, "BSR": NF.BSR((2, 2)), "DIA": NF.DIAI,
           "DELTA": NF.DELTA(8), "ELL": NF.ELL, "NM": NF.NM(2, 4)}


def _matrix(shape=(6, 8), seed=0, dtype=np.float64):
    """Random values, at most 2 nonzeros in every group of 4 columns (so N:M 2:4 holds them), row 1 empty."""
    rng = np.random.default_rng(seed)
    d = np.round(rng.standard_normal(shape) * 4) / 2
    d[rng.random(shape) < 0.45] = 0
    for c in range(0, shape[1], 4):
        block = d[:, c:c + 4]
        for r in range(shape[0]):
            nz = np.flatnonzero(block[r])
            block[r, nz[2:]] = 0
    if shape[0] > 2:
        d[1] = 0
    return d.astype(dtype)


def _t(d, name):
    return Tensor.from_dense(d, FORMATS[name] if isinstance(name, str) else name)


def _np(x):
    if isinstance(x, Tensor):
        return x.to_dense()
    return np.asarray(x)


def _check(got, ref, exact=False):
    g = _np(got)
    assert g.shape == np.shape(ref), (g.shape, np.shape(ref))
    assert g.dtype == np.asarray(ref).dtype, (g.dtype, np.asarray(ref).dtype)
    if exact:
        np.testing.assert_array_equal(g, ref)
    else:
        np.testing.assert_allclose(g, ref, rtol=1e-12, atol=1e-12)


A = _matrix()
B = _matrix(seed=1)


@pytest.mark.parametrize("name", FORMATS)
def test_operators(name):
    ta, tb = _t(A, name), _t(B, name)
    x, X = np.arange(1.0, 9.0), np.arange(16.0).reshape(8, 2)
    D = np.arange(48.0).reshape(6, 8) - 20
    if name == "NM":  # the union of two 2:4 patterns may not be 2:4: the operation refuses, so does the operator
        for op, fn in ((lambda: ta + tb, F.add), (lambda: ta - tb, F.subtract)):
            with pytest.raises(ValueError, match="more than n=2") as err:
                op()
            with pytest.raises(ValueError, match=re.escape(str(err.value))):
                fn(ta, tb)
        tb = _t(B, "CSR")
    cases = [
        (ta + tb, A + B), (ta - tb, A - B), (ta * tb, A * B), (ta * 2, A * 2), (2 * ta, 2 * A), (ta / 2, A / 2),
        (ta * D, A * D), (D * ta, D * A), (ta + D, A + D), (ta / (D + 100), A / (D + 100)), (ta @ x, A @ x),
        (np.arange(6.0) @ ta, np.arange(6.0) @ A), (-ta, -A), (+ta, +A), (abs(ta), abs(A)), (ta ** 2, A ** 2),
        (abs(ta) ** 0.5, abs(A) ** 0.5), (ta // 2, A // 2), (ta % 3, A % 3),
    ]
    if name in ("CSR", "BSR", "DIA"):  # more kernels (each compiles once per format)
        cases += [(ta @ X, A @ X), (D - ta, D - A), (ta * x, A * x), (ta ** 3, A ** 3)]
    for got, ref in cases:
        _check(got, ref)
    for got in (ta + tb, ta * 2, 2 * ta, ta / 2, -ta, abs(ta), ta ** 2, ta * D, ta / (D + 100)):
        assert isinstance(got, Tensor) and got.is_sparse  # the sparse pattern stays
    assert (ta * 2).tensor_format == FORMATS[name] and (ta / 2).tensor_format == FORMATS[name]


@pytest.mark.parametrize("name", FORMATS)
def test_comparisons_keep_the_pattern(name):
    ta, tb = _t(A, name), _t(B, name)
    for got, ref in ((ta > 0, A > 0), (ta < -0.5, A < -0.5), (ta != 0, A != 0), (ta > tb, A > B), (ta < tb, A < B),
                     (ta != tb, A != B), (ta > np.full((6, 8), 1.0), A > 1)):
        assert isinstance(got, Tensor) and got.is_sparse and got.dtype == bool
        _check(got, ref, exact=True)
    pa, pb = ta > 0, tb < 0
    for got, ref in ((pa & pb, (A > 0) & (B < 0)), (pa | pb, (A > 0) | (B < 0)), (pa ^ pb, (A > 0) ^ (B < 0)),
                     (pa & True, A > 0)):
        assert isinstance(got, Tensor) and got.is_sparse
        _check(got, ref, exact=True)
    for fill_changing in (lambda: ~pa, lambda: ta == 0, lambda: ta >= 0, lambda: ta <= tb, lambda: ta == tb,
                          lambda: ta < 1, lambda: 1 / ta, lambda: ta / tb, lambda: ta / 0.0):
        with pytest.raises(ValueError, match="UST_MLIR_AUTO_DENSIFY"):
            fill_changing()


def test_fill_changing_operations_densify_on_opt_in(monkeypatch):
    ta, tb = _t(A, "CSR"), _t(B, "COO")
    monkeypatch.setenv("UST_MLIR_AUTO_DENSIFY", "1")
    with np.errstate(all="ignore"):
        for got, ref in ((ta == 0, A == 0), (ta >= tb, A >= B), (np.exp(ta), np.exp(A)), (np.cos(ta), np.cos(A)),
                         (1 / ta, 1 / A), (ta / tb, A / B), (np.asarray(ta), A), (np.array(tb), B)):
            assert isinstance(got, np.ndarray)
            np.testing.assert_array_equal(got, ref)


def test_asarray_refuses_to_densify_silently(monkeypatch):
    monkeypatch.delenv("UST_MLIR_AUTO_DENSIFY", raising=False)
    ta = _t(A, "CSR")
    for densify in (np.asarray, np.array, lambda t: np.exp(t), lambda t: np.cos(t)):
        with pytest.raises((RuntimeError, ValueError), match="todense"):
            densify(ta)
    dense = Tensor.from_dense(A)  # a dense-format tensor is an array already: zero copy
    view = np.asarray(dense)
    assert np.shares_memory(view, dense.val) and np.array_equal(view, A)
    assert np.array_equal(np.asarray(dense.T), A.T)
    assert np.array_equal(np.from_dlpack(dense), A) and np.shares_memory(np.from_dlpack(dense), dense.val)
    assert dense.__dlpack_device__() == (1, 0)
    with pytest.raises(BufferError, match="todense"):
        np.from_dlpack(ta)


@pytest.mark.parametrize("name", FORMATS)
def test_reductions_and_methods(name):
    ta = _t(A, name)
    cases = [(ta.sum(), A.sum()), (ta.sum(axis=0), A.sum(axis=0)), (ta.max(), A.max()),
             (ta.min(axis=0), A.min(axis=0)), (ta.mean(), A.mean()), (ta.mean(axis=0), A.mean(axis=0)),
             (np.sum(ta), np.sum(A)), (np.max(ta), np.max(A)), (np.min(ta, 0), np.min(A, 0)),
             (np.mean(ta), np.mean(A)), (np.add.reduce(ta), np.add.reduce(A))]
    if name in ("CSR", "BSR", "DIA"):  # more kernels (each compiles once per format)
        cases += [(ta.sum(1), A.sum(1)), (ta.max(axis=-1), A.max(axis=-1)), (ta.prod(axis=1), A.prod(axis=1)),
                  (np.sum(ta, axis=1), np.sum(A, axis=1)), (np.prod(ta, axis=1), np.prod(A, axis=1)),
                  (np.maximum.reduce(ta, axis=1), A.max(axis=1)), (np.multiply.reduce(ta, axis=None), A.prod())]
    for got, ref in cases:
        _check(got, ref)
    assert ta.T.shape == (8, 6) and np.array_equal(ta.T.to_dense(), A.T)
    assert np.array_equal(ta.mT.to_dense(), A.T) and np.array_equal(ta.transpose(1, 0).to_dense(), A.T)
    assert np.array_equal(np.transpose(ta).to_dense(), A.T) and ta.transpose() .T.shape == A.shape
    assert ta.nnz == ta.nse and ta.ndim == 2 and ta.size == A.size and ta.device == "cpu" and len(ta) == 6
    for dense in (ta.toarray(), ta.todense()):
        assert isinstance(dense, np.ndarray) and np.array_equal(dense, A)
    for conv, fmt in ((ta.tocsr(), NF.CSR), (ta.tocsc(), NF.CSC), (ta.tocoo(), NF.COO)):
        assert conv.tensor_format == fmt and np.array_equal(conv.to_dense(), A)
    f32 = ta.astype(np.float32)
    assert f32.dtype == np.float32 and np.array_equal(f32.to_dense(), A.astype(np.float32))
    assert ta.astype(np.float64, copy=False) is ta
    c = ta.copy()
    assert c is not ta and c.val is not ta.val and np.array_equal(c.to_dense(), A)
    assert np.array_equal(ta.conj().to_dense(), A)


def test_transpose_is_zero_copy():
    t = _t(A, "CSR")
    tt = t.T
    assert tt.tensor_format == NF.CSC and tt.tensor_format.name == "CSC" and tt.val is t.val
    assert all(a is b for a, b in zip(tt.buffers(), t.buffers()))
    assert tt.T.tensor_format == NF.CSR
    np.testing.assert_allclose((tt @ np.arange(6.0)), A.T @ np.arange(6.0))
    dia = _t(A, "DIA").T  # a diagonal level j - i read as i - j: the DSL has no such level, a converted copy
    assert np.array_equal(dia.to_dense(), A.T)
    c3 = _t(np.arange(24.0).reshape(2, 3, 4) * (np.arange(24).reshape(2, 3, 4) % 3 == 0), NF.COO(3))
    ref = np.arange(24.0).reshape(2, 3, 4) * (np.arange(24).reshape(2, 3, 4) % 3 == 0)
    for axes in ((2, 0, 1), (1, 0, 2), None):
        assert np.array_equal(c3.transpose(axes).to_dense(), np.transpose(ref, axes))
    assert np.array_equal(c3.mT.to_dense(), np.swapaxes(ref, 1, 2))
    with pytest.raises(ValueError, match="permutation"):
        t.transpose(0, 0)


@pytest.mark.parametrize("name", FORMATS)
def test_indexing(name):
    ta = _t(A, name)
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            v = ta[i, j]
            assert v == A[i, j] and np.asarray(v).dtype == A.dtype
    assert ta[-1, -2] == A[-1, -2]
    keys = [0, 1, -1, slice(1, 5), slice(None, None, -1), (slice(1, 6, 2), slice(None, None, -3)),
            (Ellipsis, 3), (slice(None), 2), np.array([0, 2, 2, 5]), (slice(None), [7, 0, 0]),
            np.array([True, False, True, True, False, False]), (2, slice(1, None)), (slice(0, 0),)]
    for key in keys:
        got, ref = ta[key], A[key]
        assert isinstance(got, Tensor) and got.shape == ref.shape
        assert np.array_equal(got.to_dense(), ref), key
        if got.ndim == 2:
            assert got.tensor_format == ta.tensor_format or name == "NM"
    rows = list(ta)
    assert len(rows) == 6 and all(np.array_equal(r.to_dense(), A[k]) for k, r in enumerate(rows))
    for bad in ((6, 0), (0, 8), (0, 0, 0)):
        with pytest.raises(IndexError):
            ta[bad]
    with pytest.raises(TypeError, match="item assignment"):
        ta[0, 0] = 1.0


def test_three_dimensional_coo():
    rng = np.random.default_rng(3)
    d = np.round(rng.standard_normal((3, 4, 5)), 1) * (rng.random((3, 4, 5)) < 0.3)
    e = np.round(rng.standard_normal((3, 4, 5)), 1) * (rng.random((3, 4, 5)) < 0.3)
    t, u = _t(d, NF.COO(3)), _t(e, NF.COO(3))
    X = rng.standard_normal((3, 5, 2))
    for got, ref in ((t + u, d + e), (t - u, d - e), (t * u, d * e), (t * 3, d * 3), (t / 4, d / 4), (-t, -d),
                     (abs(t), abs(d)), (t ** 2, d ** 2), (t > 0, d > 0), (t @ X, d @ X), (t.sum(axis=(0, 2)),
                     d.sum(axis=(0, 2))), (t.sum(), d.sum()), (t.max(axis=1), d.max(axis=1)), (t[1], d[1]),
                     (t[:, 1:3, ::2], d[:, 1:3, ::2]), (t[..., 4], d[..., 4]), (np.sqrt(abs(t)), np.sqrt(abs(d)))):
        _check(got, ref)
    assert t[2, 3, 4] == d[2, 3, 4] and t[1].tensor_format == NF.CSR and t[:2].tensor_format == NF.COO(3)


@pytest.mark.parametrize("shape", [(0, 0), (1, 1), (5, 3), (3, 0)])
def test_small_and_empty_shapes(shape):
    d = _matrix(shape, seed=4) if 0 not in shape else np.zeros(shape)
    if shape == (1, 1):
        d = np.array([[2.5]])
    t = _t(d, "CSR")
    x = np.arange(1.0, shape[1] + 1)
    for got, ref in ((t + t, d + d), (t * 2, d * 2), (t @ x, d @ x), (t.T, d.T), (t / 2, d / 2),
                     (t.sum(axis=0), d.sum(axis=0)), (t > 0, d > 0), (t[::2], d[::2])):
        _check(got, ref)
    assert len(t) == shape[0] and t.size == d.size


@pytest.mark.parametrize(("da", "db"), [(np.int32, np.float64), (np.float32, np.float64), (np.int64, np.float32),
                                        (np.float32, np.complex128)])
def test_mixed_dtypes_follow_numpy(da, db):
    a, b = _matrix(seed=5).astype(da), _matrix(seed=6).astype(db)
    ta, tb = _t(a, "CSR"), _t(b, "CSR")
    for got, ref in ((ta + tb, a + b), (ta * tb, a * b), (tb + ta, b + a), (ta * 2.5, a * 2.5),
                     (2.5 * ta, 2.5 * a), (ta / 2, a / 2), (ta * 3, a * 3), (ta * b, a * b)):
        g = _np(got)
        assert g.dtype == np.asarray(ref).dtype, (g.dtype, np.asarray(ref).dtype)
        np.testing.assert_allclose(g, ref, rtol=1e-6)


@pytest.mark.parametrize("dtype", [np.int32, np.int64, np.float32, np.complex128])
def test_unary_operators_per_dtype(dtype):
    a = (_matrix(seed=7) * 2).astype(dtype)
    if np.dtype(dtype).kind == "c":
        a = a + 1j * _matrix(seed=7)[::-1] * (a != 0)
    t = _t(a, "COO")
    for got, ref in ((-t, -a), (abs(t), abs(a)), (t ** 2, a ** 2), (t.conj(), np.conj(a)), (np.conj(t), np.conj(a)),
                     (t * t, a * a)):
        g = _np(got)
        assert g.dtype == np.asarray(ref).dtype
        np.testing.assert_allclose(g, ref, rtol=1e-6)


def test_ufuncs_on_stored_values():
    ta, tb = _t(A, "CSR"), _t(B, "DCSR")
    for got, ref in ((np.add(ta, tb), A + B), (np.multiply(ta, 3), A * 3), (np.subtract(ta, B), A - B),
                     (np.negative(ta), -A), (np.abs(ta), np.abs(A)), (np.sqrt(abs(ta)), np.sqrt(abs(A))),
                     (np.sin(ta), np.sin(A)), (np.tanh(ta), np.tanh(A)), (np.expm1(ta), np.expm1(A)),
                     (np.maximum(ta, 0), np.maximum(A, 0)), (np.minimum(ta, tb), np.minimum(A, B)),
                     (np.maximum(ta, tb), np.maximum(A, B)), (np.square(ta), np.square(A)),
                     (np.matmul(ta, np.ones(8)), A @ np.ones(8)), (np.power(ta, 2), A ** 2), (np.sign(ta), np.sign(A))):
        assert isinstance(got, Tensor)
        _check(got, ref)
    assert np.sqrt(abs(ta)).tensor_format == NF.CSR
    with pytest.raises(TypeError, match="np.modf.*todense"):
        np.modf(ta)
    with pytest.raises(TypeError, match="accumulate.*UST_MLIR_AUTO_DENSIFY"):
        np.add.accumulate(ta)
    with pytest.raises(TypeError, match="out="):
        np.add(ta, tb, out=np.empty((6, 8)))


def test_ndarray_on_the_left_reaches_the_tensor():
    ta = _t(A, "CSR")
    x, D = np.arange(6.0), np.arange(48.0).reshape(6, 8)
    for got, ref in ((x @ ta, x @ A), (D + ta, D + A), (D * ta, D * A), (D - ta, D - A), (np.float64(2) * ta, 2 * A)):
        assert isinstance(got, Tensor)
        _check(got, ref)


def test_array_functions():
    ta, tb = _t(A, "CSR"), _t(B, "CSR")
    x = np.arange(8.0)
    c3 = np.arange(24.0).reshape(2, 3, 4) % 5
    for got, ref in ((np.dot(ta, x), A @ x), (np.dot(ta, tb.T), A @ B.T), (np.dot(ta, 2.0), A * 2),
                     (np.tensordot(ta, tb, axes=([1], [1])), A @ B.T), (np.tensordot(ta, x, axes=1), A @ x),
                     (np.einsum("ij,j->i", ta, x), A @ x), (np.einsum("ij,j", ta, x), A @ x),
                     (np.where(ta > 0, ta, 0), np.where(A > 0, A, 0)),
                     (np.where(ta > 0, 7.0, 0), np.where(A > 0, 7.0, 0)),
                     (np.concatenate([ta, tb]), np.concatenate([A, B])),
                     (np.concatenate([ta, tb], axis=1), np.concatenate([A, B], axis=1)),
                     (np.stack([ta, tb]), np.stack([A, B])), (np.stack([ta, tb], axis=-1), np.stack([A, B], axis=-1)),
                     (np.transpose(_t(c3, NF.COO(3)), (1, 2, 0)), np.transpose(c3, (1, 2, 0)))):
        _check(got, ref)
    assert np.concatenate([ta, tb]).tensor_format == NF.CSR
    for got, ref in zip(np.where(ta), np.nonzero(A)):
        assert np.array_equal(got, ref)
    assert np.allclose(ta, _t(A, "COO")) and not np.allclose(ta, tb) and np.allclose(ta, A)
    assert np.allclose(ta, _t(A + 1e-12 * (A != 0), "DIA")) and not np.allclose(ta, ta * 1.001, rtol=1e-6)
    assert np.array_equal(ta, _t(A, "BSR")) and not np.array_equal(ta, tb)
    assert np.shape(ta) == (6, 8) and np.ndim(ta) == 2 and np.size(ta) == 48 and np.size(ta, 1) == 8
    with pytest.raises(TypeError):
        np.sort(ta)  # not implemented: NumPy's own TypeError, never an object array
    with pytest.raises(ValueError, match="todense"):
        np.where(ta > 0, ta, 1.0)


def test_truth_value_and_unregistered_operator():
    assert bool(_t(np.array([[3.0]]), "CSR")) and not bool(_t(np.array([[0.0]]), "CSR"))
    with pytest.raises(ValueError, match="ambiguous"):
        bool(_t(A, "CSR"))
    with pytest.raises(RuntimeError, match="import frontend.ops"):
        _operators.call("no such operator", 1)
    assert F.Tensor is Tensor


@pytest.mark.parametrize("name", ["CSR", "COO", "BSR"])
def test_operators_cost_what_the_operation_costs(name):
    """The operator and the function it calls give identical results (one path)."""
    ta, x = _t(A, name), np.arange(8.0)
    assert np.array_equal((ta @ x).to_dense(), F.matmul(ta, x).to_dense())
    assert np.array_equal((ta + ta).to_dense(), F.add(ta, ta).to_dense())


def test_conversion_shortcuts_and_integer_values():
    a = (_matrix(seed=8) * 2).astype(np.int32)
    t = _t(a, "COO")
    for conv, fmt in ((t.todia(), NF.DIAJ), (t.tobsr((2, 4)), NF.BSR((2, 4))), (t.tocsr().tocsc(), NF.CSC)):
        assert conv.tensor_format == fmt and conv.dtype == np.int32 and np.array_equal(conv.to_dense(), a)
    for got, ref in ((t / 2, a / 2), (t // 3, a // 3), (t % 4, a % 4), (t > 1, a > 1), (t != 0, a != 0),
                     (abs(t) ** 0.5, abs(a) ** 0.5), (np.maximum(t, -1), np.maximum(a, -1))):
        _check(got, ref)
    with pytest.raises(ValueError, match="UST_MLIR_AUTO_DENSIFY"):
        t / 0


def test_sparse_vectors():
    v = _t(A, "CSR")[2]
    d = A[2]
    assert v.tensor_format == NF.SparseVector and v.ndim == 1 and len(v) == 8
    for got, ref in ((v * 2, d * 2), (v / 4, d / 4), (v > 0, d > 0), (np.sqrt(abs(v)), np.sqrt(abs(d))),
                     (v[::-2], d[::-2]), (v[[1, 1, 7]], d[[1, 1, 7]])):
        _check(got, ref)
    assert [float(x) for x in v] == d.tolist() and v[3] == d[3]
