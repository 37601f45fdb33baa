"""lowering: an operation on given formats -> MLIR text and the pipeline that compiles it.

Public extension points (docs/extending.md):

- ``register_pass(hook_point, stage, name=...)``: a pass pipeline string, a text callback or a
  ``Stage`` run at ``"before_sparsification"``, ``"after_bufferization"`` or ``"before_llvm"``.
- ``register_kernel(op, pattern, builder, ...)``: a hand-written kernel (Python builder or MLIR text
  template) used for an operation on operands matching a format pattern; dispatch consults it first.
- ``register_level_rule(level_format, rule)``: how the emitter walks one level format.

Importing ``lowering`` registers the built-in paths, kernels and passes (:mod:`lowering.builtins`).
"""
from . import builtins
from .dispatch import choose_path, lower, path_of
from .emitter.rules import register_level_rule
from .kernels.registry import op_name, register_kernel, registered_kernels, unregister_kernel
from .pipelines import HOOK_POINTS, Pipeline, register_pass, registered_passes, unregister_pass

builtins.register_all()

__all__ = ["HOOK_POINTS", "Pipeline", "choose_path", "lower", "op_name", "path_of", "register_kernel",
           "register_level_rule", "register_pass", "registered_kernels", "registered_passes", "unregister_kernel",
           "unregister_pass"]
