"""``frontend.optimize`` and ``Matmul(optimize=True)``: the storage chosen from the data for repeated products,
checked against NumPy, with each decision of the chooser."""
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import frontend as F
from frontend import NamedFormats, Tensor
from frontend.storage._format_choice import MAX_FILL, candidates, choose
from ops_util import poisson2d


def banded(n: int, half: int = 5) -> sp.csr_array:
    offsets = list(range(-half, half + 1))
    return sp.diags_array([np.full(n - abs(k), 1.0 + k) for k in offsets], offsets=offsets).tocsr()


def blocks4(n: int) -> sp.csr_array:
    pattern = sp.random_array((n, n), density=0.02, random_state=1, format="csr")
    return sp.kron(pattern, np.arange(1.0, 17.0).reshape(4, 4)).tocsr()


def uniform(m: int, n: int) -> sp.csr_array:
    return sp.random_array((m, n), density=0.01, random_state=0, format="csr")


@pytest.mark.parametrize("matrix, expected", [(banded(3000), "DIAI"), (poisson2d(60), "DIAI"),
                                              (blocks4(100), "BSR((4, 4))"), (uniform(800, 600), "CSR")])
def test_chooser_decisions(matrix, expected):
    choice = choose(Tensor.from_package(matrix))
    assert choice.chosen.name == expected, str(choice)
    names = [c.name for c in choice.candidates]
    assert names[0] == "CSR" and len(set(names)) == len(names)
    assert choice.chosen.estimate <= choice.candidates[0].estimate
    assert expected in str(choice) and "chosen:" in str(choice)
    assert choose(Tensor.from_package(matrix), "spmm").chosen.name == "CSR"   # SpMM: CSR's kernel wins


def test_calls_below_break_even_keep_csr():
    t = Tensor.from_package(banded(3000))
    many = choose(t)
    assert many.chosen.name == "DIAI" and many.break_even_calls is not None and many.break_even_calls > 1
    assert choose(t, calls=1).chosen.name == "CSR"
    assert "pay for its conversion" in choose(t, calls=1).reason


def test_no_candidate_stores_more_than_max_fill_per_entry():
    a = sp.csr_array(([1.0, 2.0, 3.0], ([0, 1, 2], [0, 60000, 3])), shape=(3, 70000))  # rows far from column 0
    for c in candidates(Tensor.from_package(a)):
        assert c.slots <= MAX_FILL * 3, c
    assert "DIAI" not in [c.name for c in candidates(Tensor.from_package(uniform(800, 600)))]


def test_wide_indices_are_narrowed():
    torch = pytest.importorskip("torch")
    dense = uniform(300, 200).toarray()
    t, report = F.optimize(torch.tensor(dense).to_sparse_csr())       # torch indexes with int64
    assert t.index_type == np.int32 and report.chosen.name == "CSR" and "int32" in report.reason
    np.testing.assert_allclose(F.matmul(t, np.ones(200)).to_dense(), dense @ np.ones(200))


MATRICES = {"banded": banded(400), "blocks": blocks4(20), "uniform": uniform(70, 50), "0x0": sp.csr_array((0, 0)),
            "1x1": sp.csr_array(np.array([[2.0]])), "empty-row": sp.csr_array(np.array([[0.0, 1.0, 0.0], [0, 0, 0]]))}


@pytest.mark.parametrize("source, dtype", [("CSR", np.float64), ("COO", np.float64), ("CSC", np.float32),
                                           ("DIAI", np.float32)])
@pytest.mark.parametrize("name", list(MATRICES))
def test_optimized_products_match_numpy(source, dtype, name):
    matrix = MATRICES[name]
    a = matrix.astype(dtype)
    t, report = F.optimize(Tensor.from_package(a).convert(source), for_="spmv")
    x = np.linspace(-1, 1, a.shape[1]).astype(dtype)
    tol = 1e-5 if dtype == np.float32 else 1e-12
    np.testing.assert_allclose(F.matmul(t, x).to_dense(), a.toarray() @ x, rtol=tol, atol=tol)
    X = np.ones((a.shape[1], 3), dtype=dtype)
    t2, _ = F.optimize(a, for_="spmm")
    np.testing.assert_allclose(F.matmul(t2, X).to_dense(), a.toarray() @ X, rtol=tol, atol=tol)


def test_matmul_optimize_answers_in_the_callers_package():
    a = banded(3000)
    x = np.arange(3000.0)
    mm = F.Matmul(a, x, optimize=True)
    for _ in range(4):
        y = mm.execute()
    assert type(y) is np.ndarray
    np.testing.assert_allclose(y, a @ x)
    assert mm.format_choice.chosen.name == "DIAI"
    reason = mm.info.reason
    assert "optimize: DIAI" in reason and reason.count(" us") == 3
    assert F.Matmul(a, x).format_choice is None


def test_optimize_errors_name_the_problem():
    a = uniform(30, 20)
    with pytest.raises(ValueError, match="for_ must be one of"):
        F.optimize(a, for_="solve")
    with pytest.raises(ValueError, match="calls must be a positive int"):
        F.optimize(a, calls=0)
    with pytest.raises(ValueError, match="2-D matrix"):
        F.optimize(Tensor.from_dense(np.ones((2, 2, 2)), NamedFormats.COO(3)))
    with pytest.raises(ValueError, match="dense vector or matrix b"):
        F.Matmul(a, a.T, optimize=True)
    with pytest.raises(ValueError, match="stored \\(sparse\\) matrix"):
        F.Matmul(np.ones((3, 3)), np.ones(3), optimize=True)
