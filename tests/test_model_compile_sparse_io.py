"""Every model of torch-mlir's sparse FX-importer tests (test/python/fx_importer/sparsity/sparse_test.py),
re-expressed and run through ``frontend.compile(net, *args)`` against eager torch: values and output
layouts (sparse results come back as torch sparse tensors of eager's layout)."""
from __future__ import annotations

import pytest
import torch
import torch.nn as nn

import frontend

pytestmark = pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta state",
                                        "ignore:Sparse BSR tensor support is in beta state")


def _same(got, want, tol: float = 1e-5) -> None:
    """Same layout, shape, dtype and values (sparse: also the same stored pattern)."""
    assert got.layout == want.layout, (got.layout, want.layout)
    assert got.shape == want.shape and got.dtype == want.dtype
    if want.layout == torch.sparse_coo:
        want = want.coalesce()
        torch.testing.assert_close(got._indices(), want._indices())
        torch.testing.assert_close(got._values(), want._values(), rtol=tol, atol=tol)
    elif want.layout in (torch.sparse_csr, torch.sparse_bsr):
        torch.testing.assert_close(got.crow_indices(), want.crow_indices())
        torch.testing.assert_close(got.col_indices(), want.col_indices())
        torch.testing.assert_close(got.values(), want.values(), rtol=tol, atol=tol)
    elif want.layout in (torch.sparse_csc, torch.sparse_bsc):
        torch.testing.assert_close(got.ccol_indices(), want.ccol_indices())
        torch.testing.assert_close(got.row_indices(), want.row_indices())
        torch.testing.assert_close(got.values(), want.values(), rtol=tol, atol=tol)
    torch.testing.assert_close(got.to_dense(), want.to_dense(), rtol=tol, atol=tol)


def _run(net: nn.Module, *args: torch.Tensor, tol: float = 1e-5) -> torch.Tensor:
    compiled = frontend.compile(net, *args)
    with torch.no_grad():
        got, want = compiled(*args), net(*args)
    _same(got, want, tol)
    return got


class IdNet(nn.Module):
    def forward(self, x):
        return x


class SumNet(nn.Module):
    def forward(self, x):
        return x.sum()


class SpMVNet(nn.Module):
    def forward(self, x, v):
        return torch.mv(x, v)


class MatMulNet(nn.Module):
    def forward(self, x, y):
        return torch.matmul(x, y)


class EltNet(nn.Module):
    def forward(self, x):
        return -x


class COO3Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.relu = nn.ReLU()

    def forward(self, x):
        return self.relu(x)


class SparseActivationCOO(nn.Module):
    def forward(self, x):
        return x.to_sparse()


class SparseActivationCSR(nn.Module):
    def forward(self, x):
        return (x * 2).to_sparse_csr()


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
def test_identity_coo_returns_torch_coo(dtype):
    idx = torch.tensor([[0, 1, 2, 9], [0, 1, 10, 19]])
    x = torch.sparse_coo_tensor(idx, torch.tensor([-1000.0, -1.0, 1.0, 1000.0], dtype=dtype), size=[10, 20])
    _run(IdNet(), x)
    _run(IdNet(), torch.zeros(3, 4, dtype=dtype).to_sparse())   # empty: nnz 0
    _run(IdNet(), torch.eye(5, dtype=dtype).to_sparse_csr())


@pytest.mark.parametrize("layout", ["csr", "coo", "bsr"])
def test_sum(layout):
    x = torch.ones(64, 64)
    x[3] = 0
    sp = {"csr": x.to_sparse_csr, "coo": x.to_sparse, "bsr": lambda: x.to_sparse_bsr((4, 4))}[layout]()
    _run(SumNet(), sp, tol=1e-3)


def test_spmv_bsr():
    v = torch.arange(1, 11, dtype=torch.float32)
    _run(SpMVNet(), torch.ones(10, 10).to_sparse_bsr(blocksize=(2, 2)), v)
    a = torch.zeros(10, 10)
    a[2:4, 4:6] = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    _run(SpMVNet(), a.to_sparse_bsr(blocksize=(2, 2)), v)


@pytest.mark.parametrize("shape", [(8, 8), (5, 7), (1, 1)])
def test_spmm_coo(shape):
    torch.manual_seed(0)
    a = torch.rand(shape)
    a[a < 0.5] = 0
    _run(MatMulNet(), a.to_sparse_coo(), torch.rand(shape[1], 3))


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_eltwise_csr_with_dense_dim_keeps_layout(dtype):
    x = torch.arange(1, 17, dtype=dtype).reshape(4, 2, 2)
    x[1] = 0
    got = _run(EltNet(), x.to_sparse_csr(dense_dim=1))
    assert got.layout == torch.sparse_csr and got.dense_dim() == 1
    _run(EltNet(), torch.tensor([[1.0, 0.0], [0.0, -2.0]], dtype=dtype).to_sparse_csr())


def test_relu_on_3d_coo_keeps_layout():
    idx = torch.tensor([[0, 1, 1, 4, 9, 9], [0, 1, 1, 5, 19, 19], [0, 1, 3, 6, 28, 29]])
    val = torch.tensor([-1000.0, -1.0, 1.0, 2.0, 3.0, 1000.0], dtype=torch.float64)
    got = _run(COO3Net(), torch.sparse_coo_tensor(idx, val, size=[10, 20, 30]))
    assert got._nnz() == 6   # relu keeps the stored (now zero) entries, as eager does


@pytest.mark.parametrize("net", [SparseActivationCOO(), SparseActivationCSR()], ids=["coo", "csr"])
def test_sparse_activation_lowers_to_convert(net):
    x = torch.ones(2, 2, 2) if isinstance(net, SparseActivationCOO) else torch.zeros(3, 5)
    if not isinstance(net, SparseActivationCOO):
        x[0, 1], x[2, 4] = 1.5, -2.0
    compiled = frontend.compile(net, x)
    assert "sparse_tensor.convert" in compiled.mlir()
    _same(compiled(x), net(x))
    x2 = torch.zeros_like(x)   # nothing stored
    _same(compiled(x2), net(x2))


def spike(inp):
    return (inp >= 0).float()


def sq_sum(inp):
    return (inp * inp).sum()


class LIF(nn.Module):
    def __init__(self):
        super().__init__()
        self.thresh, self.decay, self.act = 1.0, 0.5, spike

    def forward(self, X):
        mem, pot = 0, []
        for t in range(X.size(-1)):
            mem = mem * self.decay + X[..., t]
            s = self.act(mem - self.thresh)
            s = s.to_sparse().to_dense()  # prop hack
            mem = mem * (1.0 - s)
            pot.append(s)
        return torch.stack(pot, dim=-1)


class TdLayer(nn.Module):
    def __init__(self, layer):
        super().__init__()
        self.layer = layer

    def forward(self, X):
        return torch.stack([self.layer(X[..., t]) for t in range(X.size(-1))], dim=-1)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.spike, self.layer = LIF(), TdLayer(sq_sum)

    def forward(self, X):
        return self.layer(self.spike(X))


def test_spiking_network():
    torch.manual_seed(0)
    got = _run(Block(), torch.rand(2, 3, 8, 8))
    torch.testing.assert_close(got, torch.tensor([0.0, 11.0, 9.0, 11.0, 13.0, 11.0, 10.0, 12.0]))


class GraphConv(nn.Module):
    def __init__(self, input_dim, output_dim):
        super().__init__()
        self.kernel = nn.Parameter(torch.ones(input_dim, output_dim))
        self.bias = nn.Parameter(torch.ones(output_dim))

    def forward(self, inp, adj_mat):
        return torch.spmm(adj_mat, torch.mm(inp, self.kernel)) + self.bias


@pytest.mark.parametrize("layout", ["coo", "csr"])
def test_gcn(layout):
    torch.manual_seed(0)
    net = GraphConv(4, 4)
    inp, adj = torch.rand(4, 4), torch.rand(4, 4)
    adj[1] = 0
    _run(net, inp, adj.to_sparse() if layout == "coo" else adj.to_sparse_csr())


class ScaleNet(nn.Module):
    def forward(self, x):
        return x * 3.0


def _small() -> torch.Tensor:
    a = torch.zeros(4, 6)
    a[0, 1], a[1, 0], a[2, 3], a[3, 5] = 1.0, 7.0, 2.0, -4.0
    return a


LAYOUTS = {"csc": lambda a: a.to_sparse_csc(), "bsr2x2": lambda a: a.to_sparse_bsr((2, 2)),
           "bsc2x2": lambda a: a.to_sparse_bsc((2, 2)), "bsr2x3": lambda a: a.to_sparse_bsr((2, 3)),
           "csr-f64": lambda a: a.double().to_sparse_csr(), "csr-i32": lambda a: a.to(torch.int32).to_sparse_csr(),
           "coo-empty-row": lambda a: a.to_sparse()}


@pytest.mark.parametrize("net", [IdNet(), EltNet(), ScaleNet()], ids=["id", "neg", "scale"])
@pytest.mark.parametrize("layout", list(LAYOUTS))
def test_outputs_keep_every_layout(layout, net):
    _run(net, LAYOUTS[layout](_small()))


def test_batched_csr_identity_and_unsupported_layouts():
    x = _small().reshape(2, 2, 6).to_sparse_csr(dense_dim=0)   # batch dimension
    got = _run(IdNet(), x)
    assert got.crow_indices().shape == (2, 3)
    hybrid = _small().reshape(4, 3, 2).to_sparse(1)   # COO with one sparse dimension: torch-mlir has no encoding
    with pytest.raises(ValueError, match="torch-mlir could not"):
        frontend.compile(IdNet(), hybrid)
