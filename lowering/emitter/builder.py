"""The emitter's MLIR text builder: typed values, folded index arithmetic, vector ops, structured loops.

Pure string building (no ``mlir`` import) on the shared core ``lowering.mlir_text`` (names, lines,
hoisted constants, loads and casts). ``Builder.for_``/``if_`` emit ``scf`` ops whose bodies are
produced by Python callbacks; values threaded through a loop (``iter_args``) are ``Carry`` lists.
"""
from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ..mlir_text import MlirText


@dataclass(frozen=True)
class Value:
    """An SSA value and its MLIR type."""

    name: str
    type: str

    def __str__(self) -> str:
        return self.name


Carry = list  # list[Value]: loop-carried values


def element_type(t: str) -> str:
    """The element type of ``memref<...>``/``vector<...>`` text (``memref<?x4xindex>`` -> ``index``)."""
    inner = t[t.index("<") + 1:-1]
    parts = inner.split("x")
    k = 0
    while k < len(parts) - 1 and (parts[k].isdigit() or parts[k] == "?"):
        k += 1
    return "x".join(parts[k:])


class Builder(MlirText):
    """Collects the lines of one function body; constants are hoisted to its entry block."""

    def __init__(self, indent: str = "  ") -> None:
        super().__init__(prefix=indent)

    def op(self, text: str, type_: str, stem: str = "v") -> Value:
        """``%new = <text>`` whose result has type ``type_``."""
        return Value(self.assign(text, stem), type_)

    def const(self, value: int | float | str, type_: str = "index") -> Value:
        """A hoisted ``arith.constant`` (one per value and type)."""
        return Value(self.constant(str(value), type_), type_)

    def index(self, v: int) -> Value:
        return self.const(int(v), "index")

    # ----- index arithmetic (folds constants) --------------------------------------------------------
    def _int(self, v: Value) -> int | None:
        key = self.constant_key(v.name, "index")
        return None if key is None else int(key)

    def _fold(self, opname: str, a: Value, b: Value, fold: Callable[[int, int], int],
              unit: int | None = None, commutes: bool = False) -> Value:
        """``opname a, b`` on indices: folded when both are constants; ``a`` when ``b`` is ``unit``
        (and ``b`` when ``a`` is, for an operation that ``commutes``)."""
        ka, kb = self._int(a), self._int(b)
        if commutes and unit is not None and ka == unit:
            return b
        if unit is not None and kb == unit:
            return a
        if ka is not None and kb is not None:
            return self.index(fold(ka, kb))
        return self.op(f"{opname} {a}, {b} : index", "index", "i")

    def add(self, a: Value, b: Value) -> Value:
        return self._fold("arith.addi", a, b, lambda x, y: x + y, 0, commutes=True)

    def sub(self, a: Value, b: Value) -> Value:
        return self._fold("arith.subi", a, b, lambda x, y: x - y, 0)

    def mul(self, a: Value, b: Value) -> Value:
        return self._fold("arith.muli", a, b, lambda x, y: x * y, 1, commutes=True)

    def max(self, a: Value, b: Value) -> Value:
        return self._fold("arith.maxsi", a, b, max)

    def min(self, a: Value, b: Value) -> Value:
        return self._fold("arith.minsi", a, b, min)

    def load_index(self, memref: Value, pos: Value | str, unsigned: bool = False) -> Value:
        """``memref[pos]`` of an integer buffer as an ``index`` (zero-extended when ``unsigned``);
        ``pos`` may be a full index list text (``"%b, %p"``)."""
        elem = element_type(memref.type)
        raw = self.load(memref.name, str(pos), memref.type, "l")
        if unsigned and elem != "index":
            raw, elem = self.cast("arith.extui", raw, elem, "i64", "l"), "i64"
        return Value(self.index_cast(raw, elem, "index", "i"), "index")

    def vload_index(self, memref: Value, at: str, lanes: int, unsigned: bool = False) -> Value:
        """``lanes`` consecutive entries of an integer buffer as a ``vector<lanes x index>``."""
        elem = element_type(memref.type)
        raw = self.assign(f"vector.load {memref}[{at}] : {memref.type}, vector<{lanes}x{elem}>", "l")
        if unsigned and elem != "index":
            raw = self.cast("arith.extui", raw, f"vector<{lanes}x{elem}>", f"vector<{lanes}xi64>", "l")
            elem = "i64"
        return Value(self.index_cast(raw, f"vector<{lanes}x{elem}>", f"vector<{lanes}xindex>", "i"),
                     f"vector<{lanes}xindex>")

    def vload_int(self, memref: Value, at: str, lanes: int, to: str) -> Value:
        """``lanes`` consecutive entries of an unsigned integer buffer zero-extended to ``vector<lanes x to>``
        (``to`` an integer type at least as wide as the buffer's)."""
        elem = element_type(memref.type)
        raw = self.assign(f"vector.load {memref}[{at}] : {memref.type}, vector<{lanes}x{elem}>", "l")
        t = f"vector<{lanes}x{to}>"
        if elem != to:
            raw = self.cast("arith.extui", raw, f"vector<{lanes}x{elem}>", t, "l")
        return Value(raw, t)

    def vload(self, memref: Value, at: str, lanes: int) -> Value:
        """``lanes`` consecutive elements of ``memref`` from index list ``at`` (a scalar load for one lane)."""
        elem = element_type(memref.type)
        if lanes == 1:
            return Value(self.load(memref.name, at, memref.type), elem)
        t = f"vector<{lanes}x{elem}>"
        return self.op(f"vector.load {memref}[{at}] : {memref.type}, {t}", t)

    def vstore(self, v: Value, memref: Value, at: str) -> None:
        """Store ``v`` (a scalar or a vector) at index list ``at`` of ``memref``."""
        if v.type.startswith("vector<"):
            self.emit(f"vector.store {v}, {memref}[{at}] : {memref.type}, {v.type}")
        else:
            self.store(v.name, memref.name, at, memref.type)

    def splat(self, x: Value, lanes: int) -> Value:
        t = f"vector<{lanes}x{x.type}>"
        return self.op(f"vector.broadcast {x} : {x.type} to {t}", t, "s")

    def vadd(self, a: Value, b: Value) -> Value:
        return self.op(f"arith.addi {a}, {b} : {a.type}", a.type, "i")

    def prefix_sum(self, v: Value, lanes: int) -> Value:
        """Inclusive prefix sum of an index vector (log2(lanes) shifted adds)."""
        zero = self.const("dense<0>", v.type)
        shift = 1
        while shift < lanes:
            mask = ", ".join(str(i - shift) if i >= shift else str(lanes) for i in range(lanes))
            moved = self.op(f"vector.shuffle {v}, {zero} [{mask}] : {v.type}, {v.type}", v.type, "i")
            v = self.vadd(v, moved)
            shift *= 2
        return v

    def extract(self, v: Value, lane: int) -> Value:
        elem = element_type(v.type)
        return self.op(f"vector.extract {v}[{lane}] : {elem} from {v.type}", elem, "i")

    # ----- structured control flow -------------------------------------------------------------------
    def for_(self, lo: Value, hi: Value, step: Value, carry: Sequence[Value],
             body: Callable[[Value, Carry], Carry]) -> Carry:
        """``scf.for`` from ``lo`` to ``hi``; ``body(iv, carry) -> carry``; returns the final carry."""
        iv = Value(self.fresh("iv"), "index")
        args = [Value(self.fresh("a"), c.type) for c in carry]
        res = self.fresh("r")
        types = [c.type for c in carry]
        self.emit(self.for_head(res, iv.name, lo.name, hi.name, step.name, [a.name for a in args],
                                [c.name for c in carry], types))
        with self.nested():
            out = list(body(iv, list(args)))
            if carry:
                self.emit_yield([v.name for v in out], types)
        self.emit("}")
        return [Value(f"{res}#{k}", c.type) for k, c in enumerate(carry)]

    def loop(self, lo: Value, hi: Value, step: Value, body: Callable[[Value], object]) -> None:
        """``scf.for`` from ``lo`` to ``hi`` with no carried values; ``body(iv)`` emits the body (its
        result is ignored)."""
        def run(iv: Value, carry: Carry) -> Carry:
            body(iv)
            return carry
        self.for_(lo, hi, step, [], run)

    def parallel(self, lo: Value, hi: Value, body: Callable[[Value], object]) -> None:
        """``scf.parallel`` over ``lo..hi`` (iterations write disjoint data; ``body``'s result is ignored)."""
        self.parallel_step(lo, hi, self.index(1), body)

    def parallel_step(self, lo: Value, hi: Value, step: Value, body: Callable[[Value], object]) -> None:
        """``scf.parallel`` over ``lo..hi`` by ``step`` (iterations write disjoint data)."""
        iv = Value(self.fresh("iv"), "index")
        self.emit(f"scf.parallel ({iv}) = ({lo}) to ({hi}) step ({step}) {{")
        with self.nested():
            body(iv)
            self.emit("scf.reduce")
        self.emit("}")

    def if_(self, cond: Value, carry: Sequence[Value], then: Callable[[Carry], Carry]) -> Carry:
        """``scf.if cond`` running ``then(carry)``; the else branch passes ``carry`` through."""
        res = self.fresh("r") if carry else ""
        types = [c.type for c in carry]
        self.emit(self.if_head(res, cond.name, types))
        with self.nested():
            out = list(then(list(carry)) or [])
            if carry:
                self.emit_yield([v.name for v in out], types)
        if carry:
            self.emit("} else {")
            with self.nested():
                self.emit_yield([c.name for c in carry], types)
        self.emit("}")
        return [Value(f"{res}#{k}", c.type) for k, c in enumerate(carry)]

    def in_range(self, x: Value, lo: int, hi: int) -> Value:
        """An ``i1``: ``lo <= x < hi``."""
        a = self.cmpi("sge", x.name, self.index(lo).name)
        b = self.cmpi("slt", x.name, self.index(hi).name)
        return Value(self.andi(a, b), "i1")

    def text(self) -> list[str]:
        """Constants first, then the body lines."""
        return self.constant_lines(1) + self.lines
