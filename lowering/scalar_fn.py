"""Small Python scalar functions traced into MLIR ops (for semirings, prologs and epilogs).

``trace(fn, nargs, elem)`` calls ``fn`` on proxy values; every ``+ - * /``, unary minus, comparison
(``< <= > >= == !=``: 1 where true, else 0) and helper (``maximum``, ``minimum``, ``logical_and``,
``logical_or``, ``where``, ``exp``, ``log``) appends MLIR operations on ``elem``
(``f32``, ``f64``, ``i32``, ``i64``, ``complex<f64>``, ...). Pure string building: no ``mlir`` import.

Traced values speak NumPy too: the ufuncs of :data:`UFUNCS` (``np.maximum(v, 0)``, ``np.exp(v)``, ``np.abs(v)``,
comparisons, bitwise ones, ...) and ``np.where``/``np.clip`` record the same operations (``__array_ufunc__``,
``__array_function__``); any other NumPy function raises a ``TypeError`` naming it and the supported ones.
Integer values also take ``& | ^ ~ << >>`` (``arith.andi/ori/xori``, ``shli``, ``shrsi``).
"""
from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

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
        if isinstance(x, np.generic) and not isinstance(x, np.bool_):
            x = x.item()  # a NumPy scalar (np.float32(0), np.int64(1), ...) as a Python number
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
        if k == "float":
            ops.update(fmax="arith.maxnumf", fmin="arith.minnumf")
        elif k == "int":
            ops.update({"fmax": ops["max"], "fmin": ops["min"], "and": "arith.andi", "or": "arith.ori",
                        "xor": "arith.xori", "shl": "arith.shli", "shr": "arith.shrsi"})
        if what not in ops:
            raise TypeError(f"{what} is not defined for {self.elem} values")
        return self.emit(ops[what], x, y)

    def unary(self, what: str, a: Any) -> Proxy:
        """``abs``, ``sqrt``, ``exp``, ``log`` of a value (``math.*``; ``complex.*`` for complex values)."""
        x = self.value(a)
        if self.kind == "int":
            if what != "abs":
                raise TypeError(f"{what} is not defined for {self.elem} values")
            return self.emit("math.absi", x)
        if self.kind == "complex":
            if what == "abs":
                raise TypeError(f"abs of a {self.elem} value is real; traced functions return {self.elem}")
            return self.emit(f"complex.{what}", x)
        return self.emit(f"math.{'absf' if what == 'abs' else what}", x)

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
        return self.unary(what, a)

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

    def __abs__(self) -> Proxy:
        return self.tracer.unary("abs", self)

    def __pow__(self, o: Any) -> Proxy:
        return power(self, o)

    def __and__(self, o: Any) -> Proxy:
        return self.tracer.binop("and", self, o)

    def __rand__(self, o: Any) -> Proxy:
        return self.tracer.binop("and", o, self)

    def __or__(self, o: Any) -> Proxy:
        return self.tracer.binop("or", self, o)

    def __ror__(self, o: Any) -> Proxy:
        return self.tracer.binop("or", o, self)

    def __xor__(self, o: Any) -> Proxy:
        return self.tracer.binop("xor", self, o)

    def __rxor__(self, o: Any) -> Proxy:
        return self.tracer.binop("xor", o, self)

    def __lshift__(self, o: Any) -> Proxy:
        return self.tracer.binop("shl", self, o)

    def __rlshift__(self, o: Any) -> Proxy:
        return self.tracer.binop("shl", o, self)

    def __rshift__(self, o: Any) -> Proxy:
        return self.tracer.binop("shr", self, o)

    def __rrshift__(self, o: Any) -> Proxy:
        return self.tracer.binop("shr", o, self)

    def __invert__(self) -> Proxy:
        return self.tracer.binop("xor", self, -1)

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        name = getattr(ufunc, "__name__", str(ufunc))
        if method != "__call__" or kwargs:
            how = f"{name}.{method}" if method != "__call__" else f"{name} with {', '.join(kwargs)}="
            raise TypeError(f"numpy {how} cannot be traced: call the ufunc on values alone")
        fn = UFUNCS.get(name)
        if fn is None:
            raise TypeError(f"numpy ufunc {name!r} cannot be traced (supported: {', '.join(sorted(UFUNCS))}, "
                            f"and {', '.join(sorted(ARRAY_FUNCTIONS))})")
        return fn(*inputs)

    def __array_function__(self, func: Any, types: Any, args: Any, kwargs: Any) -> Any:
        name = getattr(func, "__name__", str(func))
        fn = ARRAY_FUNCTIONS.get(name)
        if fn is None or kwargs:
            raise TypeError(f"numpy.{name} cannot be traced (supported: {', '.join(sorted(ARRAY_FUNCTIONS))} "
                            f"with positional arguments, and the ufuncs {', '.join(sorted(UFUNCS))})")
        return fn(*args)

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


def _traced(what: str, a: Any) -> Any:
    if not isinstance(a, Proxy):
        return getattr(np, what)(a)
    return a.tracer.unary(what, a)


def power(a: Any, n: Any) -> Any:
    """``a ** n`` for a whole exponent ``0 <= n <= 64`` (repeated products)."""
    if isinstance(n, Proxy) or not isinstance(n, (int, np.integer)) or not 0 <= int(n) <= 64:
        raise TypeError(f"traced powers take a whole exponent from 0 to 64, got {n!r}")
    result: Any = 1
    base: Any = a
    k = int(n)
    while k:
        if k & 1:
            result = base * result
        k >>= 1
        if k:
            base = base * base
    return result


def _compare(what: str) -> Callable[[Any, Any], Any]:
    def cmp(a: Any, b: Any) -> Any:
        t = _tracer_of(a, b)
        return t.compare(what, a, b)
    return cmp


def _binary(what: str) -> Callable[[Any, Any], Any]:
    def op(a: Any, b: Any) -> Any:
        return _tracer_of(a, b).binop(what, a, b)
    return op


def _logical_not(a: Any) -> Any:
    return a.tracer.compare("eq", a, 0)


def clip(a: Any, lo: Any, hi: Any) -> Any:
    """``a`` limited to ``[lo, hi]`` (either bound None: no limit), as ``np.clip``."""
    out = a if lo is None else maximum(a, lo)
    return out if hi is None else minimum(out, hi)


#: NumPy ufunc name -> what it records on traced values
UFUNCS: dict[str, Callable[..., Any]] = {
    "add": lambda a, b: a + b, "subtract": lambda a, b: a - b, "multiply": lambda a, b: a * b,
    "divide": lambda a, b: a / b, "negative": lambda a: -a, "positive": lambda a: a,
    "absolute": lambda a: _traced("abs", a), "square": lambda a: a * a,
    "maximum": lambda a, b: maximum(a, b), "minimum": lambda a, b: minimum(a, b),
    "fmax": _binary("fmax"), "fmin": _binary("fmin"),
    "exp": lambda a: _traced("exp", a), "log": lambda a: _traced("log", a), "sqrt": lambda a: _traced("sqrt", a),
    "greater": _compare("gt"), "greater_equal": _compare("ge"), "less": _compare("lt"),
    "less_equal": _compare("le"), "equal": _compare("eq"), "not_equal": _compare("ne"),
    "logical_and": lambda a, b: logical_and(a, b), "logical_or": lambda a, b: logical_or(a, b),
    "logical_not": _logical_not,
    "bitwise_and": _binary("and"), "bitwise_or": _binary("or"), "bitwise_xor": _binary("xor"),
    "invert": lambda a: ~a, "left_shift": _binary("shl"), "right_shift": _binary("shr"),
}

#: NumPy functions (``__array_function__``) traced values take
ARRAY_FUNCTIONS: dict[str, Callable[..., Any]] = {"where": lambda c, a, b: where(c, a, b), "clip": clip}


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
