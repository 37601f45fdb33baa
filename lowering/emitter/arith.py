"""Element-wise arithmetic for emitted kernels: plus-times (``arith``/``complex``) or a semiring's traced
``add``/``mul`` (:class:`lowering.contraction.SemiringOps`), on scalars or ``vector<lanes x T>``."""
from __future__ import annotations

from typing import Any

from ..scalar_fn import ScalarFn, constant_op, kind
from .builder import Builder, Value


def vtype(elem: str, lanes: int) -> str:
    return elem if lanes == 1 else f"vector<{lanes}x{elem}>"


def memref_type(shape: tuple[int, ...], elem: str) -> str:
    return f"memref<{''.join(f'{int(s)}x' for s in shape)}{elem}>"


class Arith:
    """``mul``/``add``/``scale`` for one element type and optional semiring."""

    def __init__(self, b: Builder, elem: str, semiring: Any = None) -> None:
        self.b = b
        self.elem = elem
        self.kind = kind(elem)
        self.semiring = semiring

    @property
    def vectorizable(self) -> bool:
        return self.semiring is None and self.kind in ("float", "int")

    def identity(self) -> Value:
        """The additive identity (hoisted constant)."""
        value = 0 if self.semiring is None else self.semiring.identity
        return self.constant(value)

    def constant(self, value: Any) -> Value:
        name = self.b.fresh("k")
        self.b.hoist(constant_op(name, value, self.elem))
        return Value(name, self.elem)

    def _binary(self, what: str, x: Value, y: Value) -> Value:
        t = x.type
        if self.kind == "complex":
            return self.b.op(f"complex.{what} {x}, {y} : {t}", t)
        if self.kind == "float":
            return self.b.op(f"arith.{what}f {x}, {y} fastmath<contract> : {t}", t)
        return self.b.op(f"arith.{what}i {x}, {y} : {t}", t)

    def _apply(self, fn: ScalarFn, *args: Value) -> Value:
        lines, res = fn.inline(tuple(a.name for a in args), self.b.fresh("s")[1:] + "_")
        for line in lines:
            self.b.emit(line)
        return Value(res, self.elem)

    def mul(self, x: Value, y: Value) -> Value:
        if self.semiring is not None:
            return self._apply(self.semiring.mul, x, y)
        return self._binary("mul", x, y)

    def add(self, acc: Value, x: Value) -> Value:
        if self.semiring is not None:
            return self._apply(self.semiring.add, acc, x)
        return self._binary("add", acc, x)

    def scale(self, x: Value, s: Value) -> Value:
        """Plus-times product with a scalar (alpha, beta), broadcast to ``x``'s lanes."""
        if x.type != s.type:
            s = self.b.op(f"vector.broadcast {s} : {s.type} to {x.type}", x.type)
        return self._binary("mul", x, s)

    def apply(self, fn: ScalarFn, x: Value) -> Value:
        """A traced one-argument function (prolog, epilog) on a scalar."""
        return self._apply(fn, x)

    def reduce(self, v: Value) -> Value:
        """Sum of a vector's lanes."""
        return self.b.op(f"vector.reduction <add>, {v} : {v.type} into {self.elem}", self.elem)
