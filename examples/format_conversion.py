"""Format conversion tour: one small matrix as COO -> CSR -> BSR 2x2 -> DELTA(2), printed at each step.

Conversions are generic (any format the DSL describes to any other); padded formats store zeros they need
(BSR block fill, DELTA gap entries) and drop them again on the way out.
"""
from __future__ import annotations

import numpy as np

from frontend import NamedFormats, Tensor


def main() -> None:
    rows = np.array([0, 0, 1, 3, 3, 3])
    cols = np.array([0, 7, 2, 1, 4, 5])
    vals = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
    coo = Tensor.from_buffers(NamedFormats.COO, (4, 8), pos=[np.array([0, len(vals)]), None],
                              crd=[rows, cols], values=vals)
    print("COO:", coo, sep="\n")
    csr = coo.convert(NamedFormats.CSR)
    print("CSR:", csr, sep="\n")
    bsr = csr.convert(NamedFormats.BSR((2, 2)))
    print("BSR 2x2 (zero fill inside blocks):", bsr, sep="\n")
    delta = bsr.convert(NamedFormats.DELTA(2))
    print("DELTA(2) (row 0 needs gap-padding entries to reach column 7):", delta, sep="\n")
    dense = delta.to_dense()
    expected = np.zeros((4, 8))
    expected[rows, cols] = vals
    assert np.array_equal(dense, expected)
    assert delta.convert(NamedFormats.CSR).nse == len(vals)  # padding dropped again
    print("round trip matches the original:", np.array_equal(dense, expected))
    print("value at (3, 4):", delta.get_value((3, 4)), " at (0, 4) (padding):", delta.get_value((0, 4)),
          " at (2, 2):", delta.get_value((2, 2)))


if __name__ == "__main__":
    main()
