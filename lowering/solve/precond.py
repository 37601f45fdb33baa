"""Preconditioners inside the iteration kernels, and the ILU(0) factorization kernel.

A preconditioner adds arguments to the solver function and emits ``dst = M^-1 src``:

- ``none``: the identity (solvers use ``src`` itself, no copy);
- ``jacobi``: ``dinv`` (inverse diagonal), ``dst = dinv * src``;
- ``ilu0``: ILU(0)/IC(0) factors stored on A's own CSR pattern (``lu`` values, ``dptr`` = position of
  each row's diagonal, ``uinv`` = inverse of U's diagonal); applied with the substitution emitter
  (unit lower over ``pos[i]..dptr[i]``, then upper over ``dptr[i]+1..pos[i+1]``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .builder import FuncBuilder
from .triangular import emit_rows
from .values import Block, IndexBuf, Lanes, check_choice, vec
from .vectors import SEQUENTIAL, Csr, Matrix, Team, sweep

KINDS = ("none", "jacobi", "ilu0")


@dataclass(frozen=True)
class Preconditioner:
    """One kind of preconditioner for matrices of element type ``elem``."""

    kind: str
    elem: str
    index_width: int

    def __post_init__(self) -> None:
        check_choice("preconditioner", self.kind, KINDS)

    @property
    def identity(self) -> bool:
        return self.kind == "none"

    def args(self) -> list[tuple[str, str]]:
        """Extra function arguments (name, type), after the matrix buffers."""
        E, idx = self.elem, IndexBuf(self.index_width)
        if self.kind == "jacobi":
            return [("dinv", vec(E))]
        if self.kind == "ilu0":
            return [("lu", vec(E)), ("dptr", idx.memref), ("uinv", vec(E))]
        return []

    def apply(self, f: FuncBuilder, A: Matrix, n: str, src: str, dst: str, team: Team = SEQUENTIAL) -> None:
        """Emit ``dst = M^-1 src`` (``dst`` != ``src``); ILU(0)'s substitutions stay sequential (CSR ``A`` only)."""
        E = self.elem
        if self.kind == "jacobi":
            def body(i: str, L: Lanes) -> list[str]:
                L.st(f, f.mul(L.ld(f, "%dinv", i), L.ld(f, src, i), L.t), dst, i)
                return []
            sweep(f, n, E, body, team=team)
        elif self.kind == "ilu0":
            if not isinstance(A, Csr):
                raise ValueError("ILU(0) walks A's CSR pattern; it has no DIA form")
            idx, blk = A.idx, Block(E)
            c1 = f.c(1)

            def lower_range(f: FuncBuilder, i: str) -> tuple[str, str]:
                return idx.load(f, A.pos, i), idx.load(f, "%dptr", i)

            def upper_range(f: FuncBuilder, i: str) -> tuple[str, str]:
                return f.add(idx.load(f, "%dptr", i), c1, "index"), idx.load(f, A.pos, f.add(i, c1, "index"))

            common: dict[str, Any] = dict(block=1, blk=blk, idx=idx, pos=A.pos, crd=A.crd, val="%lu", diag="%uinv",
                          nb=n, filtered=False)
            emit_rows(f, lower=True, unit=True, b=src, x=dst, bounds=lower_range, **common)
            emit_rows(f, lower=False, unit=False, b=dst, x=dst, bounds=upper_range, **common)
        else:
            raise ValueError("the identity preconditioner has no apply(): use the source vector")


def ilu0_function(elem: str, index_width: int) -> str:
    """``@ilu0_<elem>_i<w>(pos, crd, lu, dptr)``: ILU(0) in place on ``lu`` (a copy of A's values).

    Needs sorted column indices and ``dptr[i]`` = position of the diagonal of row ``i``.
    """
    idx = IndexBuf(index_width)
    E = elem
    f = FuncBuilder(f"ilu0_{elem}_i{index_width}", [("pos", idx.memref), ("crd", idx.memref),
                                                      ("lu", vec(E)), ("dptr", idx.memref)])
    c0, c1, none = f.c(0), f.c(1), f.c(-1)
    n = f.sub(f.dim("%pos", idx.memref), c1, "index")
    iw = f.alloc("memref<?xindex>", n)
    with f.loop(c0, n) as lp:
        f.store(none, iw, lp.iv, "memref<?xindex>")
    with f.loop(c0, n) as rows:
        i = rows.iv
        lo = idx.load(f, "%pos", i)
        hi = idx.load(f, "%pos", f.add(i, c1, "index"))
        with f.loop(lo, hi) as kl:
            f.store(kl.iv, iw, idx.load(f, "%crd", kl.iv), "memref<?xindex>")
        with f.loop(lo, idx.load(f, "%dptr", i)) as kl:
            j = idx.load(f, "%crd", kl.iv)
            dj = idx.load(f, "%dptr", j)
            lik = f.div(f.load("%lu", kl.iv, vec(E)), f.load("%lu", dj, vec(E)), E)
            f.store(lik, "%lu", kl.iv, vec(E))
            jend = idx.load(f, "%pos", f.add(j, c1, "index"))
            with f.loop(f.add(dj, c1, "index"), jend) as ul:
                p = f.load(iw, idx.load(f, "%crd", ul.iv), "memref<?xindex>")
                with f.if_(f.cmpi("ne", p, none)):
                    upd = f.sub(f.load("%lu", p, vec(E)), f.mul(lik, f.load("%lu", ul.iv, vec(E)), E), E)
                    f.store(upd, "%lu", p, vec(E))
        with f.loop(lo, hi) as kl:
            f.store(none, iw, idx.load(f, "%crd", kl.iv), "memref<?xindex>")
    f.dealloc(iw, "memref<?xindex>")
    f.ret()
    return f.finish()
