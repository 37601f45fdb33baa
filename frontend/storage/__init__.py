"""Storage: the buffers of a tensor and the layout contract they follow (documented in
:mod:`frontend.tensor`), read, written, validated, converted and looked up with vectorized NumPy.

Functions here take any object with the ``Tensor`` attributes (``tensor_format``, ``shape``, ``_pos``,
``_crd``, ``_val``, ...: the protocol ``_protocol.StoredTensor``) and build new tensors with ``type(t)``:
they never import the ``Tensor`` class, which sits above them and delegates to them.
"""
from ._buffers import data_pointer, nbytes, numpy_dtype, package_of
from ._convert import convert, coordinates, entries
from ._guard import thaw
from ._layout import index_dtype, to_device, to_host
from ._lookup import get_value
from ._validate import is_validated, validate

__all__ = ["convert", "coordinates", "data_pointer", "entries", "get_value", "index_dtype", "is_validated", "nbytes",
           "numpy_dtype", "package_of", "thaw", "to_device", "to_host", "validate"]
