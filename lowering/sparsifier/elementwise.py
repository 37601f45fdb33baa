"""The sparsifier's input for elementwise operations and reductions: one ``linalg.generic`` per module.

Pure string building (no ``mlir`` import); every builder returns ``func.func @main(...) -> out`` text:

- :func:`binary_module`: ``out = x op y`` (``add``, ``sub``, ``mul``) over the output's index space, each
  operand indexed by some of the output's dimensions (numpy broadcasting: scalars index none, row vectors
  the last one). With plain ``arith`` bodies the sparsifier iterates the union of two sparse operands for
  ``add``/``sub`` and their intersection for ``mul``; a dense operand is always present.
- :func:`unary_module`: ``sparse_tensor.unary`` with a traced ``present`` region and an empty ``absent`` one:
  a function of the stored values that leaves implicit zeros alone.
- :func:`values_module`: a traced function of (value, coordinates...) over 1-D arrays of the stored entries
  (the sparsifier takes no ``linalg.index`` inside ``sparse_tensor.unary`` regions): ``fn(v, i, j)``.
- :func:`select_module`: ``sparse_tensor.select`` keeping the stored entries a traced predicate is nonzero on.
- :func:`reduce_module`: a reduction of the stored entries along some dimensions into a dense result filled
  with the identity: ``arith`` sums, ``sparse_tensor.reduce`` with a traced monoid, or a count of entries.
- :func:`sampled_module`: ``out = fn(x, v[row])`` on ``x``'s stored entries only (``sparse_tensor.binary``
  whose ``left``/``right`` regions are empty), with ``v`` a dense vector along ``x``'s kept dimensions:
  the steps of softmax (subtract the row maximum and exponentiate, divide by the row sum).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..contraction import TensorSpec
from ..scalar_fn import ScalarFn, constant_op, kind

_ARITH = {
    "float": {"add": "arith.addf", "sub": "arith.subf", "mul": "arith.mulf"},
    "int": {"add": "arith.addi", "sub": "arith.subi", "mul": "arith.muli"},
    "complex": {"add": "complex.add", "sub": "complex.sub", "mul": "complex.mul"},
}
BINARY_OPS = ("add", "sub", "mul")


def _affine(rank: int, dims: Sequence[int]) -> str:
    loops = ", ".join(f"d{k}" for k in range(rank))
    return f"affine_map<({loops}) -> ({', '.join(f'd{d}' for d in dims)})>"


def _header(inputs: Sequence[TensorSpec], out: TensorSpec) -> list[str]:
    params = ", ".join(f"%in{k}: {t.type_text()}" for k, t in enumerate(inputs))
    return [f"func.func @main({params}) -> {out.type_text()} attributes {{llvm.emit_c_interface}} {{"]


def _init(out: TensorSpec, fill: Any) -> list[str]:
    """``%init``: an empty sparse output, or a dense one filled with ``fill``."""
    t = out.type_text()
    if out.sparse:
        return [f"  %init = tensor.empty() : {t}"]
    return ["  " + constant_op("%fill", fill, out.elem), f"  %empty = tensor.empty() : {t}",
            f"  %init = linalg.fill ins(%fill : {out.elem}) outs(%empty : {t}) -> {t}"]


def _generic(inputs: Sequence[TensorSpec], dims: Sequence[Sequence[int]], out: TensorSpec, out_dims: Sequence[int],
             rank: int, body: list[str], result: str) -> list[str]:
    maps = [_affine(rank, d) for d in dims] + [_affine(rank, out_dims)]
    iters = ", ".join('"parallel"' if k in out_dims else '"reduction"' for k in range(rank))
    ins = ", ".join(f"%in{k}" for k in range(len(inputs)))
    in_types = ", ".join(t.type_text() for t in inputs)
    bb = ", ".join([f"%x{k}: {t.elem}" for k, t in enumerate(inputs)] + [f"%o: {out.elem}"])
    t = out.type_text()
    return ([f"  %r = linalg.generic {{indexing_maps = [{', '.join(maps)}], iterator_types = [{iters}]}}",
             f"      ins({ins} : {in_types}) outs(%init : {t}) {{", f"    ^bb0({bb}):"]
            + ["      " + line for line in body]
            + [f"      linalg.yield {result} : {out.elem}", f"  }} -> {t}", f"  return %r : {t}", "}"])


def _region(fn: ScalarFn, formals: Sequence[str], captured: Sequence[str], prefix: str, yield_type: str,
            tail: Sequence[str] = (), result: str | None = None) -> list[str]:
    """A ``^bb0`` block inlining ``fn`` on the block's ``formals`` then ``captured`` values."""
    lines, res = fn.inline(tuple(formals) + tuple(captured), prefix)
    params = ", ".join(f"{a}: {fn.elem}" for a in formals)
    return ([f"  ^bb0({params}):"] + ["    " + line for line in list(lines) + list(tail)]
            + [f"    sparse_tensor.yield {result or res} : {yield_type}"])


def binary_module(op: str, inputs: Sequence[TensorSpec], dims: Sequence[Sequence[int]], out: TensorSpec) -> str:
    """``out[d] = in0[dims0] op in1[dims1]`` for ``op`` in :data:`BINARY_OPS`."""
    opname = _ARITH[kind(out.elem)][op]
    rank = len(out.shape)
    body = [f"%y = {opname} %x0, %x1 : {out.elem}"]
    return "\n".join(_header(inputs, out) + _init(out, 0)
                     + _generic(inputs, dims, out, range(rank), rank, body, "%y")) + "\n"


def unary_module(a: TensorSpec, out: TensorSpec, fn: ScalarFn) -> str:
    """``fn`` on ``a``'s stored values."""
    rank = len(out.shape)
    body = [f"%y = sparse_tensor.unary %x0 : {a.elem} to {out.elem}"]
    body += ["  present={"] + ["  " + s for s in _region(fn, ["%v"], [], "p_", out.elem)] + ["  }", "  absent={}"]
    return "\n".join(_header([a], out) + _init(out, 0)
                     + _generic([a], [range(rank)], out, range(rank), rank, body, "%y")) + "\n"


def select_module(a: TensorSpec, out: TensorSpec, predicate: ScalarFn) -> str:
    """``a``'s stored entries on which ``predicate`` (of the value) is nonzero."""
    rank = len(out.shape)
    elem = a.elem
    _, res = predicate.inline(("%v",), "s_")
    zero = constant_op("%s_zero", 0, elem)
    cmp = "arith.cmpf une" if kind(elem) == "float" else "arith.cmpi ne"
    if kind(elem) == "complex":
        raise TypeError("select needs a real or integer dtype")
    tail = [zero, f"%s_keep = {cmp}, {res}, %s_zero : {elem}"]
    body = [f"%y = sparse_tensor.select %x0 : {elem} {{"]
    body += ["  " + s for s in _region(predicate, ["%v"], [], "s_", "i1", tail, "%s_keep")] + ["}"]
    return "\n".join(_header([a], out) + _init(out, 0)
                     + _generic([a], [range(rank)], out, range(rank), rank, body, "%y")) + "\n"


def reduce_module(a: TensorSpec, keep: Sequence[int], out: TensorSpec, monoid: ScalarFn | str, identity: Any) -> str:
    """``a``'s stored entries reduced over the dimensions not in ``keep`` into a dense ``out`` (filled with
    ``identity``). ``monoid``: ``"add"`` (arith sum), ``"count"`` (how many stored entries) or a traced
    function of (entry, accumulator) applied with ``sparse_tensor.reduce`` (inlined for a dense ``a``: the
    sparsifier does not lower ``sparse_tensor.reduce`` without a sparse operand)."""
    rank = len(a.shape)
    elem = out.elem
    if monoid == "add":
        body = [f"%y = {_ARITH[kind(elem)]['add']} %x0, %o : {elem}"]
    elif a.fmt is None and monoid == "count":  # a dense operand: every element is stored
        body = [constant_op("%one", 1, elem), f"%y = {_ARITH[kind(elem)]['add']} %one, %o : {elem}"]
    elif a.fmt is None and isinstance(monoid, ScalarFn):  # the function inlined (no sparse_tensor.reduce)
        body, res = monoid.inline(("%x0", "%o"), "m_")
        return "\n".join(_header([a], out) + _init(out, identity)
                         + _generic([a], [range(rank)], out, keep, rank, body, res)) + "\n"
    elif monoid == "count":
        one = constant_op("%one", 1, elem)
        body = [f"%u = sparse_tensor.unary %x0 : {a.elem} to {elem}", "  present={",
                f"  ^bb0(%v: {a.elem}):", f"    {one}", f"    sparse_tensor.yield %one : {elem}", "  }",
                "  absent={}", f"%y = {_ARITH[kind(elem)]['add']} %u, %o : {elem}"]
    elif isinstance(monoid, ScalarFn) and not a.sparse:  # every entry is stored: the function itself
        lines, res = monoid.inline(("%x0", "%o"), "m_")
        return "\n".join(_header([a], out) + _init(out, identity)
                         + _generic([a], [range(rank)], out, keep, rank, list(lines), res)) + "\n"
    elif isinstance(monoid, ScalarFn):
        body = [constant_op("%ident", identity, elem), f"%y = sparse_tensor.reduce %x0, %o, %ident : {elem} {{"]
        body += ["  " + s for s in _region(monoid, ["%p", "%q"], [], "m_", elem)] + ["}"]
    else:
        raise ValueError(f"unknown monoid {monoid!r}")
    return "\n".join(_header([a], out) + _init(out, identity)
                     + _generic([a], [range(rank)], out, keep, rank, body, "%y")) + "\n"


def sampled_module(a: TensorSpec, v: TensorSpec, keep: Sequence[int], out: TensorSpec, fn: ScalarFn) -> str:
    """``out = fn(a, v[keep])`` on ``a``'s stored entries (``out`` in ``a``'s format)."""
    rank = len(a.shape)
    elem = out.elem
    body = [f"%y = sparse_tensor.binary %x0, %x1 : {a.elem}, {v.elem} to {elem}", "  overlap={"]
    body += ["  " + s for s in _region(fn, ["%p", "%q"], [], "b_", elem)] + ["  }", "  left={}", "  right={}"]
    return "\n".join(_header([a, v], out) + _init(out, 0)
                     + _generic([a, v], [range(rank), keep], out, range(rank), rank, body, "%y")) + "\n"


def values_module(elem: str, fn: ScalarFn) -> str:
    """``out[n] = fn(v[n], c0[n], ...)`` over 1-D arrays of any length (one per argument of ``fn``)."""
    k = len(fn.args)
    t = f"tensor<?x{elem}>"
    ident = _affine(1, [0])
    lines, res = fn.inline(tuple(f"%x{m}" for m in range(k)), "f_")
    params = ", ".join(f"%in{m}: {t}" for m in range(k))
    bb = ", ".join([f"%x{m}: {elem}" for m in range(k)] + [f"%o: {elem}"])
    return "\n".join([
        f"func.func @main({params}) -> {t} attributes {{llvm.emit_c_interface}} {{",
        "  %c0 = arith.constant 0 : index", f"  %n = tensor.dim %in0, %c0 : {t}",
        f"  %init = tensor.empty(%n) : {t}",
        f"  %r = linalg.generic {{indexing_maps = [{', '.join([ident] * (k + 1))}], iterator_types = [\"parallel\"]}}",
        f"      ins({', '.join(f'%in{m}' for m in range(k))} : {', '.join([t] * k)}) outs(%init : {t}) {{",
        f"    ^bb0({bb}):", *("      " + line for line in lines), f"      linalg.yield {res} : {elem}",
        f"  }} -> {t}", f"  return %r : {t}", "}"]) + "\n"
