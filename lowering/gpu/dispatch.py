"""Which GPU path runs a contraction, and its MLIR for the generated-code paths.

Paths (``GPU_PATHS``):

* ``"cusparse"``: SpMV/SpMM of one sparse operand with a dense one, plain arithmetic, in a layout the
  package passes to cuSPARSE as is (torch: CSR, COO, BSR; CuPy: CSR, CSC, COO; both: square-block
  BlockedELL whose extents are whole blocks, through cuSPARSE's blocked-ELL SpMM): the vendor library
  beats the sparsifier's one-thread-per-row loops. (torch would convert CSC to CSR on every call: CSC
  operands of torch take the generated kernel, whose scatter is atomic.)
* ``"sparsifier-gpu"``: MLIR's sparsifier with a parallelization strategy (``GpuPipeline``); the
  result is dense and updated in place (``init="c"``), the kernel reads the caller's device buffers.
* ``"emitter-gpu"``: ust-mlir's own loop code (``lowering.gpu.emitter``, registered with
  ``register_gpu_emitter`` by :mod:`lowering.builtins`), for formats the sparsifier cannot encode
  (range/delta levels, diagonal maps) and on request for others with one stored operand.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from ..contraction import Contraction
from ..dispatch import Lowered
from ..sparsifier.generic import build_module
from .library import direct_layouts, library_fits, library_layout
from .pipeline import GpuPipeline

GPU_PATHS = ("cusparse", "sparsifier-gpu", "emitter-gpu")
_LIBRARY_ELEMS = ("f16", "f32", "f64")

_emitters: dict[str, Callable[[Contraction, str, str], Lowered]] = {}


def register_gpu_emitter(builder: Callable[[Contraction, str, str], Lowered], name: str = "emitter-gpu") -> None:
    """Make ``builder(contraction, chip, gpu_format) -> Lowered`` the GPU emitter path."""
    _emitters[name] = builder


def _emitter_only(c: Contraction) -> bool:
    return any(t.fmt is not None and t.fmt.mlir_support() != "sparsifier" for t in c.inputs + (c.output,))


def gpu_path(c: Contraction, prefer: str = "auto", package: str = "torch") -> str:
    """The GPU path for ``c`` with operands of ``package`` (``"torch"``/``"cupy"``): ``prefer`` when given
    and possible, else the best one (see the module docstring)."""
    if prefer not in ("auto",) + GPU_PATHS:
        raise ValueError(f"path must be 'auto' or one of {GPU_PATHS}, got {prefer!r}")
    if _emitter_only(c):
        if prefer not in ("auto", "emitter-gpu"):
            raise ValueError(f"path {prefer!r} cannot take {_format_names(c)}: only ust-mlir's own code "
                             "generator handles range/delta levels and diagonal maps")
        return "emitter-gpu"
    library = library_ok(c, package)
    if prefer == "cusparse" and not library:
        raise ValueError(f"path 'cusparse' needs SpMV/SpMM ('ik,k->i' / 'ik,kj->ij') of one "
                         f"{'/'.join(direct_layouts(package))} operand ({package}) with a dense one, plain "
                         "arithmetic, float16/32/64")
    if prefer != "auto":
        return prefer
    return "cusparse" if library else "sparsifier-gpu"


def library_ok(c: Contraction, package: str = "torch") -> bool:
    """Whether cuSPARSE computes ``c`` through ``package`` (see the module docstring)."""
    if not c.is_spmv_or_spmm or c.output.sparse:
        return False
    if c.semiring is not None or c.prolog is not None or c.epilog is not None or c.init == "beta_c":
        return False
    a, b = c.inputs
    return (a.elem in _LIBRARY_ELEMS and library_layout(a.fmt) in direct_layouts(package)
            and library_fits(a.fmt, a.shape) and not b.sparse and not b.encoded)


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
        builder = _emitters.get(path)
        if builder is None:
            raise ValueError(f"no GPU emitter is registered for {_format_names(c)} (register_gpu_emitter)")
        return builder(c, chip, gpu_format)
    if path != "sparsifier-gpu":
        raise ValueError(f"{path!r} is not a generated-code path")
    strategy = "dense-outer-loop"
    return Lowered(build_module(c), GpuPipeline(gpu_chip=chip, gpu_format=gpu_format,
                                                parallelization_strategy=strategy), path)
