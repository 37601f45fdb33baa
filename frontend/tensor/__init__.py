"""The ``Tensor`` class (its storage contract is the docstring of :mod:`frontend.tensor._tensor`), its
text form, drawings and files."""
from ._tensor import Tensor

__all__ = ["Tensor"]
