"""Property tests: ``add``/``subtract``/``multiply`` (broadcasting pairs, sparse or dense on either side) and
``sum``/``prod``/``max``/``min``/``mean`` (axes, ``keepdims``, dtypes) against NumPy on the dense arrays, over
random shapes of ranks 1-4 with size-1 and 0 extents, on every format family the rank allows. Shapes and
dtypes come from small pools so that the kernels (one per structure) stay few."""
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import frontend as F
from frontend import NamedFormats as NF, Tensor
from ops_util import dense

FAMILIES = {
    1: {"SparseVector": NF.SparseVector},
    2: {"CSR": NF.CSR, "CSC": NF.CSC, "COO": NF.COO, "DCSR": NF.DCSR, "BSR": NF.BSR((2, 2)), "DIA": NF.DIAI,
        "DELTA": NF.DELTA(8), "ELL": NF.ELL, "NM": NF.NM(2, 4)},
    3: {"COO3": NF.COO(3), "CSF3": NF.CSF(3)},
    4: {"COO4": NF.COO(4)},
}
SHAPES = [(0,), (1,), (5,), (0, 3), (1, 1), (3, 4), (4, 1), (1, 4), (2, 3, 4), (2, 1, 3), (1, 3, 1), (2, 1, 3, 2)]
DTYPES = [np.float64, np.float32, np.int32, np.int64, np.int8, np.uint8, np.int16, np.bool_]
SETTINGS = settings(max_examples=40, deadline=None, derandomize=True, database=None,
                    suppress_health_check=list(HealthCheck))


def _values(shape, dtype, seed, nm: bool) -> np.ndarray:
    rng = np.random.default_rng(seed)
    d = rng.integers(-3, 4, size=shape) * (rng.random(shape) < 0.5)
    if nm and len(shape) == 2:
        d[:, np.arange(shape[1]) % 4 >= 2] = 0  # at most 2 of every 4 in a row: an N:M pattern
    if np.dtype(dtype).kind in "ub":
        d = np.abs(d)
    return d.astype(dtype)


@st.composite
def operand(draw, shape, dtype):
    """A NumPy array of ``shape`` and, drawn, its sparse Tensor in a format of its rank (or the array itself)."""
    fmt_name = draw(st.sampled_from(["dense"] + list(FAMILIES[len(shape)])))
    d = _values(shape, dtype, draw(st.integers(0, 3)), fmt_name == "NM")
    return d, (d if fmt_name == "dense" else Tensor.from_dense(d, FAMILIES[len(shape)][fmt_name]))


@st.composite
def broadcast_pair(draw):
    """Two shapes that broadcast: one from the pool, the other with leading dimensions dropped and some
    extents set to 1, in either order."""
    a = draw(st.sampled_from(SHAPES))
    drop = draw(st.integers(0, len(a) - 1))
    b = tuple(1 if draw(st.booleans()) and draw(st.booleans()) else e for e in a[drop:])
    return (a, b) if draw(st.booleans()) else (b, a)


@SETTINGS
@given(data=st.data())
def test_binary_operations_match_numpy(data):
    sa, sb = data.draw(broadcast_pair())
    dtype = data.draw(st.sampled_from(DTYPES))
    name = data.draw(st.sampled_from(["add", "subtract", "multiply"]))
    if dtype == np.bool_ and name == "subtract":
        dtype = np.int8
    x, left = data.draw(operand(sa, dtype))
    y, right = data.draw(operand(sb, dtype))
    ref = getattr(np, name)(x, y)
    got = np.asarray(dense(getattr(F, name)(left, right)))
    assert got.dtype == ref.dtype and got.shape == ref.shape
    np.testing.assert_array_equal(got, ref)


@SETTINGS
@given(data=st.data())
def test_reductions_match_numpy(data):
    shape = data.draw(st.sampled_from(SHAPES))
    dtype = data.draw(st.sampled_from(DTYPES))
    name = data.draw(st.sampled_from(["sum", "prod", "max", "min", "mean"]))
    d, x = data.draw(operand(shape, dtype))
    axis = data.draw(st.one_of(st.none(), st.integers(-len(shape), len(shape) - 1),
                               st.lists(st.integers(0, len(shape) - 1), min_size=1, unique=True).map(tuple)))
    keepdims = data.draw(st.booleans())
    try:
        with np.errstate(invalid="ignore", divide="ignore"):
            ref = np.asarray(getattr(np, name)(d, axis=axis, keepdims=keepdims))
    except ValueError:
        with pytest.raises(ValueError, match="zero-size array"):
            getattr(F, name)(x, axis, keepdims=keepdims)
        return
    got = np.asarray(dense(getattr(F, name)(x, axis, keepdims=keepdims)))
    assert got.dtype == ref.dtype and got.shape == ref.shape, (got.dtype, ref.dtype, got.shape, ref.shape)
    np.testing.assert_allclose(got, ref, rtol=1e-5)
