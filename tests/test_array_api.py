"""frontend.array_api, the Array API standard namespace: each function against NumPy on the dense equivalent,
for CSR, COO, a 3-D COO and dense-format Tensors, several dtypes and shapes (0x0, 1x1, non-square, empty
rows), and the errors of what has no sparse result."""
import math

import numpy as np
import pytest
import scipy.sparse as sp

import frontend.array_api as xp
from frontend import NamedFormats as NF, Tensor

SHAPES = {"0x0": (0, 0), "1x1": (1, 1), "4x6": (4, 6), "5x3": (5, 3)}
FORMATS = {"CSR": NF.CSR, "COO": NF.COO, "dense": None}

#: Every name of the 2024.12 standard (functions, dtypes, constants) except the linalg/fft extensions.
STANDARD = """e inf nan newaxis pi bool int8 int16 int32 int64 uint8 uint16 uint32 uint64 float32 float64 complex64
complex128 arange asarray empty empty_like eye from_dlpack full full_like linspace meshgrid ones ones_like tril triu
zeros zeros_like astype can_cast finfo iinfo isdtype result_type abs acos acosh add asin asinh atan atan2 atanh
bitwise_and bitwise_left_shift bitwise_invert bitwise_or bitwise_right_shift bitwise_xor ceil clip conj copysign cos
cosh divide equal exp expm1 floor floor_divide greater greater_equal hypot imag isfinite isinf isnan less less_equal
log log1p log2 log10 logaddexp logical_and logical_not logical_or logical_xor maximum minimum multiply negative
nextafter not_equal positive pow real reciprocal remainder round sign signbit sin sinh square sqrt subtract tan tanh
trunc take take_along_axis matmul matrix_transpose tensordot vecdot broadcast_arrays broadcast_to concat expand_dims
flip moveaxis permute_dims repeat reshape roll squeeze stack tile unstack argmax argmin count_nonzero nonzero
searchsorted where unique_all unique_counts unique_inverse unique_values argsort sort cumulative_sum cumulative_prod
max mean min prod std sum var all any diff __array_namespace_info__""".split()


def _matrix(shape, seed=0, dtype=np.float64):
    """A random matrix with about a third of its entries stored and row 1 empty."""
    rng = np.random.default_rng(seed)
    d = np.round(rng.standard_normal(shape) * 4) * (rng.random(shape) < 0.4) + 0.0  # no -0.0
    if shape[0] > 2:
        d[1] = 0
    return d.astype(dtype)


def _tensor(d, fmt):
    return xp.asarray(d) if fmt is None else Tensor.from_dense(d, fmt)


def _dense(x):
    return x.to_dense() if isinstance(x, Tensor) else np.asarray(x)


def _check(got, want, sparse=None):
    assert isinstance(got, Tensor)
    assert got.shape == np.shape(want)
    assert np.dtype(got.dtype) == np.asarray(want).dtype, (got.dtype, np.asarray(want).dtype)
    np.testing.assert_allclose(_dense(got), want, rtol=1e-6, atol=1e-12)
    if sparse is not None:
        assert got.is_sparse == sparse


CASES = [(f, s) for f in FORMATS for s in SHAPES]
IDS = [f"{f}-{s}" for f, s in CASES]


# ----- the namespace -----------------------------------------------------------------------------------------
def test_every_standard_name_is_there():
    assert xp.__array_api_version__ == "2024.12"
    missing = [n for n in STANDARD if not hasattr(xp, n)]
    assert not missing
    assert set(STANDARD) <= set(xp.__all__) | {"__array_namespace_info__"}


def test_dtypes_and_their_limits():
    assert xp.float32 == np.float32 and xp.int64 == np.int64 and xp.bool == np.bool_
    f = xp.finfo(xp.float32)
    assert isinstance(f.eps, float) and f.eps == float(np.finfo(np.float32).eps) and f.bits == 32
    assert xp.finfo(xp.asarray(np.ones(2, np.complex64))).dtype == np.float32
    i = xp.iinfo(xp.int16)
    assert (i.min, i.max, i.bits) == (-(2 ** 15), 2 ** 15 - 1, 16)
    assert xp.can_cast(xp.int8, xp.int32) and not xp.can_cast(xp.float64, xp.float32)
    assert xp.result_type(xp.int8, xp.uint8) == np.int16
    assert xp.result_type(Tensor.from_dense(np.ones((2, 2), np.float32), NF.CSR), 1.5) == np.float32
    assert xp.isdtype(xp.float32, "real floating") and not xp.isdtype(xp.int8, ("real floating", "bool"))


def test_namespace_info():
    info = xp.__array_namespace_info__()
    assert info.devices() == ["cpu"] and info.default_device() == "cpu"
    assert info.default_dtypes()["integral"] == np.int64
    assert set(info.dtypes(kind="integral")) == {"int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                                                  "uint64"}
    assert len(info.dtypes()) == 13 and info.capabilities()["data-dependent shapes"]
    with pytest.raises(ValueError, match="device"):
        info.dtypes(device="cuda:0")
    with pytest.raises(ValueError, match="kind"):
        info.dtypes(kind="floats")


# ----- creation ------------------------------------------------------------------------------------------------
def test_asarray_from_every_package():
    d = _matrix((4, 5), 3)
    assert not xp.asarray(d).is_sparse
    _check(xp.asarray(d), d)
    _check(xp.asarray(d.tolist()), d)
    _check(xp.asarray(2.5), np.asarray(2.5))
    _check(xp.asarray(True), np.asarray(True))
    _check(xp.asarray(sp.csr_array(d)), d, sparse=True)
    _check(xp.asarray(sp.coo_array(d)), d, sparse=True)
    _check(xp.asarray(d, dtype=xp.float32), d.astype(np.float32))
    _check(xp.asarray(d, format="CSR"), d, sparse=True)
    t = Tensor.from_dense(d, NF.CSR)
    assert xp.asarray(t) is t and xp.asarray(t, copy=True) is not t
    torch = pytest.importorskip("torch")
    _check(xp.asarray(torch.from_numpy(d)), d)
    _check(xp.asarray(torch.from_numpy(d).to_sparse_csr()), d, sparse=True)
    sparse = pytest.importorskip("sparse")
    _check(xp.asarray(sparse.COO.from_numpy(d)), d, sparse=True)
    with pytest.raises(ValueError, match="copy=False"):
        xp.asarray([1, 2], copy=False)
    with pytest.raises(ValueError, match="device"):
        xp.asarray(d, device="cuda")


@pytest.mark.parametrize("shape", [(0, 0), (0, 3), (1, 1), (3, 5), (7,), (2, 3, 4)])
def test_zeros_empty_eye_full_are_sparse(shape):
    sparse = 0 not in shape  # an array without elements is dense-format
    for fn in (xp.zeros, xp.empty):
        z = fn(shape, dtype=xp.int32)
        _check(z, np.zeros(shape, np.int32), sparse=sparse)
        assert z.nse == 0 or not sparse
    _check(xp.zeros(shape, format=NF.COO(len(shape))), np.zeros(shape), sparse=True)
    _check(xp.full(shape, 0.0), np.zeros(shape), sparse=sparse)
    _check(xp.zeros(shape, format="dense"), np.zeros(shape), sparse=False)
    _check(xp.ones(shape), np.ones(shape), sparse=False)
    _check(xp.full(shape, 5, format="dense"), np.full(shape, 5), sparse=False)
    with pytest.raises(ValueError, match="format='dense'"):
        xp.full(shape, 5)


@pytest.mark.parametrize("args", [(0,), (1,), (4,), (3, 5), (5, 3), (4, 4, 1), (4, 4, -2), (3, 5, 7)])
def test_eye(args):
    n, m, k = args[0], (args[1] if len(args) > 1 else None), (args[2] if len(args) > 2 else 0)
    _check(xp.eye(n, m, k=k), np.eye(n, m, k=k), sparse=n > 0 and m != 0)
    _check(xp.eye(n, m, k=k, dtype=xp.int64, format=NF.COO), np.eye(n, m, k=k, dtype=np.int64), sparse=True)


@pytest.mark.parametrize("fmt,shape", CASES, ids=IDS)
def test_like_functions_keep_the_format(fmt, shape):
    d = _matrix(SHAPES[shape], 1)
    t = _tensor(d, FORMATS[fmt])
    z = xp.zeros_like(t, dtype=xp.float32)
    _check(z, np.zeros_like(d, np.float32), sparse=t.is_sparse)
    assert z.tensor_format == t.tensor_format
    _check(xp.empty_like(t), np.zeros_like(d))
    if t.is_sparse:
        with pytest.raises(ValueError, match="fill value"):
            xp.full_like(t, 3)
        with pytest.raises(ValueError, match="fill value"):
            xp.ones_like(t)
    else:
        _check(xp.full_like(t, 3), np.full_like(d, 3))
        _check(xp.ones_like(t, dtype=xp.int8), np.ones_like(d, np.int8))


def test_arange_linspace_meshgrid_are_dense():
    _check(xp.arange(5), np.arange(5), sparse=False)
    _check(xp.arange(1, 2, 0.25), np.arange(1, 2, 0.25))
    _check(xp.linspace(0, 1, 7), np.linspace(0, 1, 7), sparse=False)
    _check(xp.linspace(0, 1, 4, endpoint=False, dtype=xp.float32), np.linspace(0, 1, 4, endpoint=False,
                                                                                  dtype=np.float32))
    gx, gy = xp.meshgrid(xp.arange(3), xp.asarray(np.arange(4.0)))
    ex, ey = np.meshgrid(np.arange(3), np.arange(4.0))
    _check(gx, ex)
    _check(gy, ey)


@pytest.mark.parametrize("fmt,shape", CASES, ids=IDS)
def test_tril_triu(fmt, shape):
    d = _matrix(SHAPES[shape], 2)
    t = _tensor(d, FORMATS[fmt])
    for k in (-1, 0, 2):
        _check(xp.tril(t, k=k), np.tril(d, k), sparse=t.is_sparse)
        _check(xp.triu(t, k=k), np.triu(d, k), sparse=t.is_sparse)


# ----- elementwise ---------------------------------------------------------------------------------------------
ZERO_PRESERVING = ["abs", "negative", "positive", "sin", "tan", "tanh", "sinh", "asinh", "arctan", "expm1", "floor",
                   "ceil", "trunc", "round", "sign", "square", "isnan", "isinf", "signbit", "conj", "real", "imag"]


@pytest.mark.parametrize("fmt,shape", CASES + [("COO3", "2x3x4")], ids=IDS + ["COO3-2x3x4"])
def test_zero_preserving_unary_functions_keep_the_pattern(fmt, shape):
    if fmt == "COO3":
        d, f = _matrix((2, 3, 4), 4), NF.COO(3)
    else:
        d, f = _matrix(SHAPES[shape], 4), FORMATS[fmt]
    t = _tensor(d, f)
    for name in ZERO_PRESERVING:
        np_name = {"arctan": "arctan"}.get(name, name)
        fn = getattr(xp, {"arctan": "atan"}.get(name, name))
        got = fn(t)
        _check(got, getattr(np, np_name)(d), sparse=t.is_sparse)
        if t.is_sparse:
            assert got.tensor_format == t.tensor_format
    _check(xp.sqrt(xp.abs(t)), np.sqrt(np.abs(d)))
    _check(xp.log1p(xp.abs(t)), np.log1p(np.abs(d)))


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.int8, np.complex128])
def test_unary_dtypes(dtype):
    d = _matrix((4, 5), 5, dtype)
    if np.dtype(dtype).kind == "c":
        d = d + 1j * d[::-1]
    t = Tensor.from_dense(d, NF.CSR)
    for name in ("abs", "negative", "square", "sign", "real", "imag", "conj"):
        _check(getattr(xp, name)(t), getattr(np, name)(d), sparse=True)
    _check(xp.astype(t, xp.complex128), d.astype(np.complex128), sparse=True)


@pytest.mark.parametrize("name", ["exp", "cos", "cosh", "log", "logical_not", "isfinite", "bitwise_invert",
                                  "reciprocal", "acos"])
def test_fill_changing_unary_functions_raise_on_sparse_and_compute_on_dense(name):
    d = _matrix((3, 4), 6, np.int64 if name == "bitwise_invert" else np.float64)
    with pytest.raises(ValueError, match="densify"):
        getattr(xp, name)(Tensor.from_dense(d, NF.CSR))
    with np.errstate(all="ignore"):
        want = getattr(np, name)(d)
        _check(getattr(xp, name)(xp.asarray(d)), want)


@pytest.mark.parametrize("fmt,shape", [c for c in CASES if c[0] != "COO" or c[1] == "4x6"],
                         ids=[i for i in IDS if not i.startswith("COO") or i == "COO-4x6"])
def test_add_subtract_multiply(fmt, shape):
    a, b = _matrix(SHAPES[shape], 7), _matrix(SHAPES[shape], 8)
    ta, tb = _tensor(a, FORMATS[fmt]), _tensor(b, FORMATS[fmt])
    _check(xp.add(ta, tb), a + b, sparse=ta.is_sparse)
    _check(xp.subtract(ta, tb), a - b, sparse=ta.is_sparse)
    _check(xp.multiply(ta, tb), a * b, sparse=ta.is_sparse)
    _check(xp.multiply(ta, 2.5), a * 2.5, sparse=ta.is_sparse)
    _check(xp.add(ta, 0), a + 0, sparse=ta.is_sparse)
    _check(xp.add(ta, xp.asarray(b)), a + b)


def test_mixed_dtypes_and_formats_promote_as_numpy():
    a, b = _matrix((4, 6), 9, np.float32), _matrix((4, 6), 10, np.int32)
    ta, tb = Tensor.from_dense(a, NF.CSR), Tensor.from_dense(b, NF.COO)
    _check(xp.add(ta, tb), a + b)
    _check(xp.multiply(tb, 3), b * 3)
    i8 = Tensor.from_dense(b.astype(np.int8), NF.CSR)
    _check(xp.add(i8, i8), b.astype(np.int8) + b.astype(np.int8), sparse=True)
    _check(xp.multiply(i8, 2.5), b.astype(np.int8) * 2.5)


@pytest.mark.parametrize("fmt,shape", CASES, ids=IDS)
def test_zero_preserving_binary_functions(fmt, shape):
    a, b = _matrix(SHAPES[shape], 11), _matrix(SHAPES[shape], 12)
    ta, tb = _tensor(a, FORMATS[fmt]), _tensor(b, FORMATS[fmt])
    sparse = ta.is_sparse
    _check(xp.divide(ta, 4), a / 4, sparse=sparse)
    _check(xp.pow(ta, 2), a ** 2, sparse=sparse)
    _check(xp.floor_divide(ta, 3), a // 3, sparse=sparse)
    _check(xp.remainder(ta, 3), np.remainder(a, 3), sparse=sparse)
    _check(xp.maximum(ta, tb), np.maximum(a, b), sparse=sparse)
    _check(xp.maximum(ta, -1.0), np.maximum(a, -1.0), sparse=sparse)
    _check(xp.minimum(ta, 2), np.minimum(a, 2), sparse=sparse)
    _check(xp.less(ta, 0), a < 0, sparse=sparse)
    _check(xp.greater(ta, tb), a > b, sparse=sparse)
    _check(xp.not_equal(ta, tb), a != b, sparse=sparse)
    _check(xp.logical_or(ta, tb), np.logical_or(a, b), sparse=sparse)
    _check(xp.logical_and(ta, tb), np.logical_and(a, b), sparse=sparse)
    _check(xp.hypot(ta, tb), np.hypot(a, b), sparse=sparse)
    _check(xp.atan2(ta, tb), np.arctan2(a, b), sparse=sparse)
    _check(xp.copysign(ta, tb), np.copysign(a, b), sparse=sparse)
    _check(xp.multiply(ta, xp.asarray(b)), a * b)


def test_bitwise_functions_on_integers():
    a, b = _matrix((5, 4), 13, np.int32), _matrix((5, 4), 14, np.int32)
    ta, tb = Tensor.from_dense(a, NF.CSR), Tensor.from_dense(b, NF.COO)
    _check(xp.bitwise_and(ta, tb), a & b, sparse=True)
    _check(xp.bitwise_or(ta, tb), a | b, sparse=True)
    _check(xp.bitwise_xor(ta, tb), a ^ b, sparse=True)
    _check(xp.bitwise_left_shift(ta, 2), a << 2, sparse=True)
    _check(xp.bitwise_right_shift(ta, 1), a >> 1, sparse=True)


def test_sparse_operands_broadcast():
    a = _matrix((4, 5), 15)
    row = _matrix((1, 5), 16) + 1
    ta, trow = Tensor.from_dense(a, NF.CSR), Tensor.from_dense(row, NF.CSR)
    _check(xp.maximum(ta, trow), np.maximum(a, row), sparse=True)
    _check(xp.multiply(ta, 2), a * 2, sparse=True)


@pytest.mark.parametrize("call", [lambda t: xp.add(t, 1), lambda t: xp.equal(t, 0), lambda t: xp.divide(t, 0),
                                  lambda t: xp.pow(t, 0), lambda t: xp.less_equal(t, t),
                                  lambda t: xp.maximum(t, xp.ones((3, 4), format="dense"))])
def test_fill_changing_binary_functions_raise(call):
    t = Tensor.from_dense(_matrix((3, 4), 17), NF.CSR)
    with np.errstate(all="ignore"), pytest.raises(ValueError, match="densify"):
        call(t)


def test_clip():
    d = _matrix((4, 6), 18)
    t = Tensor.from_dense(d, NF.CSR)
    _check(xp.clip(t, -2, 3), np.clip(d, -2, 3), sparse=True)
    _check(xp.clip(xp.asarray(d), 1, 3), np.clip(d, 1, 3))
    with pytest.raises(ValueError, match="densify"):
        xp.clip(t, 1, 3)


# ----- statistics and utilities ------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt,shape", [("CSR", "4x6"), ("COO", "5x3"), ("CSR", "1x1"), ("dense", "4x6")])
def test_reductions(fmt, shape):
    d = _matrix(SHAPES[shape], 19, np.float32)
    t = _tensor(d, FORMATS[fmt])
    for axis in (None, 1):
        for name in ("sum", "max", "mean"):
            _check(getattr(xp, name)(t, axis=axis), np.asarray(getattr(np, name)(d, axis=axis)))
        _check(xp.count_nonzero(t, axis=axis), np.asarray(np.count_nonzero(d, axis=axis), dtype=np.int64))
        _check(xp.any(t, axis=axis), np.any(d, axis=axis))
        _check(xp.all(t, axis=axis), np.all(d, axis=axis))
    _check(xp.sum(t, axis=0, keepdims=True), np.sum(d, axis=0, keepdims=True))
    _check(xp.sum(t, dtype=xp.float64), np.asarray(np.sum(d, dtype=np.float64)))
    _check(xp.prod(t, axis=0), np.prod(d, axis=0))
    _check(xp.min(t, axis=0, keepdims=True), np.min(d, axis=0, keepdims=True))
    i = xp.astype(t, xp.int32)
    _check(xp.sum(i, axis=1), np.sum(d.astype(np.int32), axis=1))  # int32 sums are int64


def test_reductions_of_a_3d_coo():
    d = _matrix((3, 4, 5), 20).reshape(3, 4, 5)
    t = Tensor.from_dense(d, NF.COO(3))
    for axis in (None, (0, 2), -1):
        _check(xp.sum(t, axis=axis), np.sum(d, axis=axis))
        _check(xp.max(t, axis=axis), np.max(d, axis=axis))
        _check(xp.count_nonzero(t, axis=axis), np.asarray(np.count_nonzero(d, axis=axis), dtype=np.int64))


def test_statistics_of_dense_arrays_are_numpy():
    d = _matrix((4, 6), 21, np.float32)
    t = xp.asarray(d)
    for axis in (None, 0, (0, 1)):
        for keepdims in (False, True):
            _check(xp.sum(t, axis=axis, keepdims=keepdims), np.sum(d, axis=axis, keepdims=keepdims))
            _check(xp.mean(t, axis=axis, keepdims=keepdims), np.mean(d, axis=axis, keepdims=keepdims))
            _check(xp.var(t, axis=axis, correction=1, keepdims=keepdims),
                   np.var(d, axis=axis, ddof=1, keepdims=keepdims))
            _check(xp.std(t, axis=axis, keepdims=keepdims), np.std(d, axis=axis, keepdims=keepdims))
    _check(xp.sum(t, dtype=xp.float64), np.sum(d, dtype=np.float64))
    _check(xp.cumulative_sum(t, axis=1), np.cumulative_sum(d, axis=1))
    _check(xp.cumulative_prod(t, axis=0, include_initial=True), np.cumulative_prod(d, axis=0, include_initial=True))
    _check(xp.diff(t, axis=0), np.diff(d, axis=0))
    _check(xp.argmax(t, axis=1), np.argmax(d, axis=1))
    _check(xp.argmin(t), np.asarray(np.argmin(d)))


@pytest.mark.parametrize("name", ["cumulative_sum", "cumulative_prod", "diff", "argmax", "argmin", "sort",
                                  "argsort", "unique_inverse", "unique_all"])
def test_what_has_no_sparse_meaning_raises(name):
    t = Tensor.from_dense(_matrix((3, 4), 22), NF.CSR)
    with pytest.raises(TypeError, match="sparse array is not supported"):
        getattr(xp, name)(t)


def test_sorting_and_sets():
    d = _matrix((4, 6), 23)
    t, s = xp.asarray(d), Tensor.from_dense(d, NF.COO)
    _check(xp.sort(t, axis=1), np.sort(d, axis=1))
    _check(xp.sort(t, axis=0, descending=True), np.flip(np.sort(d, axis=0), axis=0))
    _check(xp.argsort(t, axis=1), np.argsort(d, axis=1, kind="stable"))
    desc = _dense(xp.argsort(t, axis=1, descending=True))
    assert np.array_equal(np.take_along_axis(d, desc, axis=1), -np.sort(-d, axis=1))
    for x in (t, s):
        _check(xp.unique_values(x), np.unique(d))
        got = xp.unique_counts(x)
        want = np.unique_counts(d)
        _check(got.values, want.values)
        _check(got.counts, want.counts.astype(np.int64))
    inv = xp.unique_inverse(t)
    assert np.array_equal(_dense(inv.values)[_dense(inv.inverse_indices)], d)


# ----- linear algebra ------------------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["CSR", "dense"])
def test_matmul_tensordot_vecdot(fmt):
    a, b = _matrix((4, 6), 24), _matrix((6, 3), 25)
    ta, tb = _tensor(a, FORMATS[fmt]), _tensor(b, FORMATS[fmt])
    x = np.arange(6.0)
    _check(xp.matmul(ta, xp.asarray(x)), a @ x)
    _check(xp.matmul(ta, tb), a @ b, sparse=ta.is_sparse)
    _check(xp.matmul(ta, xp.asarray(b)), a @ b)
    _check(xp.tensordot(ta, tb, axes=1), np.tensordot(a, b, axes=1))
    _check(xp.tensordot(ta, xp.asarray(a), axes=([0, 1], [0, 1])), np.asarray(np.tensordot(a, a, axes=2)))
    _check(xp.vecdot(ta, xp.asarray(a)), np.vecdot(a, a))
    _check(xp.vecdot(ta, _tensor(a, FORMATS[fmt]), axis=0), np.vecdot(a, a, axis=0))
    _check(xp.matrix_transpose(ta), a.T, sparse=ta.is_sparse)
    with pytest.raises(ValueError, match="at least one dimension"):
        xp.matmul(ta, xp.asarray(2.0))


def test_permute_dims_of_a_3d_coo_is_a_view():
    d = _matrix((3, 4, 5), 26).reshape(3, 4, 5)
    t = Tensor.from_dense(d, NF.COO(3))
    p = xp.permute_dims(t, (2, 0, 1))
    _check(p, np.transpose(d, (2, 0, 1)), sparse=True)
    assert p.val is t.val
    _check(xp.moveaxis(t, 0, -1), np.moveaxis(d, 0, -1))
    _check(xp.matrix_transpose(t), np.swapaxes(d, 1, 2))


# ----- manipulation, searching, indexing ------------------------------------------------------------------------
@pytest.mark.parametrize("fmt,shape", CASES, ids=IDS)
def test_manipulation(fmt, shape):
    d = _matrix(SHAPES[shape], 27)
    t = _tensor(d, FORMATS[fmt])
    sparse = t.is_sparse
    m, n = d.shape
    _check(xp.reshape(t, (-1,)), d.reshape(-1), sparse=sparse)
    _check(xp.reshape(t, (n, m)), d.reshape(n, m), sparse=sparse)
    _check(xp.expand_dims(t, axis=1), d[:, None], sparse=sparse)
    _check(xp.squeeze(xp.expand_dims(t, axis=0), axis=0), d, sparse=sparse)
    _check(xp.concat([t, t], axis=0), np.concatenate([d, d], axis=0), sparse=sparse)
    _check(xp.concat([t, xp.asarray(d)], axis=1), np.concatenate([d, d], axis=1), sparse=sparse)
    _check(xp.concat([t, t], axis=None), np.concatenate([d.ravel(), d.ravel()]), sparse=sparse)
    _check(xp.stack([t, t], axis=1), np.stack([d, d], axis=1), sparse=sparse)
    _check(xp.broadcast_to(t, (2, m, n)), np.broadcast_to(d, (2, m, n)), sparse=sparse)
    _check(xp.flip(t), np.flip(d), sparse=sparse)
    _check(xp.flip(t, axis=1), np.flip(d, axis=1), sparse=sparse)
    _check(xp.roll(t, 2, axis=0), np.roll(d, 2, axis=0), sparse=sparse)
    _check(xp.roll(t, (1, -2), axis=(0, 1)), np.roll(d, (1, -2), axis=(0, 1)), sparse=sparse)
    _check(xp.roll(t, 3), np.roll(d, 3), sparse=sparse)
    _check(xp.repeat(t, 2, axis=1), np.repeat(d, 2, axis=1), sparse=sparse)
    _check(xp.repeat(t, 2), np.repeat(d, 2), sparse=sparse)
    _check(xp.tile(t, (2, 3)), np.tile(d, (2, 3)), sparse=sparse)
    slices = xp.unstack(t, axis=0)
    assert len(slices) == m
    for got, want in zip(slices, d):
        _check(got, want, sparse=sparse)
    _check(xp.astype(t, xp.int32), d.astype(np.int32), sparse=sparse)
    if m:
        _check(xp.repeat(t, xp.asarray(np.arange(m)), axis=0), np.repeat(d, np.arange(m), axis=0), sparse=sparse)
        idx = np.array([m - 1, 0, m - 1, -1])
        _check(xp.take(t, xp.asarray(idx), axis=0), np.take(d, idx, axis=0), sparse=sparse)
    a, b = xp.broadcast_arrays(t, xp.asarray(np.ones((1, n))))
    _check(a, d)
    _check(b, np.ones((m, n)))


@pytest.mark.parametrize("fmt,shape", CASES, ids=IDS)
def test_where_and_nonzero(fmt, shape):
    d, e = _matrix(SHAPES[shape], 28), _matrix(SHAPES[shape], 29)
    t, u = _tensor(d, FORMATS[fmt]), _tensor(e, FORMATS[fmt])
    sparse = t.is_sparse
    cond = xp.greater(t, 1)
    _check(xp.where(cond, t, 0.0), np.where(d > 1, d, 0.0), sparse=sparse)
    _check(xp.where(cond, t, u), np.where(d > 1, d, e), sparse=sparse)
    _check(xp.where(xp.asarray(d > 1), u, t), np.where(d > 1, e, d), sparse=sparse)
    _check(xp.where(cond, t, xp.asarray(e)), np.where(d > 1, d, e))
    got = xp.nonzero(t)
    want = np.nonzero(d)
    assert len(got) == 2
    for g, w in zip(got, want):
        _check(g, w.astype(np.int64))
    with pytest.raises(ValueError, match="0-d"):
        xp.nonzero(xp.asarray(1.0))


def test_take_along_axis_and_searchsorted_on_dense():
    d = _matrix((4, 5), 30)
    idx = np.argsort(d, axis=1)
    _check(xp.take_along_axis(xp.asarray(d), xp.asarray(idx), axis=1), np.take_along_axis(d, idx, axis=1))
    s = np.sort(d.ravel())
    _check(xp.searchsorted(xp.asarray(s), xp.asarray(np.array([-1.0, 0.0, 2.0]))),
           np.searchsorted(s, [-1.0, 0.0, 2.0]).astype(np.int64))
    with pytest.raises(TypeError, match="sparse array is not supported"):
        xp.take_along_axis(Tensor.from_dense(d, NF.CSR), xp.asarray(idx), axis=1)


def test_sparse_variance_makes_no_dense_copy_and_matches_numpy():
    d = _matrix((5, 7), 31)
    t = Tensor.from_dense(d, NF.CSR)
    for axis in (None, 0, 1):
        for correction in (0, 1):
            got = xp.var(t, axis=axis, correction=correction)
            _check(got, np.asarray(np.var(d, axis=axis, ddof=correction)))
            _check(xp.std(t, axis=axis, correction=correction), np.asarray(np.std(d, axis=axis, ddof=correction)))
    _check(xp.mean(t, axis=1), np.mean(d, axis=1))
    assert math.isclose(float(_dense(xp.mean(t))), d.mean())


def test_linalg_and_fft_extensions():
    d = np.array([[4.0, 1.0, 0.0], [1.0, 3.0, 0.0], [0.0, 0.0, 2.0]])
    s = Tensor.from_dense(np.array([[0.0, 2.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, -3.0]]), "CSR")
    sd = s.to_dense()
    a = xp.asarray(d)
    np.testing.assert_allclose(xp.linalg.det(a).to_dense(), np.linalg.det(d))
    np.testing.assert_allclose(xp.linalg.inv(a).to_dense(), np.linalg.inv(d))
    np.testing.assert_allclose(xp.linalg.solve(a, xp.asarray(np.ones((3, 1)))).to_dense(),
                               np.linalg.solve(d, np.ones((3, 1))))
    np.testing.assert_allclose(xp.linalg.trace(s).to_dense(), np.trace(sd))
    np.testing.assert_allclose(xp.linalg.trace(a, offset=1).to_dense(), np.trace(d, offset=1))
    np.testing.assert_allclose(xp.linalg.diagonal(s).to_dense(), np.diagonal(sd))
    for order in (2, 1, np.inf, -np.inf, 0):
        np.testing.assert_allclose(xp.linalg.vector_norm(s, ord=order).to_dense(),
                                   np.linalg.vector_norm(sd, ord=order))
    np.testing.assert_allclose(xp.linalg.vector_norm(a, axis=0).to_dense(), np.linalg.vector_norm(d, axis=0))
    np.testing.assert_allclose(xp.linalg.outer(xp.asarray(np.arange(3.0)), xp.asarray(np.ones(2))).to_dense(),
                               np.outer(np.arange(3.0), np.ones(2)))
    np.testing.assert_allclose(xp.linalg.matmul(s, a).to_dense(), sd @ d)
    np.testing.assert_allclose(xp.fft.fft(xp.asarray(np.arange(4.0))).to_dense(), np.fft.fft(np.arange(4.0)))
    np.testing.assert_allclose(xp.fft.rfftfreq(6).to_dense(), np.fft.rfftfreq(6))
    with pytest.raises(TypeError, match="inv of a sparse array is not supported"):
        xp.linalg.inv(s)
    with pytest.raises(TypeError, match="fft.fft of a sparse array is not supported"):
        xp.fft.fft(s)
