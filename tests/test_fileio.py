"""Matrix Market and FROSTT files: reading (checked against scipy.io), writing, round trips, bad files."""
from __future__ import annotations

import tracemalloc

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

from frontend import NamedFormats
from frontend.tensor import Tensor


def _sparse(shape, dtype=np.float64, seed=0, density=0.3):
    a = sp.random(*shape, density=density, format="coo", random_state=seed, dtype=np.float64)
    a = a.toarray()
    if shape[0] > 1:
        a[1] = 0  # an empty row
    if np.dtype(dtype).kind == "c":
        a = a + 1j * (a > 0.5)
    if np.dtype(dtype).kind == "i":
        a = np.round(a * 10)
    return a.astype(dtype)


@pytest.mark.parametrize("shape", [(5, 7), (1, 1), (0, 0), (3, 0), (8, 4)])
@pytest.mark.parametrize("dtype", [np.float32, np.float64, np.complex128, np.int64])
def test_mtx_coordinate_matches_scipy(tmp_path, shape, dtype):
    a = _sparse(shape, dtype)
    path = tmp_path / "a.mtx"
    scipy.io.mmwrite(str(path), sp.coo_array(a))
    t = Tensor.from_file(path)
    assert t.tensor_format == NamedFormats.COO and t.shape == shape
    same = (lambda x, y: np.allclose(x, y, rtol=1e-6)) if dtype == np.float32 else np.array_equal
    assert same(t.to_dense(), a)
    t.to_file(tmp_path / "b.mtx")
    back = Tensor.from_file(tmp_path / "b.mtx")
    assert np.array_equal(back.to_dense(), t.to_dense()) and back.dtype == t.dtype
    assert same(scipy.io.mmread(str(tmp_path / "b.mtx")).toarray(), a)


@pytest.mark.parametrize("symmetry", ["symmetric", "skew-symmetric", "hermitian"])
@pytest.mark.parametrize("layout", ["coordinate", "array"])
def test_mtx_symmetries_expand_and_round_trip(tmp_path, symmetry, layout):
    rng = np.random.default_rng(1)
    lower = np.tril(rng.standard_normal((5, 5)) * (rng.random((5, 5)) < 0.5), -1)
    diag = np.diag(rng.standard_normal(5))
    if symmetry == "symmetric":
        a = lower + lower.T + diag
    elif symmetry == "skew-symmetric":
        a = lower - lower.T
    else:
        lower = lower + 1j * lower
        a = lower + lower.conj().T + diag
    path = tmp_path / "s.mtx"
    scipy.io.mmwrite(str(path), a if layout == "array" else sp.coo_array(a), symmetry=symmetry)
    assert symmetry in path.read_text().splitlines()[0]
    t = Tensor.from_file(path)
    assert np.allclose(t.to_dense(), a)
    out = tmp_path / "o.mtx"
    t.to_file(out, symmetry=symmetry, layout=layout)
    assert np.allclose(Tensor.from_file(out).to_dense(), a)
    assert np.allclose(scipy.io.mmread(str(out)), a) if layout == "array" else \
        np.allclose(scipy.io.mmread(str(out)).toarray(), a)


def test_mtx_pattern_integer_and_array(tmp_path):
    p = tmp_path / "p.mtx"
    p.write_text("%%MatrixMarket matrix coordinate pattern general\n% comment\n3 4 2\n1 2\n3 4\n")
    t = Tensor.from_file(p)
    want = np.zeros((3, 4))
    want[0, 1] = want[2, 3] = 1
    assert np.array_equal(t.to_dense(), want)
    t.to_file(tmp_path / "q.mtx", field="pattern")
    assert (tmp_path / "q.mtx").read_text().splitlines()[-1] == "3 4"
    i = tmp_path / "i.mtx"
    i.write_text("%%MatrixMarket matrix coordinate integer general\n2 2 2\n1 1 7\n2 1 -3\n")
    ti = Tensor.from_file(i)
    assert ti.dtype == np.int64 and ti.to_dense().tolist() == [[7, 0], [-3, 0]]
    arr = tmp_path / "d.mtx"
    arr.write_text("%%MatrixMarket matrix array real general\n2 3\n1\n2\n0\n4\n5\n6\n")
    td = Tensor.from_file(arr)
    assert td.nse == 6 and td.to_dense().tolist() == [[1, 0, 5], [2, 4, 6]]  # column-major, zeros kept
    td.to_file(tmp_path / "d2.mtx", layout="array")
    assert (tmp_path / "d2.mtx").read_text().split("\n", 2)[2].split() == ["2", "3", "1", "2", "0", "4", "5", "6"]


def test_mtx_int32_index_type_and_gzip(tmp_path):
    a = _sparse((6, 9))
    path = tmp_path / "a.mtx.gz"
    Tensor.from_package(sp.csr_array(a)).to_file(path)
    t = Tensor.from_file(path, index_type=np.int32)
    assert t.index_type == np.int32 and t.crd(0).dtype == np.int32
    assert np.array_equal(t.to_dense(), a)


@pytest.mark.parametrize("fmt", [NamedFormats.CSR, NamedFormats.CSC, NamedFormats.BSR((2, 2)), NamedFormats.DIAJ])
def test_write_any_format(tmp_path, fmt):
    a = _sparse((6, 8), seed=4)
    t = Tensor.from_package(a).convert(fmt)
    t.to_file(tmp_path / "x.mtx")
    assert np.array_equal(scipy.io.mmread(str(tmp_path / "x.mtx")).toarray(), a)
    assert int((tmp_path / "x.mtx").read_text().splitlines()[2].split()[2]) == np.count_nonzero(a)


@pytest.mark.parametrize("shape", [(4,), (3, 4, 5), (2, 3, 2, 2)])
def test_tns_round_trip(tmp_path, shape):
    rng = np.random.default_rng(2)
    x = rng.standard_normal(shape) * (rng.random(shape) < 0.4)
    x[(-1,) * len(shape)] = 1.0  # the last index is stored, so the extents are recovered
    t = Tensor.from_package(x).convert(NamedFormats.COO(len(shape)))
    path = tmp_path / "x.tns"
    t.to_file(path)
    lines = path.read_text().splitlines()
    assert len(lines) == np.count_nonzero(x) and all(len(l.split()) == len(shape) + 1 for l in lines)
    back = Tensor.from_file(path)
    assert back.tensor_format == NamedFormats.COO(len(shape)) and back.shape == shape
    assert np.array_equal(back.to_dense(), x)


def test_tns_extents_comments_and_shape(tmp_path):
    path = tmp_path / "y.tns"
    path.write_text("# a comment\n2 1 3 0.5\n1 1 1 2\n\n1 2 1 -1\n")
    t = Tensor.from_file(path)
    assert t.shape == (2, 2, 3)
    want = np.zeros((2, 2, 3))
    want[1, 0, 2], want[0, 0, 0], want[0, 1, 0] = 0.5, 2, -1
    assert np.array_equal(t.to_dense(), want)
    assert Tensor.from_file(path, shape=(5, 2, 3)).shape == (5, 2, 3)
    with pytest.raises(ValueError, match=r"y.tns:2: mode-1 index 2 is not 1..1"):
        Tensor.from_file(path, shape=(1, 2, 3))


@pytest.mark.parametrize("text, line, message", [
    ("%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1.0\n3 1 2.0\n", 4, "row index 3 is not 1..2"),
    ("%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1.0\n1 x 2.0\n", 4, "not a number"),
    ("%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1.0\n1 2\n", 4, "expected 3 numbers"),
    ("%%MatrixMarket matrix coordinate real general\n2 2 3\n1 1 1.0\n1 2 2\n", 4, "expected 3 entries, found 2"),
    ("%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 1.0\n1 1 2\n", 4, "duplicate entry"),
    ("%%MatrixMarket matrix coordinate real general\n2 2 1\n1.5 1 1.0\n", 3, "row index 1.5"),
    ("%%MatrixMarket matrix coordinate real general\n2 2\n", 2, "size line needs 3"),
    ("%%MatrixMarket matrix coordinate real general\n% only comments\n", 2, "missing size line"),
    ("%%MatrixMarket matrix coordinate real banana\n1 1 0\n", 1, "symmetry must be"),
    ("%%MatrixMarket matrix coordinate double-complex general\n1 1 0\n", 1, "field must be"),
    ("%%MatrixMarket vector coordinate real general\n1 1 0\n", 1, "object 'vector'"),
    ("%MatrixMarket matrix coordinate real general\n1 1 0\n", 1, "not a Matrix Market banner"),
    ("%%MatrixMarket matrix coordinate real symmetric\n2 3 0\n", 2, "must be square"),
    ("%%MatrixMarket matrix coordinate real skew-symmetric\n2 2 1\n1 1 4\n", 3, "nonzero diagonal"),
    ("%%MatrixMarket matrix coordinate integer general\n2 2 1\n1 1 4.5\n", 3, "integer field holds 4.5"),
    ("%%MatrixMarket matrix array real general\n2 2\n1\n2\n3\n", 5, "expected 4 entries, found 3"),
])
def test_malformed_mtx_names_the_line(tmp_path, text, line, message):
    path = tmp_path / "bad.mtx"
    path.write_text(text)
    with pytest.raises(ValueError, match=rf"bad.mtx:{line}: .*{message}"):
        Tensor.from_file(path)


def test_malformed_tns_and_unknown_files(tmp_path):
    bad = tmp_path / "bad.tns"
    bad.write_text("1 1 1.0\n2 0 1.0\n")
    with pytest.raises(ValueError, match="bad.tns:2: mode-2 index 0"):
        Tensor.from_file(bad)
    bad.write_text("1 1 1.0\n2 1\n")
    with pytest.raises(ValueError, match="bad.tns:2: expected 3 numbers"):
        Tensor.from_file(bad)
    bad.write_text("")
    with pytest.raises(ValueError, match="no entries"):
        Tensor.from_file(bad)
    with pytest.raises(ValueError, match="unknown tensor file type"):
        Tensor.from_file(tmp_path / "x.csv")
    dup = tmp_path / "dup.tns"
    dup.write_text("1 1 1.0\n1 1 2.5\n")
    assert Tensor.from_file(dup, sum_duplicates=True).to_dense().tolist() == [[3.5]]


def test_write_refusals(tmp_path):
    t3 = Tensor.from_package(np.ones((2, 2, 2)))
    with pytest.raises(ValueError, match="3 dimensions"):
        t3.to_file(tmp_path / "a.mtx")
    t = Tensor.from_package(np.array([[1.0, 2.0], [3.0, 4.0]]))
    with pytest.raises(ValueError, match="not symmetric"):
        t.to_file(tmp_path / "a.mtx", symmetry="symmetric")
    with pytest.raises(ValueError, match="complex"):
        Tensor.from_package(np.ones((2, 2), dtype=complex)).to_file(tmp_path / "c.tns")


@pytest.mark.parametrize("name", ["airfoil", "knot"])
def test_real_matrices_from_pyamg(tmp_path, name):
    pyamg = pytest.importorskip("pyamg")
    a = sp.csr_array(pyamg.gallery.load_example(name)["A"])
    a.sum_duplicates()
    t = Tensor.from_package(a)
    path = tmp_path / f"{name}.mtx"
    t.to_file(path)
    ref = scipy.io.mmread(str(path))
    assert abs(sp.csr_array(ref) - a).max() == 0
    back = Tensor.from_file(path)
    assert back.shape == a.shape and back.nse == a.nnz
    assert np.array_equal(back.to_dense(), a.toarray())
    if abs(a - a.T).max() == 0:  # symmetric: the half-size file expands back to the same matrix
        t.to_file(tmp_path / "s.mtx", symmetry="symmetric")
        assert np.array_equal(Tensor.from_file(tmp_path / "s.mtx").to_dense(), a.toarray())


# ----- sizes come from what a file holds, not from its header ------------------------------------------------
def _peak_while_refused(path, match: str) -> int:
    """Peak traced allocation while reading ``path`` fails with a ValueError matching ``match``."""
    tracemalloc.start()
    try:
        with pytest.raises(ValueError, match=match):
            Tensor.from_file(path)
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("layout, symmetry, sizes, declared", [
    ("array", "general", "100000 100000", 10**10),
    ("array", "symmetric", "100000 100000", 100000 * 100001 // 2),
    ("array", "skew-symmetric", "100000 100000", 100000 * 99999 // 2),
    ("coordinate", "general", "100000 100000 10000000000", 10**10),
    ("coordinate", "symmetric", "100000 100000 10000000000", 10**10),
])
@pytest.mark.parametrize("lines", [1, 20000])
def test_oversized_mtx_header_is_refused_before_allocating(tmp_path, layout, symmetry, sizes, declared, lines):
    """The size line claims far more entries than the file holds: a ValueError naming the file, the declared
    and the found count, with no allocation beyond a small multiple of the file's size."""
    path = tmp_path / "huge.mtx"
    body = "".join(f"{k + 2} {k + 1} 1.5\n" for k in range(lines)) if layout == "coordinate" else "1.5\n" * lines
    path.write_text(f"%%MatrixMarket matrix {layout} real {symmetry}\n{sizes}\n{body}")
    peak = _peak_while_refused(path, rf"huge.mtx:{lines + 2}: expected {declared} entries, found {lines}$")
    assert peak < 4 * path.stat().st_size + 64 * 2**10, f"peak {peak} bytes for a {path.stat().st_size}-byte file"


def test_mtx_header_slightly_over_is_refused_after_parsing(tmp_path):
    """A claim the bytes could hold but the lines do not meet: found by the parse, still before the positions."""
    path = tmp_path / "short.mtx"
    path.write_text("%%MatrixMarket matrix array real general\n1000 100\n" + "1.5\n" * 20000)
    peak = _peak_while_refused(path, r"short.mtx:20002: expected 100000 entries, found 20000$")
    assert peak < 16 * path.stat().st_size  # the parsed table, never the 100000 positions


@pytest.mark.parametrize("shape", [None, (10**12, 10**12)])
def test_tns_extents_allocate_nothing_proportional(tmp_path, shape):
    """FROSTT files have no header: extents come from the lines (or shape=), and a COO tensor of any extent
    holds only its entries."""
    path = tmp_path / "far.tns"
    path.write_text("1000000000000 1 1.5\n1 1000000000000 2.5\n")
    tracemalloc.start()
    try:
        t = Tensor.from_file(path, shape=shape)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert t.shape == (10**12, 10**12) and t.nse == 2
    assert peak < 64 * 2**10
