"""Traced scalar functions written with NumPy: ufuncs and ``np.where``/``np.clip`` on traced values record the
same MLIR operations as ``frontend.ops``' helpers (in apply, select, reduce, prologs, epilogs and semirings),
integer values take the bitwise operators, and NumPy functions without a traced form raise a clear TypeError."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import frontend as F
from frontend.ops import Semiring
from lowering.scalar_fn import UFUNCS, trace


def _matrix(shape: tuple[int, int], dtype, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    if np.dtype(dtype).kind == "i":
        vals = rng.integers(-20, 20, shape)
    else:
        vals = rng.random(shape) * 4 - 2
    d = np.where(rng.random(shape) < 0.5, vals, 0).astype(dtype)
    if shape[0] > 2:
        d[1] = 0  # an empty row
    return d


def _dense(x) -> np.ndarray:
    return x.toarray() if hasattr(x, "toarray") else np.asarray(x)


FLOAT_FUNCTIONS = {
    "maximum": (lambda v: np.maximum(v, 0), lambda d: np.maximum(d, 0)),
    "minimum": (lambda v: np.minimum(v, 0.5), lambda d: np.minimum(d, 0.5)),
    "exp": (np.exp, np.exp),
    "log_abs": (lambda v: np.log(np.abs(v)), lambda d: np.log(np.abs(d))),
    "sqrt_abs": (lambda v: np.sqrt(abs(v)), lambda d: np.sqrt(np.abs(d))),
    "where": (lambda v: np.where(v > 0, v, 0), lambda d: np.where(d > 0, d, 0)),
    "negative": (np.negative, np.negative),
    "square_clip": (lambda v: np.clip(np.square(v), 0.25, 2.0), lambda d: np.clip(d * d, 0.25, 2.0)),
    "numpy_scalar": (lambda v: v * np.float32(2) + np.int64(1), lambda d: d * 2 + 1),
}


CONFIGS = [((5, 6), np.float64, "csr"), ((4, 3), np.float32, "coo")]  # each function on one, in turn


@pytest.mark.parametrize(("name", "shape", "dtype", "fmt"),
                         [(n, *CONFIGS[k % 2]) for k, n in enumerate(sorted(FLOAT_FUNCTIONS))])
def test_apply_with_numpy_functions(name, shape, dtype, fmt):
    fn, ref = FLOAT_FUNCTIONS[name]
    d = _matrix(shape, dtype)
    got = _dense(F.apply(sp.csr_array(d).asformat(fmt), fn))
    with np.errstate(all="ignore"):
        want = np.where(d != 0, ref(d), 0)
    np.testing.assert_allclose(got, want, rtol=1e-5)


@pytest.mark.parametrize("shape", [(0, 0), (1, 1), (6, 4)])
def test_apply_select_shapes(shape):
    d = _matrix(shape, np.float64, 1)
    a = sp.csr_array(d)
    np.testing.assert_allclose(_dense(F.apply(a, lambda v: np.maximum(v, 0))), np.maximum(d, 0))
    kept = F.select(a, lambda v: np.greater(v, 0.5))
    np.testing.assert_allclose(_dense(kept), np.where(d > 0.5, d, 0))


INT_FUNCTIONS = {
    "and": (lambda v: v & 6, lambda d: d & 6),
    "or": (lambda v: v | 1, lambda d: d | 1),
    "xor": (lambda v: np.bitwise_xor(v, 5), lambda d: d ^ 5),
    "invert": (lambda v: ~v, lambda d: ~d),
    "shifts": (lambda v: (v << 2) + (v >> 1), lambda d: (d << 2) + (d >> 1)),
    "rshift_ufunc": (lambda v: np.right_shift(v, 1), lambda d: d >> 1),
    "abs_max": (lambda v: np.maximum(np.abs(v), 3), lambda d: np.maximum(np.abs(d), 3)),
}


@pytest.mark.parametrize("name", sorted(INT_FUNCTIONS))
@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_integer_bitwise(name, dtype):
    fn, ref = INT_FUNCTIONS[name]
    d = _matrix((5, 7), dtype, 2)
    got = _dense(F.apply(sp.csr_array(d), fn))
    np.testing.assert_array_equal(got, np.where(d != 0, ref(d), 0))


def test_reduce_with_or_and_xor():
    """As MLIR's own reduction tests: a 32-entry i32 vector with init 7 or-reduces to 15 and xor-reduces to 10."""
    v = np.zeros(32, np.int32)
    v[[0, 3, 5, 7, 11, 13, 17, 31]] = [1, 2, 3, 8, 5, 2, 1, 3]
    a = sp.csr_array(v.reshape(1, 32))
    assert F.reduce(a, None, lambda x, y: x | y, 7) == 15 == np.bitwise_or.reduce(v, initial=7)
    assert F.reduce(a, None, lambda x, y: x ^ y, 7) == 10 == np.bitwise_xor.reduce(v, initial=7)
    assert F.reduce(a, None, np.bitwise_or, 7) == 15
    rows = F.reduce(sp.csr_array(v.reshape(4, 8)), 1, lambda x, y: np.bitwise_xor(x, y), 0)
    np.testing.assert_array_equal(rows, np.bitwise_xor.reduce(v.reshape(4, 8), axis=1))


def test_semiring_prolog_epilog_with_numpy():
    d = _matrix((5, 6), np.float64, 3)
    b = np.random.default_rng(4).random((6, 4))
    a = sp.csr_array(d)
    r = F.matmul(a, b, semiring=Semiring(np.maximum, np.add, float("-inf")))
    want = np.full((5, 4), -np.inf)
    for i, k in zip(*np.nonzero(d)):
        want[i] = np.maximum(want[i], d[i, k] + b[k])
    np.testing.assert_allclose(r, want)
    r = F.matmul(a, b, prolog=lambda x: np.maximum(x, 0), epilog=lambda y: np.where(y > 1, y, 0))
    want = np.maximum(d, 0) @ b
    np.testing.assert_allclose(r, np.where(want > 1, want, 0))


def test_unsupported_numpy_functions_name_themselves():
    a = sp.csr_array(np.eye(3))
    with pytest.raises(TypeError, match=r"ufunc 'sin' cannot be traced \(supported: absolute, add"):
        F.apply(a, np.sin)
    with pytest.raises(TypeError, match=r"numpy.sort cannot be traced \(supported: clip, where"):
        F.apply(a, lambda v: np.sort(v))
    with pytest.raises(TypeError, match=r"add.reduce cannot be traced"):
        F.apply(a, lambda v: np.add.reduce(v))
    with pytest.raises(TypeError, match="and is not defined for f64"):
        F.apply(a, lambda v: v & 1)
    with pytest.raises(TypeError, match="sqrt is not defined for i64"):
        F.apply(sp.csr_array(np.eye(3, dtype=np.int64)), np.sqrt)


def test_every_listed_ufunc_traces():
    for name in UFUNCS:
        ufunc = getattr(np, name)
        elem = "i64" if name in ("bitwise_and", "bitwise_or", "bitwise_xor", "invert", "left_shift",
                                 "right_shift") else "f64"
        fn = trace((lambda v, u=ufunc: u(v)) if ufunc.nin == 1 else (lambda v, u=ufunc: u(v, v)), 1, elem)
        assert fn.lines or name == "positive", name
