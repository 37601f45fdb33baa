"""Static analysis of a format for the walker: which dimensions each level resolves, and how.

After level ``k`` the walker knows level coordinates ``0..k``; a dimension becomes known when its plain
level is walked, when both halves of a block (``d // s``, ``d % s``) are, or when one side of a
diagonal (``a - b``, ``a + b``) and the diagonal coordinate are. Read by duck typing (``levels``,
``dimensions``, ``expr.op/lhs/rhs``): no ``frontend`` import.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Resolve:
    """Dimension ``dim`` becomes known after a level.

    ``kind``: ``"plain"`` (level ``a`` is the dimension), ``"block"`` (``lvl[a] * size + lvl[b]``),
    ``"diag"`` (from diagonal level ``a`` and the known dimension ``other``: ``sign * other + lvl[a] *
    csign``). ``guard``: the value may fall outside the dimension's extent (block padding).
    ``stride``: change per step of the level that resolved it (``None``: not affine in it).
    """

    dim: int
    kind: str
    a: int
    b: int = -1
    size: int = 1
    other: int = -1
    sign: int = 1
    csign: int = 1
    guard: bool = False
    stride: int | None = 1


def _dim_index(fmt: Any, d: Any) -> int:
    return list(fmt.dimensions).index(d)


def is_plain(e: Any) -> bool:
    return not hasattr(e, "op")


def diagonal_parts(fmt: Any, e: Any) -> tuple[str, int, int]:
    """(op, lhs dim, rhs dim) of a diagonal expression ``a - b`` / ``a + b``."""
    return e.op, _dim_index(fmt, e.lhs), _dim_index(fmt, e.rhs)


def resolution_plan(fmt: Any, shape: Sequence[int]) -> list[list[Resolve]]:
    """For each level, the dimensions resolved right after it (in resolution order)."""
    known: set[int] = set()
    quot: dict[int, tuple[int, int]] = {}
    rem: dict[int, int] = {}
    diags: list[tuple[int, str, int, int]] = []
    plan: list[list[Resolve]] = []
    for k, lv in enumerate(fmt.levels):
        e = lv.expr
        step: list[Resolve] = []
        if is_plain(e):
            d = _dim_index(fmt, e)
            if d not in known:
                known.add(d)
                step.append(Resolve(d, "plain", k))
        elif e.op in ("//", "%"):
            d = _dim_index(fmt, e.lhs)
            if e.op == "//":
                quot[d] = (k, e.rhs.value)
            else:
                rem[d] = k
            if d in quot and d in rem and d not in known:
                qk, size = quot[d]
                known.add(d)
                step.append(Resolve(d, "block", qk, rem[d], size, guard=shape[d] % size != 0,
                                    stride=1 if rem[d] == k else size))
        else:
            op, a, b = diagonal_parts(fmt, e)
            diags.append((k, op, a, b))
        changed = True
        while changed:
            changed = False
            for dk, op, a, b in diags:
                if (a in known) == (b in known):
                    continue
                x, y = (a, b) if a in known else (b, a)
                if op == "+":      # y = c - x
                    sign, csign = -1, 1
                elif y == a:       # a - b = c, b known: a = b + c
                    sign, csign = 1, 1
                else:              # a - b = c, a known: b = a - c
                    sign, csign = 1, -1
                by_range = fmt.levels[k].format.value == "range"
                stride = sign if any(r.dim == x for r in step) else (csign if dk == k else 0)
                known.add(y)
                step.append(Resolve(y, "diag", dk, other=x, sign=sign, csign=csign, guard=not by_range,
                                    stride=stride))
                changed = True
        plan.append(step)
    missing = set(range(len(fmt.dimensions))) - known
    if missing:
        raise ValueError(f"format {fmt} does not determine dimension(s) {sorted(missing)} from its levels")
    return plan


def known_after(plan: list[list[Resolve]]) -> list[set[int]]:
    """``out[k]``: dimensions known once levels ``0..k-1`` are walked (``out[0]`` is empty)."""
    out: list[set[int]] = [set()]
    acc: set[int] = set()
    for step in plan:
        acc |= {r.dim for r in step}
        out.append(set(acc))
    return out


def last_level_strides(plan: list[list[Resolve]], ndims: int) -> dict[int, int | None]:
    """Stride of every dimension per step of the last level's coordinate."""
    strides: dict[int, int | None] = {d: 0 for d in range(ndims)}
    for r in plan[-1] if plan else []:
        strides[r.dim] = r.stride
    return strides
