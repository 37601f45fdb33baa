"""The sparsifier's input: a contraction as a ``func.func`` around one ``linalg.generic``.

``build_module(Contraction(...))`` returns MLIR text (pure string building, no ``mlir`` import):

    func.func @main(%in0: T0, %in1: T1, [%c: Tout], [%alpha: tensor<1xE>], [%beta: tensor<1xE>]) -> Tout

Sparse operands carry their ``#sparse_tensor.encoding``; row-major dense operands are plain tensors.
The product of the operands (``arith`` ops, or a semiring's ``sparse_tensor.binary`` whose ``left`` and
``right`` regions are empty so that only stored entries take part) is reduced into the output (``arith``
add, or ``sparse_tensor.reduce``; with dense operands only, the semiring's functions inline, since every
element is an entry). Custom reductions start from the identity, so a semiring's ``c`` is folded in after
the contraction (``add(c, r)``). A one-operand, reduction-free contraction with sparse input and output
is a ``sparse_tensor.convert``. Optional prolog (on operand 0) and epilog (on the result) are traced
scalar functions (``sparse_tensor.unary`` on sparse values).
"""
from __future__ import annotations

from ..contraction import Contraction
from ..scalar_fn import ScalarFn, arith_ops, constant_op


class _Body:
    """Accumulates lines with fresh SSA names."""

    def __init__(self, elem: str, indent: str) -> None:
        self.elem = elem
        self.indent = indent
        self.lines: list[str] = []
        self.n = 0

    def fresh(self, stem: str = "v") -> str:
        self.n += 1
        return f"%{stem}{self.n}"

    def add(self, line: str) -> None:
        self.lines.append(self.indent + line)

    def op(self, opname: str, *args: str) -> str:
        name = self.fresh()
        self.add(f"{name} = {opname} {', '.join(args)} : {self.elem}")
        return name

    def inline(self, fn: ScalarFn, actuals: tuple[str, ...]) -> str:
        lines, res = fn.inline(actuals, f"f{self.n}_")
        self.n += 1
        for line in lines:
            self.add(line)
        return res

    def region_op(self, head: str, regions: list[tuple[str, ScalarFn | None]]) -> str:
        """``%r = <head> name={...} ...`` with each region as a sparse_tensor.yield block."""
        name = self.fresh()
        self.add(f"{name} = {head}")
        pad = self.indent + "  "
        for label, fn in regions:
            if fn is None:
                self.lines.append(f"{pad}{label}={{}}")
                continue
            formals = tuple(f"%r{self.n}_{a[1:]}" for a in fn.args)
            lines, res = fn.inline(formals, f"r{self.n}_")
            params = ", ".join(f"{a}: {fn.elem}" for a in formals)
            body = "".join(f"{pad}    {line}\n" for line in lines)
            opener = f"{pad}{label}={{" if label else f"{pad}{{"
            self.lines.append(f"{opener}\n{pad}  ^bb0({params}):\n{body}"
                              f"{pad}    sparse_tensor.yield {res} : {fn.elem}\n{pad}}}")
            self.n += 1
        return name


def _affine(letters: str, subs: str) -> str:
    dims = ", ".join(f"d{k}" for k in range(len(letters)))
    res = ", ".join(f"d{letters.index(ch)}" for ch in subs)
    return f"affine_map<({dims}) -> ({res})>"


def _generic_body(c: Contraction, body: _Body, args: list[str], out: str, scalars: dict[str, str]) -> str:
    elem = c.output.elem
    ops = arith_ops(elem)
    vals = list(args)
    if c.prolog is not None:
        if c.inputs[0].sparse:
            vals[0] = body.region_op(f"sparse_tensor.unary {vals[0]} : {elem} to {elem}",
                                     [("present", c.prolog), ("absent", None)])
        else:
            vals[0] = body.inline(c.prolog, (vals[0],))
    prod = vals[0]
    regions = c.semiring is not None and any(t.sparse for t in c.inputs)  # else every element is an entry
    for v in vals[1:]:
        if c.semiring is None:
            prod = body.op(ops["mul"], prod, v)
        elif not regions:
            prod = body.inline(c.semiring.mul, (prod, v))
        else:
            prod = body.region_op(f"sparse_tensor.binary {prod}, {v} : {elem}, {elem} to {elem}",
                                  [("overlap", c.semiring.mul), ("left", None), ("right", None)])
    if c.alpha:
        prod = body.op(ops["mul"], prod, scalars["alpha"])
    if not c.has_reduction and c.init == "zero":
        return prod
    if c.semiring is None:
        return body.op(ops["add"], out, prod)
    if not regions:
        return body.inline(c.semiring.add, (out, prod))
    return body.region_op(f"sparse_tensor.reduce {prod}, {out}, {scalars['identity']} : {elem}",
                          [("", c.semiring.add)])


def build_module(c: Contraction) -> str:
    """The MLIR module text of ``c`` (see the module docstring)."""
    out_t = c.output.type_text()
    elem = c.output.elem
    for t in c.inputs:
        if t.elem != elem:
            raise TypeError(f"all operands must have the output's element type {elem}, got {t.elem}")
    params = [f"%in{k}: {t.type_text()}" for k, t in enumerate(c.inputs)]
    if c.init != "zero":
        params.append(f"%c: {out_t}")
    if c.alpha:
        params.append(f"%alpha: tensor<1x{elem}>")
    if c.init == "beta_c":
        params.append(f"%beta: tensor<1x{elem}>")
    pre = _Body(elem, "  ")
    pre.add("%i0 = arith.constant 0 : index")
    scalars: dict[str, str] = {}
    if c.alpha:
        pre.add(f"%alpha_s = tensor.extract %alpha[%i0] : tensor<1x{elem}>")
        scalars["alpha"] = "%alpha_s"
    if c.semiring is not None:
        pre.add(constant_op("%ident", c.semiring.identity, elem))
        scalars["identity"] = "%ident"
    rank = len(c.output.shape)
    ident = _affine(c.output_subscripts, c.output_subscripts) if rank else "affine_map<() -> ()>"
    par = ", ".join(['"parallel"'] * rank)
    combine_c = _combines_c_after(c)
    if c.init == "zero" or combine_c:
        if c.output.sparse:
            pre.add(f"%init = tensor.empty() : {out_t}")
        else:
            zero = c.semiring.identity if c.semiring is not None else 0
            pre.add(constant_op("%zero", zero, elem))
            pre.add(f"%empty = tensor.empty() : {out_t}")
            pre.add(f"%init = linalg.fill ins(%zero : {elem}) outs(%empty : {out_t}) -> {out_t}")
    if c.init == "beta_c":
        pre.add(f"%beta_s = tensor.extract %beta[%i0] : tensor<1x{elem}>")
        pre.add(f"%init = linalg.generic {{indexing_maps = [{ident}], iterator_types = [{par}]}} "
                f"outs(%c : {out_t}) {{")
        pre.add(f"^bb0(%o: {elem}):")
        pre.add(f"  %s = {arith_ops(elem)['mul']} %o, %beta_s : {elem}")
        pre.add(f"  linalg.yield %s : {elem}")
        pre.add(f"}} -> {out_t}")
    init = "%c" if c.init == "c" and not combine_c else "%init"

    lines = [f"func.func @{c.name}({', '.join(params)}) -> {out_t} attributes {{llvm.emit_c_interface}} {{"]
    lines += pre.lines
    if _is_copy(c):
        src = c.inputs[0].type_text()
        lines.append(f"  %r = sparse_tensor.convert %in0 : {src} to {out_t}")
    else:
        letters = c.loop_letters
        maps = [_affine(letters, s) for s in c.subscripts] + [_affine(letters, c.output_subscripts)]
        iters = ", ".join('"parallel"' if ch in c.output_subscripts else '"reduction"' for ch in letters)
        ins = ", ".join(f"%in{k}" for k in range(len(c.inputs)))
        in_types = ", ".join(t.type_text() for t in c.inputs)
        body = _Body(elem, "      ")
        args = [f"%x{k}" for k in range(len(c.inputs))]
        result = _generic_body(c, body, args, "%o", scalars)
        bb = ", ".join(f"{a}: {elem}" for a in args + ["%o"])
        lines.append(f"  %r = linalg.generic {{indexing_maps = [{', '.join(maps)}], iterator_types = [{iters}]}}")
        lines.append(f"      ins({ins} : {in_types}) outs({init} : {out_t}) {{")
        lines.append(f"    ^bb0({bb}):")
        lines += body.lines
        lines.append(f"      linalg.yield {result} : {elem}")
        lines.append(f"  }} -> {out_t}")
    final = "%r"
    if combine_c:
        lines += _combine_with_c(c, ident, par, out_t)
        final = "%rc"
    if c.epilog is not None:
        lines += _epilog(c, ident, par, out_t, final)
        final = "%e"
    lines.append(f"  return {final} : {out_t}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _is_copy(c: Contraction) -> bool:
    """One operand, no reduction, no scaling, and both sides stored with encodings: a convert."""
    return (len(c.inputs) == 1 and not c.has_reduction and c.init == "zero" and not c.alpha
            and c.prolog is None and c.semiring is None and c.inputs[0].encoded and c.output.sparse
            and c.subscripts[0] == c.output_subscripts)


def _combines_c_after(c: Contraction) -> bool:
    """Whether ``c`` is folded in after the contraction (``semiring.add(c, r)``) rather than being its initial
    value: custom reductions (``sparse_tensor.reduce``) start from the identity, not from the output."""
    return c.semiring is not None and c.init == "c" and any(t.sparse for t in c.inputs)


def _combine_with_c(c: Contraction, ident: str, par: str, out_t: str) -> list[str]:
    """``%rc = add(%c, %r)`` element-wise with the semiring's add."""
    assert c.semiring is not None
    elem = c.output.elem
    body = _Body(elem, "      ")
    res = body.inline(c.semiring.add, ("%cv", "%rv"))
    return ([f"  %rc = linalg.generic {{indexing_maps = [{ident}, {ident}], iterator_types = [{par}]}}",
             f"      ins(%r : {out_t}) outs(%c : {out_t}) {{",
             f"    ^bb0(%rv: {elem}, %cv: {elem}):"]
            + body.lines + [f"      linalg.yield {res} : {elem}", f"  }} -> {out_t}"])


def _epilog(c: Contraction, ident: str, par: str, out_t: str, src: str) -> list[str]:
    elem = c.output.elem
    body = _Body(elem, "      ")
    if c.output.sparse:
        res = body.region_op(f"sparse_tensor.unary %y : {elem} to {elem}",
                             [("present", c.epilog), ("absent", None)])
        head = [f"  %e_init = tensor.empty() : {out_t}",
                f"  %e = linalg.generic {{indexing_maps = [{ident}, {ident}], iterator_types = [{par}]}}",
                f"      ins({src} : {out_t}) outs(%e_init : {out_t}) {{",
                f"    ^bb0(%y: {elem}, %o: {elem}):"]
    else:
        res = body.inline(c.epilog, ("%y",))  # type: ignore[arg-type]
        head = [f"  %e = linalg.generic {{indexing_maps = [{ident}], iterator_types = [{par}]}}",
                f"      outs({src} : {out_t}) {{",
                f"    ^bb0(%y: {elem}):"]
    return head + body.lines + [f"      linalg.yield {res} : {elem}", f"  }} -> {out_t}"]
