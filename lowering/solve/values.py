"""Typed views the emitters share: dense right-hand-side blocks and index buffers."""
from __future__ import annotations

from dataclasses import dataclass

from .builder import FuncBuilder

FLOAT_TYPES = ("f32", "f64")
INDEX_WIDTHS = (32, 64)


def check_choice(label: str, value: object, choices: tuple) -> None:
    """``ValueError`` naming ``label`` unless ``value`` is one of ``choices``."""
    if value not in choices:
        raise ValueError(f"{label} must be one of {choices}, got {value!r}")


def check_positive(label: str, value: object) -> None:
    """``ValueError`` naming ``label`` unless ``value`` is an int >= 1."""
    if not isinstance(value, int) or value < 1:
        raise ValueError(f"{label} must be a positive int, got {value!r}")


@dataclass(frozen=True)
class Block:
    """``nrhs`` dense columns of element type ``elem`` stored row-major (``n x nrhs``).

    One row is a scalar (``nrhs == 1``, ``memref<?xf64>``) or a vector (``memref<?xRxf64>``,
    loaded as ``vector<Rxf64>``), so one emitter serves single and multiple right-hand sides.
    """

    elem: str
    nrhs: int = 1

    def __post_init__(self) -> None:
        check_choice("element type", self.elem, FLOAT_TYPES)
        check_positive("nrhs", self.nrhs)

    @property
    def memref(self) -> str:
        return f"memref<?x{self.elem}>" if self.nrhs == 1 else f"memref<?x{self.nrhs}x{self.elem}>"

    @property
    def row(self) -> str:
        """Type of one row."""
        return self.elem if self.nrhs == 1 else f"vector<{self.nrhs}x{self.elem}>"

    def load(self, f: FuncBuilder, mem: str, i: str) -> str:
        if self.nrhs == 1:
            return f.load(mem, i, self.memref)
        return f.op(f"vector.load {mem}[{i}, {f.c(0)}] : {self.memref}, {self.row}")

    def store(self, f: FuncBuilder, value: str, mem: str, i: str) -> None:
        if self.nrhs == 1:
            f.store(value, mem, i, self.memref)
        else:
            f.emit(f"vector.store {value}, {mem}[{i}, {f.c(0)}] : {self.memref}, {self.row}")

    def splat(self, f: FuncBuilder, scalar: str) -> str:
        """A row with every entry ``scalar`` (of type ``elem``)."""
        if self.nrhs == 1:
            return scalar
        return f.op(f"vector.broadcast {scalar} : {self.elem} to {self.row}")

    def zero(self, f: FuncBuilder) -> str:
        z = f.c(0.0, self.elem)
        return z if self.nrhs == 1 else f.op(f"arith.constant dense<0.0> : {self.row}")


@dataclass(frozen=True)
class IndexBuf:
    """An index buffer of ``width`` bits (``memref<?xi32>``/``memref<?xi64>``), read as ``index``."""

    width: int

    def __post_init__(self) -> None:
        check_choice("index width", self.width, INDEX_WIDTHS)

    @property
    def memref(self) -> str:
        return f"memref<?xi{self.width}>"

    def load(self, f: FuncBuilder, mem: str, i: str) -> str:
        v = f.load(mem, i, self.memref)
        return f.cast("arith.index_cast", v, f"i{self.width}", "index")


@dataclass(frozen=True)
class Lanes:
    """``width`` consecutive elements of a 1-D ``memref<?xelem>`` handled at once (1 = scalar code).

    ``t``: their type (``elem`` or ``vector<W x elem>``); ``t64``: the same shape in f64 (sums).
    """

    elem: str
    width: int = 1

    @property
    def t(self) -> str:
        return self.elem if self.width == 1 else f"vector<{self.width}x{self.elem}>"

    @property
    def t64(self) -> str:
        return "f64" if self.width == 1 else f"vector<{self.width}xf64>"

    def ld(self, f: FuncBuilder, mem: str, i: str) -> str:
        if self.width == 1:
            return f.load(mem, i, vec(self.elem))
        return f.op(f"vector.load {mem}[{i}] : {vec(self.elem)}, {self.t}")

    def st(self, f: FuncBuilder, value: str, mem: str, i: str) -> None:
        if self.width == 1:
            f.store(value, mem, i, vec(self.elem))
        else:
            f.emit(f"vector.store {value}, {mem}[{i}] : {vec(self.elem)}, {self.t}")

    def splat(self, f: FuncBuilder, scalar: str, wide: bool = False) -> str:
        """``scalar`` (of type ``elem``, or f64 with ``wide``) in every lane."""
        if self.width == 1:
            return scalar
        return f.op(f"vector.broadcast {scalar} : {'f64' if wide else self.elem} to {self.t64 if wide else self.t}")

    def zero(self, f: FuncBuilder) -> str:
        return self.splat(f, f.c(0.0, self.elem))

    def widen(self, f: FuncBuilder, v: str) -> str:
        """``v`` (type ``t``) as f64 lanes."""
        return f.cast("arith.extf", v, self.t, self.t64)


def vec(elem: str) -> str:
    """``memref<?xelem>``."""
    return f"memref<?x{elem}>"


def to_f64(f: FuncBuilder, v: str, elem: str) -> str:
    return f.cast("arith.extf", v, elem, "f64")


def from_f64(f: FuncBuilder, v: str, elem: str) -> str:
    return f.cast("arith.truncf", v, "f64", elem)
