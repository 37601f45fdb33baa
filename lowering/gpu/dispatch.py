"""Which GPU path runs a contraction, and its MLIR for the generated-code paths.

Paths (``GPU_PATHS``):

* ``"cusparse"``: SpMV/SpMM of one sparse operand with a dense one, plain arithmetic, in a layout the
  package passes to cuSPARSE as is (torch: CSR, COO, BSR; CuPy: CSR, CSC, COO): the vendor library
  beats the sparsifier's one-thread-per-row loops. (torch would convert CSC to CSR on every call: CSC
  operands of torch take the generated kernel, whose scatter is atomic.)
* ``"sparsifier-gpu"``: MLIR's sparsifier with a parallelization strategy (``GpuPipeline``); the
  result is dense and updated in place (``init="c"``), the kernel reads the caller's device buffers.
* ``"emitter-gpu"``: ust-mlir's own loop code (``lowering.gpu.emitter``), for formats the sparsifier
  cannot encode (range/delta levels, diagonal maps) and on request for others with one stored operand.

Formats are read by duck typing; nothing here imports ``frontend``.
"""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Callable

from lowering.contraction import Contraction, build_module
from lowering.dispatch import Lowered
from lowering.gpu.pipeline import GpuPipeline

GPU_PATHS = ("cusparse", "sparsifier-gpu", "emitter-gpu")
#: (subscripts, output subscripts) of the products cuSPARSE computes (SpMV, SpMM).
_LIBRARY_OPS = {(("ik", "k"), "i"), (("ik", "kj"), "ij")}
_LIBRARY_ELEMS = ("f16", "f32", "f64")
#: Layouts each package hands to cuSPARSE as they are (torch converts CSC to CSR on every call).
LIBRARY_LAYOUTS = {"torch": ("CSR", "COO", "BSR"), "cupy": ("CSR", "CSC", "COO")}

_emitters: dict[str, Callable[[Contraction, str, str], Lowered]] = {}


def _builtin_emitter() -> None:
    """Register ``lowering.gpu.emitter`` (the GPU variant of ust-mlir's emitter) on first need."""
    if "emitter-gpu" not in _emitters:
        from lowering.gpu import emitter as gpu_emitter


def register_gpu_emitter(builder: Callable[[Contraction, str, str], Lowered], name: str = "emitter-gpu") -> None:
    """Make ``builder(contraction, chip, gpu_format) -> Lowered`` the GPU emitter path."""
    _emitters[name] = builder


def library_layout(fmt: Any) -> str | None:
    """``"CSR"``, ``"CSC"``, ``"COO"`` or ``"BSR"`` when cuSPARSE stores ``fmt`` as is, else None."""
    if fmt is None or fmt.num_dimensions != 2 or fmt.is_dense:
        return None
    from frontend.interop._layouts import match_layout  # lazily: lowering never imports frontend eagerly

    lay = match_layout(fmt)
    if lay is None or lay.kind.upper() not in ("CSR", "CSC", "COO", "BSR") or lay.nbatch or lay.ndense:
        return None
    return lay.kind.upper()


def _emitter_only(c: Contraction) -> bool:
    return any(t.fmt is not None and t.fmt.mlir_support() != "sparsifier" for t in c.inputs + (c.output,))


def gpu_path(c: Contraction, prefer: str = "auto", package: str = "torch") -> str:
    """The GPU path for ``c`` with operands of ``package`` (``"torch"``/``"cupy"``): ``prefer`` when given
    and possible, else the best one (see the module docstring)."""
    if prefer not in ("auto",) + GPU_PATHS:
        raise ValueError(f"path must be 'auto' or one of {GPU_PATHS}, got {prefer!r}")
    if _emitter_only(c):
        _builtin_emitter()
        if prefer not in ("auto", "emitter-gpu"):
            raise ValueError(f"path {prefer!r} cannot take {_format_names(c)}: only ust-mlir's own code "
                             "generator handles range/delta levels and diagonal maps")
        return "emitter-gpu"
    library = library_ok(c, package)
    if prefer == "cusparse" and not library:
        raise ValueError(f"path 'cusparse' needs SpMV/SpMM ('ik,k->i' / 'ik,kj->ij') of one "
                         f"{'/'.join(LIBRARY_LAYOUTS.get(package, ()))} operand ({package}) with a dense one, plain "
                         "arithmetic, float16/32/64")
    if prefer == "emitter-gpu":
        _builtin_emitter()
    if prefer != "auto":
        return prefer
    return "cusparse" if library else "sparsifier-gpu"


def library_ok(c: Contraction, package: str = "torch") -> bool:
    """Whether cuSPARSE computes ``c`` through ``package`` (see the module docstring)."""
    if (c.subscripts, c.output_subscripts) not in _LIBRARY_OPS or c.output.sparse:
        return False
    if c.semiring is not None or c.prolog is not None or c.epilog is not None or c.init == "beta_c":
        return False
    a, b = c.inputs
    return (a.elem in _LIBRARY_ELEMS and library_layout(a.fmt) in LIBRARY_LAYOUTS.get(package, ())
            and not b.sparse and not b.encoded)


def _format_names(c: Contraction) -> str:
    return "; ".join(str(t.fmt) for t in c.inputs + (c.output,) if t.fmt is not None)


def gpu_contraction(c: Contraction) -> Contraction:
    """``c`` as the GPU kernels need it: a dense result accumulated into a given buffer ``c``."""
    if c.output.sparse:
        raise ValueError("sparse results are not computed on the GPU: the sparsifier parallelizes no loop "
                         "that inserts into a sparse output; compute a dense result or use the CPU")
    return c if c.init in ("c", "beta_c") else replace(c, init="c")


def lower_gpu(c: Contraction, chip: str, path: str = "sparsifier-gpu", gpu_format: str = "fatbin") -> Lowered:
    """MLIR text and GpuPipeline for a generated-code GPU path."""
    c = gpu_contraction(c)
    if path == "emitter-gpu":
        _builtin_emitter()
        builder = _emitters.get(path)
        if builder is None:
            raise ValueError(f"no GPU emitter is registered for {_format_names(c)} (register_gpu_emitter)")
        return builder(c, chip, gpu_format)
    if path != "sparsifier-gpu":
        raise ValueError(f"{path!r} is not a generated-code path")
    strategy = "dense-outer-loop"
    return Lowered(build_module(c), GpuPipeline(gpu_chip=chip, gpu_format=gpu_format,
                                                parallelization_strategy=strategy), path)
