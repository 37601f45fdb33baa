"""Validation of a :class:`TensorFormat`: every rule raises a ``ValueError`` naming the problem."""
from __future__ import annotations

from collections import Counter
from typing import Protocol

from ._expressions import BinaryExpr, Constant, Dimension, Expr, is_block, is_diagonal, is_dimension
from ._levels import RESERVED_NAMES, Level, LevelFormat


class Described(Protocol):
    """What the rules read of a format under construction: its dimensions and levels."""

    @property
    def dimensions(self) -> tuple[Dimension, ...]: ...
    @property
    def levels(self) -> tuple[Level, ...]: ...


def check_format(fmt: Described) -> None:
    """Raises ``ValueError`` if ``fmt`` does not describe a storage scheme."""
    _check_dimensions(fmt)
    for lv in fmt.levels:
        _check_expression(lv.expr, set(fmt.dimensions))
    _check_levels(fmt)
    _check_blocks(fmt)
    _check_diagonals(fmt)
    _check_coverage(fmt)


def _check_dimensions(fmt: Described) -> None:
    counts = Counter(d.name for d in fmt.dimensions)
    for name, n in counts.items():
        if n > 1:
            raise ValueError(f"repeated dimension {name!r} in the dimension list")
        if name in RESERVED_NAMES:
            raise ValueError(f"{name!r} is a reserved word and cannot name a dimension")


def _check_expression(e: Expr, dims: set[Dimension]) -> None:
    for d in e.dimensions():
        if d not in dims:
            raise ValueError(f"level expression {e} uses unknown dimension {d.name!r}")
    if is_dimension(e):
        return
    if isinstance(e, Constant):
        raise ValueError(f"a level expression must use a dimension, got the constant {e}")
    assert isinstance(e, BinaryExpr)
    if e.op == "*":
        raise ValueError(f"multiplication is not a level expression: {e}")
    if e.op in ("//", "%"):
        if not isinstance(e.lhs, Dimension):
            raise ValueError(f"nested expression {e}: '{e.op}' applies to a single dimension")
        if not isinstance(e.rhs, Constant):
            raise ValueError(f"division by a non-constant in {e}: the divisor must be a positive integer")
        if e.rhs.value <= 0:
            raise ValueError(f"division by the non-positive constant {e.rhs.value} in {e}")
        return
    # + and -
    if not (isinstance(e.lhs, Dimension) and isinstance(e.rhs, Dimension)):
        if isinstance(e.lhs, BinaryExpr) or isinstance(e.rhs, BinaryExpr):
            raise ValueError(f"nested expression {e}: '{e.op}' combines exactly two dimensions")
        raise ValueError(f"{e}: '{e.op}' combines two dimensions, not a dimension and a constant")
    if e.lhs == e.rhs:
        raise ValueError(f"{e}: '{e.op}' needs two different dimensions")


def _check_levels(fmt: Described) -> None:
    seen: set = set()
    batch_done = False
    for k, lv in enumerate(fmt.levels):
        if lv.expr in seen:
            raise ValueError(f"repeated level expression {lv.expr}")
        seen.add(lv.expr)
        f = lv.format
        if f is LevelFormat.BATCH:
            if batch_done:
                raise ValueError(f"batch level {lv.expr} after a non-batch level: batch levels must lead")
            if not is_dimension(lv.expr):
                raise ValueError(f"batch level {lv.expr} must be a plain dimension")
        else:
            batch_done = True
        if f is LevelFormat.RANGE and not is_dimension(lv.expr):
            raise ValueError(f"range on the compound expression {lv.expr}: range levels take a plain "
                             "dimension that a diagonal level (i + j, j - i) before them shares")
        if f is LevelFormat.DELTA and not is_dimension(lv.expr):
            raise ValueError(f"delta level {lv.expr} must be a plain dimension")
        if f is LevelFormat.SINGLETON and k == 0:
            raise ValueError("a singleton level cannot be the first level: it follows a compressed level")
        if f is LevelFormat.STRUCTURED:
            n, m = lv.structure  # type: ignore[misc]
            if is_block(lv.expr) and lv.expr.op == "%" and lv.expr.rhs.value != m:  # type: ignore[attr-defined]
                raise ValueError(f"structured[{n}, {m}] on {lv.expr}: the modulus must equal m={m}")
            if is_diagonal(lv.expr):
                raise ValueError(f"structured level {lv.expr} must be a dimension or 'i % m'")


def _check_blocks(fmt: Described) -> None:
    div: dict[Dimension, int] = {}
    mod: dict[Dimension, int] = {}
    for lv in fmt.levels:
        e = lv.expr
        if is_block(e):
            table = div if e.op == "//" else mod  # type: ignore[attr-defined]
            if e.lhs in table:  # type: ignore[attr-defined]
                raise ValueError(f"dimension {e.lhs} is blocked twice")  # type: ignore[attr-defined]
            table[e.lhs] = e.rhs.value  # type: ignore[attr-defined]
    for d, c in div.items():
        if d not in mod:
            raise ValueError(f"{d} // {c} has no matching {d} % {c} level")
        if mod[d] != c:
            raise ValueError(f"{d} // {c} and {d} % {mod[d]} use different block sizes")
    for d, c in mod.items():
        if d not in div:
            raise ValueError(f"{d} % {c} has no matching {d} // {c} level")


def _check_diagonals(fmt: Described) -> None:
    ranges = {lv.expr: k for k, lv in enumerate(fmt.levels) if lv.format is LevelFormat.RANGE}
    used: set = set()
    for k, lv in enumerate(fmt.levels):
        e = lv.expr
        if not is_diagonal(e):
            continue
        pair = [d for d in (e.lhs, e.rhs) if d in ranges]  # type: ignore[attr-defined]
        if not pair:
            raise ValueError(f"diagonal level {e} needs a range level on {e.lhs} or {e.rhs} "  # type: ignore[attr-defined]
                             "after it (e.g. '(i, j) -> (j - i : compressed, i : range)')")
        d = pair[0]
        if ranges[d] < k:
            raise ValueError(f"range level {d} must come after the diagonal level {e}")
        used.add(d)
    for d in ranges:
        if d not in used:
            raise ValueError(f"range level {d} has no diagonal level (i + j, j - i) before it")


def _check_coverage(fmt: Described) -> None:
    """Every dimension is recovered from the levels exactly once."""
    sources: Counter = Counter()
    for lv in fmt.levels:
        e = lv.expr
        if is_dimension(e):
            if lv.format is not LevelFormat.RANGE:
                sources[e] += 1
        elif is_block(e) and e.op == "//":  # type: ignore[attr-defined]
            sources[e.lhs] += 1  # type: ignore[attr-defined]
        elif is_diagonal(e):
            ranged = {x.expr for x in fmt.levels if x.format is LevelFormat.RANGE}
            a, b = e.lhs, e.rhs  # type: ignore[attr-defined]
            for d, other in ((a, b), (b, a)):
                if d in ranged:
                    sources[d] += 1
                    sources[other] += 1
                    break
    for d in fmt.dimensions:
        if sources[d] == 0:
            raise ValueError(f"unused dimension {d.name!r}: no level stores it")
        if sources[d] > 1:
            raise ValueError(f"dimension {d.name!r} is stored by more than one level")
