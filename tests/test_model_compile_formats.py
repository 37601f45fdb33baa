"""frontend.compile with weights in every format: torch layouts through torch-mlir, the others (DELTA, DIA,
N:M, user DSL formats) through our emitter's kernels called inside the same module; against eager TorchUST
and the dense pruned model."""
from __future__ import annotations

import copy

import pytest
import torch
import torch.nn as nn

import frontend
import mlir_bridge
from frontend.format import NamedFormats as N, TensorFormat
from frontend.torch_interface import TorchUST, prune_model, reformat_model

pytestmark = pytest.mark.filterwarnings("ignore:Sparse CSR tensor support is in beta state",
                                        "ignore:Sparse BSR tensor support is in beta state")

USER_DELTA4 = TensorFormat.parse("(i, j) -> (i : dense, j : delta(4))")


def _mlp(dtype: torch.dtype, seed: int = 0, out: int = 10) -> nn.Sequential:
    torch.manual_seed(seed)
    return nn.Sequential(nn.Linear(32, 64), nn.ReLU(), nn.Linear(64, out)).to(dtype)


def _prune(model: nn.Module, **kw) -> nn.Module:
    """Prune ``model`` in place (made permanent) and return a dense copy of the pruned model."""
    prune_model(model, **kw)
    for m in model.modules():
        prune_model_permanent(m)
    return copy.deepcopy(model)


def _check(model: nn.Module, dense: nn.Module, *inputs: torch.Tensor, tol: float = 1e-5) -> frontend.CompiledModel:
    compiled = frontend.compile(model, *inputs)
    with torch.no_grad():
        got = compiled(*inputs)
        torch.testing.assert_close(got, model(*inputs), rtol=tol, atol=tol)   # eager TorchUST
        torch.testing.assert_close(got, dense(*inputs), rtol=tol, atol=tol)   # dense pruned model
    assert got.layout == torch.strided
    return compiled


def test_readme_tour_runs_as_written():
    model = _mlp(torch.float32)
    w = model[0].weight.detach()
    W = TorchUST.from_torch(w.to_sparse_csr())
    y = torch.nn.functional.linear(torch.ones(1, 32), W, model[0].bias)
    torch.testing.assert_close(y, torch.nn.functional.linear(torch.ones(1, 32), w, model[0].bias))
    example_input = torch.randn(4, 32)
    dense = _prune(copy.deepcopy(model), amount=0.9)   # the reference: the same pruning, kept dense
    prune_model(model, amount=0.9)
    report = reformat_model(model)
    assert {r.format for r in report.changed} == {"DELTA8"}   # what reformat_model picks for pruned layers
    cm = _check(model, dense, example_input)
    assert "@ust_weight" in cm.mlir() and "func.call" in cm.mlir()
    assert "omp.parallel" not in cm.mlir()   # small products stay on one thread (choose_schedule's threshold)


FORMATS = [("CSR", None), ("COO", None), ("BSR4", None), ("DELTA8", N.DELTA(8)), ("DELTA2", N.DELTA(2)),
           ("DIAI", N.DIAI), ("DIAJ", N.DIAJ), ("NM24", N.NM(2, 4)), ("DCSR", N.DCSR), ("BSR2x4", N.BSR((2, 4))),
           ("user-delta4", USER_DELTA4)]


def _to(fmt_name: str, fmt: TensorFormat | None, w: torch.Tensor) -> TorchUST:
    w = w.detach()
    if fmt is not None:
        return TorchUST.from_torch(w, fmt)
    return TorchUST.from_torch({"CSR": w.to_sparse_csr, "COO": w.to_sparse,
                                "BSR4": lambda: w.to_sparse_bsr((4, 4))}[fmt_name]())


CASES = [(n, f, torch.float32) for n, f in FORMATS] + [
    (n, f, torch.float64) for n, f in FORMATS if n in ("CSR", "DELTA8", "DIAJ", "NM24")]


@pytest.mark.parametrize(("name", "fmt", "dtype"), CASES, ids=[f"{c[0]}-{str(c[2])[6:]}" for c in CASES])
def test_mlp_every_weight_format(name, fmt, dtype):
    model = _mlp(dtype, out=8)
    dense = _prune(model, structured="2:4" if name == "NM24" else None, amount=0.8)
    reformat_model(model, lambda w: _to(name, fmt, w))
    x = torch.randn(3, 32, dtype=dtype)
    compiled = _check(model, dense, x, tol=1e-4 if dtype == torch.float32 else 1e-10)
    with torch.no_grad():  # the stored values are the parameters' memory: in-place updates are seen
        model[0].weight.values().mul_(-0.5)
        dense[0].weight.mul_(-0.5)
        torch.testing.assert_close(compiled(x), dense(x), rtol=1e-4, atol=1e-4)


def prune_model_permanent(m: nn.Module) -> None:
    from torch.nn.utils import prune
    if hasattr(m, "weight_orig"):
        prune.remove(m, "weight")


@pytest.mark.parametrize("structured", ["2:4", "block"])
def test_prune_structured_then_reformat(structured):
    model = _mlp(torch.float32, seed=3, out=8)
    dense = _prune(model, amount=0.75, structured=structured)
    report = reformat_model(model)
    assert report.changed
    _check(model, dense, torch.randn(2, 32))
    with_nm = _mlp(torch.float32, seed=3, out=8)
    prune_model(with_nm, amount=0.75, structured=structured)
    reformat_model(with_nm, lambda w: TorchUST.from_torch(w.detach(), N.NM(2, 4)) if structured == "2:4" else
                   TorchUST.from_torch(w.detach(), N.BSR((4, 4))))
    _check(with_nm, dense, torch.randn(2, 32))


def test_mixed_model_dense_csr_delta_nm():
    torch.manual_seed(5)
    model = nn.Sequential(nn.Linear(16, 32), nn.ReLU(), nn.Linear(32, 32), nn.Tanh(), nn.Linear(32, 24),
                          nn.ReLU(), nn.Linear(24, 8))
    dense = _prune(model, amount=0.7, structured="2:4")
    fmts = iter([None, "CSR", N.DELTA(8), N.NM(2, 4)])   # layer 0 stays dense

    def func(w):
        f = next(fmts)
        return None if f is None else TorchUST.from_torch(w.detach().to_sparse_csr()) if f == "CSR" else \
            TorchUST.from_torch(w.detach(), f)
    reformat_model(model, func)
    compiled = _check(model, dense, torch.randn(5, 16))
    text = compiled.mlir()
    assert text.count("func.func private @ust_weight") == 2 and "#sparse" in text


class ConvNet(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = nn.Conv2d(1, 4, 3, padding=1)
        self.fc1 = nn.Linear(4 * 6 * 6, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.conv(x)).flatten(1)
        return self.fc2(torch.relu(self.fc1(h)))


@pytest.mark.parametrize("fmt", [N.DELTA(8), N.DIAI, N.CSR], ids=["DELTA8", "DIAI", "CSR"])
def test_conv_linear_model(fmt):
    torch.manual_seed(7)
    net = ConvNet()
    dense = _prune(net, amount=0.85)
    reformat_model(net, lambda w: TorchUST.from_torch(w.detach(), fmt))
    _check(net, dense, torch.randn(2, 1, 6, 6))


def test_batch_sizes_compile_once_per_shape_and_3d_inputs():
    model = _mlp(torch.float32, seed=9)
    dense = _prune(model, amount=0.9)
    reformat_model(model, lambda w: TorchUST.from_torch(w.detach(), N.DELTA(8)))
    compiled = frontend.compile(model, torch.randn(1, 32))
    with torch.no_grad():
        for batch in (1, 7, 1, 7, 16):
            x = torch.randn(batch, 32)
            torch.testing.assert_close(compiled(x), dense(x), rtol=1e-5, atol=1e-5)
        assert compiled.variants == 3
        x3 = torch.randn(2, 5, 32)   # a batch of sequences: Linear over the last dimension
        compiled3 = frontend.compile(model, x3)
        torch.testing.assert_close(compiled3(x3), dense(x3), rtol=1e-5, atol=1e-5)


def test_empty_and_tiny_weights():
    lin = nn.Linear(1, 1)
    with torch.no_grad():
        lin.weight.fill_(2.0)
    dense = copy.deepcopy(lin)
    reformat_model(lin, lambda w: TorchUST.from_torch(w.detach(), N.DELTA(8)))
    _check(lin, dense, torch.randn(3, 1))
    empty = nn.Linear(8, 5)
    with torch.no_grad():
        empty.weight.zero_()
    dense_e = copy.deepcopy(empty)
    reformat_model(empty, lambda w: TorchUST.from_torch(w.detach(), N.DIAJ))
    _check(empty, dense_e, torch.randn(2, 8))


def test_same_structure_hits_the_disk_cache():
    def build() -> nn.Module:
        model = _mlp(torch.float32, seed=11)
        prune_model(model, amount=0.9)
        reformat_model(model, lambda w: TorchUST.from_torch(w.detach(), N.DELTA(8)))
        return model
    x = torch.randn(2, 32)
    first = frontend.compile(build(), x)
    mlir_bridge.clear_cache(memory=True, disk=False)
    again = frontend.compile(build(), x)
    assert again.mlir() == first.mlir()
    info = mlir_bridge.cache_info()
    assert info.disk_hits >= 1 and info.misses == 0


THREADED = [f for f in FORMATS if f[1] is not None]   # the formats whose products call our kernels


@pytest.mark.parametrize(("name", "fmt"), THREADED, ids=[f[0] for f in THREADED])
def test_threaded_weight_kernels_equal_eager(name, fmt, monkeypatch):
    """Above choose_schedule's work threshold (forced here to 0) the products run on OpenMP threads over row
    chunks balanced by stored entries; 3 threads on 64- and 3-row weights (uneven, empty chunks) agree.  Kernels
    without a row-range variant (emitter.row_parallel: DCSR's compressed rows, blocked BSR2x4) stay on one
    thread; DIA-J runs the row-range DIA kernel (emitter.diagonal) like DIA-I."""
    import lowering.schedule
    from lowering.solve import openmp_available
    if not openmp_available():
        pytest.skip("no OpenMP runtime")
    monkeypatch.setattr(lowering.schedule, "AUTO_MIN_WORK", 0)
    threads = torch.get_num_threads()
    torch.set_num_threads(3)
    try:
        model = _mlp(torch.float32, seed=5, out=3)
        dense = _prune(model, structured="2:4" if name == "NM24" else None, amount=0.7)
        reformat_model(model, lambda w: _to(name, fmt, w))
        for x in (torch.randn(1, 32), torch.randn(5, 32)):
            cm = _check(model, dense, x, tol=1e-4)
            assert ("omp.parallel" in cm.mlir()) == (name not in ("DCSR", "BSR2x4"))
    finally:
        torch.set_num_threads(threads)
