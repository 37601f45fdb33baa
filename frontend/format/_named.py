"""Named formats: the usual storage schemes written in the DSL.

Plain attributes are 2-D formats (``NamedFormats.CSR``); families take their parameters
(``NamedFormats.BSR((2, 3))``, ``NamedFormats.DELTA(8)``, ``NamedFormats.CSF(3)``).  ``COO`` is both:
``NamedFormats.COO`` is 2-D COO and ``NamedFormats.COO(3)`` the 3-D one.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._expressions import Dimension, Expr
from ._formats import TensorFormat
from ._levels import Level, LevelFormat as F, LevelProperty as P, LevelSpec

_NAMES = "ijklmnopqrstuvwxyz"


def dimensions(n: int) -> list[Dimension]:
    """``n`` dimensions named as the named formats name them (i, j; d0, d1, ... from rank 3)."""
    if not isinstance(n, int) or isinstance(n, bool) or n < 0 or n > len(_NAMES):
        raise ValueError(f"rank must be an int in 0..{len(_NAMES)}, got {n!r}")
    return [Dimension(c) for c in _NAMES[:n]] if n <= 2 else [Dimension(f"d{k}") for k in range(n)]


def _dense(n: int) -> TensorFormat:
    d = dimensions(n)
    return TensorFormat(d, {x: F.DENSE for x in d}, name="Dense" if n != 1 else "DenseVector")


def _coo(n: int) -> TensorFormat:
    if n < 1:
        raise ValueError("COO needs at least one dimension")
    d = dimensions(n)
    levels: list[tuple] = [(d[0], (F.COMPRESSED, P.NONUNIQUE) if n > 1 else F.COMPRESSED)]
    for k in range(1, n):
        props = (P.NONUNIQUE, P.SOA) if k < n - 1 else P.SOA
        levels.append((d[k], (F.SINGLETON, props)))
    return TensorFormat(d, levels, name="COO")


def _csf(n: int) -> TensorFormat:
    d = dimensions(n)
    return TensorFormat(d, {x: F.COMPRESSED for x in d}, name="CSF")


def _block(shape: tuple[int, int], by_columns: bool) -> TensorFormat:
    if (not isinstance(shape, tuple) or len(shape) != 2
            or not all(isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in shape)):
        raise ValueError(f"block shape must be a pair of positive ints, got {shape!r}")
    i, j = dimensions(2)
    m, n = shape
    outer = [(j // n, F.DENSE), (i // m, F.COMPRESSED)] if by_columns else [(i // m, F.DENSE), (j // n, F.COMPRESSED)]
    return TensorFormat([i, j], outer + [(i % m, F.DENSE), (j % n, F.DENSE)],
                        name=f"{'BSC' if by_columns else 'BSR'}{m}x{n}")


def _delta(bits: int) -> TensorFormat:
    i, j = dimensions(2)
    return TensorFormat([i, j], {i: F.DENSE, j: (F.DELTA, bits)}, name=f"DELTA{bits}")


def _blocked_ell(shape: tuple[int, int]) -> TensorFormat:
    """Blocked ELL: block rows dense, block columns ``loose_compressed`` (a fixed stride of block slots per
    block row when assembled), dense blocks: the layout of cuSPARSE's blocked-ELL SpMM."""
    bsr = _block(shape, False)
    m, n = shape
    levels = [(lv.expr, F.LOOSE_COMPRESSED if k == 1 else F.DENSE) for k, lv in enumerate(bsr.levels)]
    return TensorFormat(bsr.dimensions, levels, name=f"BlockedELL{m}x{n}")


def _nm(n: int, m: int) -> TensorFormat:
    i, j = dimensions(2)
    levels: list[tuple[Expr, LevelSpec]] = [(i, F.DENSE), (j // m, F.DENSE), (j % m, (F.STRUCTURED, (n, m)))]
    return TensorFormat([i, j], levels, name=f"NM{n}:{m}")


class _COOFamily(TensorFormat):
    """2-D COO that, called with a rank, gives n-D COO."""

    def __call__(self, n: int) -> TensorFormat:
        return _coo(n)


def _named(text: str, name: str) -> TensorFormat:
    return TensorFormat.parse(text, name=name)


class NamedFormats:
    """The common formats; see the module docstring."""

    Scalar = TensorFormat([], [], name="Scalar")
    DenseVector = _dense(1)
    SparseVector = _named("(i) -> (i : compressed)", "SparseVector")
    Dense: Callable[[int], TensorFormat] = staticmethod(_dense)
    COO = _COOFamily(_coo(2).dimensions, _coo(2).levels, name="COO")
    CSR = _named("(i, j) -> (i : dense, j : compressed)", "CSR")
    CSC = _named("(i, j) -> (j : dense, i : compressed)", "CSC")
    DCSR = _named("(i, j) -> (i : compressed, j : compressed)", "DCSR")
    DCSC = _named("(i, j) -> (j : compressed, i : compressed)", "DCSC")
    CSF: Callable[[int], TensorFormat] = staticmethod(_csf)
    BSR: Callable[[tuple[int, int]], TensorFormat] = staticmethod(lambda shape: _block(shape, False))
    BSC: Callable[[tuple[int, int]], TensorFormat] = staticmethod(lambda shape: _block(shape, True))
    DIAI = _named("(i, j) -> (j - i : compressed, i : range)", "DIAI")
    DIAJ = _named("(i, j) -> (j - i : compressed, j : range)", "DIAJ")
    SkewDIAI = _named("(i, j) -> (i + j : compressed, i : range)", "SkewDIAI")
    SkewDIAJ = _named("(i, j) -> (i + j : compressed, j : range)", "SkewDIAJ")
    DELTA: Callable[[int], TensorFormat] = staticmethod(_delta)
    NM: Callable[[int, int], TensorFormat] = staticmethod(_nm)
    #: ELLPACK: rows dense, columns ``loose_compressed``; assembled with a fixed row stride (every row gets
    #: as many slots as the fullest row, unused slots are zero padding), see ``frontend.storage``.
    ELL = _named("(i, j) -> (i : dense, j : loose_compressed)", "ELL")
    BlockedELL: Callable[[tuple[int, int]], TensorFormat] = staticmethod(_blocked_ell)
    BatchedCSR = _named("(b, i, j) -> (b : batch, i : dense, j : compressed)", "BatchedCSR")

    @classmethod
    def all(cls) -> dict[str, TensorFormat]:
        """One instance of every named format (families with typical parameters), by display name."""
        return {
            "Scalar": cls.Scalar, "DenseVector": cls.DenseVector, "SparseVector": cls.SparseVector,
            "Dense(2)": cls.Dense(2), "Dense(3)": cls.Dense(3), "COO": cls.COO, "COO(3)": cls.COO(3),
            "CSR": cls.CSR, "CSC": cls.CSC, "DCSR": cls.DCSR, "DCSC": cls.DCSC, "CSF(3)": cls.CSF(3),
            "BSR((2, 3))": cls.BSR((2, 3)), "BSC((2, 2))": cls.BSC((2, 2)),
            "DIAI": cls.DIAI, "DIAJ": cls.DIAJ, "SkewDIAI": cls.SkewDIAI, "SkewDIAJ": cls.SkewDIAJ,
            "DELTA(2)": cls.DELTA(2), "NM(2, 4)": cls.NM(2, 4), "BatchedCSR": cls.BatchedCSR,
            "ELL": cls.ELL, "BlockedELL((2, 2))": cls.BlockedELL((2, 2)),
        }

    @classmethod
    def lookup(cls, name: str) -> TensorFormat:
        """A named format by name, e.g. ``"CSR"``, ``"BSR((2, 3))"``, ``"DELTA(8)"``, ``"COO(3)"``,
        ``"BlockedELL(4,4)"``."""
        table = cls.all()
        key = name.strip()
        if key in table:
            return table[key]
        import re
        m = re.fullmatch(r"(\w+)\s*\((.*)\)", key)
        if m and m.group(1) in ("Dense", "COO", "CSF", "BSR", "BSC", "DELTA", "NM", "BlockedELL"):
            nums = [int(x) for x in re.findall(r"\d+", m.group(2))]
            fam = getattr(cls, m.group(1))
            if m.group(1) in ("BSR", "BSC", "BlockedELL") and len(nums) == 2:
                return fam((nums[0], nums[1]))
            if m.group(1) == "NM" and len(nums) == 2:
                return fam(nums[0], nums[1])
            if len(nums) == 1:
                return fam(nums[0])
        import difflib
        close = difflib.get_close_matches(key, list(table), n=3, cutoff=0.4) or difflib.get_close_matches(
            key.upper(), [k.upper() for k in table], n=3, cutoff=0.4)
        hint = f"; did you mean {' or '.join(repr(c) for c in close)}?" if close else ""
        raise ValueError(f"unknown format name {name!r}{hint} (known: {', '.join(table)}; or DSL text such as "
                         "'(i, j) -> (i : dense, j : compressed)')")


def as_format(fmt: Any, what: str = "tensor_format") -> Any:
    """``fmt`` as a TensorFormat: a TensorFormat itself, a named format's name (``"CSR"``, ``"BSR(2,3)"``,
    ``"DELTA(8)"``) or DSL/MLIR text (``"(i, j) -> (j : dense, i : compressed)"``, ``#sparse_tensor.encoding``);
    None stays None. ``ValueError`` listing the closest names for an unknown name, ``TypeError`` for others."""
    if fmt is None or isinstance(fmt, TensorFormat):
        return fmt
    if isinstance(fmt, str):
        return TensorFormat.parse(fmt) if "->" in fmt else NamedFormats.lookup(fmt)
    raise TypeError(f"{what} must be a TensorFormat, a format name or DSL text, got {type(fmt).__name__}")


__all__ = ["NamedFormats", "Level", "as_format"]
