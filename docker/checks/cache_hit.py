"""Run one SpMV and report the compile cache: ``cache_hit.py miss`` expects a compile, ``cache_hit.py hit``
expects the kernel from the disk cache (a second container on the same cache volume). Exits 1 otherwise."""
from __future__ import annotations

import sys

import numpy as np
import scipy.sparse as sp

import frontend as F


def main(expect: str) -> int:
    a = sp.random(60, 40, density=0.1, format="csr", random_state=0, dtype=np.float64)
    x = np.arange(40, dtype=np.float64)
    y = np.asarray(F.matmul(a, x))
    if not np.allclose(y, a @ x):
        print("cache check: wrong SpMV result")
        return 1
    info = F.cache_info()
    print("cache check: " + " ".join(f"{k}={info[k]}" for k in ("dir", "disk_hits", "misses", "entries")))
    if info["dir"] is None:
        print("cache check: no trusted cache folder")
        return 1
    ok = info["disk_hits"] > 0 and info["misses"] == 0 if expect == "hit" else info["misses"] > 0
    print(f"cache check: expected a disk {expect}: {'ok' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "hit"))
