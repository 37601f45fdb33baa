"""Operations: ``matmul``, ``Matmul``, ``einsum``, printing the MLIR and the caches. ``Matmul`` holds a backend
plan (``_plan``): the CPU's (``_cpu``: a ``_prepared`` contraction, its ``_kernel_cache`` kernel) or the GPU's
(:mod:`frontend.ops.gpu`); options (``_options``), operands, semirings and host threads have their own modules."""
from ._api import Matmul, cache_info, clear_cache, einsum, matmul, print_mlir
from ._plan import MatmulInfo
from ._semiring import Semiring, logical_and, logical_or, maximum, minimum

__all__ = ["Matmul", "MatmulInfo", "Semiring", "cache_info", "clear_cache", "einsum", "logical_and", "logical_or",
           "matmul", "maximum", "minimum", "print_mlir"]
