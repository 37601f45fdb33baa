"""ust-mlir's user-facing API: the format DSL, tensors, operations and interop.

Importing ``frontend`` is cheap: NumPy, torch and the MLIR stack load only when first used.
"""
from __future__ import annotations

from importlib import import_module
from typing import Any

from .format import Dimension, Level, LevelFormat, LevelProperty, NamedFormats, TensorFormat

# Public names provided by submodules, loaded on first access (PEP 562).
_LAZY: dict[str, str] = {
    "matmul": ".ops", "Matmul": ".ops", "einsum": ".ops", "print_mlir": ".ops", "cache_info": ".ops",
    "clear_cache": ".ops", "Semiring": ".ops", "paths_of": ".ops",
}

_LAZY.update({name: ".ops" for name in ("add", "subtract", "multiply", "apply", "select", "sum", "max", "min",
                                         "mean", "prod", "reduce", "softmax", "log_softmax", "where", "exp", "log")})
_LAZY.update({"Tensor": ".tensor", "validate": ".storage", "thaw": ".storage"})  # tensors and their storage
_LAZY.update({"optimize": ".tensor._optimize"})  # the storage that moves the fewest bytes for repeated products
_LAZY.update({"solve": ".solvers", "Solve": ".solvers"})  # linear systems (frontend.solvers)
_LAZY.update({"DistributedTensor": ".distributed"})  # partitioned tensors on Dask (frontend.distributed)
# whole torch models
_LAZY.update({"compile": ".torch_interface._compile", "CompiledModel": ".torch_interface._compile"})

def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'frontend' has no attribute {name!r}")
    if module == ".tensor":
        import_module(".ops", __name__)  # the operations behind Tensor's operators (frontend.ops.operators)
        import_module(".array_api", __name__)  # and Tensor.__array_namespace__ (frontend.array_api)
    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    return value


__all__ = ["Dimension", "Level", "LevelFormat", "LevelProperty", "TensorFormat", "NamedFormats",
           *_LAZY]
