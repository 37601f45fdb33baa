"""Level expressions of the format DSL: dimensions combined with ``+``, ``-``, ``//`` and ``%``.

``i, j = Dimension("i"), Dimension("j")`` then ``j - i``, ``i // 2`` or ``i % 2`` describe a level
coordinate as a function of dimension coordinates.  Expressions are immutable and hashable; which
combinations are allowed in a format is checked by :class:`frontend.format._formats.TensorFormat`.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Union

# Operators in the DSL's own spelling; the MLIR spelling is used by ``to_mlir``.
OPERATORS = ("+", "-", "//", "%", "*")
MLIR_OPERATORS = {"+": "+", "-": "-", "//": "floordiv", "%": "mod", "*": "*"}

Operand = Union["Expr", int]


class Expr:
    """Base of level expressions; Python operators build :class:`BinaryExpr` nodes."""

    def __add__(self, other: Operand) -> BinaryExpr:
        return BinaryExpr("+", self, _operand(other))

    def __radd__(self, other: Operand) -> BinaryExpr:
        return BinaryExpr("+", _operand(other), self)

    def __sub__(self, other: Operand) -> BinaryExpr:
        return BinaryExpr("-", self, _operand(other))

    def __rsub__(self, other: Operand) -> BinaryExpr:
        return BinaryExpr("-", _operand(other), self)

    def __floordiv__(self, other: Operand) -> BinaryExpr:
        return BinaryExpr("//", self, _operand(other))

    def __mod__(self, other: Operand) -> BinaryExpr:
        return BinaryExpr("%", self, _operand(other))

    def __mul__(self, other: Operand) -> BinaryExpr:
        return BinaryExpr("*", self, _operand(other))

    __rmul__ = __mul__

    def dimensions(self) -> tuple[Dimension, ...]:
        """The dimensions this expression reads, in order of appearance."""
        raise TypeError(f"not a level expression: {self!r}")

    def evaluate(self, values: Mapping[Dimension, Any]) -> Any:
        """Evaluates on ints or NumPy arrays (vectorized)."""
        raise TypeError(f"not a level expression: {self!r}")

    def render(self, mlir: bool = False) -> str:
        raise TypeError(f"not a level expression: {self!r}")

    def __str__(self) -> str:
        return self.render()


@dataclass(frozen=True, eq=True)
class Dimension(Expr):
    """A named tensor dimension, e.g. ``Dimension("i")``."""

    name: str

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.isidentifier():
            raise ValueError(f"dimension name must be an identifier, got {self.name!r}")

    def dimensions(self) -> tuple[Dimension, ...]:
        return (self,)

    def evaluate(self, values: Mapping[Dimension, Any]) -> Any:
        return values[self]

    def render(self, mlir: bool = False) -> str:
        return self.name

    def __repr__(self) -> str:
        return f"Dimension({self.name!r})"


@dataclass(frozen=True, eq=True)
class Constant(Expr):
    """An integer constant inside an expression (only valid as a divisor or modulus)."""

    value: int

    def dimensions(self) -> tuple[Dimension, ...]:
        return ()

    def evaluate(self, values: Mapping[Dimension, Any]) -> Any:
        return self.value

    def render(self, mlir: bool = False) -> str:
        return str(self.value)


@dataclass(frozen=True, eq=True)
class BinaryExpr(Expr):
    """``lhs op rhs`` with ``op`` one of ``+ - // % *``."""

    op: str
    lhs: Expr
    rhs: Expr

    def dimensions(self) -> tuple[Dimension, ...]:
        seen: list[Dimension] = []
        for d in self.lhs.dimensions() + self.rhs.dimensions():
            if d not in seen:
                seen.append(d)
        return tuple(seen)

    def evaluate(self, values: Mapping[Dimension, Any]) -> Any:
        a, b = self.lhs.evaluate(values), self.rhs.evaluate(values)
        if self.op == "+":
            return a + b
        if self.op == "-":
            return a - b
        if self.op == "//":
            return a // b
        if self.op == "%":
            return a % b
        return a * b

    def render(self, mlir: bool = False) -> str:
        op = MLIR_OPERATORS[self.op] if mlir else self.op
        return f"{_wrap(self.lhs, mlir)} {op} {_wrap(self.rhs, mlir)}"


def _wrap(e: Expr, mlir: bool) -> str:
    text = e.render(mlir)
    return f"({text})" if isinstance(e, BinaryExpr) else text


def _operand(x: Operand) -> Expr:
    if isinstance(x, Expr):
        return x
    if isinstance(x, bool) or not isinstance(x, int):
        raise TypeError(f"level expressions combine dimensions and integer constants, got {x!r}")
    return Constant(x)


def is_dimension(e: Expr) -> bool:
    return isinstance(e, Dimension)


def is_block(e: Expr) -> bool:
    """``i // c`` or ``i % c``."""
    return isinstance(e, BinaryExpr) and e.op in ("//", "%")


def is_diagonal(e: Expr) -> bool:
    """``i + j`` or ``j - i`` (two distinct dimensions)."""
    return isinstance(e, BinaryExpr) and e.op in ("+", "-")
