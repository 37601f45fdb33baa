"""The format DSL: dimensions, level expressions, level types, ``TensorFormat``, named formats, and the
``#sparse_tensor.encoding`` text of a format.

Standard library only, and the one part of ``frontend`` that ``lowering`` may import (the shared
vocabulary of the two layers); it imports nothing else from ``frontend``.
"""
from ._dtypes import INDEX_WIDTH_TYPES, dtype_name, index_width, mlir_type
from ._encoding import encoding_text, tensor_type, unsupported_reason
from ._expressions import BinaryExpr, Constant, Dimension, Expr, is_block, is_diagonal, is_dimension
from ._formats import TensorFormat, block_sizes, num_batch_levels
from ._levels import PACKED_DELTA_BITS, Level, LevelFormat, LevelProperty, delta_packed
from ._named import NamedFormats, as_format, dimensions
from ._padding import stores_padding
from ._parser import FormatSyntaxError

__all__ = ["INDEX_WIDTH_TYPES", "PACKED_DELTA_BITS", "BinaryExpr", "Constant", "Dimension", "Expr", "FormatSyntaxError",
           "Level", "LevelFormat", "LevelProperty", "NamedFormats", "TensorFormat", "as_format", "block_sizes",
           "delta_packed", "dimensions",
           "dtype_name",
           "encoding_text", "index_width", "is_block", "is_diagonal", "is_dimension", "mlir_type", "num_batch_levels",
           "stores_padding", "tensor_type", "unsupported_reason"]
