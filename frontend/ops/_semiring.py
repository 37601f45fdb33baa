"""Semirings for ``matmul``/``einsum``: predefined names or a pair of small Python scalar functions.

A :class:`Semiring` holds ``add`` and ``mul`` (functions of two scalars, traced to MLIR with proxy values
supporting ``+ - * /`` and the helpers below) and the additive identity. Only stored entries take part:
``mul`` runs where both operands store an entry, ``add`` folds those products into the output.

    >>> sr = Semiring(add=maximum, mul=lambda x, y: x + y, identity=float("-inf"))   # max-plus
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lowering.contraction import SemiringOps
from lowering.scalar_fn import ScalarFn, kind, logical_and, logical_or, maximum, minimum, trace

__all__ = ["Semiring", "PREDEFINED", "get_semiring", "maximum", "minimum", "logical_and", "logical_or",
           "trace_unary"]


def _add(x: Any, y: Any) -> Any:
    return x + y


def _mul(x: Any, y: Any) -> Any:
    return x * y


@dataclass(frozen=True)
class Semiring:
    """``add``/``mul`` scalar functions and the additive identity (used for absent dense entries)."""

    add: Callable[[Any, Any], Any]
    mul: Callable[[Any, Any], Any]
    identity: Any = 0
    name: str = "custom"
    _traced: dict = field(default_factory=dict, compare=False, hash=False, repr=False)

    def __post_init__(self) -> None:
        if not callable(self.add) or not callable(self.mul):
            raise TypeError("a Semiring needs two callables, add(x, y) and mul(x, y)")

    def identity_for(self, elem: str) -> Any:
        """The identity as a value of element type ``elem`` (infinities become the extreme ints)."""
        ident = self.identity
        if kind(elem) == "int" and isinstance(ident, float) and ident in (float("inf"), float("-inf")):
            bits = int(elem[1:])
            return (1 << (bits - 1)) - 1 if ident > 0 else -(1 << (bits - 1))
        return ident

    def lowered(self, elem: str) -> SemiringOps:
        """The traced regions for element type ``elem`` (cached per type)."""
        got = self._traced.get(elem)
        if got is None:
            got = SemiringOps(self.name, trace(self.add, 2, elem), trace(self.mul, 2, elem),
                                  self.identity_for(elem))
            self._traced[elem] = got
        return got


PREDEFINED: dict[str, Semiring] = {
    "plus-times": Semiring(_add, _mul, 0, "plus-times"),
    "min-plus": Semiring(minimum, _add, float("inf"), "min-plus"),
    "max-plus": Semiring(maximum, _add, float("-inf"), "max-plus"),
    "or-and": Semiring(logical_or, logical_and, 0, "or-and"),
}


def get_semiring(semiring: Any) -> Semiring | None:
    """None for plain arithmetic (``None`` or ``"plus-times"``), else a :class:`Semiring` from a name,
    a Semiring, or an ``(add, mul)`` / ``(add, mul, identity)`` tuple of functions."""
    if semiring is None or semiring == "plus-times":
        return None
    if isinstance(semiring, Semiring):
        return semiring
    if isinstance(semiring, str):
        try:
            return PREDEFINED[semiring]
        except KeyError:
            raise ValueError(f"unknown semiring {semiring!r}; predefined: {', '.join(PREDEFINED)}, or pass "
                             "(add, mul[, identity]) functions") from None
    if isinstance(semiring, tuple) and len(semiring) in (2, 3):
        return Semiring(*semiring)
    raise TypeError(f"semiring must be a name, a Semiring or an (add, mul[, identity]) tuple, got "
                    f"{type(semiring).__name__}")


def trace_unary(fn: Callable[[Any], Any], elem: str) -> ScalarFn:
    """A one-argument scalar function (prolog/epilog) traced over ``elem``."""
    return trace(fn, 1, elem)
