"""Drawing: the files are real images of sensible size, for several formats, ranks and extensions."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from PIL import Image

from frontend import NamedFormats
from frontend.tensor import Tensor


def _matrix():
    a = np.zeros((6, 8))
    a[0, 1], a[2, 2:5], a[5, 7], a[3, 0] = 1, [2, 3, 4], 9.5, -1
    return a


def _png_size(path):
    with Image.open(path) as im:
        im.verify()
    with Image.open(path) as im:
        assert im.format == "PNG"
        pixels = np.asarray(im.convert("L"))
    assert pixels.std() > 5  # not a blank canvas
    return im.size


@pytest.mark.parametrize("fmt", [NamedFormats.CSR, NamedFormats.COO, NamedFormats.BSR((2, 2)),
                                 NamedFormats.DIAJ, NamedFormats.Dense(2), NamedFormats.DELTA(2)])
def test_draw_and_draw_storage_2d(tmp_path, fmt):
    t = Tensor.from_package(_matrix()).convert(fmt)
    w, h = _png_size(t.draw(tmp_path / "c.png"))
    assert 200 <= w <= 4000 and 150 <= h <= 4000
    w, h = _png_size(t.draw_storage(tmp_path / "s.png"))
    assert 200 <= w <= 6000 and 50 <= h <= 4000


def test_draw_1d_3d_svg_and_empty(tmp_path):
    x = np.zeros((3, 4, 5))
    x[0, 1, 2], x[2, 3, 4] = 1, 2
    w, h = _png_size(Tensor.from_package(x).convert(NamedFormats.CSF(3)).draw(tmp_path / "t.png"))
    assert w > 2 * h  # three panels side by side
    _png_size(Tensor.from_package(np.arange(5.0)).convert(NamedFormats.SparseVector).draw(tmp_path / "v.png"))
    svg = Tensor.from_package(_matrix()).draw(tmp_path / "m.svg")
    assert svg.read_text().lstrip().startswith("<?xml") and "<svg" in svg.read_text()
    empty = Tensor.from_package(sp.csr_array((3, 4)))
    _png_size(empty.draw(tmp_path / "e.png"))
    _png_size(empty.draw_storage(tmp_path / "es.png"))


def test_draw_storage_long_buffers_are_abbreviated(tmp_path):
    t = Tensor.from_package(sp.random(200, 300, density=0.05, format="csr", random_state=0))
    w, h = _png_size(t.draw_storage(tmp_path / "s.png"))
    assert w < 4000 and h < 1000


def test_draw_refusals(tmp_path):
    with pytest.raises(ValueError, match="too large"):
        Tensor.from_package(sp.eye(500, format="csr")).draw(tmp_path / "x.png")
    with pytest.raises(ValueError, match="1-D to 3-D"):
        Tensor.from_package(np.ones((2, 2, 2, 2))).draw(tmp_path / "x.png")
    with pytest.raises(ValueError, match="2-D or 3-D"):
        Tensor.from_package(np.ones(4)).draw_raw(tmp_path / "x.png")


def test_draw_raw_large(tmp_path):
    rng = np.random.default_rng(0)
    n, nnz = 200_000, 400_000
    r = rng.integers(0, n, nnz)
    c = (r + rng.integers(-300, 300, nnz)) % n
    a = sp.csr_array((rng.random(nnz), (r, c)), shape=(n, n))
    a.sum_duplicates()
    w, h = _png_size(Tensor.from_package(a).draw_raw(tmp_path / "r.png", bins=256))
    assert 300 <= w <= 2000 and 300 <= h <= 2000
    x = np.zeros((20, 30, 40))
    x[rng.integers(0, 20, 500), rng.integers(0, 30, 500), rng.integers(0, 40, 500)] = 1
    w, h = _png_size(Tensor.from_package(x).convert(NamedFormats.COO(3)).draw_raw(tmp_path / "r3.png"))
    assert w > 2 * h  # three projections
