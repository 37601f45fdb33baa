"""Interop tour: NumPy, SciPy and torch objects become ust-mlir Tensors without copies, and go back.

Run: ``python examples/interop_tour.py`` (writes its files to a temporary folder).
"""
from __future__ import annotations

import tempfile
import warnings
from pathlib import Path

import numpy as np
import scipy.sparse as sp
import torch

from frontend import NamedFormats
from frontend.storage import data_pointer
from frontend.tensor import Tensor

warnings.filterwarnings("ignore", message="Sparse CSR tensor support is in beta state")


def numpy_arrays() -> None:
    print("== NumPy: the level order follows the memory order")
    a = np.arange(12.0).reshape(3, 4)
    for name, x in (("C order", a), ("Fortran order", np.asfortranarray(a))):
        t = Tensor.from_package(x)
        print(f"{name:14}: {t.tensor_format}   shares memory: {np.shares_memory(t.val, x)}")
    t = Tensor.from_package(a)
    a[1, 2] = -7.0
    print(f"a[1, 2] = -7 in NumPy -> tensor sees {t.val[1, 2]}; to_package() is a: {t.to_package() is a}")


def scipy_matrices() -> None:
    print("\n== SciPy: CSR, CSC, COO, BSR, DIA are viewed, not copied")
    s = sp.random(6, 8, density=0.3, format="csr", random_state=1, dtype=np.float64)
    s.indices = s.indices.astype(np.int64)
    s.indptr = s.indptr.astype(np.int64)
    t = Tensor.from_package(s)
    print(t)
    print("same buffers:", data_pointer(t.pos(1)) == data_pointer(s.indptr),
          data_pointer(t.crd(1)) == data_pointer(s.indices), data_pointer(t.val) == data_pointer(s.data))
    s.data[0] = 100.0
    print(f"s.data[0] = 100 in SciPy -> tensor value {t.val[0]}")
    for fmt in ("csc", "coo", "bsr", "dia"):
        x = s.asformat(fmt)
        x.sum_duplicates() if fmt in ("coo", "bsr") else None
        v = Tensor.from_package(x)
        print(f"{fmt}: {v.tensor_format}  index {v.index_type}  values shared: "
              f"{np.shares_memory(v.val, x.data)}")
    csc = t.convert(NamedFormats.CSC)  # a new tensor (conversion copies)
    back = csc.to_package("scipy")
    print(f"converted to CSC -> scipy {type(back).__name__}, equal: {abs(back - s).max() == 0}, "
          f"shares the converted buffers: {np.shares_memory(back.data, csc.val)}")


def torch_tensors() -> None:
    print("\n== torch: strided, COO, CSR/CSC/BSR/BSC, batched and hybrid layouts")
    d = torch.zeros(4, 6)
    d[0, 1], d[2, 3], d[3, 5] = 1.0, 2.0, 3.0
    layouts = {"permuted": d.t(), "coo": d.to_sparse().coalesce(), "csr": d.to_sparse_csr(),
               "bsc": d.to_sparse_bsc((2, 3))}
    for name, x in layouts.items():
        t = Tensor.from_package(x)
        vals = x if name == "permuted" else (x._values() if name == "coo" else x.values())
        print(f"{name:8}: {t.tensor_format}   values at the same address: "
              f"{data_pointer(t.val) == vals.data_ptr()}")
    batched = torch.stack([d, 2 * d]).to_sparse_csr()
    t = Tensor.from_package(batched)
    print(f"batched : {t.tensor_format}  pos shape {tuple(t.pos(2).shape)}")
    hybrid = torch.zeros(3, 3, 2)
    hybrid[1, 2] = torch.tensor([5.0, 6.0])
    t = Tensor.from_package(hybrid.to_sparse(2).coalesce())
    print(f"hybrid  : {t.tensor_format}")
    t._source = None  # pretend it was built here: to_package assembles torch's own object
    print("rebuilt torch tensor equals the original:", torch.equal(t.to_package().to_dense(), hybrid))
    unco = torch.sparse_coo_tensor(torch.tensor([[1, 0], [0, 0]]), torch.ones(2), (2, 2),
                                   check_invariants=False)
    try:
        Tensor.from_package(unco)
    except ValueError as e:
        print("refused:", e)


def files_and_pictures(folder: Path) -> None:
    print("\n== Files and pictures")
    s = sp.random(30, 30, density=0.1, format="csr", random_state=2)
    t = Tensor.from_package(s)
    t.to_file(folder / "m.mtx")
    back = Tensor.from_file(folder / "m.mtx")
    print(f"m.mtx -> {back.tensor_format.name} {back.shape}, nse {back.nse}, same matrix: "
          f"{np.array_equal(back.to_dense(), s.toarray())}")
    small = Tensor.from_package(np.array([[1.0, 0, 2], [0, 0, 3]])).convert(NamedFormats.CSR)
    for method in ("draw", "draw_storage"):
        path = getattr(small, method)(folder / f"{method}.png")
        print(f"{method} -> {path.name} ({path.stat().st_size} bytes)")


if __name__ == "__main__":
    numpy_arrays()
    scipy_matrices()
    torch_tensors()
    with tempfile.TemporaryDirectory() as tmp:
        files_and_pictures(Path(tmp))
