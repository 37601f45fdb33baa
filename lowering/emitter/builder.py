"""A tiny MLIR text builder: fresh SSA names, indentation, hoisted constants, structured loops.

Pure string building (no ``mlir`` import). ``Builder.for_``/``if_`` emit ``scf`` ops whose bodies are
produced by Python callbacks; values threaded through a loop (``iter_args``) are ``Carry`` lists.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence


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


class Builder:
    """Collects the lines of one function body; constants are hoisted to its entry block."""

    def __init__(self, indent: str = "  ") -> None:
        self.lines: list[str] = []
        self.consts: list[str] = []
        self._const_names: dict[tuple[str, str], str] = {}
        self._n = 0
        self._indent = indent

    # ----- names and lines -------------------------------------------------------------------------
    def fresh(self, stem: str = "v") -> str:
        self._n += 1
        return f"%{stem}{self._n}"

    def emit(self, line: str) -> None:
        self.lines.append(self._indent + line)

    def op(self, text: str, type_: str, stem: str = "v") -> Value:
        """``%new = <text>`` whose result has type ``type_``."""
        name = self.fresh(stem)
        self.emit(f"{name} = {text}")
        return Value(name, type_)

    def const(self, value: int | float | str, type_: str = "index") -> Value:
        """A hoisted ``arith.constant`` (one per value and type)."""
        key = (str(value), type_)
        name = self._const_names.get(key)
        if name is None:
            name = self._const_names[key] = self.fresh("c")
            self.consts.append(f"  {name} = arith.constant {value} : {type_}")
        return Value(name, type_)

    def index(self, v: int) -> Value:
        return self.const(int(v), "index")

    # ----- index arithmetic (folds constants) --------------------------------------------------------
    def _int(self, v: Value) -> int | None:
        for (text, t), name in self._const_names.items():
            if name == v.name and t == "index":
                return int(text)
        return None

    def add(self, a: Value, b: Value) -> Value:
        ka, kb = self._int(a), self._int(b)
        if ka == 0:
            return b
        if kb == 0:
            return a
        if ka is not None and kb is not None:
            return self.index(ka + kb)
        return self.op(f"arith.addi {a}, {b} : index", "index", "i")

    def sub(self, a: Value, b: Value) -> Value:
        ka, kb = self._int(a), self._int(b)
        if kb == 0:
            return a
        if ka is not None and kb is not None:
            return self.index(ka - kb)
        return self.op(f"arith.subi {a}, {b} : index", "index", "i")

    def mul(self, a: Value, b: Value) -> Value:
        ka, kb = self._int(a), self._int(b)
        if ka == 1:
            return b
        if kb == 1:
            return a
        if ka is not None and kb is not None:
            return self.index(ka * kb)
        return self.op(f"arith.muli {a}, {b} : index", "index", "i")

    def max(self, a: Value, b: Value) -> Value:
        ka, kb = self._int(a), self._int(b)
        if ka is not None and kb is not None:
            return self.index(max(ka, kb))
        return self.op(f"arith.maxsi {a}, {b} : index", "index", "i")

    def min(self, a: Value, b: Value) -> Value:
        ka, kb = self._int(a), self._int(b)
        if ka is not None and kb is not None:
            return self.index(min(ka, kb))
        return self.op(f"arith.minsi {a}, {b} : index", "index", "i")

    def load_index(self, memref: Value, pos: "Value | str", unsigned: bool = False) -> Value:
        """``memref[pos]`` of an integer buffer as an ``index`` (zero-extended when ``unsigned``);
        ``pos`` may be a full index list text (``"%b, %p"``)."""
        elem = element_type(memref.type)
        raw = self.op(f"memref.load {memref}[{pos}] : {memref.type}", elem, "l")
        if elem == "index":
            return raw
        if unsigned:
            wide = self.op(f"arith.extui {raw} : {elem} to i64", "i64", "l")
            return self.op(f"arith.index_cast {wide} : i64 to index", "index", "i")
        return self.op(f"arith.index_cast {raw} : {elem} to index", "index", "i")

    def vload_index(self, memref: Value, at: str, lanes: int, unsigned: bool = False) -> Value:
        """``lanes`` consecutive entries of an integer buffer as a ``vector<lanes x index>``."""
        elem = element_type(memref.type)
        raw = self.op(f"vector.load {memref}[{at}] : {memref.type}, vector<{lanes}x{elem}>",
                      f"vector<{lanes}x{elem}>", "l")
        if elem == "index":
            return raw
        if unsigned:
            raw = self.op(f"arith.extui {raw} : vector<{lanes}x{elem}> to vector<{lanes}xi64>",
                          f"vector<{lanes}xi64>", "l")
            elem = "i64"
        return self.op(f"arith.index_cast {raw} : vector<{lanes}x{elem}> to vector<{lanes}xindex>",
                       f"vector<{lanes}xindex>", "i")

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
        types = ", ".join(c.type for c in carry)
        head = f"scf.for {iv} = {lo} to {hi} step {step}"
        if carry:
            inits = ", ".join(f"{a} = {c}" for a, c in zip(args, carry))
            self.emit(f"{res}:{len(carry)} = {head} iter_args({inits}) -> ({types}) {{")
        else:
            self.emit(f"{head} {{")
        out = self._nested(lambda: body(iv, list(args)))
        if carry:
            self.emit(f"  scf.yield {', '.join(v.name for v in out)} : {types}")
        self.emit("}")
        return [Value(f"{res}#{k}", c.type) for k, c in enumerate(carry)]

    def parallel(self, lo: Value, hi: Value, body: Callable[[Value], None]) -> None:
        """``scf.parallel`` over ``lo..hi`` (iterations write disjoint data)."""
        self.parallel_step(lo, hi, self.index(1), body)

    def parallel_step(self, lo: Value, hi: Value, step: Value, body: Callable[[Value], None]) -> None:
        """``scf.parallel`` over ``lo..hi`` by ``step`` (iterations write disjoint data)."""
        iv = Value(self.fresh("iv"), "index")
        self.emit(f"scf.parallel ({iv}) = ({lo}) to ({hi}) step ({step}) {{")
        self._nested(lambda: body(iv) or [])
        self.emit("  scf.reduce")
        self.emit("}")

    def if_(self, cond: Value, carry: Sequence[Value], then: Callable[[Carry], Carry]) -> Carry:
        """``scf.if cond`` running ``then(carry)``; the else branch passes ``carry`` through."""
        if not carry:
            self.emit(f"scf.if {cond} {{")
            self._nested(lambda: then([]) or [])
            self.emit("}")
            return []
        res = self.fresh("r")
        types = ", ".join(c.type for c in carry)
        self.emit(f"{res}:{len(carry)} = scf.if {cond} -> ({types}) {{")
        out = self._nested(lambda: then(list(carry)))
        self.emit(f"  scf.yield {', '.join(v.name for v in out)} : {types}")
        self.emit("} else {")
        self.emit(f"  scf.yield {', '.join(c.name for c in carry)} : {types}")
        self.emit("}")
        return [Value(f"{res}#{k}", c.type) for k, c in enumerate(carry)]

    def in_range(self, x: Value, lo: int, hi: int) -> Value:
        """An ``i1``: ``lo <= x < hi``."""
        a = self.op(f"arith.cmpi sge, {x}, {self.index(lo)} : index", "i1", "b")
        b = self.op(f"arith.cmpi slt, {x}, {self.index(hi)} : index", "i1", "b")
        return self.op(f"arith.andi {a}, {b} : i1", "i1", "b")

    def _nested(self, fn: Callable[[], Carry]) -> Carry:
        saved = self._indent
        self._indent = saved + "  "
        try:
            return list(fn())
        finally:
            self._indent = saved

    def text(self) -> list[str]:
        """Constants first, then the body lines."""
        return self.consts + self.lines
