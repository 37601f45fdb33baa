"""Operations: ``matmul``, ``Matmul``, ``einsum``, printing the MLIR and the caches; operands, semirings,
the prepared operation and host threads; the GPU backend in :mod:`frontend.ops.gpu`."""
from ._api import Matmul, cache_info, clear_cache, einsum, matmul, print_mlir

__all__ = ["Matmul", "cache_info", "clear_cache", "einsum", "matmul", "print_mlir"]
