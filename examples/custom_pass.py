"""Write your own pass: plug MLIR passes or Python rewrites into the compile pipeline.

Two ways, both part of the compile cache key:

- ``lowering.register_pass(hook_point, stage, name=...)``: every compile from now on runs it (until
  ``unregister_pass``). ``stage`` is a pass pipeline (``"builtin.module(...)"``), a Python function
  ``str -> str`` on the module text, or a ``Stage`` (also ``module_fn`` on an ``mlir.ir.Module``).
- ``pipeline=with_stages(...)`` on one call (``matmul``, ``Matmul``, ``einsum``).

Hook points: ``before_sparsification`` (linalg + sparse_tensor, or the emitter's loops),
``after_bufferization`` (memref + scf), ``before_llvm`` (cf + llvm-ready). The i1 workaround of the
sparsifier (``widen-i1``) is itself a stage registered at ``after_bufferization``.

Run: ``python examples/custom_pass.py``
"""
from __future__ import annotations

import re

import numpy as np
import scipy.sparse as sp

import lowering
from frontend import Matmul, NamedFormats, Tensor
from lowering.custom_pipeline import with_stages


def stamp_loop_count(text: str) -> str:
    """A Python pass on module text: record how many ``scf.for`` loops the module has as a module
    attribute (visible in the next stage's text)."""
    loops = len(re.findall(r"\bscf\.for\b", text))
    attr = f"ust.loops = {loops} : i64"
    if text.lstrip().startswith("module attributes {"):
        return text.replace("module attributes {", f"module attributes {{{attr}, ", 1)
    return text.replace("module {", f"module attributes {{{attr}}} {{", 1)


def main() -> None:
    A = sp.random(500, 400, density=0.02, random_state=0, format="csr")
    x = np.random.default_rng(0).standard_normal(400)
    t = Tensor.from_package(A).convert(NamedFormats.DELTA(4))

    # 1. A global pass: loop-invariant code motion after bufferization, for every kernel.
    lowering.register_pass("after_bufferization", "builtin.module(func.func(loop-invariant-code-motion))",
                           name="licm")
    try:
        y = Matmul(t, x).execute().to_dense()
        print(f"with licm registered: max |y - scipy| = {np.abs(y - A @ x).max():.2e}")
    finally:
        lowering.unregister_pass("after_bufferization", "licm")

    # 2. A per-call Python pass: only this Matmul runs it.
    mm = Matmul(t, x, pipeline=with_stages(after_bufferization=[stamp_loop_count]))
    y = mm.execute().to_dense()
    stages = dict(mm.stages())
    stamped = re.search(r"ust\.loops = (\d+)", stages["lower"])
    print(f"per-call stage ran: module attribute ust.loops = {stamped.group(1) if stamped else None}; "
          f"max |y - scipy| = {np.abs(y - A @ x).max():.2e}")


if __name__ == "__main__":
    main()
