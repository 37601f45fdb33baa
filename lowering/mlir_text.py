"""The shared core of the lowering's MLIR text builders (pure string building, no ``mlir`` import).

``MlirText`` holds the lines of one function body: fresh SSA names ``%<stem><n>`` from one counter,
lines indented by nesting depth, ``%x = op`` assignments, ``arith.constant``s defined once per value and
type (hoisted: the caller places ``constant_lines`` at the function entry), memref loads/stores, casts
and the heads of ``scf`` regions. The builders on top add their own value types and control flow:
``emitter.builder.Builder`` (typed values, callback loops, vector ops), ``solve.builder.FuncBuilder``
(context-manager regions, whole functions) and the SpGEMM kernel (``spgemm._Text``).
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

STEP = "  "  # one level of indentation


#: Integer types narrower than ``index`` (kernels clamp positions and coordinates of these in their own type).
NARROW_INTS = ("i8", "i16", "i32")


def type_max(t: str) -> int:
    """The largest value of MLIR integer type ``t`` (``i32`` -> 2^31 - 1; ``index``: as ``i64``)."""
    return (1 << (64 if t == "index" else int(t[1:])) - 1) - 1


def index_list(idx: str | Sequence[str]) -> str:
    """``"%a, %b"`` from one index text or a sequence of names."""
    return idx if isinstance(idx, str) else ", ".join(idx)


class MlirText:
    """Lines of one function body at nesting ``depth`` (each line starts with ``prefix``)."""

    def __init__(self, depth: int = 0, prefix: str = "") -> None:
        self.lines: list[str] = []
        self.depth = depth
        self._prefix = prefix
        self._n = 0
        self._const_names: dict[tuple[str, str], str] = {}  # (key, type) -> name
        self._const_defs: list[str] = []  # hoisted definitions, unindented

    # ----- names and lines -------------------------------------------------------------------------
    def fresh(self, stem: str = "v") -> str:
        """A new SSA name ``%<stem><n>``."""
        self._n += 1
        return f"%{stem}{self._n}"

    def emit(self, line: str) -> None:
        self.lines.append(self._prefix + STEP * self.depth + line)

    def assign(self, rhs: str, stem: str = "v") -> str:
        """Emit ``%new = rhs`` and return ``%new``."""
        name = self.fresh(stem)
        self.emit(f"{name} = {rhs}")
        return name

    @contextmanager
    def nested(self) -> Iterator[None]:
        """Lines emitted inside are one level deeper."""
        self.depth += 1
        try:
            yield
        finally:
            self.depth -= 1

    # ----- hoisted constants -------------------------------------------------------------------------
    def constant(self, key: str, ty: str, literal: str | None = None) -> str:
        """The name of the ``arith.constant`` for ``(key, ty)``, defined on first use (value text
        ``literal``, default ``key``)."""
        name = self._const_names.get((key, ty))
        if name is None:
            name = self._const_names[(key, ty)] = self.fresh("c")
            self.hoist(f"{name} = arith.constant {key if literal is None else literal} : {ty}")
        return name

    def constant_key(self, name: str, ty: str) -> str | None:
        """The key of the constant ``name`` of type ``ty`` (None when ``name`` is no such constant)."""
        for (key, t), n in self._const_names.items():
            if n == name and t == ty:
                return key
        return None

    def hoist(self, definition: str) -> None:
        """Add a definition (``%k = arith.constant ...``) to the function entry."""
        self._const_defs.append(definition)

    def constant_lines(self, depth: int) -> list[str]:
        """The hoisted definitions indented ``depth`` levels, in order of first use."""
        return [STEP * depth + d for d in self._const_defs]

    # ----- memory and casts --------------------------------------------------------------------------
    def load(self, mem: str, idx: str | Sequence[str], mtype: str, stem: str = "v") -> str:
        """``memref.load mem[idx]``."""
        return self.assign(f"memref.load {mem}[{index_list(idx)}] : {mtype}", stem)

    def store(self, value: str, mem: str, idx: str | Sequence[str], mtype: str) -> None:
        """``memref.store value, mem[idx]``."""
        self.emit(f"memref.store {value}, {mem}[{index_list(idx)}] : {mtype}")

    def cast(self, opname: str, value: str, src: str, dst: str, stem: str = "v") -> str:
        """``opname value : src to dst`` (``value`` itself when the types agree)."""
        if src == dst:
            return value
        return self.assign(f"{opname} {value} : {src} to {dst}", stem)

    def index_cast(self, value: str, src: str, dst: str, stem: str = "v") -> str:
        return self.cast("arith.index_cast", value, src, dst, stem)

    def cmpi(self, pred: str, a: str, b: str, ty: str = "index") -> str:
        return self.assign(f"arith.cmpi {pred}, {a}, {b} : {ty}", "b")

    def andi(self, a: str, b: str) -> str:
        return self.assign(f"arith.andi {a}, {b} : i1", "b")

    # ----- region heads ------------------------------------------------------------------------------
    def emit_yield(self, values: Sequence[str], types: Sequence[str]) -> None:
        self.emit(f"scf.yield {', '.join(values)} : {', '.join(types)}")

    @staticmethod
    def for_head(res: str, iv: str, lo: str, hi: str, step: str, args: Sequence[str],
                 inits: Sequence[str], types: Sequence[str]) -> str:
        """``[res:N = ]scf.for iv = lo to hi step step [iter_args(a = init, ...) -> (types)] {``."""
        head = f"scf.for {iv} = {lo} to {hi} step {step}"
        if not args:
            return head + " {"
        pairs = ", ".join(f"{a} = {v}" for a, v in zip(args, inits))
        return f"{res}:{len(args)} = {head} iter_args({pairs}) -> ({', '.join(types)}) {{"

    @staticmethod
    def if_head(res: str, cond: str, types: Sequence[str]) -> str:
        """``[res:N = ]scf.if cond [-> (types)] {``."""
        if not types:
            return f"scf.if {cond} {{"
        return f"{res}:{len(types)} = scf.if {cond} -> ({', '.join(types)}) {{"
