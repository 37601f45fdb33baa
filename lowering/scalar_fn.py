"""Small Python scalar functions traced into MLIR ops (for semirings, prologs and epilogs).

``trace(fn, nargs, elem)`` calls ``fn`` on proxy values; every ``+ - * /``, unary minus, comparison
(``< <= > >= == !=``: 1 where true, else 0) and helper (``maximum``, ``minimum``, ``logical_and``,
``logical_or``, ``where``, ``exp``, ``log``) appends MLIR operations on ``elem``
(``f32``, ``f64``, ``i32``, ``i64``, ``complex<f64>``, ...). Pure string building: no ``mlir`` import.
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

_FLOAT = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64}
_INF_HEX = {"f16": "0x7C00", "bf16": "0x7F80", "f32": "0x7F800000", "f64": "0x7FF0000000000000"}
_NEG_INF_HEX = {"f16": "0xFC00", "bf16": "0xFF80", "f32": "0xFF800000", "f64": "0xFFF0000000000000"}
_NAN_HEX = {"f16": "0x7E00", "bf16": "0x7FC0", "f32": "0x7FC00000", "f64": "0x7FF8000000000000"}


def kind(elem: str) -> str:
    """``"float"``, ``"int"`` or ``"complex"`` for an MLIR element type."""
    if elem in _FLOAT:
        return "float"
    if elem.startswith("complex<"):
        return "complex"
    if elem.startswith("i") and elem[1:].isdigit():
        return "int"
    raise TypeError(f"unsupported element type {elem!r} for scalar functions")


def arith_ops(elem: str) -> dict[str, str]:
    """The ``"add"`` and ``"mul"`` operations of plus-times arithmetic on ``elem`` (``arith``/``complex``)."""
    k = kind(elem)
    if k == "complex":
        return {"add": "complex.add", "mul": "complex.mul"}
    if k == "float":
        return {"add": "arith.addf", "mul": "arith.mulf"}
    return {"add": "arith.addi", "mul": "arith.muli"}


def float_literal(value: float, elem: str) -> str:
    """An MLIR float literal (hex for inf/nan)."""
    if math.isnan(value):
        return _NAN_HEX[elem]
    if math.isinf(value):
        return _INF_HEX[elem] if value > 0 else _NEG_INF_HEX[elem]
    return f"{value:.17e}"


def constant_op(name: str, value: Any, elem: str) -> str:
    """``%name = arith.constant ...`` (or ``complex.constant``) of ``value`` as ``elem``."""
    k = kind(elem)
    if k == "complex":
        c = complex(value)
        inner = elem[len("complex<"):-1]
        typed = "" if inner == "f64" else f" : {inner}"  # untyped float attributes are f64
        return (f"{name} = complex.constant [{float_literal(c.real, inner)}{typed}, "
                f"{float_literal(c.imag, inner)}{typed}] : {elem}")
    if k == "float":
        if isinstance(value, complex):
            raise TypeError(f"complex constant {value!r} in a {elem} function")
        return f"{name} = arith.constant {float_literal(float(value), elem)} : {elem}"
    if isinstance(value, float) and not value.is_integer():
        raise TypeError(f"non-integral constant {value!r} in an {elem} function")
    return f"{name} = arith.constant {int(value)} : {elem}"


@dataclass(frozen=True)
class ScalarFn:
    """A traced function: argument names, op lines (in order) and the result name."""

    args: tuple[str, ...]
    lines: tuple[str, ...]
    result: str
    elem: str

    def inline(self, actuals: tuple[str, ...], prefix: str) -> tuple[list[str], str]:
        """The lines with arguments replaced by ``actuals`` and locals renamed with ``prefix``
        (for use inside a larger body); returns (lines, result name)."""
        ren = dict(zip(self.args, actuals))
        lines = []
        for line in self.lines:
            lines.append(_rename(line, ren, prefix))
        return lines, ren.get(self.result, _rename_name(self.result, prefix))

    def region(self, indent: str = "    ") -> str:
        """A ``^bb0(...)`` block ending in ``sparse_tensor.yield``, for binary/unary/reduce regions."""
        params = ", ".join(f"{a}: {self.elem}" for a in self.args)
        body = "".join(f"{indent}  {line}\n" for line in self.lines)
        return f"{indent}^bb0({params}):\n{body}{indent}  sparse_tensor.yield {self.result} : {self.elem}\n"


def _rename_name(name: str, prefix: str) -> str:
    return f"%{prefix}{name[1:]}"


def _rename(line: str, ren: dict[str, str], prefix: str) -> str:
    out = []
    for tok in line.split(" "):
        stripped = tok.rstrip(",")
        tail = tok[len(stripped):]
        if stripped.startswith("%"):
            stripped = ren.get(stripped, _rename_name(stripped, prefix))
        out.append(stripped + tail)
    return " ".join(out)


class _Tracer:
    def __init__(self, elem: str) -> None:
        self.elem = elem
        self.kind = kind(elem)
        self.lines: list[str] = []
        self.count = 0

    def fresh(self) -> str:
        self.count += 1
        return f"%t{self.count}"

    def value(self, x: Any) -> Proxy:
        if isinstance(x, Proxy):
            if x.tracer is not self:
                raise ValueError("a traced value from another function was used")
            return x
        if isinstance(x, bool) or not isinstance(x, (int, float, complex)):
            raise TypeError(f"scalar functions may combine their arguments with numbers only, got "
                            f"{type(x).__name__}")
        name = self.fresh()
        self.lines.append(constant_op(name, x, self.elem))
        return Proxy(self, name)

    def emit(self, op: str, *operands: Proxy) -> Proxy:
        name = self.fresh()
        args = ", ".join(o.name for o in operands)
        self.lines.append(f"{name} = {op} {args} : {self.elem}")
        return Proxy(self, name)

    def binop(self, what: str, a: Any, b: Any) -> Proxy:
        x, y = self.value(a), self.value(b)
        k = self.kind
        if k == "complex":
            ops = {"add": "complex.add", "sub": "complex.sub", "mul": "complex.mul", "div": "complex.div"}
        elif k == "float":
            ops = {"add": "arith.addf", "sub": "arith.subf", "mul": "arith.mulf", "div": "arith.divf",
                   "max": "arith.maximumf", "min": "arith.minimumf"}
        else:
            ops = {"add": "arith.addi", "sub": "arith.subi", "mul": "arith.muli", "div": "arith.divsi",
                   "max": "arith.maxsi", "min": "arith.minsi"}
        if what not in ops:
            raise TypeError(f"{what} is not defined for {self.elem} values")
        return self.emit(ops[what], x, y)

    def nonzero(self, a: Any) -> str:
        """Name of an i1 that is true where ``a != 0``."""
        x = self.value(a)
        zero = self.value(0)
        name = self.fresh()
        if self.kind == "float":
            self.lines.append(f"{name} = arith.cmpf une, {x.name}, {zero.name} : {self.elem}")
        elif self.kind == "int":
            self.lines.append(f"{name} = arith.cmpi ne, {x.name}, {zero.name} : {self.elem}")
        else:
            raise TypeError(f"logical operations are not defined for {self.elem} values")
        return name

    def compare(self, what: str, a: Any, b: Any) -> Proxy:
        """1 where ``a what b`` (``lt``, ``le``, ``gt``, ``ge``, ``eq``, ``ne``), else 0."""
        x, y = self.value(a), self.value(b)
        cond = self.fresh()
        if self.kind == "float":
            pred = {"eq": "oeq", "ne": "une"}.get(what, "o" + what)
            self.lines.append(f"{cond} = arith.cmpf {pred}, {x.name}, {y.name} : {self.elem}")
        elif self.kind == "int":
            pred = {"eq": "eq", "ne": "ne"}.get(what, "s" + what)
            self.lines.append(f"{cond} = arith.cmpi {pred}, {x.name}, {y.name} : {self.elem}")
        else:
            raise TypeError(f"comparisons are not defined for {self.elem} values")
        return self.select(cond, 1, 0)

    def select(self, cond: str, a: Any, b: Any) -> Proxy:
        """``a`` where the i1 ``cond`` holds, else ``b``."""
        x, y = self.value(a), self.value(b)
        name = self.fresh()
        self.lines.append(f"{name} = arith.select {cond}, {x.name}, {y.name} : {self.elem}")
        return Proxy(self, name)

    def math(self, what: str, a: Any) -> Proxy:
        """``math.<what>`` (``exp``, ``log``) of a float value (``complex.<what>`` of a complex one)."""
        if self.kind == "int":
            raise TypeError(f"{what} is not defined for {self.elem} values")
        return self.emit(f"{'complex' if self.kind == 'complex' else 'math'}.{what}", self.value(a))

    def logical(self, what: str, a: Any, b: Any) -> Proxy:
        p, q = self.nonzero(a), self.nonzero(b)
        both = self.fresh()
        self.lines.append(f"{both} = arith.{what}i {p}, {q} : i1")
        one, zero = self.value(1), self.value(0)
        name = self.fresh()
        self.lines.append(f"{name} = arith.select {both}, {one.name}, {zero.name} : {self.elem}")
        return Proxy(self, name)


class Proxy:
    """A traced scalar value; arithmetic on it records MLIR operations."""

    __slots__ = ("tracer", "name")

    def __init__(self, tracer: _Tracer, name: str) -> None:
        self.tracer = tracer
        self.name = name

    def __add__(self, o: Any) -> Proxy:
        return self.tracer.binop("add", self, o)

    def __radd__(self, o: Any) -> Proxy:
        return self.tracer.binop("add", o, self)

    def __sub__(self, o: Any) -> Proxy:
        return self.tracer.binop("sub", self, o)

    def __rsub__(self, o: Any) -> Proxy:
        return self.tracer.binop("sub", o, self)

    def __mul__(self, o: Any) -> Proxy:
        return self.tracer.binop("mul", self, o)

    def __rmul__(self, o: Any) -> Proxy:
        return self.tracer.binop("mul", o, self)

    def __truediv__(self, o: Any) -> Proxy:
        return self.tracer.binop("div", self, o)

    def __rtruediv__(self, o: Any) -> Proxy:
        return self.tracer.binop("div", o, self)

    def __neg__(self) -> Proxy:
        return self.tracer.binop("sub", 0, self)

    def __pos__(self) -> Proxy:
        return self

    def __lt__(self, o: Any) -> Proxy:
        return self.tracer.compare("lt", self, o)

    def __le__(self, o: Any) -> Proxy:
        return self.tracer.compare("le", self, o)

    def __gt__(self, o: Any) -> Proxy:
        return self.tracer.compare("gt", self, o)

    def __ge__(self, o: Any) -> Proxy:
        return self.tracer.compare("ge", self, o)

    def __eq__(self, o: Any) -> Proxy:  # type: ignore[override]
        return self.tracer.compare("eq", self, o)

    def __ne__(self, o: Any) -> Proxy:  # type: ignore[override]
        return self.tracer.compare("ne", self, o)

    __hash__ = object.__hash__

    def __bool__(self) -> bool:
        raise TypeError("traced scalar functions cannot branch on values (use where(cond, x, y), maximum/"
                        "minimum or logical_and/logical_or instead of if/and/or)")


def _tracer_of(a: Any, b: Any) -> _Tracer:
    for x in (a, b):
        if isinstance(x, Proxy):
            return x.tracer
    raise TypeError("maximum/minimum/logical_* need at least one traced argument")


def maximum(a: Any, b: Any) -> Any:
    """max(a, b) of traced values (``arith.maximumf``/``maxsi``)."""
    if not isinstance(a, Proxy) and not isinstance(b, Proxy):
        return max(a, b)
    return _tracer_of(a, b).binop("max", a, b)


def minimum(a: Any, b: Any) -> Any:
    """min(a, b) of traced values (``arith.minimumf``/``minsi``)."""
    if not isinstance(a, Proxy) and not isinstance(b, Proxy):
        return min(a, b)
    return _tracer_of(a, b).binop("min", a, b)


def logical_and(a: Any, b: Any) -> Any:
    """1 where both are nonzero, else 0."""
    if not isinstance(a, Proxy) and not isinstance(b, Proxy):
        return int(bool(a) and bool(b))
    return _tracer_of(a, b).logical("and", a, b)


def logical_or(a: Any, b: Any) -> Any:
    """1 where either is nonzero, else 0."""
    if not isinstance(a, Proxy) and not isinstance(b, Proxy):
        return int(bool(a) or bool(b))
    return _tracer_of(a, b).logical("or", a, b)


def where(cond: Any, a: Any, b: Any) -> Any:
    """``a`` where ``cond`` is nonzero, else ``b`` (``arith.select``)."""
    if not any(isinstance(x, Proxy) for x in (cond, a, b)):
        return a if cond else b
    t = next(x.tracer for x in (cond, a, b) if isinstance(x, Proxy))
    return t.select(t.nonzero(cond), a, b)


def exp(a: Any) -> Any:
    """e ** a of a traced value (``math.exp``)."""
    return a.tracer.math("exp", a) if isinstance(a, Proxy) else math.exp(a)


def log(a: Any) -> Any:
    """The natural logarithm of a traced value (``math.log``)."""
    return a.tracer.math("log", a) if isinstance(a, Proxy) else math.log(a)


def trace(fn: Callable[..., Any], nargs: int, elem: str) -> ScalarFn:
    """Trace ``fn`` (taking ``nargs`` scalars) into a :class:`ScalarFn` over ``elem``."""
    if not callable(fn):
        raise TypeError(f"expected a function of {nargs} scalar(s), got {type(fn).__name__}")
    t = _Tracer(elem)
    args = tuple(f"%a{k}" for k in range(nargs))
    try:
        out = fn(*(Proxy(t, a) for a in args))
    except TypeError as err:
        raise TypeError(f"cannot trace {getattr(fn, '__name__', fn)!r} over {elem}: {err}") from None
    out = t.value(out)
    return ScalarFn(args, tuple(t.lines), out.name, elem)
