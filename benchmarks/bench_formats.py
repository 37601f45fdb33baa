"""SpMV and SpMM of the suite's banded, stencil and blocked matrices in each format that fits them, against our
CSR plan: time, its ratio to CSR's and the ratio of the bytes each must move (matrix + x read + y written), so
a ratio at or below the byte ratio means the format's kernel reaches its byte bound as well as CSR's does.

Formats: DIA-I and DIA-J (``Tensor.convert``), scipy's ``dia_array`` (viewed as DIA-J), BSR((4, 4)), ELL.
Plans are built once; their ``execute`` calls run interleaved round-robin (``suitekit.timing.interleaved_min``),
minimum of ``--repeats``, default threads. The machine may be shared: read ratios, not absolute times.

Run: ``.venv/bin/python benchmarks/bench_formats.py [--quick] [--repeats 7] [--cols 0 8]``
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import scipy.sparse as sp

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE.parent), str(HERE)]

import frontend as F  # noqa: E402
from suitekit.matrices import banded, block4x4, poisson  # noqa: E402
from suitekit.timing import interleaved_min  # noqa: E402


def stored_bytes(t: object) -> int:
    """Bytes of a stored matrix's buffers (a scipy matrix: its arrays)."""
    if isinstance(t, sp.dia_array):
        return t.data.nbytes + t.offsets.nbytes
    return sum(int(np.asarray(b).nbytes) for b in t.buffers())  # type: ignore[attr-defined]


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--quick", action="store_true")
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--cols", type=int, nargs="+", default=[0, 8], help="0: SpMV, k: SpMM with k columns")
    args = p.parse_args(argv)
    cases = [*poisson(args.quick), *banded(args.quick), *block4x4(args.quick)]
    print(f"{'matrix':<26} {'op':<6} {'format':<10} {'ms':>8} {'time/CSR':>9} {'bytes/CSR':>10}")
    for case in cases:
        a = case.matrix
        base = F.Tensor.from_package(a)
        stored = {"CSR": base}
        if case.banded:
            stored.update(DIAI=base.convert("DIAI"), DIAJ=base.convert("DIAJ"), scipy_dia=sp.dia_array(a))
        else:
            stored["BSR4x4"] = base.convert(F.NamedFormats.BSR((4, 4)))
        stored["ELL"] = base.convert("ELL")
        for cols in args.cols:
            x = np.ones(a.shape[1]) if cols == 0 else np.ones((a.shape[1], cols))
            ref = a @ x
            vectors = x.nbytes + ref.nbytes
            plans = {}
            for name, t in stored.items():
                plan = F.Matmul(t, x).plan()
                np.testing.assert_allclose(np.asarray(plan.execute()), ref, rtol=1e-10, atol=1e-8)
                plans[name] = plan.execute
            best = interleaved_min(plans, args.repeats)
            csr_bytes = stored_bytes(stored["CSR"]) + vectors
            for name, secs in best.items():
                ratio = (stored_bytes(stored[name]) + vectors) / csr_bytes
                print(f"{case.name:<26} {'spmv' if cols == 0 else f'spmm{cols}':<6} {name:<10} {1e3 * secs:8.2f} "
                      f"{secs / best['CSR']:9.2f} {ratio:10.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
