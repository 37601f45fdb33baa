"""Level types of the format DSL: ``LevelFormat``, ``LevelProperty``, ``Level`` (a level expression with its
level type and properties) and ``make_level`` (a Level from its Python spellings)."""
from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ._expressions import Expr


class LevelFormat(enum.Enum):
    """How one storage level stores its coordinates."""

    DENSE = "dense"
    BATCH = "batch"
    COMPRESSED = "compressed"
    LOOSE_COMPRESSED = "loose_compressed"
    SINGLETON = "singleton"
    RANGE = "range"
    DELTA = "delta"
    STRUCTURED = "structured"


class LevelProperty(enum.Enum):
    """Properties of a level's coordinates (MLIR spells UNORDERED as ``nonordered``)."""

    UNIQUE = "unique"
    NONUNIQUE = "nonunique"
    ORDERED = "ordered"
    UNORDERED = "unordered"
    SOA = "soa"


# Level formats that MLIR 22's sparse_tensor dialect can encode.
MLIR_LEVEL_FORMATS = frozenset(
    {LevelFormat.DENSE, LevelFormat.BATCH, LevelFormat.COMPRESSED, LevelFormat.LOOSE_COMPRESSED,
     LevelFormat.SINGLETON, LevelFormat.STRUCTURED}
)
# Level formats that take properties (unique/ordered/soa) at all.
_PROPERTY_FORMATS = frozenset(
    {LevelFormat.COMPRESSED, LevelFormat.LOOSE_COMPRESSED, LevelFormat.SINGLETON}
)
# Names that cannot be dimension names in the textual DSL.
RESERVED_NAMES = frozenset({"floordiv", "mod"} | {f.value for f in LevelFormat}
                           | {p.value for p in LevelProperty} | {"nonordered"})


@dataclass(frozen=True)
class Level:
    """One storage level: an expression over dimensions and how its coordinates are stored."""

    expr: Expr
    format: LevelFormat
    unique: bool = True
    ordered: bool = True
    soa: bool = False
    bits: int | None = None                   # DELTA: bit width of the stored gaps
    structure: tuple[int, int] | None = None  # STRUCTURED: (n, m), n of every m stored
    stored: int | None = None                 # RANGE: slots stored per parent (coordinates past it absent)

    @property
    def has_positions(self) -> bool:
        """Whether the level keeps a positions buffer (``pos``)."""
        return self.format in (LevelFormat.COMPRESSED, LevelFormat.LOOSE_COMPRESSED, LevelFormat.DELTA)

    @property
    def has_coordinates(self) -> bool:
        """Whether the level keeps a coordinates buffer (``crd``)."""
        return self.format in (LevelFormat.COMPRESSED, LevelFormat.LOOSE_COMPRESSED,
                               LevelFormat.SINGLETON, LevelFormat.DELTA, LevelFormat.STRUCTURED)

    @property
    def is_dense_like(self) -> bool:
        """Dense and batch levels store every coordinate of their extent."""
        return self.format in (LevelFormat.DENSE, LevelFormat.BATCH)

    def type_text(self, mlir: bool = False) -> str:
        """The level type with its properties, e.g. ``compressed(nonunique)``, ``delta(2)``."""
        f = self.format
        if f is LevelFormat.DELTA:
            return f"delta({self.bits})"
        if f is LevelFormat.STRUCTURED:
            n, m = self.structure  # type: ignore[misc]
            return f"structured[{n}, {m}]"
        if f is LevelFormat.RANGE and self.stored is not None:
            return f"range({self.stored})"
        props = []
        if not self.unique:
            props.append("nonunique")
        if not self.ordered:
            props.append("nonordered" if mlir else "unordered")
        if self.soa:
            props.append("soa")
        return f.value + (f"({', '.join(props)})" if props else "")

    def render(self, mlir: bool = False) -> str:
        return f"{self.expr.render(mlir)} : {self.type_text(mlir)}"


#: Delta bit widths whose gaps are stored bit-packed, ``8 // bits`` to a byte; wider ones keep one gap per
#: element of the narrowest unsigned type (uint8/16/32).
PACKED_DELTA_BITS = (1, 2, 4)


def delta_packed(bits: int | None) -> bool:
    """Whether a ``bits``-bit delta level stores its gaps bit-packed: gap ``t`` in byte ``t * bits // 8``,
    bits ``t * bits % 8`` upwards (little-endian within the byte); the last byte's unused bits are 0."""
    return bits in PACKED_DELTA_BITS


LevelSpec = LevelFormat | tuple | Level


def make_level(expr: Expr, spec: LevelSpec) -> Level:
    """Builds a :class:`Level` from ``LevelFormat.X``, ``(X, property-or-tuple)``, ``(DELTA, bits)``,
    ``(STRUCTURED, (n, m))`` or ``(RANGE, stored)`` (a range level storing only its first ``stored`` slots
    per parent: scipy DIA ``data`` narrower than the column count)."""
    if isinstance(spec, Level):
        return spec
    if isinstance(spec, LevelFormat):
        fmt, arg = spec, None
    elif isinstance(spec, tuple) and len(spec) == 2 and isinstance(spec[0], LevelFormat):
        fmt, arg = spec
    else:
        raise TypeError(f"level {expr}: expected a LevelFormat or (LevelFormat, argument), got {spec!r}")
    if fmt is LevelFormat.DELTA:
        if arg is None:
            raise ValueError(f"level {expr}: delta needs a bit width, e.g. (LevelFormat.DELTA, 2)")
        if isinstance(arg, bool) or not isinstance(arg, int) or not 1 <= arg <= 32:
            raise ValueError(f"level {expr}: delta bit width must be an int in 1..32, got {arg!r}")
        return Level(expr, fmt, bits=arg)
    if fmt is LevelFormat.STRUCTURED:
        if (not isinstance(arg, tuple) or len(arg) != 2
                or not all(isinstance(v, int) and not isinstance(v, bool) for v in arg)):
            raise ValueError(f"level {expr}: structured needs (n, m), e.g. (LevelFormat.STRUCTURED, (2, 4))")
        n, m = arg
        if not 0 < n <= m:
            raise ValueError(f"level {expr}: structured[{n}, {m}] needs 0 < n <= m")
        return Level(expr, fmt, structure=(n, m))
    if fmt is LevelFormat.RANGE and arg is not None and not isinstance(arg, (tuple, LevelProperty)):
        if isinstance(arg, bool) or not isinstance(arg, int) or arg < 0:
            raise ValueError(f"level {expr}: range stored length must be an int >= 0, got {arg!r}")
        return Level(expr, fmt, stored=arg)
    props: tuple = () if arg is None else (arg if isinstance(arg, tuple) else (arg,))
    return _with_properties(expr, fmt, props)


def _with_properties(expr: Expr, fmt: LevelFormat, props: Iterable[Any]) -> Level:
    props = tuple(props)
    for p in props:
        if not isinstance(p, LevelProperty):
            raise TypeError(f"level {expr}: {p!r} is not a LevelProperty")
    if props and fmt not in _PROPERTY_FORMATS:
        raise ValueError(f"level {expr}: level format {fmt.value} takes no properties")
    pset = set(props)
    if {LevelProperty.UNIQUE, LevelProperty.NONUNIQUE} <= pset:
        raise ValueError(f"level {expr}: contradictory properties unique and nonunique")
    if {LevelProperty.ORDERED, LevelProperty.UNORDERED} <= pset:
        raise ValueError(f"level {expr}: contradictory properties ordered and unordered")
    if LevelProperty.SOA in pset and fmt is not LevelFormat.SINGLETON:
        raise ValueError(f"level {expr}: soa applies only to singleton levels")
    return Level(expr, fmt, unique=LevelProperty.NONUNIQUE not in pset,
                 ordered=LevelProperty.UNORDERED not in pset, soa=LevelProperty.SOA in pset)
