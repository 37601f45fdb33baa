"""The fill limit of conversions to padded formats: the value slots a target would store are counted exactly
before anything is allocated (the direct and the generic path alike), conversions over
``max(max_fill * entries, entries + 2**20)`` slots are refused with a message naming the sizes, ``max_fill``
moves or lifts the limit, and a DELTA level's positions never wrap around."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from frontend import NamedFormats as N, Tensor
from frontend.storage import _convert, _fill
from frontend.storage._layout import value_count
from ops_util import poisson2d

PADDED = {
    "DELTA2": N.DELTA(2), "DELTA8": N.DELTA(8), "DIAI": N.DIAI, "DIAJ": N.DIAJ, "SkewDIAI": N.SkewDIAI,
    "BSR2x3": N.BSR((2, 3)), "BSR8x8": N.BSR((8, 8)), "BSC2x2": N.BSC((2, 2)), "ELL": N.ELL, "NM2:4": N.NM(2, 4),
}
PATHS = ["direct", "generic"]


def _small() -> list[np.ndarray]:
    """Small matrices: random with an empty row, long gaps, one entry far right, 1x1, empty, non-square."""
    rng = np.random.default_rng(11)
    out = []
    for shape, density in (((9, 13), 0.3), ((16, 7), 0.5), ((1, 1), 1.0)):
        a = np.round(rng.standard_normal(shape), 3) * (rng.random(shape) < density)
        a[0] = 0
        out.append(a)
    far = np.zeros((3, 700))
    far[0, 650], far[2, [5, 400, 699]] = 1.5, [2.0, -3.0, 4.0]
    out += [far, np.zeros((4, 5)), np.zeros((0, 3))]
    return out


def _nm_ready(a: np.ndarray) -> np.ndarray:
    """At most 2 nonzeros in every group of 4 columns (so NM(2, 4) can hold it)."""
    a = a.copy()
    for g in range(0, a.shape[1], 4):
        block = a[:, g:g + 4]
        block[np.cumsum(block != 0, axis=1) > 2] = 0
    return a


def _convert_by(path: str, monkeypatch: pytest.MonkeyPatch, t: Tensor, fmt, **kw) -> Tensor:
    if path == "generic":
        monkeypatch.setattr(_convert, "convert_direct", lambda *args: None)
    return t.convert(fmt, **kw)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("name", list(PADDED))
def test_slot_count_is_exact(name: str, path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """With no additive slack, a limit of exactly the slots the result stores passes and one slot less is
    refused: the count equals the storage in every padded format and on both paths."""
    fmt = PADDED[name]
    monkeypatch.setattr(_fill, "FILL_SLACK", 0)
    for dense in _small():
        a = _nm_ready(dense) if name.startswith("NM") else dense
        t = Tensor.from_dense(a, N.CSR)
        nnz = int(np.count_nonzero(a))
        got = _convert_by(path, monkeypatch, t, fmt, max_fill=None)
        np.testing.assert_array_equal(got.to_dense(), a)
        slots = value_count(np.asarray(got.val), 0)
        if nnz == 0:
            continue
        np.testing.assert_array_equal(t.convert(fmt, max_fill=(slots + 0.5) / nnz).to_dense(), a)
        if slots > nnz:
            with pytest.raises(ValueError, match=f"would store {slots} value slots"):
                t.convert(fmt, max_fill=(slots - 0.5) / nnz)


def _far_rows(rows: int, cols: int, at: int) -> sp.csr_array:
    """One entry per row, at column ``at``: a DELTA row's first gap is ``at``."""
    return sp.csr_array((np.arange(1.0, rows + 1), np.full(rows, at), np.arange(rows + 1)), shape=(rows, cols))


def _scattered(n: int, nnz: int, seed: int = 3) -> sp.csr_array:
    rng = np.random.default_rng(seed)
    a = sp.coo_array((rng.standard_normal(nnz), (rng.integers(0, n, nnz), rng.integers(0, n, nnz))), shape=(n, n))
    return a.tocsr()


@pytest.mark.parametrize("path", PATHS)
def test_delta_far_from_column_zero_is_refused(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    t = Tensor.from_package(_far_rows(4000, 250_000, 200_000))
    slots = 4000 * (1 + 200_000 // 256)
    with pytest.raises(ValueError) as err:
        _convert_by(path, monkeypatch, t, N.DELTA(8))
    msg = str(err.value)
    for part in ("DELTA8", f"would store {slots} value slots", "4000 stored entries", f"({slots / 4000:.1f}x)",
                 f"limit of {4000 + (1 << 20)} slots", "max_fill"):
        assert part in msg, (part, msg)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("fmt, name", [(N.DIAI, "DIAI"), (N.DIAJ, "DIAJ"), (N.BSR((8, 8)), "BSR8x8"),
                                       (N.NM(2, 4), "NM2:4")])
def test_scattered_fill_is_refused(fmt, name: str, path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    a = _scattered(20000, 20000) if name != "BSR8x8" else _scattered(40000, 40000)
    t = Tensor.from_package(a)
    with pytest.raises(ValueError, match=f"converting to {name}.* value slots .*for {a.nnz} stored entries"):
        _convert_by(path, monkeypatch, t, fmt)


def test_ell_of_one_long_row_is_refused() -> None:
    a = sp.lil_array((20000, 20000))
    a[np.arange(20000), np.arange(20000)] = 1.0
    a[7, :] = 2.0
    t = Tensor.from_package(a.tocsr())
    with pytest.raises(ValueError, match=f"would store {20000 * 20000} value slots"):
        t.convert(N.ELL)


@pytest.mark.parametrize("path", PATHS)
@pytest.mark.parametrize("fmt", [N.DELTA(8), N.DIAI, N.BSR((8, 8)), N.ELL])
def test_max_fill_moves_the_limit(fmt, path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """On a small scattered matrix with the slack lowered: refused by default, converted (equal to SciPy's
    dense array) with ``max_fill=None`` or a large enough ``max_fill``."""
    monkeypatch.setattr(_fill, "FILL_SLACK", 16)
    rng = np.random.default_rng(5)
    a = sp.lil_array((300, 20000))
    a[np.arange(300), rng.integers(0, 20000, 300)] = rng.standard_normal(300)
    a[7, :100] = 2.0  # one long row: ELL pads every row to it
    a = a.tocsr()
    t = Tensor.from_package(a)
    with pytest.raises(ValueError, match="over the limit"):
        _convert_by(path, monkeypatch, t, fmt)
    for max_fill in (None, 1e6):
        got = t.convert(fmt, max_fill=max_fill)
        np.testing.assert_array_equal(got.to_dense(), a.toarray())


def test_bad_max_fill() -> None:
    t = Tensor.from_dense(np.eye(3), N.CSR)
    for bad in (0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="max_fill must be positive"):
            t.convert(N.DIAI, max_fill=bad)
    with pytest.raises(TypeError, match="max_fill must be a number"):
        t.convert(N.CSR, max_fill="16")


def test_delta_positions_never_wrap() -> None:
    """Rows whose padding totals over 2**31 entries: int32 positions used to wrap around (NumPy's 'negative
    dimensions' error); now a fill refusal, or with no limit a clear index-type refusal before allocating."""
    t = Tensor.from_package(_far_rows(300, 2_000_000_000, 1_999_999_999)).convert(index_type=np.int32)
    with pytest.raises(ValueError, match="over the limit"):
        t.convert(N.DELTA(8))
    for path in PATHS:
        with pytest.MonkeyPatch.context() as mp:
            with pytest.raises(ValueError, match="index_type"):
                _convert_by(path, mp, t, N.DELTA(8), max_fill=None)


def test_random_rows_to_delta8_are_refused_not_overflowed() -> None:
    """Uniform random 1M x 1M, 10 per row: DELTA(8) would store ~3.6e9 entries (~3500 padding entries per row),
    which wrapped int32 positions around (NumPy's 'negative dimensions'); now refused by the fill limit, and
    with no limit by the index type, before anything that large is allocated."""
    rng = np.random.default_rng(0)
    rows, cols, per = 1_000_000, 1_000_000, 10
    idx = np.sort(rng.integers(0, cols, (rows, per)), axis=1)
    a = sp.csr_array((np.ones(rows * per), idx.ravel(), np.arange(0, rows * per + 1, per)), shape=(rows, cols))
    a.sum_duplicates()
    for it in (np.int32, np.int64):
        t = Tensor.from_package(a).convert(index_type=it)
        with pytest.raises(ValueError, match=f"converting to DELTA8 .* for {a.nnz} stored entries"):
            t.convert(N.DELTA(8))
    with pytest.raises(ValueError, match="more than int32 positions address; use index_type=np.int64"):
        t.convert(N.DELTA(8), index_type=np.int32, max_fill=None)


def test_within_the_limit_equals_scipy() -> None:
    """Banded, blocked and near-diagonal matrices convert under the default limit and equal SciPy."""
    n = 20000
    band = sp.diags_array([np.arange(1.0, n - k + 1) for k in (2, 1, 0, 1, 2)], offsets=[-2, -1, 0, 1, 2],
                          shape=(n, n)).tocsr()
    t = Tensor.from_package(band)
    for fmt in (N.DIAI, N.DIAJ, N.ELL, N.DELTA(8), N.BSR((4, 4))):
        got = t.convert(fmt)
        dims, vals = _convert.coordinates(got)
        ref = band.tocoo()
        order = np.lexsort((ref.col, ref.row))
        key = np.lexsort((dims[1], dims[0]))
        np.testing.assert_array_equal(dims[:, key], np.stack([ref.row[order], ref.col[order]]))
        np.testing.assert_array_equal(vals[key], ref.data[order])
    blocks = sp.kron(sp.random_array((500, 500), density=0.01, random_state=1, format="csr"),
                     np.ones((8, 8))).tocsr()
    got = Tensor.from_package(blocks).convert(N.BSR((8, 8)))
    assert value_count(np.asarray(got.val), 0) == blocks.nnz
    np.testing.assert_array_equal(got.to_dense(), blocks.toarray())


@pytest.mark.parametrize("bits", [8, 16])
def test_delta_of_a_2d_stencil_is_refused_at_once(bits: int) -> None:
    """Poisson 2-D (1000^2): each row's first entry lies ~row columns from column 0, so DELTA would store
    1.96e9 (8 bits) or 2e7 (16 bits) slots for 5e6 entries; the count is refused before anything is allocated,
    naming the padding and the wider format."""
    t = Tensor.from_package(poisson2d(1000))
    with pytest.raises(ValueError) as err:
        t.convert(N.DELTA(bits))
    msg = str(err.value)
    assert f"for {t.nse} stored entries" in msg and "padding entries" in msg and "first gap" in msg
    assert ("a wider DELTA(bits)" in msg) == (bits < 32)


def test_delta_default_limit_is_no_more_padding_than_entries() -> None:
    """A DELTA target under the default max_fill stores at most as much padding as entries (beyond the small
    matrices' slack); an explicit max_fill moves that limit like for every padded format."""
    rows = 600_000
    a = _far_rows(rows, 700, 600)  # first gap 600: two padding entries per row, 3 slots per entry
    t = Tensor.from_package(a)
    with pytest.raises(ValueError, match=f"{2 * rows} of them padding entries"):
        t.convert(N.DELTA(8))
    got = t.convert(N.DELTA(8), max_fill=4.0)
    assert value_count(np.asarray(got.val), 0) == 3 * rows
    back = got.convert(N.CSR)
    np.testing.assert_array_equal(np.asarray(back.crd(1)), a.indices)
    np.testing.assert_array_equal(np.asarray(back.val), a.data)
    assert t.convert(N.DELTA(16)).nse == rows  # 16-bit gaps: no padding
    small = Tensor.from_package(_far_rows(1000, 700, 600))  # padding within the slack: converts
    np.testing.assert_array_equal(small.convert(N.DELTA(8)).to_dense(), small.to_dense())
