"""The solvers' MLIR function builder: string values, arithmetic shorthands, context-manager regions.

Built on the shared core ``lowering.mlir_text`` (names, lines, hoisted constants, loads, casts); used by
the solver emitters (pure string building, no ``mlir`` import)::

    f = FuncBuilder("axpy", [("x", "memref<?xf64>"), ("a", "f64")])
    n = f.op("memref.dim %x, %c0 : memref<?xf64>")  # constants: f.c(0) -> "%c0"
    with f.loop(f.c(0), n) as lp:
        ...
    text = f.finish()
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from ..mlir_text import MlirText

_INT_TYPES = ("index", "i1", "i8", "i16", "i32", "i64")


@dataclass
class Loop:
    """An open ``scf.for``/``scf.while`` region: induction variable, region arguments, results."""

    iv: str
    args: list[str]
    results: list[str]
    types: list[str]
    yielded: bool = False


@dataclass
class FuncBuilder(MlirText):
    """Builds one ``func.func``; ``finish()`` returns its text."""

    name: str
    args: Sequence[tuple[str, str]]
    results: Sequence[str] = ()
    private: bool = False

    def __post_init__(self) -> None:
        MlirText.__init__(self, depth=1)

    # ----- values ------------------------------------------------------------------------------------
    def op(self, rhs: str, hint: str = "v") -> str:
        """Emit ``%new = rhs`` and return ``%new``."""
        return self.assign(rhs, hint)

    def c(self, value: float | int, ty: str = "index") -> str:
        """A constant of type ``ty``, defined once at the function entry."""
        key = repr(value)
        return self.constant(key, ty, key if ty in _INT_TYPES else _float_literal(float(key)))

    # ----- arithmetic shorthands (``ty`` is the operands' type) ---------------------------------------
    def bin(self, opname: str, a: str, b: str, ty: str) -> str:
        fm = " fastmath<contract>" if opname in ("arith.addf", "arith.subf", "arith.mulf") else ""
        return self.op(f"{opname} {a}, {b}{fm} : {ty}")

    def add(self, a: str, b: str, ty: str) -> str:
        return self.bin("arith.addi" if ty in _INT_TYPES else "arith.addf", a, b, ty)

    def sub(self, a: str, b: str, ty: str) -> str:
        return self.bin("arith.subi" if ty in _INT_TYPES else "arith.subf", a, b, ty)

    def mul(self, a: str, b: str, ty: str) -> str:
        return self.bin("arith.muli" if ty in _INT_TYPES else "arith.mulf", a, b, ty)

    def div(self, a: str, b: str, ty: str) -> str:
        return self.bin("arith.divf", a, b, ty)

    def cmpf(self, pred: str, a: str, b: str, ty: str = "f64") -> str:
        return self.op(f"arith.cmpf {pred}, {a}, {b} : {ty}", "b")

    def select(self, cond: str, a: str, b: str, ty: str) -> str:
        return self.op(f"arith.select {cond}, {a}, {b} : {ty}")

    def dim(self, mem: str, mtype: str, axis: int = 0) -> str:
        return self.op(f"memref.dim {mem}, {self.c(axis)} : {mtype}", "n")

    def alloc(self, mtype: str, *sizes: str) -> str:
        return self.op(f"memref.alloc({', '.join(sizes)}) : {mtype}", "m")

    def dealloc(self, mem: str, mtype: str) -> None:
        self.emit(f"memref.dealloc {mem} : {mtype}")

    # ----- structured control flow ---------------------------------------------------------------------
    @contextmanager
    def loop(self, lo: str, hi: str, inits: Sequence[tuple[str, str]] = (), step: str | None = None
             ) -> Iterator[Loop]:
        """``scf.for`` from ``lo`` to ``hi``; ``inits``: (initial value, type) of each iter_arg.

        With iter_args, the body must end with ``yield_(lp, ...)``; results are ``lp.results``.
        """
        iv, res = self.fresh("i"), self.fresh("r")
        args = [self.fresh("a") for _ in inits]
        types = [t for _, t in inits]
        lp = Loop(iv, args, [f"{res}#{k}" for k in range(len(inits))], types)
        self.emit(self.for_head(res, iv, lo, hi, step or self.c(1), args, [v for v, _ in inits], types))
        with self.nested():
            yield lp
            if inits and not lp.yielded:
                raise ValueError("a loop with iter_args needs yield_()")
        self.emit("}")

    def yield_(self, lp: Loop, *values: str) -> None:
        if values:
            self.emit_yield(values, lp.types)
        lp.yielded = True

    @contextmanager
    def while_(self, inits: Sequence[tuple[str, str]]) -> Iterator[_While]:
        """``scf.while`` over ``inits``: call ``w.cond(flag)`` in the before-region, then the body."""
        w = _While(self, inits)
        yield w
        w.close()

    @contextmanager
    def if_(self, cond: str, types: Sequence[str] = ()) -> Iterator[_If]:
        """``scf.if``; with result ``types`` both branches must yield (``br.else_()`` switches)."""
        br = _If(self, cond, list(types))
        yield br
        br.close()

    # ----- output ------------------------------------------------------------------------------------
    def ret(self, *values: str) -> None:
        if values:
            self.emit(f"func.return {', '.join(values)} : {', '.join(self.results)}")
        else:
            self.emit("func.return")

    def finish(self) -> str:
        vis = "private " if self.private else ""
        sig = ", ".join(f"%{n}: {t}" for n, t in self.args)
        res = f" -> ({', '.join(self.results)})" if self.results else ""
        head = f"  func.func {vis}@{self.name}({sig}){res} {{"
        return "\n".join([head, *self.constant_lines(2), *self.lines, "  }"])


def _float_literal(v: float) -> str:
    if v != v:
        return "0x7FF8000000000000"
    if v in (float("inf"), float("-inf")):
        return "0x7FF0000000000000" if v > 0 else "0xFFF0000000000000"
    return repr(v)


class _While:
    def __init__(self, f: FuncBuilder, inits: Sequence[tuple[str, str]]) -> None:
        self.f = f
        self.types = [t for _, t in inits]
        res = f.fresh("w")
        self.results = [f"{res}#{k}" for k in range(len(inits))]
        self.before = [f.fresh("a") for _ in inits]
        self.after = [f.fresh("a") for _ in inits]
        tl = ", ".join(self.types)
        pairs = ", ".join(f"{a} = {v}" for a, (v, _) in zip(self.before, inits))
        f.emit(f"{res}:{len(inits)} = scf.while ({pairs}) : ({tl}) -> ({tl}) {{")
        f.depth += 1
        self.stage = "before"

    def cond(self, flag: str, values: Sequence[str] | None = None) -> None:
        """End the before-region: continue while ``flag``, passing ``values`` (default: the args)."""
        f = self.f
        vals = list(values) if values is not None else self.before
        f.emit(f"scf.condition({flag}) {', '.join(vals)} : {', '.join(self.types)}")
        f.depth -= 1
        f.emit("} do {")
        f.emit(f"^bb0({', '.join(f'{a}: {t}' for a, t in zip(self.after, self.types))}):")
        f.depth += 1
        self.stage = "after"

    def yield_(self, *values: str) -> None:
        self.f.emit_yield(values, self.types)
        self.stage = "done"

    def close(self) -> None:
        if self.stage != "done":
            raise ValueError("scf.while needs cond() and yield_()")
        self.f.depth -= 1
        self.f.emit("}")


class _If:
    def __init__(self, f: FuncBuilder, cond: str, types: list[str]) -> None:
        self.f, self.types = f, types
        res = f.fresh("f")
        self.results = [f"{res}#{k}" for k in range(len(types))]
        f.emit(f.if_head(res, cond, types))
        f.depth += 1

    def yield_(self, *values: str) -> None:
        self.f.emit_yield(values, self.types)

    def else_(self) -> None:
        self.f.depth -= 1
        self.f.emit("} else {")
        self.f.depth += 1

    def close(self) -> None:
        self.f.depth -= 1
        self.f.emit("}")
