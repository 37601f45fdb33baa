"""The peers the suite compares against, each loaded if installed (a missing one is reported, never fatal).

Intel MKL comes through ``sparse_dot_mkl``, which finds ``libmkl_rt`` through ``MKL_RT``: :func:`load_peers`
points it at the ``mkl`` wheel's library in this interpreter's prefix before importing it.
"""
from __future__ import annotations

import glob
import os
import sys
import warnings
from dataclasses import dataclass, field
from typing import Any

PEER_NAMES = ("scipy", "torch", "mkl", "graphblas")


@dataclass
class Peers:
    """The loaded peer modules by name, and why the others are missing."""
    modules: dict[str, Any] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)

    def get(self, name: str) -> Any:
        return self.modules.get(name)

    def threads(self) -> dict[str, str]:
        """How many threads each loaded peer uses by default."""
        out = {"scipy": "1 (scipy.sparse is single-threaded)"} if "scipy" in self.modules else {}
        if "torch" in self.modules:
            out["torch"] = f"{self.modules['torch'].get_num_threads()} (torch.get_num_threads())"
        if "mkl" in self.modules:
            out["mkl"] = f"{self.modules['mkl'].mkl_get_max_threads()} (mkl_get_max_threads())"
        if "graphblas" in self.modules:
            out["graphblas"] = f"{self.modules['graphblas'].ss.config['nthreads']} (graphblas.ss.config['nthreads'])"
        return out


def point_mkl_rt() -> None:
    """Sets ``MKL_RT`` to the ``mkl`` wheel's ``libmkl_rt`` in this interpreter's prefix, unless already set."""
    if "MKL_RT" in os.environ:
        return
    for prefix in dict.fromkeys((sys.prefix, sys.base_prefix)):
        found = sorted(glob.glob(os.path.join(prefix, "lib", "libmkl_rt.so*")))
        if found:
            os.environ["MKL_RT"] = found[0]
            return


def _import(name: str) -> Any:
    if name == "scipy":
        import scipy.sparse
        return scipy.sparse
    if name == "torch":
        import torch
        warnings.filterwarnings("ignore", message="Sparse (CSR tensor support|invariant checks)")
        return torch
    if name == "mkl":
        point_mkl_rt()
        import sparse_dot_mkl
        return sparse_dot_mkl
    import graphblas
    graphblas.init("suitesparse", blocking=True)
    return graphblas


def load_peers(names: tuple[str, ...] = PEER_NAMES) -> Peers:
    peers = Peers()
    for name in names:
        try:
            peers.modules[name] = _import(name)
        except Exception as err:  # noqa: BLE001 - a peer that does not load is "n/a"
            peers.missing[name] = f"{type(err).__name__}: {err}".splitlines()[0][:200]
    return peers
