"""Operations: ``matmul``, ``Matmul``, ``einsum``, printing the MLIR and the caches. ``Matmul`` holds a backend
plan (``_plan``): the CPU's (``_cpu``: a ``_prepared`` contraction, its ``_kernel_cache`` kernel) or the GPU's
(:mod:`frontend.ops.gpu`); options (``_options``), operands, semirings and host threads have their own
modules. Elementwise operations and reductions (``add``, ``multiply``, ``apply``, ``select``, ``sum``,
``softmax``, ...) are ``_elementwise``, their compiled kernels ``_elementwise_kernels``."""
from lowering.scalar_fn import exp, log, where

from . import operators  # noqa: F401 - fills Tensor's operator table
from ._api import Matmul, cache_info, clear_cache, einsum, matmul, print_mlir
from ._elementwise import (
           add,
           apply,
           log_softmax,
           max,
           mean,
           min,
           multiply,
           prod,
           reduce,
           select,
           softmax,
           subtract,
           sum,
)
from ._plan import MatmulInfo
from ._semiring import Semiring, logical_and, logical_or, maximum, minimum

__all__ = ["Matmul", "MatmulInfo", "Semiring", "add", "apply", "cache_info", "clear_cache", "einsum", "exp", "log",
           "log_softmax", "logical_and", "logical_or", "matmul", "max", "maximum", "mean", "min", "minimum", "multiply",
           "print_mlir", "prod", "reduce", "select", "softmax", "subtract", "sum", "where"]
