"""NumPy's array methods and functions on Tensors: ``std``, ``var``, ``any``, ``all``, ``nonzero``, ``round``,
``clip``, ``reshape``, ``flatten``/``ravel``, ``diagonal`` and ``count_nonzero``, as methods and through
``np.<name>`` (``__array_function__``), against NumPy on the dense array, for several formats, dtypes and
shapes (0x0, 1x1, non-square, empty rows)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from frontend import NamedFormats as N, Tensor

FORMATS = {"CSR": N.CSR, "CSC": N.CSC, "COO": N.COO, "DCSR": N.DCSR, "DIAI": N.DIAI, "dense": N.Dense(2)}
SHAPES = [(0, 0), (1, 1), (5, 4), (4, 7), (6, 6)]
DTYPES = [np.float64, np.float32, np.int64]


def _matrix(shape: tuple[int, int], dtype, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    d = np.where(rng.random(shape) < 0.4, rng.integers(-9, 10, shape) * 0.37, 0.0)
    if shape[0] > 2:
        d[1] = 0.0  # an empty row
    return d.astype(dtype)


def _dense(x) -> np.ndarray:
    return np.asarray(x.todense()) if isinstance(x, Tensor) else np.asarray(x)


@pytest.fixture(params=list(FORMATS))
def fmt(request):
    return FORMATS[request.param]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", SHAPES)
def test_methods_match_numpy(fmt, shape, dtype):
    d = _matrix(shape, dtype)
    t = Tensor.from_dense(d, fmt)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's own warning for a 0x0 mean
        for axis in (None, 0, 1):
            for ddof in (0, 1):
                if d.size and (axis is None or d.shape[axis] > ddof):
                    np.testing.assert_allclose(_dense(t.std(axis=axis, ddof=ddof)), d.std(axis=axis, ddof=ddof),
                                               rtol=1e-5, atol=1e-6)
                    np.testing.assert_allclose(_dense(np.var(t, axis, ddof=ddof)), np.var(d, axis, ddof=ddof),
                                               rtol=1e-5, atol=1e-6)
            assert np.array_equal(_dense(t.any(axis=axis)), d.any(axis=axis))
            assert np.array_equal(_dense(np.all(t, axis=axis, keepdims=True)), np.all(d, axis=axis, keepdims=True))
            assert np.array_equal(np.count_nonzero(t, axis=axis), np.count_nonzero(d, axis=axis))
    for got, want in zip(t.nonzero(), d.nonzero()):
        assert np.array_equal(got, want)
    assert len(np.nonzero(t)) == 2
    assert np.allclose(_dense(np.round(t, 1)), np.round(d, 1)) and np.allclose(_dense(t.round()), np.round(d))
    low = -1 if dtype is np.int64 else -1.5
    assert np.allclose(_dense(t.clip(low, 2)), np.clip(d, low, 2)) and np.allclose(_dense(np.clip(t, None, 2)),
                                                                                    np.clip(d, None, 2))
    assert np.array_equal(_dense(t.flatten()), d.flatten()) and np.array_equal(_dense(np.ravel(t)), d.ravel())
    if d.size:
        assert np.array_equal(_dense(t.reshape(-1, shape[0])), d.reshape(-1, shape[0]))
        assert np.array_equal(_dense(np.reshape(t, (shape[1], shape[0]))), d.reshape(shape[1], shape[0]))
    for offset in (0, 1, -1):
        assert np.array_equal(_dense(t.diagonal(offset)), d.diagonal(offset))
        assert np.array_equal(_dense(np.diagonal(t, offset)), np.diagonal(d, offset))


def test_refusals_name_the_fix():
    t = Tensor.from_dense(_matrix((5, 4), np.float64), N.CSR)
    with pytest.raises(ValueError, match="absent entry"):
        t.clip(0.5, 1.0)  # zero becomes 0.5 everywhere
    with pytest.raises(TypeError, match="out= is not supported"):
        t.std(out=np.empty(()))
    with pytest.raises(TypeError, match="order='C'"):
        np.reshape(t, (4, 5), order="F")
    with pytest.raises(ValueError):
        t.reshape(3, 3)
