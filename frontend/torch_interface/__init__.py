"""PyTorch integration: ``TorchUST`` (a torch.Tensor in any format, run on the compiled kernels),
sparse training through autograd, and injecting formats into existing models.

    W = TorchUST.from_torch(dense_weight.to_sparse_csr())            # zero-copy
    W8 = TorchUST.from_torch(dense_weight, NamedFormats.DELTA(8))     # converted
    y = torch.nn.functional.linear(x, W8, b)                           # compiled SpMM
    report = reformat_model(model)                                     # every nn.Linear by sparsity
"""
from ._fallback import DenseFallbackWarning, allow_dense_fallback, dense_fallback_enabled
from ._injection import LayerReport, ReformatReport, choose_format, prune_model, reformat_model
from ._subclass import TorchUST

__all__ = ["DenseFallbackWarning", "LayerReport", "ReformatReport", "TorchUST", "allow_dense_fallback",
           "choose_format", "dense_fallback_enabled", "prune_model", "reformat_model"]
