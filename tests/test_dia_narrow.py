"""scipy DIA whose ``data`` is narrower than the column count, viewed as DIAJ with a ``range(w)`` level."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sps

import frontend
from frontend import Tensor
from frontend.format import as_format


def _dense(r: object) -> np.ndarray:
    return r.to_dense() if isinstance(r, Tensor) else np.asarray(r)


# (shape, offsets, data width): narrower, equal and wider than n; negative/positive offsets; empty; 1x1
CASES = [
    ((4, 7), [-2, 0, 3], 5), ((3, 6), [0, 1], 5), ((6, 3), [-1, 0], 2), ((5, 5), [-1, 0, 1], 3),
    ((5, 5), [-1, 0, 1], 5), ((1, 1), [0], 1), ((4, 4), [], 2), ((4, 6), [0, 2], 0), ((6, 3), [-1, 0], 4),
    ((3, 8), [-2, 1, 7], 7), ((7, 2), [-6, -3, 1], 1),
]


@pytest.mark.parametrize("shape,offsets,width", CASES)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_narrow_dia_is_a_view_and_computes(shape: tuple[int, int], offsets: list[int], width: int,
                                            dtype: type) -> None:
    m, n = shape
    rng = np.random.default_rng(m * 31 + n + width)
    data = rng.standard_normal((len(offsets), width)).astype(dtype)
    a = sps.dia_array((data, np.array(offsets, dtype=np.int32)), shape=shape)
    t = Tensor.from_package(a)
    if width <= n:  # a view: same buffers, and to_package() gives the same object back
        assert t.to_package() is a
        assert t.val.size == 0 or np.shares_memory(t.val, a.data)
        assert t.crd(0) is a.offsets
        if width < n:
            assert t.tensor_format.levels[1].stored == width
            assert str(t.tensor_format) == f"(i, j) -> (j - i : compressed, j : range({width}))"
    else:  # wider data: copied once into the padded layout (columns past n are ignored, as scipy does)
        assert not np.shares_memory(t.val, a.data)
    ref = a.toarray()
    tol = 1e-12 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(t.to_dense(), ref)
    x = rng.standard_normal(n).astype(dtype)
    xs = rng.standard_normal((n, 3)).astype(dtype)
    np.testing.assert_allclose(_dense(frontend.matmul(t, x)), a @ x, atol=tol, rtol=tol)
    np.testing.assert_allclose(_dense(frontend.matmul(t, xs)), a @ xs, atol=tol, rtol=tol)
    np.testing.assert_allclose(_dense(frontend.matmul(a, xs)), a @ xs, atol=tol, rtol=tol)
    for f in ("CSR", "CSC", "COO", "DIAJ", "DIAI", "DCSR"):
        np.testing.assert_allclose(t.convert(tensor_format=f).to_dense(), ref)
    back = t.convert(tensor_format="CSR").convert(tensor_format=t.tensor_format)
    np.testing.assert_allclose(back.to_dense(), ref)


def test_range_stored_length_in_the_dsl_and_buffers() -> None:
    """``range(w)`` parses, prints and keys formats; DIAI-like layouts built from buffers compute too."""
    f = as_format("(i, j) -> (j - i : compressed, i : range(3))")
    assert f.levels[1].stored == 3 and f != frontend.NamedFormats.DIAI
    assert as_format(str(f)) == f
    assert f.level_extents((5, 4)) == [8, 3]
    # diagonals -1, 0, 2 of a 5x4 matrix, rows i < 3 stored (rows 3, 4 hold nothing)
    offsets = np.array([-1, 0, 2], dtype=np.int64)
    vals = np.arange(1.0, 10.0)
    t = Tensor.from_buffers(f, (5, 4), pos=[np.array([0, 3]), None], crd=[offsets, None], values=vals)
    ref = np.zeros((5, 4))
    for d, off in enumerate(offsets):
        for i in range(3):
            if 0 <= i + off < 4:
                ref[i, i + off] = vals[d * 3 + i]
    np.testing.assert_allclose(t.to_dense(), ref)
    x = np.linspace(-1, 1, 4)
    np.testing.assert_allclose(_dense(frontend.matmul(t, x)), ref @ x, atol=1e-12)
    for name in ("CSR", "DIAJ", "COO"):
        np.testing.assert_allclose(t.convert(tensor_format=name).to_dense(), ref)


def test_range_stored_length_errors() -> None:
    with pytest.raises(ValueError, match="stores 9 slots but dimension j has extent 4"):
        as_format("(i, j) -> (j - i : compressed, j : range(9))").level_extents((4, 4))
    fmt = as_format("(i, j) -> (j - i : compressed, j : range(3))")
    with pytest.raises(ValueError, match="stores 3 slots"):  # an entry at column 3 has no slot
        Tensor.from_dense(np.ones((4, 6)), tensor_format=fmt)
    with pytest.raises(ValueError):  # values for 2 x 3 slots expected
        Tensor.from_buffers(fmt, (4, 6), pos=[np.array([0, 2]), None], crd=[np.array([0, 1]), None],
                            values=np.ones(5))
    with pytest.raises(ValueError, match="range stored length"):
        from frontend.format import LevelFormat, TensorFormat, dimensions
        i, j = dimensions(2)
        TensorFormat([i, j], [(j - i, LevelFormat.COMPRESSED), (j, (LevelFormat.RANGE, -1))])
