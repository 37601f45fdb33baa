"""The formats that package objects (NumPy, SciPy, torch, CuPy) store, and recognising them again.

Builders give the :class:`TensorFormat` of a package layout (dense with a level order, n-D COO with
trailing dense dims, batched/hybrid CSR/CSC/BSR/BSC, DIA); :func:`match_layout` inverts them: given a
format and a rank it returns the layout that builds it (or ``None``), so reading and writing package
objects share one table.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from frontend.format import LevelFormat as F, LevelProperty as P, NamedFormats, TensorFormat, block_sizes, dimensions

COMPRESSED_KINDS = ("CSR", "CSC", "BSR", "BSC")


@dataclass(frozen=True)
class Layout:
    """A package storage layout.

    ``kind`` is ``"dense"`` (``perm``: dimension of each level), ``"coo"`` (``nsparse`` leading sparse
    dims, ``ndense`` trailing dense dims), one of :data:`COMPRESSED_KINDS` (``nbatch`` leading batch
    dims, ``ndense`` trailing dense dims, ``block`` for BSR/BSC) or ``"dia"`` (scipy's DIA: DIAJ; ``width``:
    ``data``'s row length when it is narrower than the column count, the range level's ``range(width)``).
    """

    kind: str
    perm: tuple[int, ...] = ()
    nsparse: int = 0
    nbatch: int = 0
    ndense: int = 0
    block: tuple[int, int] | None = None
    width: int | None = None

    @property
    def ndim(self) -> int:
        if self.kind == "dense":
            return len(self.perm)
        if self.kind == "coo":
            return self.nsparse + self.ndense
        if self.kind == "dia":
            return 2
        return self.nbatch + 2 + self.ndense

    @property
    def level_of_dimension(self) -> list[int]:
        """Dense layouts: the level holding each dimension (the inverse of ``perm``), to transpose the values
        back into dimension order."""
        return [self.perm.index(d) for d in range(len(self.perm))]

    def tensor_format(self) -> TensorFormat:
        """The format of this layout."""
        if self.kind == "dense":
            return dense_format(self.perm)
        if self.kind == "coo":
            return coo_format(self.nsparse, self.ndense)
        if self.kind == "dia":
            return NamedFormats.DIAJ if self.width is None else narrow_diaj(self.width)
        return compressed_format(self.kind, self.nbatch, self.ndense, self.block)


def narrow_diaj(width: int) -> TensorFormat:
    """DIAJ storing ``width`` slots per diagonal: ``(i, j) -> (j - i : compressed, j : range(width))``
    (columns ``j >= width`` hold nothing; scipy DIA whose ``data`` has ``width`` columns)."""
    i, j = dimensions(2)
    levels: list[tuple] = [(j - i, F.COMPRESSED), (j, (F.RANGE, width))]
    return TensorFormat([i, j], levels, name=f"DIAJ[{width}]")


def dense_format(perm: Sequence[int]) -> TensorFormat:
    """All-dense levels; level ``k`` stores dimension ``perm[k]`` (identity = C order)."""
    perm = tuple(int(p) for p in perm)
    if sorted(perm) != list(range(len(perm))):
        raise ValueError(f"{perm} is not a permutation of the dimensions")
    d = dimensions(len(perm))
    if perm == tuple(range(len(perm))):
        return NamedFormats.Scalar if not perm else NamedFormats.Dense(len(perm))
    return TensorFormat(d, [(d[p], F.DENSE) for p in perm], name=f"Dense{list(perm)}")


def coo_format(nsparse: int, ndense: int = 0) -> TensorFormat:
    """COO over the first ``nsparse`` dims (as ``NamedFormats.COO(n)``), then dense levels."""
    if nsparse < 1:
        raise ValueError("COO needs at least one sparse dimension")
    d = dimensions(nsparse + ndense)
    levels: list[tuple] = [(d[0], (F.COMPRESSED, P.NONUNIQUE) if nsparse > 1 else F.COMPRESSED)]
    for k in range(1, nsparse):
        levels.append((d[k], (F.SINGLETON, (P.NONUNIQUE, P.SOA) if k < nsparse - 1 else P.SOA)))
    levels += [(x, F.DENSE) for x in d[nsparse:]]
    return TensorFormat(d, levels, name="COO" if not ndense else f"HybridCOO{nsparse}+{ndense}")


def compressed_format(kind: str, nbatch: int = 0, ndense: int = 0,
                      block: tuple[int, int] | None = None) -> TensorFormat:
    """Batched/hybrid CSR, CSC, BSR or BSC: ``nbatch`` batch levels, the two sparse dims, then
    ``ndense`` dense levels (torch's compressed layouts)."""
    if kind not in COMPRESSED_KINDS:
        raise ValueError(f"unknown compressed layout {kind!r}")
    d = dimensions(nbatch + 2 + ndense)
    i, j = d[nbatch], d[nbatch + 1]
    if kind == "CSR":
        core: list[tuple] = [(i, F.DENSE), (j, F.COMPRESSED)]
    elif kind == "CSC":
        core = [(j, F.DENSE), (i, F.COMPRESSED)]
    else:
        if block is None:
            raise ValueError(f"{kind} needs a block shape")
        bm, bn = block
        outer = [(i // bm, F.DENSE), (j // bn, F.COMPRESSED)]
        core = (outer if kind == "BSR" else [(j // bn, F.DENSE), (i // bm, F.COMPRESSED)])
        core += [(i % bm, F.DENSE), (j % bn, F.DENSE)]
    levels = [(b, F.BATCH) for b in d[:nbatch]] + core + [(x, F.DENSE) for x in d[nbatch + 2:]]
    name = kind + (f"{block[0]}x{block[1]}" if block else "")
    name = ("Batched" if nbatch else "") + name + (f"+{ndense}" if ndense else "")
    return TensorFormat(d, levels, name=name)


def match_layout(fmt: TensorFormat) -> Layout | None:
    """The package layout whose format equals ``fmt`` (structurally), or ``None``."""
    n = fmt.num_dimensions
    if fmt.is_dense and all(lv.expr in fmt.dimensions for lv in fmt.levels) and fmt.num_levels == n:
        perm = tuple(fmt.dimensions.index(lv.expr) for lv in fmt.levels)
        return Layout("dense", perm=perm)
    if fmt == NamedFormats.DIAJ:
        return Layout("dia")
    if fmt.num_levels == 2 and fmt.levels[1].stored is not None and fmt == narrow_diaj(fmt.levels[1].stored):
        return Layout("dia", width=fmt.levels[1].stored)
    candidates: list[Layout] = [Layout("coo", nsparse=n - k, ndense=k) for k in range(n)]
    sizes = block_sizes(fmt)
    for nb in range(max(n - 1, 0)):
        nd = n - 2 - nb
        block = (sizes[nb], sizes[nb + 1]) if nb in sizes and nb + 1 in sizes else None
        for kind in COMPRESSED_KINDS:
            if kind.startswith("B") and block is None:
                continue
            candidates.append(Layout(kind, nbatch=nb, ndense=nd, block=block if kind.startswith("B") else None))
    for lay in candidates:
        if lay.tensor_format() == fmt:
            return lay
    return None
