"""Products of a torch model's weights in formats torch has no layout for, as calls to our own kernels.

torch-mlir imports such a weight as a dense placeholder argument of ``@main`` (``tensor<NxKxT>``) that only
feeds matrix products (``linalg.matmul ins(%W, %X)`` / ``linalg.matvec ins(%W, %x)``; the frontend routes
``x @ W^T`` to ``(W @ x^T)^T``).  :func:`call_weight_kernels` rewrites the linalg text: the placeholder
becomes the weight's level buffers (``tensor<?xi64>`` ... as the emitter names them), each product a
``func.call`` of the emitter's walking loops for the weight's format (one private function per product
shape, in the same module), wrapped in ``bufferization.to_buffer``/``to_tensor`` so the surrounding
tensor IR (bias, activations, the dense layers) is unchanged and bufferizes with it.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from frontend.format import TensorFormat

from .contraction import Contraction, TensorSpec
from .emitter.kernel import emit_contraction, row_parallel
from .schedule import OperandStats, choose_schedule


@dataclass(frozen=True)
class KernelWeight:
    """A weight argument of ``@main`` (its index) computed with our kernels: format, shape, widths."""

    arg: int
    fmt: TensorFormat
    shape: tuple[int, int]
    elem: str
    pos_width: int = 64
    crd_width: int = 64
    what: str = "weight"
    #: the weight's row statistics (the kernel's vector lanes follow :func:`lowering.schedule.choose_schedule`)
    stats: OperandStats | None = None
    #: cores the module may use (the frontend passes torch's thread count where OpenMP is available, else 1);
    #: a product runs on that many threads when :func:`lowering.schedule.choose_schedule` says it pays
    threads: int = 1
    #: ``bounds(rows, n, split)``: ``n + 1`` row boundaries of ``n`` chunks (balanced by stored entries for
    #: ``split == "nnz"``); None: equal row counts
    bounds: Callable[[int, int, str], tuple[int, ...]] | None = None

    def spec(self) -> TensorSpec:
        return TensorSpec(self.fmt, self.shape, self.elem, self.pos_width, self.crd_width)


#: Row chunks per thread of a threaded product (balanced by stored entries). 1: one static chunk per thread;
#: more: chunks handed out dynamically, so a thread the OS deschedules on a loaded machine does not hold up
#: the whole product (measured: docs/torch.md)
CHUNKS_PER_THREAD = 4

#: A weight's buffers as the kernel takes them: ("pos" | "crd", level) or ("val", -1).
Buffer = tuple[str, int]

_PRODUCT = re.compile(
    r"^(?P<indent>\s*)(?P<res>%[\w.$-]+) = linalg\.(?P<op>matmul|matvec) ins\((?P<w>%[\w.$-]+), "
    r"(?P<x>%[\w.$-]+) : (?P<wt>tensor<[^>]*>), (?P<xt>tensor<[^>]*>)\) outs\((?P<out>%[\w.$-]+) : "
    r"(?P<ot>tensor<[^>]*>)\) -> tensor<[^>]*>\s*$")
_PARAM = re.compile(r"%in0_(pos|crd)(\d+): (memref<[^>]*>)|%in0_val: (memref<[^>]*>)")


def split_top(text: str) -> list[str]:
    """``text`` split at commas outside ``<>``, ``()``, ``[]`` and ``{}``."""
    out: list[str] = []
    cur: list[str] = []
    depth = 0
    for ch in text:
        if ch in "<([{":
            depth += 1
        elif ch in ">)]}":
            depth -= 1
        if ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    if "".join(cur).strip():
        out.append("".join(cur).strip())
    return out


def _main_header(lines: list[str]) -> tuple[int, list[str], str]:
    """Index of ``@main``'s header line, its parameters and what follows them."""
    for i, line in enumerate(lines):
        if "func.func @main(" in line:
            head, rest = line.split("func.func @main(", 1)
            depth = 1
            for j, ch in enumerate(rest):
                depth += ch == "("
                depth -= ch == ")"
                if depth == 0:
                    return i, split_top(rest[:j]), rest[j:]
    raise ValueError("no func.func @main in the imported model")


def _kernel(w: KernelWeight, x_type: str, name: str) -> tuple[str, list[tuple[Buffer, str]], str]:
    """The private kernel function computing ``W @ X``; its weight buffers (with memref types) and the
    memref type of X."""
    dims = x_type[len("tensor<"):-1].split("x")
    x_shape = tuple(int(d) for d in dims[:-1])
    n = w.shape[0]
    if len(x_shape) == 2:
        c = Contraction(("ik", "kj"), (w.spec(), TensorSpec(None, x_shape, w.elem)), "ij",
                        TensorSpec(None, (n, x_shape[1]), w.elem), name=name)
    else:
        c = Contraction(("ik", "k"), (w.spec(), TensorSpec(None, x_shape, w.elem)), "i",
                        TensorSpec(None, (n,), w.elem), name=name)
    sched = choose_schedule(c, w.stats, w.threads, None)
    c = replace(c, lanes=sched.lanes)
    text = _private(emit_contraction(c), name)
    header = text.split("\n", 1)[0]
    if sched.threads > 1 and row_parallel(c):
        chunks = min(n, sched.threads * CHUNKS_PER_THREAD)
        bounds = (w.bounds(n, chunks, sched.split) if w.bounds is not None
                  else tuple(n * k // chunks for k in range(chunks + 1)))
        rows = _private(emit_contraction(replace(c, name=f"{name}_rows"), rows=True), f"{name}_rows")
        text = _team(header, name, bounds, sched.threads) + "\n" + rows
    buffers: list[tuple[Buffer, str]] = []
    for m in _PARAM.finditer(header):
        if m.group(4) is not None:
            buffers.append((("val", -1), m.group(4)))
        else:
            buffers.append(((m.group(1), int(m.group(2))), m.group(3)))
    x_mem = "memref<" + x_type[len("tensor<"):]
    return text, buffers, x_mem


def _private(text: str, name: str) -> str:
    """Emitted kernel ``text`` as a private function of the model module (no C interface)."""
    text = text.replace(f"func.func @{name}(", f"func.func private @{name}(", 1)
    return text.replace(" attributes {llvm.emit_c_interface}", "", 1)


def _team(header: str, name: str, bounds: tuple[int, ...], threads: int) -> str:
    """``@name`` with the signature of the whole-product kernel (``header``): allocates the output and runs
    ``@name_rows`` over the row ranges ``bounds`` on ``threads`` OpenMP threads (one static chunk each when
    there are as many ranges as threads, else handed out dynamically)."""
    sig = header.split("(", 1)[1].rsplit(") -> ", 1)
    params = split_top(sig[0])
    out_t = sig[1].split(" ", 1)[0]
    n = len(bounds) - 1
    policy = "static" if n == threads else "dynamic"
    names = [p.split(":", 1)[0].strip() for p in params]
    types = [p.split(":", 1)[1].strip() for p in params]
    cases = "".join(f"\n        case {k} {{\n          %b{k} = arith.constant {bounds[k]} : index\n"
                    f"          %e{k} = arith.constant {bounds[k + 1]} : index\n"
                    f"          scf.yield %b{k}, %e{k} : index, index\n        }}" for k in range(n))
    return (f"func.func private @{name}({sig[0]}) -> {out_t} {{\n"
            f"  %out = memref.alloc() : {out_t}\n"
            f"  %t0 = arith.constant 0 : index\n  %t1 = arith.constant 1 : index\n"
            f"  %tn = arith.constant {n} : index\n  %nt = arith.constant {threads} : i32\n"
            f"  omp.parallel num_threads(%nt : i32) {{\n"
            f"    omp.wsloop schedule({policy}) {{\n"
            f"      omp.loop_nest (%t) : index = (%t0) to (%tn) step (%t1) {{\n"
            f"        %r:2 = scf.index_switch %t -> index, index{cases}\n"
            f"        default {{\n          scf.yield %t0, %t0 : index, index\n        }}\n"
            f"        func.call @{name}_rows({', '.join(names)}, %out, %r#0, %r#1) : "
            f"({', '.join(types)}, {out_t}, index, index) -> ()\n"
            f"        omp.yield\n      }}\n    }}\n    omp.terminator\n  }}\n"
            f"  return %out : {out_t}\n}}")


def uses_openmp(text: str) -> bool:
    """Whether :func:`call_weight_kernels`' module runs products on OpenMP threads (link the runtime)."""
    return "omp.parallel" in text


def _is_zero_fill(lines: list[str], out: str) -> bool:
    """Whether ``out`` is ``linalg.fill`` with a zero constant (torch-mlir's accumulator of a product)."""
    fill = next((ln for ln in lines if ln.strip().startswith(f"{out} = linalg.fill ins(")), None)
    if fill is None:
        return False
    cst = fill.split("ins(", 1)[1].split(" ", 1)[0].rstrip(":")
    const = next((ln for ln in lines if ln.strip().startswith(f"{cst} = arith.constant ")), "")
    return bool(re.search(r"arith\.constant (0\.0+e\+00|0\.0*|-?0) :", const))


def call_weight_kernels(text: str, weights: Sequence[KernelWeight]) -> tuple[str, dict[int, list[Buffer]]]:
    """Rewrite linalg ``text`` (torch-mlir's ``@main``) so each weight's products call our kernels.

    Returns the new text and, per weight argument, the buffers that replace it in ``@main``'s
    signature (in order); a weight the model does not use stays a dense argument (absent from the dict).
    Raises ``ValueError`` naming the weight when it is used other than as the left operand of a matrix product."""
    if not weights:
        return text, {}
    lines = text.split("\n")
    hi, params, tail = _main_header(lines)
    by_arg = {w.arg: w for w in weights}
    names = {w.arg: params[w.arg].split(":", 1)[0].strip() for w in weights}
    kernels: list[str] = []
    buffers: dict[int, list[Buffer]] = {}
    new_params: dict[int, list[str]] = {}
    prologue: dict[int, list[str]] = {}
    refs: dict[int, list[str]] = {}
    body = lines[hi + 1:]
    out_body: list[str] = []
    counter = 0
    for line in body:
        used = [a for a, nm in names.items() if re.search(re.escape(nm) + r"(?![\w.$-])", line)]
        if not used:
            out_body.append(line)
            continue
        m = _PRODUCT.match(line)
        a = used[0]
        w = by_arg[a]
        if m is None or len(used) > 1 or m.group("w") != names[a] or m.group("x") == names[a]:
            raise ValueError(f"{w.what}: a weight in format {w.fmt.name or w.fmt} runs on our kernels only as "
                             f"the left operand of a matrix product (x @ W.T, W @ x); it is used as: "
                             f"{line.strip()}")
        name = f"ust_weight{a}_{counter}"
        counter += 1
        ktext, kbufs, x_mem = _kernel(w, m.group("xt"), name)
        kernels.append(ktext)
        if a not in buffers:
            buffers[a] = [b for b, _ in kbufs]
            base = names[a].lstrip("%")
            new_params[a] = []
            prologue[a] = []
            refs[a] = []
            for (kind, lvl), mem in kbufs:
                tag = "val" if kind == "val" else f"{kind}{lvl}"
                arg = f"%{base}_{tag}"
                tensor_t = "tensor<" + mem[len("memref<"):]
                new_params[a].append(f"{arg}: {tensor_t}")
                ref = f"%ust_{base}_{tag}"
                prologue[a].append(f"    {ref} = bufferization.to_buffer {arg} read_only : {tensor_t} to {mem}")
                refs[a].append(f"{ref}")
        ind, res, ot = m.group("indent"), m.group("res"), m.group("ot")
        out_mem = "memref<" + ot[len("tensor<"):]
        xb, rb = f"%ust_x{counter}", f"%ust_r{counter}"
        kinds = [mem for _, mem in kbufs]
        args = ", ".join(refs[a] + [xb])
        out_body.append(f"{ind}{xb} = bufferization.to_buffer {m.group('x')} read_only : {m.group('xt')} to {x_mem}")
        out_body.append(f"{ind}{rb} = func.call @{name}({args}) : ({', '.join(kinds + [x_mem])}) -> {out_mem}")
        if _is_zero_fill(body, m.group("out")):
            out_body.append(f"{ind}{res} = bufferization.to_tensor {rb} restrict writable : {out_mem} to {ot}")
        else:
            tb = f"%ust_t{counter}"
            out_body.append(f"{ind}{tb} = bufferization.to_tensor {rb} restrict writable : {out_mem} to {ot}")
            out_body.append(f"{ind}{res} = linalg.add ins({tb}, {m.group('out')} : {ot}, {ot}) "
                            f"outs({m.group('out')} : {ot}) -> {ot}")
    sig: list[str] = []
    for i, p in enumerate(params):
        sig += new_params[i] if i in new_params else [p]
    head = lines[hi].split("func.func @main(", 1)[0]
    header = f"{head}func.func @main({', '.join(sig)}{tail}"
    pro = [ln for a in sorted(prologue) for ln in prologue[a]]
    end = max(i for i, ln in enumerate(out_body) if ln.strip() == "}")  # the module's closing brace
    func_end = max(i for i, ln in enumerate(out_body[:end]) if ln.rstrip() == "  }")
    out_lines = lines[:hi] + [header] + pro + out_body[:func_end + 1]
    out_lines += ["  " + ln if ln else ln for k in kernels for ln in k.rstrip("\n").split("\n")]
    out_lines += out_body[func_end + 1:]
    return "\n".join(out_lines), buffers
