"""lowering.dispatch: the path each contraction takes, and the internal error when a path is missing."""
from __future__ import annotations

import numpy as np
import pytest

from frontend import Matmul, NamedFormats as NF, Tensor
from lowering import dispatch


def _dia_op():
    a = np.diag(np.arange(1.0, 5.0)) + np.diag(np.ones(3), 1)
    return Matmul(Tensor.from_dense(a, NF.SkewDIAJ), np.ones(4)).backend.prepared  # no row ranges: "emitter"


def test_emitter_formats_lower_through_the_registered_emitter():
    assert dispatch.lower(_dia_op().describe()).path == "emitter"


def test_a_missing_path_is_an_internal_error_naming_it(monkeypatch):
    monkeypatch.delitem(dispatch._PATHS, "emitter")
    with pytest.raises(RuntimeError, match=r"internal error: no lowering path 'emitter'.*SkewDIAJ"):
        dispatch.lower(_dia_op().describe())
