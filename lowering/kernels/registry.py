"""Hand-written kernels: a registry that dispatch consults before any generated lowering.

    register_kernel("matvec", (NamedFormats.DIAI, "dense"), build_dia_spmv, name="dia-spmv")

``op`` names the contraction's shape (:func:`op_name`: ``"dot"``, ``"matvec"``, ``"vecmat"``,
``"matmul"``, ``"batched_matvec"``, ``"batched_matmul"``) or ``"*"`` for any contraction. ``pattern``
has one entry per input: a format (structural equality), ``"dense"`` (row-major dense), ``"*"`` or a
predicate on the input's ``TensorSpec``. ``builder`` is a Python callable ``(contraction) -> MLIR text``
or an MLIR text template (``string.Template``: ``$name``, ``$elem``, ``$pos_t``, ``$crd_t``, the extents
``$in0_0``, ``$in0_1``, ... of every input dimension, ``$out_0``, ... of the output's). ``when``: an
optional predicate on the whole contraction (e.g. no alpha/beta). The function must be ``@{name}`` with the argument
convention of the generated kernels (lowering.emitter.operand / sparse-assembler order, then ``c``,
``alpha``, ``beta``) and return the dense output. The latest matching registration wins.

``row_ranges``: for a kernel with a sparse result whose module also exports the two-pass row-range pair
``@{name}_count(*args, c_pos, row_begin, row_end)`` (writes ``c_pos[i + 1]``, the entries of result row
``i``) and ``@{name}_fill(*args, c_pos, c_crd, c_val, row_begin, row_end)`` (writes the rows at the prefix
sums ``c_pos[i]``), a function ``(contraction) -> k``: input ``k``'s rows make the result's rows. The
frontend then runs the passes in row chunks on its thread pool (:mod:`lowering.kernels.spgemm`).

``bounds_safe``: the kernel reads and writes in bounds whatever its operands' index buffers hold (position
ranges clamped to the coordinates' length, coordinates used as addresses clamped to their extent). Operands
of a kernel that is not (the default) are validated again before every call unless version counters prove
their index buffers unchanged (NumPy buffers may be written in place at any time).
"""
from __future__ import annotations

import string
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from frontend.format import INDEX_WIDTH_TYPES

Builder = Callable[[Any], str] | str
PatternItem = Any | str | Callable[[Any], bool]

_OPS = {
    ("a,a->",): "dot", ("ab,b->a",): "matvec", ("a,ab->b",): "vecmat", ("ab,bc->ac",): "matmul",
    ("abc,ac->ab",): "batched_matvec", ("abc,acd->abd",): "batched_matmul",
}
KNOWN_OPS = tuple(sorted(set(_OPS.values()))) + ("*",)


def op_name(c: Any) -> str:
    """The canonical name of a contraction's shape (letters renamed by first appearance), or
    ``"contraction"`` for other einsums."""
    order: dict[str, str] = {}
    parts = []
    for s in tuple(c.subscripts) + (c.output_subscripts,):
        parts.append("".join(order.setdefault(ch, "abcdefghijklmnopqrstuvwxyz"[len(order)]) for ch in s))
    canon = ",".join(parts[:-1]) + "->" + parts[-1]
    return _OPS.get((canon,), "contraction")


@dataclass(frozen=True, eq=False)
class KernelEntry:
    """One registration (see the module docstring)."""

    name: str
    op: str
    pattern: tuple
    builder: Builder
    pipeline: Any = None
    dtypes: tuple[str, ...] | None = None
    version: str = "1"
    when: Callable[[Any], bool] | None = None
    row_ranges: Callable[[Any], int] | None = None
    bounds_safe: bool = False

    def matches(self, c: Any) -> bool:
        if self.op != "*" and op_name(c) != self.op:
            return False
        if len(self.pattern) != len(c.inputs):
            return False
        if self.dtypes is not None and c.output.elem not in self.dtypes:
            return False
        if not all(_item_matches(p, t) for p, t in zip(self.pattern, c.inputs)):
            return False
        return self.when is None or bool(self.when(c))

    def build(self, c: Any) -> str:
        if callable(self.builder):
            text = self.builder(c)
            if not isinstance(text, str):
                raise TypeError(f"kernel {self.name!r}: builder returned {type(text).__name__}, not MLIR text")
            return text
        fields: dict[str, Any] = {"name": c.name, "elem": c.output.elem}
        stored = [t for t in c.inputs if t.encoded]
        if stored:
            fields["pos_t"] = INDEX_WIDTH_TYPES[stored[0].pos_width]
            fields["crd_t"] = INDEX_WIDTH_TYPES[stored[0].crd_width]
        for k, t in enumerate(c.inputs):
            for d, n in enumerate(t.shape):
                fields[f"in{k}_{d}"] = int(n)
        for d, n in enumerate(c.output.shape):
            fields[f"out_{d}"] = int(n)
        try:
            return string.Template(self.builder).substitute(fields)
        except (KeyError, ValueError) as err:
            raise ValueError(f"kernel {self.name!r}: template placeholder {err} is not one of "
                             f"{sorted(fields)} (write a literal $ as $$)") from None

    def describe(self) -> tuple:
        b = self.builder
        ident = b if isinstance(b, str) else f"{getattr(b, '__module__', '?')}.{getattr(b, '__qualname__', b)}"
        pipe = None if self.pipeline is None else _describe(self.pipeline)
        return (self.name, self.op, tuple(_pattern_key(p) for p in self.pattern), ident, pipe, self.dtypes,
                self.version, None if self.when is None else _pattern_key(self.when),
                None if self.row_ranges is None else _pattern_key(self.row_ranges))


def _describe(p: Any) -> str:
    return p if isinstance(p, str) else p.describe() if hasattr(p, "describe") else repr(p)


def _item_matches(p: Any, spec: Any) -> bool:
    if isinstance(p, str):
        if p == "*":
            return True
        return p == "dense" and not spec.encoded
    if callable(p) and not hasattr(p, "structure_key"):
        return bool(p(spec))
    return spec.encoded and spec.fmt == p


def _pattern_key(p: Any) -> Any:
    if isinstance(p, str):
        return p
    if hasattr(p, "structure_key"):
        return p.structure_key()
    return f"{getattr(p, '__module__', '?')}.{getattr(p, '__qualname__', repr(p))}"


_lock = threading.Lock()
_entries: list[KernelEntry] = []
_generation = 0


def register_kernel(op: str, pattern: Sequence[PatternItem], builder: Builder | string.Template, *,
                    name: str | None = None, pipeline: Any = None, dtypes: Sequence[str] | None = None,
                    version: str = "1", when: Callable[[Any], bool] | None = None,
                    row_ranges: Callable[[Any], int] | None = None, bounds_safe: bool = False) -> KernelEntry:
    """Use ``builder`` for ``op`` on inputs matching ``pattern`` (see the module docstring).

    ``pipeline``: a Pipeline (or pass-pipeline string / Stage list) to compile it with instead of the
    target's default; ``dtypes``: MLIR element types it handles (``("f32", "f64")``; None = any);
    ``version``: bump when the builder's output changes (part of cache keys); ``when``: a predicate on
    the contraction (``alpha``, ``init``, ``semiring``, ...); ``row_ranges``, ``bounds_safe``: see the module
    docstring.
    Returns the entry.
    """
    global _generation
    if not isinstance(op, str) or op not in KNOWN_OPS:
        raise ValueError(f"unknown op {op!r}; known: {KNOWN_OPS}")
    if isinstance(pattern, (str, bytes)) or not isinstance(pattern, Sequence) or not pattern:
        raise TypeError("pattern must be a non-empty sequence with one entry per input (a format, 'dense', "
                        f"'*' or a predicate), got {pattern!r}")
    for p in pattern:
        ok = (p in ("dense", "*")) if isinstance(p, str) else (hasattr(p, "structure_key") or callable(p))
        if not ok:
            raise TypeError(f"pattern entry {p!r} is not a format, 'dense', '*' or a predicate")
    if isinstance(builder, string.Template):  # the documented template spelling: its text
        builder = builder.template
    if not (callable(builder) or isinstance(builder, str)):
        raise TypeError(f"builder must be a callable (contraction) -> str or an MLIR text template, "
                        f"got {type(builder).__name__}")
    if isinstance(builder, str) and "func.func @$name" not in builder:
        raise ValueError("an MLIR template must define the kernel function as 'func.func @$name(...)'")
    if when is not None and not callable(when):
        raise TypeError(f"when must be a predicate on the contraction, got {when!r}")
    if row_ranges is not None and not callable(row_ranges):
        raise TypeError(f"row_ranges must be a function of the contraction, got {row_ranges!r}")
    name = name or (getattr(builder, "__name__", None) if callable(builder) else None) or f"kernel{len(_entries)}"
    entry = KernelEntry(name, op, tuple(pattern), builder, pipeline,
                        None if dtypes is None else tuple(dtypes), str(version), when, row_ranges, bool(bounds_safe))
    with _lock:
        if any(e.name == name for e in _entries):
            raise ValueError(f"a kernel named {name!r} is registered; unregister_kernel({name!r}) first")
        _entries.append(entry)
        _generation += 1
    return entry


def unregister_kernel(name: str) -> KernelEntry:
    """Remove the kernel registered as ``name`` (KeyError listing the registered ones)."""
    global _generation
    with _lock:
        for k, e in enumerate(_entries):
            if e.name == name:
                _generation += 1
                return _entries.pop(k)
    raise KeyError(f"no kernel named {name!r}; registered: {[e.name for e in _entries]}")


def registered_kernels() -> tuple[KernelEntry, ...]:
    return tuple(_entries)


def match_kernel(c: Any) -> KernelEntry | None:
    """The latest registration matching ``c``, or None."""
    for e in reversed(_entries):
        if e.matches(c):
            return e
    return None


def kernel_named(name: str) -> KernelEntry:
    """The kernel registered as ``name`` (KeyError listing the registered ones)."""
    for e in _entries:
        if e.name == name:
            return e
    raise KeyError(f"no kernel named {name!r}; registered: {[e.name for e in _entries]}")


def generation() -> int:
    """Changes whenever the registry changes (plan caches include it in their keys)."""
    return _generation
