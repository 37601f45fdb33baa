"""ust-mlir's user-facing API: the format DSL, tensors, operations and interop.

Importing ``frontend`` is cheap: NumPy, torch and the MLIR stack load only when first used.
"""
from __future__ import annotations

from importlib import import_module
from typing import Any

from .expressions import Dimension
from .formats import Level, LevelFormat, LevelProperty, TensorFormat
from .named_formats import NamedFormats

# Public names provided by submodules, loaded on first access (PEP 562).
_LAZY: dict[str, str] = {
    "matmul": ".ops", "Matmul": ".ops", "einsum": ".ops", "print_mlir": ".ops", "cache_info": ".ops",
    "clear_cache": ".ops",
}

_LAZY.update({"Tensor": ".tensor", "validate": ".validate"})  # storage (frontend.tensor)
_LAZY.update({"solve": ".linear_solve", "Solve": ".linear_solve"})  # linear systems (frontend.linear_solve)
_LAZY.update({"compile": ".model_compile", "CompiledModel": ".model_compile"})  # whole torch models

def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'frontend' has no attribute {name!r}")
    value = getattr(import_module(module, __name__), name)
    globals()[name] = value
    return value


__all__ = ["Dimension", "Level", "LevelFormat", "LevelProperty", "TensorFormat", "NamedFormats",
           *_LAZY]
