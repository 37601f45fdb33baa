"""The operator table of :class:`frontend.tensor.Tensor`: operation name -> the function behind an operator,
a reduction method or a NumPy protocol.

``Tensor``'s dunders and array methods look a name up in :data:`TABLE` (``"matmul"``, ``"add"``, ``"sum"``,
``"array_ufunc"``, ...); :mod:`frontend.ops.operators` fills the table with the operations of
:mod:`frontend.ops` when ``frontend.ops`` is imported (``frontend.Tensor`` imports it), so this package never
imports the operations. :func:`auto_densify` reads the densify opt-in ``UST_MLIR_AUTO_DENSIFY``.
"""
from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any


class _Table(dict):
    """Operation name -> function; a name nothing registered raises ``RuntimeError`` naming the import."""

    def __missing__(self, name: str) -> Callable[..., Any]:
        raise RuntimeError(f"the Tensor operator {name!r} has no operation behind it: import frontend.ops "
                           "(`import frontend` and `frontend.Tensor` do) before using Tensor operators")


#: The table ``Tensor``'s dunders index directly (``TABLE["matmul"](self, other)``: the leanest call).
TABLE: dict[str, Callable[..., Any]] = _Table()

#: The environment variable that lets operations densify a sparse tensor where a dense result is the only
#: right one (``np.asarray(A)``, ``np.exp(A)``, ``A == 0``); read at every call, like pydata/sparse's
#: ``SPARSE_AUTO_DENSIFY``.
AUTO_DENSIFY = "UST_MLIR_AUTO_DENSIFY"


def register(entries: Mapping[str, Callable[..., Any]]) -> None:
    """Adds (or replaces) the functions behind ``Tensor``'s operators, by operation name."""
    TABLE.update(entries)


def call(name: str, *args: Any, **kwargs: Any) -> Any:
    """The registered operation ``name`` on ``args``; ``RuntimeError`` when nothing registered it."""
    return TABLE[name](*args, **kwargs)


def auto_densify() -> bool:
    """Whether ``UST_MLIR_AUTO_DENSIFY`` is set to a true value (``1``, ``true``, ``yes``) now."""
    return os.environ.get(AUTO_DENSIFY, "").strip().lower() in ("1", "true", "yes", "on")


def densify_hint(what: str) -> str:
    """The sentence that ends every error about a result that would be dense."""
    return (f"{what}; densify explicitly with A.todense() (a NumPy array), or set the environment variable "
            f"{AUTO_DENSIFY}=1 to let it densify")
