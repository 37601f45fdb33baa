"""The compiled conversion kernels (frontend.storage._kernels over lowering.kernels.convert): split into
several row ranges (as on many cores) they give the generic path's buffers and SciPy's; COO order checks;
which buffers a conversion shares with its source."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from frontend import NamedFormats as N, Tensor
from frontend.storage import _kernels
from tests.test_convert import FORMATS_2D, MATRICES, _assert_matches_generic, _with_explicit_zeros

PAIRS = ["CSR", "CSC", "COO", "BSR2x3", "BSR2x2", "DIAI", "DIAJ", "SkewDIAI", "DCSR", "DELTA8"]


@pytest.fixture
def many_ranges(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every kernel call split into 3 ranges (the thread pool runs them), whatever the size."""
    from frontend.ops import _threads
    monkeypatch.setattr(_kernels, "PARALLEL_WORK", 1)
    monkeypatch.setattr(_kernels, "EXPAND_SHARE", 1)
    monkeypatch.setattr(_kernels, "DIA_SHARE", 1)
    monkeypatch.setattr(_threads, "cpu_count", lambda: 3)


def _random(shape: tuple[int, int], density: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    a = rng.integers(1, 9, size=shape) * (rng.random(shape) < density)
    if shape[0] > 4:
        a[shape[0] // 2: shape[0] // 2 + 3] = 0  # empty rows
    return a


CASES = MATRICES + [_random((37, 23), 0.2, 1), _random((23, 61), 0.1, 2), _random((64, 64), 0.05, 3)]


@pytest.mark.parametrize("src", ["CSR", "CSC", "COO", "BSR2x3", "BSR2x2", "DIAI", "DIAJ", "SkewDIAI"])
def test_ranges_match_generic_and_scipy(src: str, many_ranges: None) -> None:
    for k, a in enumerate(CASES):
        dtype = [np.float64, np.float32, np.complex128, np.int32, np.int8][k % 5]
        it = [np.int32, np.int64][k % 2]
        a = a.astype(dtype)
        s = (_with_explicit_zeros(a, FORMATS_2D[src], it) if src in ("CSR", "CSC", "COO")
             else Tensor.from_dense(a, FORMATS_2D[src], index_type=it))
        for dst in PAIRS:
            for dz in (False, True):
                got = _assert_matches_generic(s, FORMATS_2D[dst], drop_zeros=dz)
                np.testing.assert_array_equal(got.to_dense(), a)
        csr = s.convert(N.CSR, drop_zeros=True).to_package("scipy")
        ref = sp.csr_array(a)
        np.testing.assert_array_equal(csr.indptr, ref.indptr)
        np.testing.assert_array_equal(csr.indices, ref.indices)
        np.testing.assert_array_equal(csr.data, ref.data)


def test_blocks_match_scipy(many_ranges: None) -> None:
    for a in CASES:
        for r, c in ((2, 3), (4, 4), (1, 5)):
            if a.shape[0] % r or a.shape[1] % c:
                continue  # scipy's BSR needs whole blocks
            got = Tensor.from_dense(a.astype(float), N.CSR).convert(N.BSR((r, c)))
            ref = sp.bsr_array(sp.csr_array(a.astype(float)), blocksize=(r, c))
            ref.sort_indices()
            np.testing.assert_array_equal(got.pos(1), ref.indptr)
            np.testing.assert_array_equal(got.crd(1), ref.indices)
            np.testing.assert_array_equal(np.asarray(got.val).reshape(-1), ref.data.reshape(-1))


@pytest.mark.parametrize("it", [np.int32, np.int64])
def test_coo_pointers(it: type, many_ranges: None) -> None:
    rows, cols = np.array([0, 0, 2, 2, 5], dtype=it), np.array([1, 3, 0, 4, 2], dtype=it)
    ptr = _kernels.coo_pointers(6, rows, cols)
    assert ptr is not None and ptr.dtype == it
    np.testing.assert_array_equal(ptr, np.concatenate(([0], np.cumsum(np.bincount(rows, minlength=6)))))
    np.testing.assert_array_equal(_kernels.coo_pointers(3, rows[:0], cols[:0]), [0, 0, 0, 0])
    assert _kernels.coo_pointers(5, rows, cols) is None  # row 5 outside 5 rows
    assert _kernels.coo_pointers(6, rows[[0, 2, 1, 3, 4]], cols[[0, 2, 1, 3, 4]]) is None  # rows out of order
    assert _kernels.coo_pointers(6, rows, np.array([1, 1, 0, 4, 2], dtype=it)) is None  # duplicate
    assert _kernels.coo_pointers(6, rows, np.array([3, 1, 0, 4, 2], dtype=it)) is None  # columns out of order
    assert _kernels.coo_pointers(6, np.array([-1, 0], dtype=it), np.array([0, 0], dtype=it)) is None
    assert _kernels.coo_pointers(6, rows, cols, 5) is not None
    assert _kernels.coo_pointers(6, rows, cols, 4) is None  # column 4 outside 4 columns
    assert _kernels.coo_pointers(6, rows, np.array([1, 3, -2, 4, 2], dtype=it), 5) is None  # negative column


INVALID_ROWS = {  # (ptr, idx) of 3 rows over 4 columns, valid but for one thing
    "column too large": ([0, 2, 3, 5], [0, 9, 1, 2, 3]),
    "negative column": ([0, 2, 3, 5], [0, 1, -1, 2, 3]),
    "duplicate column": ([0, 2, 3, 5], [1, 1, 1, 2, 3]),
    "unsorted row": ([0, 2, 3, 5], [3, 1, 1, 2, 3]),
    "positions decrease": ([0, 4, 2, 5], [0, 1, 2, 3, 3]),
    "negative position": ([0, -7, 3, 5], [0, 1, 1, 2, 3]),
    "position past the end": ([0, 2, 3, 50], [0, 1, 1, 2, 3]),
}


@pytest.mark.parametrize("what", sorted(INVALID_ROWS))
@pytest.mark.parametrize("it", [np.int32, np.int64])
@pytest.mark.parametrize("bucketed", [False, True])
def test_transpose_flags_invalid_rows(what: str, it: type, bucketed: bool, many_ranges: None) -> None:
    """Both transposes read in bounds whatever ``ptr``/``idx`` hold and raise InvalidRows (a ValueError)."""
    ptr, idx = (np.array(b, dtype=it) for b in INVALID_ROWS[what])
    val = np.arange(1.0, 6.0)
    run = (lambda: _kernels.transpose_bucketed(3, 4, ptr, idx, val, shift=1)) if bucketed else \
        (lambda: _kernels.transpose(3, 4, ptr, idx, val))
    with pytest.raises(_kernels.InvalidRows):
        run()


@pytest.mark.parametrize("it", [np.int32, np.int64])
def test_to_blocks_clamps_rows_and_columns(it: type, many_ranges: None) -> None:
    """CSR -> blocks over invalid rows stays in bounds: a row's positions are clamped to the coordinates (never
    decreasing), a column to the last one (negative ones too); the blocks stay sorted and unique."""
    ptr = np.array([0, 2, 1, 9], dtype=it)  # row 1 ends before it starts: empty; row 2 ends past the end
    idx = np.array([0, 77, 2, -3, 1], dtype=it)
    val = np.arange(1.0, 6.0)
    bptr, bidx, bval = _kernels.to_blocks(3, 4, 2, 2, ptr, idx, val)
    np.testing.assert_array_equal(bptr, [0, 2, 4])
    np.testing.assert_array_equal(bidx, [0, 1, 0, 1])
    assert len(bval) == 4 * 4 and np.isfinite(bval).all()
    # row 0: columns 0 and 3 (77 clamped); row 2: positions 1 (its start as stored) to the end: columns 3 (77),
    # 2, 3 (-3), 1, the later entry in a slot kept
    expect = np.zeros((4, 4))
    expect[0, 0], expect[0, 3] = 1.0, 2.0
    expect[2, 2], expect[2, 3], expect[2, 1] = 3.0, 4.0, 5.0
    dense = np.zeros((4, 4))
    for br in range(2):
        for k in range(bptr[br], bptr[br + 1]):
            dense[2 * br:2 * br + 2, 2 * bidx[k]:2 * bidx[k] + 2] = bval[4 * k:4 * k + 4].reshape(2, 2)
    np.testing.assert_array_equal(dense, expect)


def test_layouts() -> None:
    for dt in (np.float16, np.float32, np.float64, np.complex64, np.complex128, np.bool_, np.int8, np.uint16,
               np.int32, np.uint64):
        lay = _kernels.layout(np.dtype(dt), np.dtype(np.int32))
        assert lay is not None and lay.bits * lay.lanes == np.dtype(dt).itemsize * 8
    assert _kernels.layout(np.dtype(np.float64), np.dtype(np.int16)) is None
    assert _kernels.layout(np.dtype(object), np.dtype(np.int64)) is None


def test_shared_buffers() -> None:
    a = _random((9, 7), 0.4, 4).astype(float)
    csr = Tensor.from_dense(a, N.CSR)
    coo = csr.convert(N.COO)  # a row expansion: columns and values are the CSR's (as scipy's tocoo)
    assert np.shares_memory(coo.crd(1), csr.crd(1)) and np.shares_memory(coo.val, csr.val)
    back = coo.convert(N.CSR)
    assert np.shares_memory(back.crd(1), coo.crd(1)) and not np.shares_memory(back.pos(1), csr.pos(1))
    same = csr.convert(N.CSR)  # nothing new built: every buffer copied
    assert not any(np.shares_memory(x, y) for x in same.buffers() for y in csr.buffers())
    for changed in (csr.convert(N.COO, dtype=np.float32), csr.convert(N.COO, index_type=np.int32)):
        assert changed.crd(1).dtype != csr.crd(1).dtype or not np.shares_memory(changed.val, csr.val)
    target = Tensor.from_dense(np.eye(9, 7), N.COO)
    target.copy_(csr)  # a copy never shares
    assert not any(np.shares_memory(x, y) for x in target.buffers() for y in csr.buffers())
    np.testing.assert_array_equal(target.to_dense(), a)


@pytest.mark.parametrize("fmt", ["DIAI", "DIAJ", "SkewDIAI", "SkewDIAJ"])
def test_diagonals_with_few_zeros(fmt: str, many_ranges: None) -> None:
    """Ranges after a dropped zero move back (a prefix view when few were dropped)."""
    for shape in ((40, 40), (31, 45), (45, 31)):
        i, j = np.indices(shape)
        a = np.where(np.isin(j - i, (-2, 0, 3)), 1.0 + i + 2 * j, 0.0)
        a[5, 5] = a[20, 23] = 0.0  # zeros stored inside diagonals: dropped
        got = Tensor.from_dense(a, FORMATS_2D[fmt]).convert(N.CSR).to_package("scipy")
        ref = sp.csr_array(a)
        np.testing.assert_array_equal(got.indptr, ref.indptr)
        np.testing.assert_array_equal(got.indices, ref.indices)
        np.testing.assert_array_equal(got.data, ref.data)


def test_generic_path_without_a_toolchain(monkeypatch: pytest.MonkeyPatch) -> None:
    """A kernel that cannot be compiled sends the conversion down the generic path (same result)."""
    from mlir_bridge.errors import CompileError

    def broken(*args: object) -> None:
        raise CompileError("no toolchain", stage="llc")
    a = _random((9, 12), 0.3, 5).astype(np.float32)
    want = {name: Tensor.from_dense(a, N.CSR).convert(FORMATS_2D[name]) for name in ("CSC", "BSR2x2", "DIAJ")}
    monkeypatch.setattr(_kernels, "compile_kernels", broken)
    _kernels._functions.cache_clear()
    _kernels._block_functions.cache_clear()
    try:
        for name, ref in want.items():
            got = Tensor.from_dense(a, N.CSR).convert(FORMATS_2D[name])
            for x, y in zip(got.buffers(), ref.buffers()):
                np.testing.assert_array_equal(x, y)
    finally:
        _kernels._functions.cache_clear()
        _kernels._block_functions.cache_clear()


@pytest.fixture
def bucketed(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every transpose through the bucketed kernels, with buckets of a few entries."""
    monkeypatch.setattr(_kernels, "SCATTER_COLUMNS", 0)
    monkeypatch.setattr(_kernels, "SCATTER_SPAN", -1)
    monkeypatch.setattr(_kernels, "BUCKET_ENTRIES", 2)


@pytest.mark.parametrize("src", ["CSR", "CSC", "COO"])
def test_bucketed_transpose_matches_generic(src: str, many_ranges: None, bucketed: None) -> None:
    for k, a in enumerate(CASES + [np.zeros((0, 5)), np.zeros((4, 0)), np.ones((1, 1)), np.zeros((1, 1))]):
        dtype = [np.float64, np.complex64, np.int16, np.float32, np.uint8][k % 5]
        it = [np.int64, np.int32][k % 2]
        s = _with_explicit_zeros(a.astype(dtype), FORMATS_2D[src], it)
        for dst in ("CSR", "CSC"):
            got = _assert_matches_generic(s, FORMATS_2D[dst])
            np.testing.assert_array_equal(got.to_dense(), a.astype(dtype))


@pytest.mark.parametrize("shift", [0, 1, 3, 16])
@pytest.mark.parametrize("threads", [1, 3])
def test_bucketed_transpose_matches_scipy(shift: int, threads: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Any bucket width, one or several ranges: scipy's tocsc buffer for buffer (stable, rows increasing)."""
    from frontend.ops import _threads
    monkeypatch.setattr(_kernels, "PARALLEL_WORK", 1 if threads > 1 else 1 << 40)
    monkeypatch.setattr(_threads, "cpu_count", lambda: threads)
    rng = np.random.default_rng(shift)
    for shape, density in (((50, 70), 0.1), ((70, 50), 0.3), ((1, 1), 1.0), ((3, 200), 0.5), ((0, 4), 0.0),
                           ((6, 0), 0.0)):
        a = sp.random_array(shape, density=density, rng=rng, format="csr")
        if shape[0] > 4:
            a = sp.csr_array(a.multiply((np.arange(shape[0]) % 4 != 1)[:, None]))  # empty rows
        for dtype, it in ((np.float64, np.int32), (np.float32, np.int64), (np.complex128, np.int32),
                          (np.int8, np.int64)):
            m = sp.csr_array(a.astype(dtype))
            ptr, idx = m.indptr.astype(it), m.indices.astype(it)
            got = _kernels.transpose_bucketed(shape[0], shape[1], ptr, idx, m.data, shift)
            ref = m.tocsc()
            np.testing.assert_array_equal(got[0], ref.indptr)
            np.testing.assert_array_equal(got[1], ref.indices)
            np.testing.assert_array_equal(got[2], ref.data)
            assert got[0].dtype == it and got[2].dtype == dtype


def test_transpose_choice() -> None:
    """The bucketed kernels for scattered columns (rows spanning many of many columns), direct otherwise."""
    n = 1 << 17
    rng = np.random.default_rng(0)
    far = sp.random_array((n, n), density=4 / n, rng=rng, format="csr")
    band = sp.csr_array(sp.diags([np.ones(n - 3), np.ones(n), np.ones(n - 5)], [-3, 0, 5]))
    assert _kernels.scattered(far.indptr, far.indices, n)
    assert not _kernels.scattered(band.indptr, band.indices, n)
    assert not _kernels.scattered(far.indptr[:101], far.indices[:far.indptr[100]], n)  # little work


@pytest.mark.parametrize("src", ["BSR2x3", "BSR2x2"])
def test_one_pass_blocks_match_generic(src: str, many_ranges: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """BSR -> CSR in one pass (every block taken as full: zeros dropped, ranges moved together)."""
    monkeypatch.setattr(_kernels, "FULL_BLOCKS", 0.0)
    blocky = np.kron(_random((9, 6), 0.5, 6), np.ones((2, 3)))[:17, :16]  # full blocks, cut at the edges
    for k, a in enumerate(CASES + [blocky, np.zeros((0, 4)), np.ones((1, 1)), np.zeros((3, 3))]):
        dtype = [np.float64, np.float32, np.complex128, np.int32, np.int8][k % 5]
        s = Tensor.from_dense(a.astype(dtype), FORMATS_2D[src], index_type=[np.int32, np.int64][k % 2])
        for dst in ("CSR", "CSC", "COO"):
            for dz in (False, True):
                got = _assert_matches_generic(s, FORMATS_2D[dst], drop_zeros=dz)
                np.testing.assert_array_equal(got.to_dense(), a.astype(dtype))


def test_full_blocks_choice() -> None:
    full = np.arange(1.0, 33.0)
    assert _kernels.full_blocks(full, 32)
    assert not _kernels.full_blocks(full * (np.arange(32) % 4 == 0), 32)
    assert not _kernels.full_blocks(full[:0], 0)


def test_delta8_with_and_without_padding(many_ranges: None) -> None:
    """DELTA(8) in one pass (every gap below 256) or two (a gap of 256 or more: padding entries), in
    ranges where only some rows need padding; DELTA(2) always two passes."""
    a = np.zeros((9, 1100))
    a[0, [0, 255, 511, 1099]] = [1, 2, 3, 4]  # gaps 0, 254, 255, 587
    a[1, [256, 257]] = 5  # first gap 256
    a[4, ::97] = 6
    a[7, [3, 9, 10]] = -1
    for rows in (a, a[2:, :300], a[4:5], a[5:6], a[:, :1]):
        for dtype in (np.float64, np.complex64, np.int16):
            s = Tensor.from_dense(rows.astype(dtype), N.CSR)
            for fmt in (N.DELTA(8), N.DELTA(2)):
                got = _assert_matches_generic(s, fmt)
                np.testing.assert_array_equal(got.to_dense(), rows.astype(dtype))


@pytest.mark.parametrize("const", [True, False])
def test_nm_groups(const: bool, many_ranges: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """n:m groups with 0, 1, 2 entries, at the row's end, and a last group cut by the shape; over 2 entries
    in a group: refused. The kernel with n and m compiled in and the general one give the same buffers."""
    if not const:
        monkeypatch.setattr(_kernels, "CONST_NM", frozenset())
    b = np.zeros((5, 16))
    b[0, [0, 3, 4, 8, 9, 15]] = [1, 2, 3, 4, 5, 7]
    b[2, [7]] = 2
    for fmt in (N.NM(1, 4), N.NM(4, 8), N.NM(3, 8)):
        if fmt == N.NM(1, 4):
            got = _assert_matches_generic(Tensor.from_dense(np.eye(5, 16) * 3, N.CSR), fmt)
            np.testing.assert_array_equal(got.to_dense(), np.eye(5, 16) * 3)
            continue
        got = _assert_matches_generic(Tensor.from_dense(b, N.CSR), fmt)
        np.testing.assert_array_equal(got.to_dense(), b)
    a = np.zeros((7, 10))
    a[0, [0, 1, 4, 9]] = [1, 2, 3, 4]
    a[1, [2, 3, 5, 8]] = 5
    a[3, [1, 6, 7]] = -2
    a[6, [9]] = 7
    for dtype in (np.float64, np.float32, np.int8, np.complex128):
        s = Tensor.from_dense(a.astype(dtype), N.CSR)
        got = _assert_matches_generic(s, N.NM(2, 4))
        np.testing.assert_array_equal(got.to_dense(), a.astype(dtype))
    a[5, [4, 5, 6]] = 1
    with pytest.raises(ValueError):
        Tensor.from_dense(a, N.CSR).convert(N.NM(2, 4))


def test_scratch_is_kept_and_never_shared(monkeypatch: pytest.MonkeyPatch) -> None:
    """Scratch buffers come back for later calls (smallest that fits), two holders never share one, and no
    more than SCRATCH_KEEP bytes are kept."""
    monkeypatch.setattr(_kernels, "_scratch_free", [])
    monkeypatch.setattr(_kernels, "SCRATCH_KEEP", 1000)
    a, b = _kernels._take_scratch(300), _kernels._take_scratch(100)
    assert not np.shares_memory(a, b)
    _kernels._give_scratch(a)
    _kernels._give_scratch(b)
    c = _kernels._take_scratch(50)
    assert c is b and _kernels._take_scratch(50) is a
    _kernels._give_scratch(np.empty(2000, dtype=np.uint8))  # over the limit: dropped
    for _ in range(5):
        _kernels._give_scratch(np.empty(400, dtype=np.uint8))
    assert sum(x.nbytes for x in _kernels._scratch_free) <= 1000
    view = _kernels._scratch_view(c, (2, 3), np.int64)
    assert view.shape == (2, 3) and view.dtype == np.int64 and np.shares_memory(view, c)


def _dia_reference(n: int, m: int, offsets: list[int], val: np.ndarray, ext_z: int, minus: bool,
                   z_is_row: bool) -> tuple[list[int], list[int], list[complex]]:
    """Rows of diagonals slot by slot (the definition ``dia_rows`` implements)."""
    ptr, idx, out = [0], [], []
    for i in range(n):
        for t, d in enumerate(offsets):
            other = d + i if minus else d - i
            z = i if z_is_row else other
            if 0 <= other < m and z < ext_z and val[t * ext_z + z] != 0:
                idx.append(other)
                out.append(val[t * ext_z + z])
        ptr.append(len(idx))
    return ptr, idx, out


@pytest.mark.parametrize("unroll", [16, 0])  # the kernel for exactly nd diagonals, and the checked loop
def test_dia_rows_kernels_match_the_definition(unroll: int, many_ranges: None,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """Both diagonal kernels, every orientation (x - y / x + y, the range level on the row or the other
    dimension), square and non-square shapes, data narrower than the shape, zeros inside and at the edges,
    offsets outside the shape, one diagonal and many."""
    monkeypatch.setattr(_kernels, "DIA_UNROLL_MAX", unroll)
    monkeypatch.setattr(_kernels, "DIA_UNROLL_MIN_SLOTS", 0)
    rng = np.random.default_rng(21)
    layouts = ((np.float64, np.int32), (np.complex128, np.int64), (np.int8, np.int32))
    for n, m in ((1, 1), (9, 9), (13, 7), (7, 13), (40, 40), (0, 5)):
        for case, offsets in enumerate(([], [0], [-2, 0, 3], [-n - 1, -1, 0, 1, 2, m + 3], list(range(-8, 9, 2)))):
            for minus in (True, False):
                offs = offsets if minus else [d + (n - 1) // 2 for d in offsets]
                for z_is_row in (True, False):
                    for ext_z in {max(n, m), max(1, (n if z_is_row else m) - 2)}:
                        # every layout with 3 diagonals, one each otherwise (a module per layout and count)
                        for dtype, index in layouts if case == 2 else layouts[case % 3:case % 3 + 1]:
                            val = (rng.integers(-3, 4, len(offs) * ext_z) * (rng.random(len(offs) * ext_z) < .8))
                            val = val.astype(dtype)
                            val[:1] = 0
                            ptr, idx, out = _kernels.dia_rows(n, m, np.array(offs), val, ext_z, minus, z_is_row,
                                                              np.dtype(index))
                            want = _dia_reference(n, m, offs, val, ext_z, minus, z_is_row)
                            assert ptr.dtype == idx.dtype == index and out.dtype == dtype
                            np.testing.assert_array_equal(ptr, want[0])
                            np.testing.assert_array_equal(idx, want[1])
                            np.testing.assert_array_equal(out, np.array(want[2], dtype))


@pytest.mark.parametrize("minus", [True, False])
@pytest.mark.parametrize("z_is_row", [True, False])
def test_inside_rows_are_inside(minus: bool, z_is_row: bool) -> None:
    """``_inside_rows`` gives exactly the rows whose every diagonal slot is inside the shape and the data."""
    for n, m, ext_z, offsets in ((20, 20, 20, [-3, 0, 4]), (10, 30, 30, [0, 5, 12]), (30, 10, 8, [-7, -1, 2]),
                                 (5, 5, 5, [-9, 0]), (12, 12, 9, [2, 6])):
        ia, ib = _kernels._inside_rows(n, m, np.array(offsets), ext_z, minus, z_is_row)
        for i in range(n):
            other = [d + i if minus else d - i for d in offsets]
            ok = all(0 <= o < m and (i if z_is_row else o) < ext_z for o in other)
            assert ok == (ia <= i < ib), (n, m, ext_z, offsets, i)
