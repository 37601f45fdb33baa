"""Errors that name the fix: a compiled model called with another dtype, a registered kernel with a wrong
signature, a ``string.Template`` builder, ``print_mlir`` given the operation first."""
from __future__ import annotations

import io
import string

import numpy as np
import pytest

import frontend as F
import lowering
from frontend import NamedFormats as NF, Tensor
from ops_util import SEVENS_TEMPLATE

TWO_ARGS = """
func.func @$name(%val: memref<?x$elem>) -> memref<${out_0}x$elem> attributes {llvm.emit_c_interface} {
  %y = memref.alloc() : memref<${out_0}x$elem>
  return %y : memref<${out_0}x$elem>
}
"""

def tridiag(n: int) -> np.ndarray:
    return np.diag(np.arange(1.0, n + 1)) + np.diag(np.ones(n - 1), 1)


def test_wrong_kernel_signature_names_expected_arguments():
    t = Tensor.from_dense(tridiag(5), NF.SkewDIAI)
    lowering.register_kernel("matvec", (NF.SkewDIAI, "dense"), TWO_ARGS, name="wrong-signature")
    try:
        with pytest.raises(TypeError, match=r"takes 1 arguments.*need at least 4: in0.pos\[0\], in0.crd\[0\], "
                                            r"in0.val, in1 \(dense memref\)"):
            F.matmul(t, np.ones(5))
    finally:
        lowering.unregister_kernel("wrong-signature")
    np.testing.assert_allclose(F.matmul(t, np.ones(5)).to_dense(), tridiag(5) @ np.ones(5))


@pytest.mark.parametrize("n", [1, 6])
def test_string_template_builder_works(n):
    t = Tensor.from_dense(tridiag(n), NF.SkewDIAI)
    lowering.register_kernel("matvec", (NF.SkewDIAI, "dense"), string.Template(SEVENS_TEMPLATE), name="sevens-tpl")
    try:
        np.testing.assert_array_equal(F.matmul(t, np.ones(n)).to_dense(), np.full(n, 7.0))
    finally:
        lowering.unregister_kernel("sevens-tpl")
    np.testing.assert_allclose(F.matmul(t, np.ones(n)).to_dense(), tridiag(n) @ np.ones(n))


def _printed(*args, **kwargs) -> str:
    out = io.StringIO()
    F.print_mlir(*args, file=out, stage="linalg", **kwargs)
    return out.getvalue()


def test_print_mlir_takes_the_operation_first():
    a = Tensor.from_dense(tridiag(4), "CSR")
    x = np.ones(4)
    assert _printed(F.matmul, a, x) == _printed(a, x)
    assert "func.func" in _printed(a, x)
    assert _printed(F.einsum, "ij,j->i", a, x) == _printed(a, x, subscripts="ij,j->i")
    with pytest.raises(TypeError, match="'len' is not an operation it prints"):
        F.print_mlir(len, a, x)


def test_compiled_model_names_the_dtype_it_was_compiled_for():
    torch = pytest.importorskip("torch")
    model = torch.nn.Linear(4, 3)
    compiled = F.compile(model, torch.ones(2, 4))
    torch.testing.assert_close(compiled(torch.ones(2, 4)), model(torch.ones(2, 4)), rtol=1e-5, atol=1e-6)
    with pytest.raises(TypeError, match=r"input 0 is torch.float64, the model was compiled for torch.float32"):
        compiled(torch.ones(2, 4, dtype=torch.float64))
