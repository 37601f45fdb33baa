"""Conversion between formats: every pair of named 2-D formats, 3-D CSF/COO, batched CSR, zeros rules,
padding, n:m refusal and buffer-level agreement with scipy.sparse."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from frontend import LevelFormat as F, LevelProperty as P, NamedFormats as N, Tensor, TensorFormat
from frontend.format import Dimension
from frontend.storage._validate import validate

I, J = Dimension("i"), Dimension("j")
DENSE_F = TensorFormat([I, J], [(J, F.DENSE), (I, F.DENSE)], name="DenseF")
FORMATS_2D = {
    "COO": N.COO, "CSR": N.CSR, "CSC": N.CSC, "DCSR": N.DCSR, "DCSC": N.DCSC,
    "BSR2x3": N.BSR((2, 3)), "BSR2x2": N.BSR((2, 2)), "BSC2x2": N.BSC((2, 2)),
    "DIAI": N.DIAI, "DIAJ": N.DIAJ, "SkewDIAI": N.SkewDIAI, "SkewDIAJ": N.SkewDIAJ,
    "DELTA2": N.DELTA(2), "DELTA8": N.DELTA(8), "NM2:4": N.NM(2, 4), "Dense": N.Dense(2), "DenseF": DENSE_F,
}
DTYPES = [np.float64, np.float32, np.complex128, np.int64]
INDEX = [np.int32, np.int64]


def _prune_2_4(a: np.ndarray) -> np.ndarray:
    """Keeps at most 2 nonzeros in every group of 4 columns (so NM(2, 4) can hold it)."""
    a = a.copy()
    for g in range(0, a.shape[1], 4):
        block = a[:, g:g + 4]
        rank = np.cumsum(block != 0, axis=1)
        block[rank > 2] = 0
    return a


def _matrices() -> list[np.ndarray]:
    """Small matrices with a fixed seed: random with empty rows/columns, long row gaps (delta padding),
    empty shapes, no nonzeros, 1x1, tall and wide."""
    rng = np.random.default_rng(7)
    out = []
    for shape, density in (((7, 9), 0.35), ((5, 3), 0.5), ((3, 11), 0.3), ((1, 1), 1.0), ((6, 6), 0.6)):
        a = rng.integers(1, 9, size=shape) * (rng.random(shape) < density)
        if shape[0] > 2:
            a[1] = 0  # an empty row
        out.append(a)
    gaps = np.zeros((2, 40), dtype=np.int64)
    gaps[0, [0, 9, 39]] = [1, 2, 3]  # gaps of 8 and 29 columns need delta(2) padding
    gaps[1, 37] = 4
    out += [gaps, np.zeros((0, 0)), np.zeros((3, 0)), np.zeros((0, 4)), np.zeros((4, 4))]
    return out


MATRICES = _matrices()


def _check_tensor(t: Tensor, dense: np.ndarray, index_type, dtype) -> None:
    fresh = Tensor(t.tensor_format, t.shape, t._pos, t._crd, t.val)
    validate(fresh)  # every conversion result passes an independent validation
    assert t.dtype == np.dtype(dtype)
    assert t.index_type == np.dtype(index_type)
    for k, lv in enumerate(t.tensor_format.levels):
        for b in (t.pos(k), None if lv.format is F.DELTA else t.crd(k)):
            assert b is None or b.dtype == np.dtype(index_type)
    got = t.to_dense()
    assert got.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(got, dense)


@pytest.mark.parametrize("src", list(FORMATS_2D))
@pytest.mark.parametrize("dst", list(FORMATS_2D))
def test_convert_pairs_2d(src: str, dst: str) -> None:
    for k, a in enumerate(MATRICES):
        dtype, it = DTYPES[k % len(DTYPES)], INDEX[k % 2]
        a = a.astype(dtype)
        if "NM" in (src + dst):
            a = _prune_2_4(a)
        if dtype == np.complex128:
            a = a * (1 + 2j)
        s = Tensor.from_dense(a, FORMATS_2D[src], index_type=it)
        _check_tensor(s, a, it, dtype)
        t = s.convert(FORMATS_2D[dst])
        _check_tensor(t, a, it, dtype)
        if k == 0:  # element lookup agrees with the dense original (zeros may be stored padding)
            for ij in np.ndindex(*a.shape):
                v = t.get_value(ij)
                assert v == a[ij] if a[ij] else v in (None, 0), (ij, v)


FORMATS_3D = {"COO3": N.COO(3), "CSF3": N.CSF(3), "Dense3": N.Dense(3),
              "Mixed": TensorFormat.parse("(i, j, k) -> (k : dense, i : compressed, j : compressed)")}


@pytest.mark.parametrize("src", list(FORMATS_3D))
@pytest.mark.parametrize("dst", list(FORMATS_3D) + ["BatchedCSR"])
def test_convert_pairs_3d(src: str, dst: str) -> None:
    rng = np.random.default_rng(3)
    for k, shape in enumerate(((3, 4, 5), (2, 1, 6), (0, 2, 2), (2, 3, 0))):
        a = (rng.random(shape) * (rng.random(shape) < 0.3)).astype(DTYPES[k % 3])
        if a.shape[0] > 1:
            a[1] = 0  # an empty batch / slice
        fmts = dict(FORMATS_3D, BatchedCSR=N.BatchedCSR)
        s = Tensor.from_dense(a, fmts[src], index_type=INDEX[k % 2])
        t = s.convert(fmts[dst])
        _check_tensor(t, a, INDEX[k % 2], a.dtype)
        back = t.convert(fmts[src])
        _check_tensor(back, a, INDEX[k % 2], a.dtype)


def test_batched_csr_layout() -> None:
    a = np.zeros((2, 3, 4))
    a[0, 0, 1], a[0, 2, 3], a[1, 1, 0] = 1, 2, 3
    t = Tensor.from_dense(a, N.BatchedCSR)
    assert t.pos(2).shape == (2, 4) and t.crd(2).shape == (2, 2) and t.val.shape == (2, 2)
    np.testing.assert_array_equal(t.pos(2), [[0, 1, 1, 2], [0, 0, 1, 1]])
    np.testing.assert_array_equal(t.crd(2), [[1, 3], [0, 0]])  # batch 1 has one unused trailing slot
    np.testing.assert_array_equal(t.val, [[1, 2], [3, 0]])
    assert t.get_value((1, 1, 0)) == 3 and t.get_value((1, 2, 0)) is None


# ----- zeros rules and padding ----------------------------------------------------------------------
def _csr_with_explicit_zero() -> Tensor:
    return Tensor.from_buffers(N.CSR, (2, 4), pos=[None, np.array([0, 2, 3])], crd=[None, np.array([0, 3, 2])],
                               values=np.array([1.0, 0.0, 5.0]))


@pytest.mark.parametrize("fmt", ["COO", "CSC", "DCSR", "DCSC"])
def test_explicit_zeros_kept_in_unpadded_formats(fmt: str) -> None:
    t = _csr_with_explicit_zero().convert(FORMATS_2D[fmt])
    assert t.nse == 3 and t.get_value((0, 3)) == 0.0 and t.get_value((0, 1)) is None
    assert t.convert(N.CSR).nse == 3
    assert t.convert(N.CSR, drop_zeros=True).nse == 2


@pytest.mark.parametrize("fmt", ["BSR2x2", "DIAI", "DELTA2", "NM2:4", "Dense"])
def test_padding_zeros_dropped_and_recreated(fmt: str) -> None:
    a = np.array([[1.0, 0, 0, 0, 0, 0, 0, 2], [0, 3, 0, 0, 0, 0, 0, 0]])
    t = Tensor.from_dense(a, FORMATS_2D[fmt])
    assert t.nse > 3  # padding stored
    csr = t.convert(N.CSR)
    assert csr.nse == 3
    again = csr.convert(FORMATS_2D[fmt])
    for x, y in zip(t.buffers(), again.buffers()):
        np.testing.assert_array_equal(x, y)


def test_dense_source_stores_only_nonzeros() -> None:
    a = np.array([[0.0, 1.0], [0.0, 0.0], [2.0, 0.0]])
    assert Tensor.from_dense(a, N.COO).nse == 2


def test_delta_padding_layout() -> None:
    a = np.zeros((3, 12))
    a[0, [0, 9]] = [5, 6]  # gap 8 with 2 bits: padding at columns 4 and 8
    a[2, 11] = 7           # first coordinate 11: padding at 3 and 7
    t = Tensor.from_dense(a, N.DELTA(2))
    assert t.crd(1).dtype == np.uint8
    np.testing.assert_array_equal(t.pos(1), [0, 4, 4, 7])
    # gaps 0, 3, 3, 0 | 3, 3, 3 packed four to a byte, low bits first; the last byte's free slot is 0
    np.testing.assert_array_equal(t.crd(1), [0 | 3 << 2 | 3 << 4 | 0 << 6, 3 | 3 << 2 | 3 << 4])
    np.testing.assert_array_equal(t.val, [5, 0, 0, 6, 0, 0, 7])
    assert t.get_value((0, 4)) == 0.0 and t.get_value((0, 5)) is None and t.get_value((2, 11)) == 7
    assert Tensor.from_dense(a, N.DELTA(8)).crd(1).tolist() == [0, 8, 11]
    assert Tensor.from_dense(a, N.DELTA(12)).crd(1).dtype == np.uint16
    assert Tensor.from_dense(a, N.DELTA(4)).crd(1).tolist() == [0 | 8 << 4, 11]  # gaps 0, 8, 11: two a byte
    assert Tensor.from_dense(a, N.DELTA(3)).crd(1).tolist() == [0, 7, 0, 7, 3]   # 3 bits: one gap a byte


def test_structured_layout_and_refusal() -> None:
    a = np.array([[0.0, 0, 3, 0, 1, 2, 0, 0], [0, 0, 0, 0, 0, 0, 0, 4]])
    t = Tensor.from_dense(a, N.NM(2, 4))
    np.testing.assert_array_equal(t.crd(2), [0, 2, 0, 1, 0, 1, 0, 3])
    np.testing.assert_array_equal(t.val, [0, 3, 1, 2, 0, 0, 0, 4])
    a[0, 1], a[0, 3] = 9, 8
    with pytest.raises(ValueError, match=r"group 0 of parent position 0 holds 3 entries, more than n=2"):
        Tensor.from_dense(a, N.NM(2, 4))


def test_duplicates_summed_for_unique_targets() -> None:
    fmt = TensorFormat([I, J], [(I, (F.COMPRESSED, P.NONUNIQUE)), (J, (F.SINGLETON, P.NONUNIQUE))])
    t = Tensor.from_buffers(fmt, (2, 3), pos=[np.array([0, 3]), None], crd=[np.array([0, 0, 1]), np.array([1, 1, 2])],
                            values=np.array([1.0, 2.0, 4.0]))
    assert t.get_value((0, 1)) == 3.0
    np.testing.assert_array_equal(t.to_dense(), [[0, 3, 0], [0, 0, 4]])
    csr = t.convert(N.CSR)
    np.testing.assert_array_equal(csr.val, [3.0, 4.0])
    assert t.convert(fmt).nse == 3  # a nonunique target keeps duplicates


def test_dtype_and_index_conversion() -> None:
    a = np.array([[1.5, 0], [0, -2.0]])
    t = Tensor.from_dense(a, N.CSR)
    for dt in (np.float32, np.complex128, np.int32):
        u = t.convert(dtype=dt, index_type=np.int32)
        assert u.dtype == dt and u.index_type == np.int32 and u.pos(1).dtype == np.int32
        np.testing.assert_array_equal(u.to_dense(), a.astype(dt))
    with pytest.raises(TypeError, match="imaginary part"):
        t.convert(dtype=np.complex128).convert(dtype=np.float64)
    with pytest.raises(TypeError, match="index_type must be int8, int16, int32 or int64, got uint16"):
        t.convert(index_type=np.uint16)
    assert t.convert(index_type=np.int16).pos(1).dtype == np.int16
    with pytest.raises(ValueError, match="2-D tensor to the 3-D format"):
        t.convert(N.CSF(3))


# ----- buffers against scipy ----------------------------------------------------------------------
SCIPY_CASES = [np.array(m, dtype=float) for m in MATRICES if m.size] + [np.eye(5)[::-1] * 3]


@pytest.mark.parametrize("k", range(len(SCIPY_CASES)))
def test_buffers_match_scipy(k: int) -> None:
    a = SCIPY_CASES[k]
    m = sp.csr_matrix(a)
    t = Tensor.from_dense(a, N.COO)
    csr = t.convert(N.CSR)
    np.testing.assert_array_equal(csr.pos(1), m.indptr)
    np.testing.assert_array_equal(csr.crd(1), m.indices)
    np.testing.assert_array_equal(csr.val, m.data)
    c = m.tocsc()
    csc = csr.convert(N.CSC)
    np.testing.assert_array_equal(csc.pos(1), c.indptr)
    np.testing.assert_array_equal(csc.crd(1), c.indices)
    np.testing.assert_array_equal(csc.val, c.data)
    coo = m.tocoo()
    back = csc.convert(N.COO)
    np.testing.assert_array_equal(back.crd(0), coo.row)
    np.testing.assert_array_equal(back.crd(1), coo.col)
    np.testing.assert_array_equal(back.val, coo.data)
    for bs in ((1, 1), (2, 2), (a.shape[0], 1)):
        if a.shape[0] % bs[0] or a.shape[1] % bs[1]:
            continue
        b = m.tobsr(blocksize=bs)
        b.sort_indices()
        bsr = csr.convert(N.BSR(bs))
        np.testing.assert_array_equal(bsr.pos(1), b.indptr)
        np.testing.assert_array_equal(bsr.crd(1), b.indices)
        np.testing.assert_array_equal(bsr.val, b.data.ravel())
    d = m.todia()
    dia = csr.convert(N.DIAJ)
    order = np.argsort(d.offsets)
    np.testing.assert_array_equal(dia.crd(0), d.offsets[order])
    vals = dia.val.reshape(len(order), a.shape[1])
    width = d.data.shape[1]
    np.testing.assert_array_equal(vals[:, :width], d.data[order])
    assert not vals[:, width:].any()


# ----- formats beyond the named ones: the same generic code ------------------------------------------
EXOTIC = [
    "(i, j) -> (i : dense, j : structured[2, 4])", "(i, j) -> (i : compressed, j : dense)",
    "(i, j) -> (j - i : dense, i : range)", "(i, j) -> (i + j : dense, j : range)",
    "(i, j) -> (i : compressed(nonunique), j : singleton)", "(i, j) -> (j : dense, i : delta(1))",
    "(i, j) -> (i : dense, j : loose_compressed)", "(i, j) -> (i : dense, j : compressed(unordered))",
    "(i, j) -> (i // 3 : compressed, j // 2 : compressed, i % 3 : dense, j % 2 : dense)",
    "(i, j) -> (j // 4 : dense, i : compressed, j % 4 : structured[1, 4])",
    "(i, j) -> (j % 2 : dense, i : compressed, j // 2 : compressed)",
    "(b, i, j) -> (b : batch, j - i : compressed, i : range)", "(b, i, j) -> (b : batch, i : dense, j : delta(2))",
    "(b, i, j) -> (b : batch, i : compressed, j : compressed)",
    "(i, j, k) -> (i : compressed(nonunique), j : singleton, k : dense)",
    "(b, i, j) -> (b : batch, i : dense, j // 4 : dense, j % 4 : structured[2, 4])",
    "(b, c, i, j) -> (b : batch, c : batch, i : dense, j : compressed)",
]


@pytest.mark.parametrize("text", EXOTIC)
def test_generic_formats_round_trip(text: str) -> None:
    fmt = TensorFormat.parse(text)
    rng = np.random.default_rng(1)
    shapes = {2: [(7, 9), (1, 1), (0, 3), (5, 0), (4, 12)], 3: [(2, 5, 8), (3, 1, 4), (0, 2, 2)],
              4: [(2, 2, 3, 4)]}[fmt.num_dimensions]
    for shape in shapes:
        a = rng.integers(1, 5, size=shape) * (rng.random(shape) < 0.3)
        if "structured" in text:
            n = 1 if "structured[1" in text else 2
            for g in range(0, shape[-1], 4):
                block = a[..., g:g + 4]
                block[np.cumsum(block != 0, axis=-1) > n] = 0
        t = Tensor.from_dense(a, fmt)
        _check_tensor(t, a, np.int64, a.dtype)
        _check_tensor(t.convert(N.COO(a.ndim)), a, np.int64, a.dtype)
        for ij in list(np.ndindex(*shape))[:40]:
            v = t.get_value(ij)
            assert v == a[ij] if a[ij] else v in (None, 0)


# ----- direct paths against the generic path ------------------------------------------------------
DIRECT_SOURCES = ["CSR", "CSC", "COO", "BSR2x3", "BSR2x2", "DIAI", "DIAJ", "SkewDIAI", "SkewDIAJ"]
DIRECT_TARGETS = DIRECT_SOURCES + ["DCSR", "DCSC", "DELTA2", "DELTA8", "NM2:4"]


def _with_explicit_zeros(a: np.ndarray, fmt: TensorFormat, it) -> Tensor:
    """``a`` in a CSR/CSC/COO ``fmt`` with one stored zero next to its first nonzero (when there is room)."""
    t = Tensor.from_dense(a, N.COO, index_type=it)
    rows, cols, vals = [np.asarray(x) for x in (t.crd(0), t.crd(1), t.val)]
    if len(vals) and a.shape[1] > 1:
        i, j = int(rows[0]), int(cols[0])
        jz = j + 1 if j + 1 < a.shape[1] and a[i, j + 1] == 0 else j - 1 if j > 0 and a[i, j - 1] == 0 else None
        if jz is not None:
            rows, cols = np.append(rows, i), np.append(cols, jz)
            vals = np.append(vals, vals.dtype.type(0))
            order = np.lexsort((cols, rows))
            rows, cols, vals = rows[order], cols[order], vals[order]
    coo = Tensor.from_buffers(N.COO, a.shape, pos=[np.array([0, len(vals)], dtype=it), None],
                              crd=[rows.astype(it), cols.astype(it)], values=vals)
    return coo if fmt == N.COO else coo.convert(fmt)


def _assert_matches_generic(t: Tensor, fmt: TensorFormat, drop_zeros: bool = False, **kw) -> Tensor:
    """Converts through the public call (direct path) and checks every buffer against the generic path's."""
    from frontend.storage._convert import generic_buffers
    from frontend.storage._direct import convert_direct
    got = t.convert(fmt, drop_zeros=drop_zeros, **kw)
    assert convert_direct(t, fmt, got.index_type, got.dtype, drop_zeros) is not None, "no direct path"
    pos, crd, out = generic_buffers(t, fmt, got.dtype, drop_zeros)
    for k in range(fmt.num_levels):
        for mine, ref in ((got.pos(k), pos[k]), (got.crd(k), crd[k])):
            if ref is None:
                assert mine is None, k
                continue
            want = ref if ref.dtype.kind == "u" else ref.astype(got.index_type)
            assert mine.dtype == want.dtype, (k, mine.dtype, want.dtype)
            np.testing.assert_array_equal(mine, want)
    assert got.val.dtype == out.dtype and got.val.shape == out.shape
    np.testing.assert_array_equal(got.val, out)
    _assert_shares_only_unchanged(got, t)
    return got


def _assert_shares_only_unchanged(got: Tensor, t: Tensor) -> None:
    """A result's buffer shares memory with the source only as a view of a source index or value buffer
    holding the same numbers (SciPy's ``tocoo``/``tocsr`` share those too), and not every buffer does."""
    sources = [s for s in t.buffers() if s is not None]
    shared = 0
    for b in got.buffers():
        for s in sources:
            if np.may_share_memory(b, s):
                shared += 1
                assert b.dtype == s.dtype and b.base is not None or b is s
                np.testing.assert_array_equal(b, s.reshape(-1)[:b.size].reshape(b.shape))
    assert shared < sum(b is not None and b.size > 0 for b in got.buffers()) or shared == 0


@pytest.mark.parametrize("src", DIRECT_SOURCES)
@pytest.mark.parametrize("dst", DIRECT_TARGETS)
def test_direct_paths_match_generic(src: str, dst: str) -> None:
    for k, a in enumerate(MATRICES + [np.arange(1, 13).reshape(3, 4) * np.eye(3, 4)]):
        dtype, it = DTYPES[k % len(DTYPES)], INDEX[(k // 2) % 2]
        a = a.astype(dtype) * ((1 + 2j) if dtype == np.complex128 else 1)
        if dst == "NM2:4":
            a = _prune_2_4(a)
        s = (_with_explicit_zeros(a, FORMATS_2D[src], it) if src in ("CSR", "CSC", "COO")
             else Tensor.from_dense(a, FORMATS_2D[src], index_type=it))
        for dz in (False, True):
            if dst == "NM2:4" and not dz and np.count_nonzero(a) < s.nse:
                continue  # a stored zero may overfill an n:m group (refused by both paths)
            got = _assert_matches_generic(s, FORMATS_2D[dst], drop_zeros=dz)
            np.testing.assert_array_equal(got.to_dense(), a)


@pytest.mark.parametrize("dst", ["CSC", "COO", "BSR2x2", "DIAJ", "DELTA8"])
def test_direct_paths_change_types(dst: str) -> None:
    a = np.array([[0, 2.5, 0, 1], [0, 0, 0, 0], [3, 0, 0, -1]])
    s = Tensor.from_dense(a, N.CSR, index_type=np.int64)
    for it, dt in ((np.int32, np.float32), (np.int64, np.complex64), (np.int32, np.int64)):
        got = _assert_matches_generic(s, FORMATS_2D[dst], index_type=it, dtype=dt)
        assert got.index_type == it and got.dtype == dt
        np.testing.assert_array_equal(got.to_dense(), a.astype(dt))


def test_generic_path_when_no_direct_one(monkeypatch: pytest.MonkeyPatch) -> None:
    from frontend.storage import _convert
    a = MATRICES[0].astype(float)
    s = Tensor.from_dense(a, N.CSR)
    direct = {name: s.convert(FORMATS_2D[name]) for name in ("CSC", "COO", "BSR2x3", "DIAJ", "DELTA2")}
    monkeypatch.setattr(_convert, "convert_direct", lambda *args: None)
    for name, want in direct.items():
        got = s.convert(FORMATS_2D[name])
        for x, y in zip(got.buffers(), want.buffers()):
            assert x.dtype == y.dtype
            np.testing.assert_array_equal(x, y)
    coo = TensorFormat([I, J], [(I, (F.COMPRESSED, P.NONUNIQUE)), (J, (F.SINGLETON, P.NONUNIQUE))])
    dup = Tensor.from_buffers(coo, (2, 3), pos=[np.array([0, 3]), None],
                              crd=[np.array([0, 0, 1]), np.array([1, 1, 2])], values=np.array([1.0, 2.0, 4.0]))
    from frontend.storage._direct import convert_direct
    assert convert_direct(dup, N.CSR, np.dtype(np.int64), np.dtype(float), False) is None  # duplicates: generic
    assert convert_direct(s, N.BSC((2, 2)), np.dtype(np.int64), np.dtype(float), False) is None
    for dt in (np.float16, np.bool_, np.uint8, np.int16, np.complex64):  # every value dtype is direct
        assert convert_direct(s, N.CSR, np.dtype(np.int64), np.dtype(dt), False) is not None
        for name in ("CSC", "COO", "BSR2x3", "DIAJ"):
            _assert_matches_generic(s, FORMATS_2D[name], dtype=dt)
            _assert_matches_generic(s.convert(FORMATS_2D[name], dtype=dt), N.CSR)
