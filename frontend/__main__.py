"""Command line: check this machine, print MLIR encodings of formats and the path an operation takes.

    python -m frontend doctor [--require-gpu]      (frontend._doctor: exit status 0 / 1 / 3 / 4)
    python -m frontend encoding CSR
    python -m frontend encoding "(i, j) -> (i : dense, j : compressed)" --shape 8x8 --dtype f64
    python -m frontend formats
    python -m frontend plan "CSR @ dense" [--shape 64x64] [--density 0.1] [--dtype float64]

Errors exit with status 2 and a one-line message (no traceback).
"""
from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from frontend.format import NamedFormats, TensorFormat


def resolve_format(text: str) -> TensorFormat:
    """A named format (``CSR``, ``BSR((2, 3))``) or DSL text."""
    if "->" in text:
        return TensorFormat.parse(text)
    return NamedFormats.lookup(text)


def _shape(text: str) -> list[int]:
    try:
        dims = [int(x) for x in text.lower().split("x")]
    except ValueError:
        raise ValueError(f"--shape must look like 8x8, got {text!r}") from None
    if any(d < 0 for d in dims):
        raise ValueError(f"--shape extents must be non-negative, got {text!r}")
    return dims


def _encoding(args: argparse.Namespace) -> str:
    fmt = resolve_format(args.format)
    support = fmt.mlir_support()  # the format's MLIR support; the path one product takes: the plan command
    said = "encoded (the sparsifier compiles it)" if support == "sparsifier" else "not encodable (the emitter walks it)"
    lines = [f"format   : {fmt}", f"mlir     : {said}"]
    if fmt.mlir_support() == "emitter":
        from frontend.format import unsupported_reason
        lines.append(f"encoding : none ({unsupported_reason(fmt)}; lowered by ust-mlir's own code generator)")
        return "\n".join(lines)
    if fmt.num_levels:
        lines.append(f"encoding : {fmt.to_mlir(args.pos_width, args.crd_width)}")
    shape = _shape(args.shape) if args.shape else [8] * fmt.num_dimensions
    lines.append(f"type     : {fmt.mlir_type(shape, args.dtype, args.pos_width, args.crd_width)}")
    return "\n".join(lines)


def _formats(args: argparse.Namespace) -> str:
    rows = []
    for name, fmt in NamedFormats.all().items():
        if fmt.mlir_support() == "sparsifier" and fmt.num_levels:
            mlir = fmt.to_mlir()
        else:
            mlir = "(plain tensor)" if not fmt.num_levels else "(ust-mlir emitter: no MLIR encoding)"
        rows.append(f"{name:<12} {fmt}\n{'':<12} {mlir}")
    return "\n".join(rows)


def _plan_operand(text: str, shape: list[int], dtype: str, density: float, seed: int) -> object:
    """A random operand of ``shape`` for the ``plan`` command: ``dense`` (a NumPy array) or a format."""
    import numpy as np

    rng = np.random.default_rng(seed)
    if text.strip().lower() == "dense":
        return rng.standard_normal(shape).astype(dtype)
    fmt = resolve_format(text.strip())
    if fmt.num_dimensions != len(shape):
        raise ValueError(f"{text.strip()} has {fmt.num_dimensions} dimensions; give --shape with as many extents")
    from frontend.tensor import Tensor

    dense = rng.standard_normal(shape).astype(dtype) * (rng.random(shape) < density)
    return Tensor.from_dense(dense, fmt)


def _plan_elementwise(args: argparse.Namespace, symbol: str) -> str:
    """``A + B`` / ``A - B`` / ``A * B`` of two formats (or dense): the paths of the kernels the call runs."""
    from frontend import ops

    m, n = _shape(args.shape)[:2] if args.shape else (64, 64)
    left, right = (_plan_operand(s, [m, n], args.dtype, args.density, seed)
                   for seed, s in enumerate(args.operation.split(symbol)))
    op = {"+": ops.add, "-": ops.subtract, "*": ops.multiply}[symbol]
    paths = ", ".join(ops.paths_of(op, left, right))
    return "\n".join([f"operation : {args.operation.strip()} ({m}x{n}, {args.dtype}, density {args.density})",
                       f"path      : {paths}"])


def _plan(args: argparse.Namespace) -> str:
    """``A @ B`` with each side a format or ``dense``: the path, threads and the schedule's reason; ``A + B``,
    ``A - B``, ``A * B``: the paths of the elementwise kernels."""
    for symbol in ("+", "-", "*"):
        if args.operation.count(symbol) == 1 and "@" not in args.operation:
            return _plan_elementwise(args, symbol)
    sides = args.operation.split("@")
    if len(sides) != 2:
        raise ValueError(f"plan takes 'FORMAT @ dense', 'FORMAT @ FORMAT' or 'FORMAT + FORMAT' (also - and *), "
                         f"got {args.operation!r}")
    m, k = _shape(args.shape)[:2] if args.shape else (64, 64)
    n = args.columns or (0 if sides[1].strip().lower() == "dense" else k)  # a stored right operand: a matrix
    a = _plan_operand(sides[0], [m, k], args.dtype, args.density, 0)
    b = _plan_operand(sides[1], [k] if n == 0 else [k, n], args.dtype, args.density, 1)
    from frontend.ops import Matmul

    info = Matmul(a, b).info
    return "\n".join([f"operation : {args.operation.strip()} ({m}x{k} @ {k}{'' if n == 0 else f'x{n}'}, "
                       f"{args.dtype}, density {args.density})", f"path      : {info.path}",
                       f"threads   : {info.threads} (split by {info.split})", f"reason    : {info.reason}"])


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m frontend", description="ust-mlir format tools")
    sub = parser.add_subparsers(dest="command", required=True)
    enc = sub.add_parser("encoding", help="print the MLIR encoding and tensor type of a format")
    enc.add_argument("format", help="a named format (CSR, 'BSR((2, 3))', 'DELTA(8)') or DSL text")
    enc.add_argument("--shape", help="dimension extents, e.g. 8x8 (default 8 per dimension)")
    enc.add_argument("--dtype", default="f64", help="element type (f64, f32, float32, complex128, ...)")
    enc.add_argument("--pos-width", type=int, default=64)
    enc.add_argument("--crd-width", type=int, default=64)
    enc.set_defaults(run=_encoding)
    fm = sub.add_parser("formats", help="list the named formats with their DSL and MLIR")
    fm.set_defaults(run=_formats)
    pl = sub.add_parser("plan", help="print the path a product takes (registered kernel, sparsifier, emitter) "
                                     "and why, for random operands")
    pl.add_argument("operation", help="'CSR @ dense', 'DELTA(8) @ dense', 'CSR @ CSR', 'dense @ CSC', ...")
    pl.add_argument("--shape", help="extents of the left operand, e.g. 64x64 (default)")
    pl.add_argument("--columns", type=int, default=0,
                    help="columns of a dense right operand (0, the default: a vector, SpMV)")
    pl.add_argument("--density", type=float, default=0.1, help="fraction of stored entries (default 0.1)")
    pl.add_argument("--dtype", default="float64", help="NumPy value type (default float64)")
    pl.set_defaults(run=_plan)
    doc = sub.add_parser("doctor", help="check the toolchain, cache, threads and CUDA, then compile and run a "
                                        "tiny product on every available path against numpy")
    doc.add_argument("--require-gpu", action="store_true",
                     help="fail (exit status 4) when no CUDA device is found, 3 when a GPU check fails")
    args = parser.parse_args(argv)
    if args.command == "doctor":
        from frontend._doctor import main as doctor

        return doctor(require_gpu=args.require_gpu)
    try:
        print(args.run(args))
    except (ValueError, TypeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
