"""The tensor format DSL: how a tensor's dimensions map to storage levels.

A :class:`TensorFormat` lists the tensor's dimensions and, in storage order, its levels.  Each level
is a :class:`Level`: a level expression over the dimensions (``i``, ``j - i``, ``i // 2``, ``i % 2``)
and a level format (dense, compressed, singleton, range, delta, ...) with properties.

    >>> i, j = Dimension("i"), Dimension("j")
    >>> csr = TensorFormat([i, j], {i: LevelFormat.DENSE, j: LevelFormat.COMPRESSED})
    >>> str(csr)
    '(i, j) -> (i : dense, j : compressed)'
    >>> TensorFormat.parse(str(csr)) == csr
    True
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ._encoding import encoding_text, tensor_type, unsupported_reason
from ._expressions import BinaryExpr, Constant, Dimension, Expr, is_block, is_diagonal, is_dimension
from ._levels import Level, LevelFormat, LevelSpec, make_level
from ._parser import parse_format
from ._rules import check_format


@dataclass(frozen=True, eq=False)
class TensorFormat:
    """A tensor storage format: dimensions and levels.  Equality is structural (names ignored)."""

    dimensions: tuple[Dimension, ...]
    levels: tuple[Level, ...]
    name: str | None = field(default=None, compare=False)

    def __init__(self, dimensions: Sequence[Dimension],
                 levels: Mapping[Expr, LevelSpec] | Sequence[tuple[Expr, LevelSpec]] | Sequence[Level],
                 name: str | None = None) -> None:
        dims = tuple(dimensions)
        for d in dims:
            if not isinstance(d, Dimension):
                raise TypeError(f"dimensions must be Dimension objects, got {d!r}")
        items = levels.items() if isinstance(levels, Mapping) else levels
        built = []
        for item in items:
            if isinstance(item, Level):
                built.append(item)
            else:
                expr, spec = item
                if not isinstance(expr, Expr):
                    raise TypeError(f"level expression must be built from Dimensions, got {expr!r}")
                built.append(make_level(expr, spec))
        object.__setattr__(self, "dimensions", dims)
        object.__setattr__(self, "levels", tuple(built))
        object.__setattr__(self, "name", name)
        check_format(self)
        key = self._compute_structure_key()
        object.__setattr__(self, "_key", key)
        object.__setattr__(self, "_hash", hash(key))
        object.__setattr__(self, "_dense", all(lv.is_dense_like for lv in self.levels))

    # ----- parsing and printing --------------------------------------------------------------
    @classmethod
    def parse(cls, text: str, name: str | None = None) -> TensorFormat:
        """Reads the textual DSL, e.g. ``"(i, j) -> (i : dense, j : compressed)"`` (MLIR spellings
        ``floordiv``/``mod``/``nonordered`` and a full ``#sparse_tensor.encoding<{map = ...}>`` too)."""
        dims, levels = parse_format(text)
        return cls(dims, levels, name=name)

    def __str__(self) -> str:
        dims = ", ".join(d.name for d in self.dimensions)
        return f"({dims}) -> ({', '.join(lv.render() for lv in self.levels)})"

    def map_text(self, mlir: bool = True) -> str:
        """The dimension-to-level map in MLIR spelling (``floordiv``, ``mod``, ``nonordered``)."""
        dims = ", ".join(d.name for d in self.dimensions)
        return f"({dims}) -> ({', '.join(lv.render(mlir) for lv in self.levels)})"

    def __repr__(self) -> str:
        label = f", name={self.name!r}" if self.name else ""
        return f"TensorFormat.parse({str(self)!r}{label})"

    def renamed(self, name: str) -> TensorFormat:
        return TensorFormat(self.dimensions, self.levels, name=name)

    # ----- structure ----------------------------------------------------------------------------
    def structure_key(self) -> tuple:
        """A hashable description of the storage with dimension names replaced by positions
        (what equality, hashing and compile-cache keys use; computed once)."""
        return self._key  # type: ignore[attr-defined]

    def _compute_structure_key(self) -> tuple:
        index = {d: k for k, d in enumerate(self.dimensions)}

        def key(e: Expr) -> Any:
            if isinstance(e, Dimension):
                return ("d", index[e])
            if isinstance(e, Constant):
                return ("c", e.value)
            assert isinstance(e, BinaryExpr)
            return (e.op, key(e.lhs), key(e.rhs))

        return (len(self.dimensions),) + tuple(
            (key(lv.expr), lv.format.value, lv.unique, lv.ordered, lv.soa, lv.bits, lv.structure, lv.stored)
            for lv in self.levels)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, TensorFormat):
            return NotImplemented
        return self is other or self._key == other._key  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return self._hash  # type: ignore[attr-defined]

    @property
    def num_dimensions(self) -> int:
        return len(self.dimensions)

    @property
    def num_levels(self) -> int:
        return len(self.levels)

    @property
    def is_ordered(self) -> bool:
        return all(lv.ordered for lv in self.levels)

    @property
    def is_unique(self) -> bool:
        """Whether every dimension coordinate is stored at most once (decided by the last
        non-dense level, as in MLIR)."""
        sparse = [lv for lv in self.levels if not lv.is_dense_like]
        return not sparse or sparse[-1].unique

    @property
    def is_dense(self) -> bool:
        """All levels dense (or batch): a strided dense array (computed once)."""
        return self._dense  # type: ignore[attr-defined]

    @property
    def is_identity(self) -> bool:
        """Level k is dimension k for every k."""
        return (len(self.levels) == len(self.dimensions)
                and all(lv.expr == d for lv, d in zip(self.levels, self.dimensions)))

    @property
    def level_formats(self) -> tuple[LevelFormat, ...]:
        return tuple(lv.format for lv in self.levels)

    def dimension_index(self, d: Dimension) -> int:
        return self.dimensions.index(d)

    # ----- coordinate maps ------------------------------------------------------------------------
    def dim2lvl(self, coords: Sequence[Any]) -> list[Any]:
        """Level coordinates of dimension coordinates (ints or equally shaped NumPy arrays)."""
        if len(coords) != self.num_dimensions:
            raise ValueError(f"expected {self.num_dimensions} dimension coordinates, got {len(coords)}")
        values = dict(zip(self.dimensions, coords))
        return [lv.expr.evaluate(values) for lv in self.levels]

    def lvl2dim(self, coords: Sequence[Any]) -> list[Any]:
        """Dimension coordinates of level coordinates (inverse of :meth:`dim2lvl`)."""
        if len(coords) != self.num_levels:
            raise ValueError(f"expected {self.num_levels} level coordinates, got {len(coords)}")
        known: dict[Dimension, Any] = {}
        for lv, c in zip(self.levels, coords):
            if is_dimension(lv.expr):
                known[lv.expr] = c  # type: ignore[index]
        quotients: dict[Dimension, tuple[int, Any]] = {}
        remainders: dict[Dimension, Any] = {}
        for lv, c in zip(self.levels, coords):
            e = lv.expr
            if is_block(e):
                d = e.lhs  # type: ignore[attr-defined]
                if e.op == "//":  # type: ignore[attr-defined]
                    quotients[d] = (e.rhs.value, c)  # type: ignore[attr-defined]
                else:
                    remainders[d] = c
        for d, (size, q) in quotients.items():
            known.setdefault(d, q * size + remainders[d])
        for lv, c in zip(self.levels, coords):
            e = lv.expr
            if is_diagonal(e):
                a, b = e.lhs, e.rhs  # type: ignore[attr-defined]
                if e.op == "+":  # type: ignore[attr-defined]
                    if a in known and b not in known:
                        known[b] = c - known[a]
                    elif b in known and a not in known:
                        known[a] = c - known[b]
                else:  # a - b = c
                    if b in known and a not in known:
                        known[a] = c + known[b]
                    elif a in known and b not in known:
                        known[b] = known[a] - c
        return [known[d] for d in self.dimensions]

    def level_extents(self, shape: Sequence[int]) -> list[int]:
        """The extent of each level for a tensor of the given dimension extents."""
        if len(shape) != self.num_dimensions:
            raise ValueError(f"format has {self.num_dimensions} dimensions, shape {tuple(shape)} has {len(shape)}")
        ext = dict(zip(self.dimensions, (int(s) for s in shape)))
        out = []
        for lv in self.levels:
            e = lv.expr
            if is_dimension(e) and lv.stored is not None:  # a range level storing fewer slots
                if lv.stored > ext[e]:  # type: ignore[index]
                    raise ValueError(f"level {lv.render()}: stores {lv.stored} slots but dimension {e} has "
                                     f"extent {ext[e]}")  # type: ignore[index]
                out.append(lv.stored)
            elif is_dimension(e):
                out.append(ext[e])  # type: ignore[index]
            elif is_block(e):
                c = e.rhs.value  # type: ignore[attr-defined]
                out.append(-(-ext[e.lhs] // c) if e.op == "//" else c)  # type: ignore[attr-defined]
            else:  # i + j or j - i: number of (anti-)diagonals
                a, b = ext[e.lhs], ext[e.rhs]  # type: ignore[attr-defined]
                out.append(max(a + b - 1, 0))
        return out

    def diagonal_offset(self, shape: Sequence[int]) -> list[int]:
        """Smallest level coordinate of each level (negative for ``j - i`` diagonals, else 0)."""
        ext = dict(zip(self.dimensions, (int(s) for s in shape)))
        out = []
        for lv in self.levels:
            e = lv.expr
            if is_diagonal(e) and e.op == "-":  # type: ignore[attr-defined]
                out.append(-(ext[e.rhs] - 1) if ext[e.rhs] else 0)  # type: ignore[attr-defined]
            else:
                out.append(0)
        return out

    # ----- MLIR ---------------------------------------------------------------------------------
    def mlir_support(self) -> str:
        """``"sparsifier"`` when MLIR's sparse_tensor dialect encodes this format, else
        ``"emitter"`` (ust-mlir's own code generator lowers it)."""
        return "sparsifier" if unsupported_reason(self) is None else "emitter"

    def to_mlir(self, pos_width: int = 64, crd_width: int = 64) -> str:
        """The ``#sparse_tensor.encoding<{...}>`` attribute text (ValueError for range/delta/diagonals)."""
        return encoding_text(self, pos_width=pos_width, crd_width=crd_width)

    def mlir_type(self, shape: Sequence[int], dtype: Any = "f64", pos_width: int = 64,
                  crd_width: int = 64) -> str:
        """The full tensor type, e.g. ``tensor<8x8xf64, #sparse_tensor.encoding<{...}>>``."""
        return tensor_type(self, shape, dtype, pos_width=pos_width, crd_width=crd_width)


def num_batch_levels(fmt: TensorFormat) -> int:
    """How many leading batch levels the format has."""
    n = 0
    for lv in fmt.levels:
        if lv.format is not LevelFormat.BATCH:
            break
        n += 1
    return n


def block_sizes(fmt: TensorFormat) -> dict[int, int]:
    """{dimension index: block size} of the format's ``d // b`` levels (empty without blocks)."""
    out: dict[int, int] = {}
    for lv in fmt.levels:
        e = lv.expr
        if is_block(e) and e.op == "//":  # type: ignore[attr-defined]
            out[fmt.dimensions.index(e.lhs)] = int(e.rhs.value)  # type: ignore[attr-defined]
    return out
