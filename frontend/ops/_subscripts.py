"""Einsum subscripts: ``"ik,kj->ij"`` parsed and checked."""
from __future__ import annotations


def parse_subscripts(subscripts: str, n: int) -> tuple[tuple[str, ...], str]:
    """``"ik,kj->ij"`` -> (("ik", "kj"), "ij"); without ``->`` the output is the letters seen once, sorted."""
    if not isinstance(subscripts, str):
        raise TypeError("subscripts must be a string like 'ik,kj->ij'")
    text = subscripts.replace(" ", "")
    lhs, arrow, rhs = text.partition("->")
    ins = tuple(lhs.split(","))
    if len(ins) != n:
        raise ValueError(f"subscripts {subscripts!r} name {len(ins)} operands, got {n}")
    letters = "".join(ins)
    if not all(ch.isalpha() for ch in letters + rhs):
        raise ValueError(f"subscripts {subscripts!r}: use letters only (no '...')")
    if not arrow:
        rhs = "".join(sorted(ch for ch in set(letters) if letters.count(ch) == 1))
    for s in ins:
        if len(set(s)) != len(s):
            raise ValueError(f"subscripts {subscripts!r}: a letter repeated within one operand (a diagonal) is "
                             "not supported")
    if len(set(rhs)) != len(rhs) or any(ch not in letters for ch in rhs):
        raise ValueError(f"subscripts {subscripts!r}: output letters must be distinct and appear in the inputs")
    return ins, rhs
