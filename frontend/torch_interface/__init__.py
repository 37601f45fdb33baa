"""PyTorch integration: ``TorchUST`` (a torch.Tensor in any format, run on the compiled kernels),
sparse training through autograd, and injecting formats into existing models.

    W = TorchUST.from_torch(dense_weight.to_sparse_csr())            # zero-copy
    W8 = TorchUST.from_torch(dense_weight, NamedFormats.DELTA(8))     # converted
    y = torch.nn.functional.linear(x, W8, b)                           # compiled SpMM
    report = reformat_model(model)                                     # every nn.Linear by sparsity
    s = schedule(model); s["fc1.weight"].sparsify(NM(2, 4)).set_format("CSR"); s.apply()
"""
from ._fallback import DenseFallbackWarning, allow_dense_fallback, dense_fallback_enabled
from ._injection import (
    LayerReport,
    ReformatReport,
    choose_format,
    choose_format_for_speed,
    prune_model,
    reformat_model,
)
from ._schedule import Schedule, ScheduleReport, TensorReport, schedule
from ._subclass import TorchUST
from .sparsifiers import NM, BlockFraction, KeepAll, RandomFraction, ScalarFraction, ScalarThreshold, Sparsifier

__all__ = ["NM", "BlockFraction", "DenseFallbackWarning", "KeepAll", "LayerReport", "RandomFraction", "ReformatReport",
           "ScalarFraction", "ScalarThreshold", "Schedule", "ScheduleReport", "Sparsifier", "TensorReport", "TorchUST",
           "allow_dense_fallback", "choose_format", "choose_format_for_speed", "dense_fallback_enabled", "prune_model",
           "reformat_model", "schedule"]
