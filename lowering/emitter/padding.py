"""Padding in walked operands: formats that store zeros only for their layout (block fill, diagonal fill,
delta gap entries, n:m empty slots; ``frontend.format.stores_padding``) hold no entry where they store a
zero. Where that matters (a semiring's ``mul``/``add``, a prolog: ``f(0)`` need not be neutral) the walker
skips such slots with a guard on the stored value (:func:`nonzero`)."""
from __future__ import annotations

from typing import Any

from frontend.format import stores_padding

from ..scalar_fn import constant_op, kind
from .builder import Builder, Value, element_type


def skips_padding(c: Any, w: int) -> bool:
    """Whether the walk of input ``w`` of contraction ``c`` must skip stored zeros: its format stores
    padding and the contraction has a semiring, or a prolog on that operand."""
    fmt = c.inputs[w].fmt
    return (fmt is not None and (c.semiring is not None or (c.prolog is not None and w == 0))
            and stores_padding(fmt))


def nonzero(b: Builder, values: Value, at: str) -> Value:
    """An ``i1``: whether ``values[at]`` is not zero (NaN counts as nonzero)."""
    elem = element_type(values.type)
    v = b.op(f"memref.load {values}[{at}] : {values.type}", elem)
    k = kind(elem)
    if k == "complex":
        zero = b.fresh("k")
        b.hoist(constant_op(zero, 0, elem))
        return b.op(f"complex.neq {v}, {zero} : {elem}", "i1", "b")
    if k == "float":
        return b.op(f"arith.cmpf une, {v}, {b.const('0.0', elem)} : {elem}", "i1", "b")
    return b.op(f"arith.cmpi ne, {v}, {b.const(0, elem)} : {elem}", "i1", "b")
