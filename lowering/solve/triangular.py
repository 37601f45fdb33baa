"""Forward/backward substitution emitted as ``scf.for`` loops over level buffers.

Three walks cover the formats (one emitter each, parametrized by triangle, unit diagonal, block size,
element type, index width and number of right-hand sides):

- ``rows``: compressed rows of ``block x block`` blocks (CSR is ``block == 1``, BSR with square blocks);
  each row's dot product is accumulated in registers (a vector for several right-hand sides).
  ``ranges`` is the same walk over precomputed ``[lo, hi)`` entry ranges of each row's strictly
  triangular part (``p[2i]``, ``p[2i+1]``; sorted CSR), so the loop has no compare.
- ``cols``: compressed columns (CSC): column-oriented updates ``x[i] -= a_ij * x[j]``.
- ``coo``: row-sorted coordinates, one pass over the entries (backwards for upper triangles);
  a row is finished (divided by its diagonal) at its last entry.

Entries outside the requested triangle are ignored; the diagonal comes from a separate buffer so it
is read once and checked for zeros before the kernel runs: for ``block == 1`` it holds the *inverse*
diagonal (a multiply, not a divide, on the critical path), for blocks the dense diagonal blocks
(``nb * block * block`` values). Unit-diagonal solves never read it.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .builder import FuncBuilder
from .values import Block, IndexBuf, check_choice, vec

LAYOUTS = ("rows", "ranges", "cols", "coo")


@dataclass(frozen=True)
class TriangularSpec:
    """Everything that changes the generated code of one substitution kernel."""

    layout: str
    lower: bool
    unit: bool
    elem: str
    index_width: int
    nrhs: int = 1
    block: int = 1

    def __post_init__(self) -> None:
        check_choice("layout", self.layout, LAYOUTS)
        if self.block < 1 or (self.block > 1 and self.layout != "rows"):
            raise ValueError("blocks (block > 1) are supported for the 'rows' layout only")
        Block(self.elem, self.nrhs)
        IndexBuf(self.index_width)

    @property
    def name(self) -> str:
        tri = "lower" if self.lower else "upper"
        unit = "_unit" if self.unit else ""
        return f"trsv_{self.layout}_{tri}{unit}_b{self.block}_r{self.nrhs}_{self.elem}_i{self.index_width}"


Bounds = Callable[[FuncBuilder, str], tuple[str, str]]


def emit_rows(f: FuncBuilder, *, lower: bool, unit: bool, block: int, blk: Block, idx: IndexBuf,
              pos: str, crd: str, val: str, diag: str, b: str, x: str, nb: str,
              bounds: Bounds | None = None, filtered: bool = True) -> None:
    """Substitution over compressed block rows, ``x`` may be ``b`` (in place).

    ``bounds(f, I)`` gives the entry range of block row ``I`` (default ``pos[I]..pos[I+1]``);
    with ``filtered=False`` every entry in that range is taken to lie strictly in the triangle.
    """
    T, E, bs = blk.row, blk.elem, block
    c1 = f.c(1)
    with f.loop(f.c(0), nb) as outer:
        big = outer.iv if lower else f.sub(f.sub(nb, c1, "index"), outer.iv, "index")
        if bounds is None:
            lo = idx.load(f, pos, big)
            hi = idx.load(f, pos, f.add(big, c1, "index"))
        else:
            lo, hi = bounds(f, big)
        base = f.mul(big, f.c(bs), "index")
        dbase = f.mul(big, f.c(bs * bs), "index")
        with f.loop(f.c(0), f.c(bs)) as rl:
            r = rl.iv if lower else f.sub(f.c(bs - 1), rl.iv, "index")
            gi = f.add(base, r, "index")
            acc0 = blk.load(f, b, gi)
            with f.loop(lo, hi, [(acc0, T)]) as kl:
                bj = idx.load(f, crd, kl.iv)
                vbase = f.add(f.mul(kl.iv, f.c(bs * bs), "index"), f.mul(r, f.c(bs), "index"), "index")
                xbase = f.mul(bj, f.c(bs), "index")

                def update(acc: str, vbase: str = vbase, xbase: str = xbase) -> str:
                    with f.loop(f.c(0), f.c(bs), [(acc, T)]) as cl:
                        v = f.load(val, f.add(vbase, cl.iv, "index"), vec(E))
                        xv = blk.load(f, x, f.add(xbase, cl.iv, "index"))
                        f.yield_(cl, f.sub(cl.args[0], f.mul(blk.splat(f, v), xv, T), T))
                    return cl.results[0]

                if filtered:
                    inside = f.cmpi("ult" if lower else "ugt", bj, big)
                    with f.if_(inside, [T]) as br:
                        br.yield_(update(kl.args[0]))
                        br.else_()
                        br.yield_(kl.args[0])
                    f.yield_(kl, br.results[0])
                else:
                    f.yield_(kl, update(kl.args[0]))
            # the diagonal block: entries before (lower) or after (upper) r in row r
            drow = f.add(dbase, f.mul(r, f.c(bs), "index"), "index")
            clo, chi = (f.c(0), r) if lower else (f.add(r, c1, "index"), f.c(bs))
            with f.loop(clo, chi, [(kl.results[0], T)]) as dl:
                v = f.load(diag, f.add(drow, dl.iv, "index"), vec(E))
                xv = blk.load(f, x, f.add(base, dl.iv, "index"))
                f.yield_(dl, f.sub(dl.args[0], f.mul(blk.splat(f, v), xv, T), T))
            acc = dl.results[0]
            if not unit:
                d = blk.splat(f, f.load(diag, f.add(drow, r, "index"), vec(E)))
                acc = f.mul(acc, d, T) if bs == 1 else f.div(acc, d, T)
            blk.store(f, acc, x, gi)


def _copy(f: FuncBuilder, blk: Block, src: str, dst: str, n: str) -> None:
    with f.loop(f.c(0), n) as lp:
        blk.store(f, blk.load(f, src, lp.iv), dst, lp.iv)


def emit_cols(f: FuncBuilder, *, lower: bool, unit: bool, blk: Block, idx: IndexBuf, pos: str, crd: str,
              val: str, diag: str, b: str, x: str, n: str) -> None:
    """Column-oriented substitution over compressed columns (CSC)."""
    T, E = blk.row, blk.elem
    c1 = f.c(1)
    _copy(f, blk, b, x, n)
    with f.loop(f.c(0), n) as outer:
        j = outer.iv if lower else f.sub(f.sub(n, c1, "index"), outer.iv, "index")
        xj = blk.load(f, x, j)
        if not unit:
            xj = f.mul(xj, blk.splat(f, f.load(diag, j, vec(E))), T)
            blk.store(f, xj, x, j)
        lo = idx.load(f, pos, j)
        hi = idx.load(f, pos, f.add(j, c1, "index"))
        with f.loop(lo, hi) as kl:
            i = idx.load(f, crd, kl.iv)
            inside = f.cmpi("ugt" if lower else "ult", i, j)
            with f.if_(inside):
                v = f.load(val, kl.iv, vec(E))
                xi = blk.load(f, x, i)
                blk.store(f, f.sub(xi, f.mul(blk.splat(f, v), xj, T), T), x, i)


def emit_coo(f: FuncBuilder, *, lower: bool, unit: bool, blk: Block, idx: IndexBuf, rows: str, cols: str,
             val: str, diag: str, b: str, x: str, n: str) -> None:
    """One pass over row-sorted coordinates (backwards for upper triangles)."""
    T, E = blk.row, blk.elem
    c0, c1 = f.c(0), f.c(1)
    _copy(f, blk, b, x, n)
    nnz = f.dim(val, vec(E))
    with f.loop(c0, nnz) as lp:
        k = lp.iv if lower else f.sub(f.sub(nnz, c1, "index"), lp.iv, "index")
        i = idx.load(f, rows, k)
        j = idx.load(f, cols, k)
        inside = f.cmpi("ult" if lower else "ugt", j, i)
        with f.if_(inside):
            v = f.load(val, k, vec(E))
            xi = blk.load(f, x, i)
            xj = blk.load(f, x, j)
            blk.store(f, f.sub(xi, f.mul(blk.splat(f, v), xj, T), T), x, i)
        if not unit:
            if lower:
                nk = f.add(k, c1, "index")
                valid = f.cmpi("ult", nk, nnz)
            else:
                nk = f.sub(k, c1, "index")
                valid = f.cmpi("ugt", k, c0)
            ni = idx.load(f, rows, f.select(valid, nk, k, "index"))
            same = f.andi(valid, f.cmpi("eq", ni, i))
            last = f.op(f"arith.xori {same}, {f.c(1, 'i1')} : i1", "b")
            with f.if_(last):
                xi = blk.load(f, x, i)
                blk.store(f, f.mul(xi, blk.splat(f, f.load(diag, i, vec(E))), T), x, i)


def triangular_function(spec: TriangularSpec) -> str:
    """``func.func @<spec.name>(pos|ranges|rows, crd|cols, val, diag, b, x)``: solves into ``x``."""
    blk, idx = Block(spec.elem, spec.nrhs), IndexBuf(spec.index_width)
    args = [("p", idx.memref), ("q", idx.memref), ("val", vec(spec.elem)), ("diag", vec(spec.elem)),
            ("b", blk.memref), ("x", blk.memref)]
    f = FuncBuilder(spec.name, args)
    common: dict[str, Any] = dict(lower=spec.lower, unit=spec.unit, blk=blk, idx=idx, val="%val", diag="%diag",
                  b="%b", x="%x")
    if spec.layout == "rows":
        nb = f.sub(f.dim("%p", idx.memref), f.c(1), "index")
        emit_rows(f, block=spec.block, pos="%p", crd="%q", nb=nb, **common)
    elif spec.layout == "ranges":
        nb = f.op(f"arith.divui {f.dim('%p', idx.memref)}, {f.c(2)} : index", "n")

        def ranges(f: FuncBuilder, i: str) -> tuple[str, str]:
            at = f.mul(i, f.c(2), "index")
            return idx.load(f, "%p", at), idx.load(f, "%p", f.add(at, f.c(1), "index"))
        emit_rows(f, block=1, pos="%p", crd="%q", nb=nb, bounds=ranges, filtered=False, **common)
    elif spec.layout == "cols":
        n = f.sub(f.dim("%p", idx.memref), f.c(1), "index")
        emit_cols(f, pos="%p", crd="%q", n=n, **common)
    else:
        emit_coo(f, rows="%p", cols="%q", n=f.dim("%b", blk.memref), **common)
    f.ret()
    return f.finish()


def triangular_module(spec: TriangularSpec) -> str:
    """A module holding the substitution kernel of ``spec``."""
    return "module {\n" + triangular_function(spec) + "\n}\n"
