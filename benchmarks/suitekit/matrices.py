"""The suite's matrix families: each family yields its matrices one at a time (CSR, int32 indices, sorted)."""
from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

PYAMG_EXAMPLES = ("airfoil", "bar", "knot", "local_disc_galerkin_diffusion", "recirc_flow", "unit_cube",
                  "unit_square")


@dataclass
class Case:
    """One matrix of a family, with what the operations need to know about it."""
    family: str
    name: str
    matrix: sp.csr_array
    spd: bool = False  # symmetric positive definite: triangular solve on tril(A) and CG apply
    banded: bool = False  # few diagonals: DIA applies

    @property
    def rows(self) -> int:
        return self.matrix.shape[0]

    @property
    def nnz(self) -> int:
        return self.matrix.nnz


def canonical(a: sp.spmatrix | sp.sparray, dtype: type = np.float64) -> sp.csr_array:
    """CSR with sorted, duplicate-free int32 indices and the given value type."""
    c = sp.csr_array(a, dtype=dtype)
    c.sum_duplicates()
    c.sort_indices()
    c.indices = c.indices.astype(np.int32, copy=False)
    c.indptr = c.indptr.astype(np.int32, copy=False)
    return c


def from_row_lengths(lengths: np.ndarray, cols: int, rng: np.random.Generator) -> sp.csr_array:
    """A matrix whose row ``i`` has about ``lengths[i]`` uniformly random columns (duplicates merged)."""
    rows = len(lengths)
    lengths = np.minimum(lengths.astype(np.int64), cols)
    row_of = np.repeat(np.arange(rows, dtype=np.int64), lengths)
    keys = row_of * cols + rng.integers(0, cols, size=len(row_of))
    del row_of
    keys.sort()
    keys = keys[np.concatenate(([True], keys[1:] != keys[:-1]))]
    r = keys // cols
    indptr = np.zeros(rows + 1, dtype=np.int64)
    np.cumsum(np.bincount(r, minlength=rows), out=indptr[1:])
    indices = (keys - r * cols).astype(np.int32)
    del keys, r
    data = rng.standard_normal(len(indices))
    return sp.csr_array((data, indices, indptr.astype(np.int32)), shape=(rows, cols))


def pyamg_examples(quick: bool) -> Iterator[Case]:
    """pyamg's real example matrices that load offline (complex ones are left out)."""
    try:
        import pyamg
    except ImportError:
        return
    for name in PYAMG_EXAMPLES:
        try:
            a = canonical(pyamg.gallery.load_example(name)["A"])
        except Exception:  # noqa: BLE001 - an example that does not load is left out
            continue
        yield Case("pyamg", name, a, spd=is_spd(a))


def is_spd(a: sp.csr_array) -> bool:
    """Symmetric with a smallest eigenvalue clearly above zero (dense check: small matrices only)."""
    if abs(a - a.T).max() > 1e-10 * abs(a).max() or a.diagonal().min() <= 0:
        return False
    return bool(np.linalg.eigvalsh(a.toarray())[0] > 1e-8 * abs(a).max())


def poisson(quick: bool) -> Iterator[Case]:
    import pyamg

    g2, g3 = (200, 30) if quick else (1000, 100)
    yield Case("poisson", f"poisson2d {g2}^2", canonical(pyamg.gallery.poisson((g2, g2))), spd=True, banded=True)
    yield Case("poisson", f"poisson3d {g3}^3", canonical(pyamg.gallery.poisson((g3, g3, g3))), spd=True,
               banded=True)


def uniform(quick: bool) -> Iterator[Case]:
    rng = np.random.default_rng(1)
    n, per_row = (100_000, 10) if quick else (1_000_000, 10)
    yield Case("random", f"uniform {n // 1000}k rows {per_row}/row", canonical(
        from_row_lengths(rng.poisson(per_row, n), n, rng)))
    yield Case("random", "random 2000^2 1%", canonical(from_row_lengths(np.full(2000, 20), 2000, rng)))


def power_law(quick: bool) -> Iterator[Case]:
    """Graph-like: row lengths from a Pareto distribution (a few rows with many thousands of entries)."""
    rng = np.random.default_rng(2)
    n, mean = (100_000, 30) if quick else (1_000_000, 30)
    lengths = 1 + rng.pareto(1.5, n) * (mean - 1) / 2.0
    lengths = np.minimum(np.rint(lengths * mean / lengths.mean()), n // 10).astype(np.int64)
    yield Case("powerlaw", f"power-law {n // 1000}k rows", canonical(from_row_lengths(lengths, n, rng)))


def banded(quick: bool) -> Iterator[Case]:
    """11 diagonals (offsets -5..5), diagonally dominant and symmetric, so SPD."""
    n = 100_000 if quick else 1_000_000
    offsets = list(range(-5, 6))
    data = np.where(np.array(offsets)[:, None] == 0, 12.0, -1.0) * np.ones((len(offsets), n))
    yield Case("banded", f"banded 11 diagonals {n // 1000}k", canonical(sp.dia_array((data, offsets), shape=(n, n))),
               spd=True, banded=True)


def block4x4(quick: bool) -> Iterator[Case]:
    """4x4 dense blocks, about 4 random blocks per block row (a BSR-friendly pattern, stored as CSR)."""
    rng = np.random.default_rng(3)
    nb = 8_192 if quick else 65_536
    pattern = from_row_lengths(np.full(nb, 4), nb, rng)
    blocks = sp.kron(pattern, np.ones((4, 4)), format="csr")
    blocks.data = rng.standard_normal(blocks.nnz)
    yield Case("block4x4", f"block 4x4 {4 * nb // 1000}k rows", canonical(blocks))


def skewed_shapes(quick: bool) -> Iterator[Case]:
    rng = np.random.default_rng(4)
    long, short, per_row = (50_000, 1_000, 8) if quick else (500_000, 1_000, 8)
    yield Case("shape", f"tall-skinny {long // 1000}k x {short}", canonical(
        from_row_lengths(np.full(long, per_row), short, rng)))
    wide_per_row = per_row * long // short
    yield Case("shape", f"short-wide {short} x {long // 1000}k", canonical(
        from_row_lengths(np.full(short, wide_per_row), long, rng)))


def pruned_weights(quick: bool) -> Iterator[Case]:
    """Magnitude pruning of a random normal float32 matrix (keeps the largest entries)."""
    n = 1024 if quick else 4096
    w = np.random.default_rng(5).standard_normal((n, n), dtype=np.float32)
    mags = np.abs(w)
    for sparsity in (0.5, 0.7, 0.9, 0.95):
        threshold = np.quantile(mags, sparsity)
        yield Case("pruned", f"pruned {n}^2 f32 {round(sparsity * 100)}%",
                   canonical(np.where(mags > threshold, w, 0), np.float32))


def tiny(quick: bool) -> Iterator[Case]:
    rng = np.random.default_rng(6)
    for n, density in ((8, 0.5), (64, 0.1)):
        d = np.where(rng.random((n, n)) < density, rng.standard_normal((n, n)), 0.0) + 4.0 * np.eye(n)
        yield Case("tiny", f"tiny {n}x{n}", canonical(d), spd=False)


FAMILIES: dict[str, Callable[[bool], Iterator[Case]]] = {
    "tiny": tiny, "pyamg": pyamg_examples, "poisson": poisson, "random": uniform, "powerlaw": power_law,
    "banded": banded, "block4x4": block4x4, "shape": skewed_shapes, "pruned": pruned_weights,
}
