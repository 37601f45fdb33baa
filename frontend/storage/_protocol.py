"""What the helpers of storage, interop and the tensor package read of a tensor.

:class:`frontend.tensor.Tensor` sits above these helpers and delegates to them, so they never import it:
they type their argument as :class:`StoredTensor` (the attributes and methods the helpers use) and build
new tensors with the class they are given (``type(t)`` or a ``cls`` argument).
"""
from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol, TypeVar

import numpy as np

from frontend.format import TensorFormat


class StoredTensor(Protocol):
    """A tensor as the storage layout of :mod:`frontend.tensor._tensor` describes it."""

    tensor_format: TensorFormat
    shape: tuple[int, ...]
    index_type: np.dtype
    package: str
    device: str
    _pos: list[Any]
    _crd: list[Any]
    _val: Any
    _validated: Any  # buffer_key() of the last successful validation (or _validate.Built), None before
    _guard: Any  # its index buffers' guard (frontend.storage._guard), None before validation
    _fresh: Any  # what _validate.validate_now compares on a repeat call (buffers and copies), or None
    _source: Any  # the package object the buffers were viewed from, or None
    _source_key: tuple | None  # buffer_key() when viewed from _source

    def __init__(self, tensor_format: TensorFormat, shape: Sequence[int], pos: Sequence[Any], crd: Sequence[Any],
                 values: Any, *, index_type: Any = None, package: str = "numpy", device: str = "cpu",
                 source: Any = None) -> None: ...

    @property
    def val(self) -> Any: ...

    @property
    def crd_type(self) -> np.dtype: ...

    @property
    def levels(self) -> list[int]: ...

    @property
    def dtype(self) -> Any: ...

    @property
    def ndim(self) -> int: ...

    @property
    def nse(self) -> int: ...

    @property
    def is_sparse(self) -> bool: ...

    def pos(self, level: int) -> Any: ...

    def crd(self, level: int) -> Any: ...

    def buffers(self) -> list[Any]: ...

    def buffer_key(self) -> tuple: ...

    def to_dense(self) -> np.ndarray: ...


TensorT = TypeVar("TensorT", bound=StoredTensor)
"""A tensor class's instances (``Tensor`` or a subclass): helpers given one return the same type."""
