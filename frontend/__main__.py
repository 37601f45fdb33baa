"""Command line: check this machine, print MLIR encodings of formats.

    python -m frontend doctor [--require-gpu]      (frontend._doctor: exit status 0 / 1 / 3 / 4)
    python -m frontend encoding CSR
    python -m frontend encoding "(i, j) -> (i : dense, j : compressed)" --shape 8x8 --dtype f64
    python -m frontend formats

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
    lines = [f"format   : {fmt}", f"path     : {fmt.mlir_support()}"]
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
