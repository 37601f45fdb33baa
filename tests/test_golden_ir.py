"""Golden IR: each lowering path's module text for contractions built directly (no Tensor, no Matmul).

Every case lowers one ``Contraction`` through one path and compares the module text the path produces
(before any pass pipeline runs) with ``tests/golden/<case>.mlir``: a header naming the case, then the text.
A change in the generated IR fails with a unified diff; when the change is intended, regenerate the files
and review their diff::

    UST_MLIR_UPDATE_GOLDEN=1 pytest tests/test_golden_ir.py     # or: pytest tests/test_golden_ir.py --update-golden

Each golden module also parses and verifies with the MLIR bindings (no GPU needed for the GPU paths: their
text is taken before the GPU pipeline runs).
"""
from __future__ import annotations

import difflib
import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from frontend.format import NamedFormats as N, TensorFormat
from lowering.contraction import Contraction, SemiringOps, TensorSpec
from lowering.dispatch import Lowered, choose_path, lower
from lowering.emitter.path import lower_emitter, lower_emitter_rows
from lowering.gpu.dispatch import lower_gpu
from lowering.scalar_fn import minimum, trace
from lowering.sparsifier.path import lower_sparsifier
from mlir_bridge.context import verify_text

GOLDEN = Path(__file__).with_name("golden")
UPDATE_ENV = "UST_MLIR_UPDATE_GOLDEN"


def _t(fmt: TensorFormat | None, shape: tuple[int, ...], elem: str = "f64", width: int = 64) -> TensorSpec:
    return TensorSpec(fmt, shape, elem, width, width)


def _spmv(fmt: TensorFormat, m: int = 8, n: int = 6, **kw) -> Contraction:
    return Contraction(("ik", "k"), (_t(fmt, (m, n)), _t(None, (n,))), "i", _t(None, (m,)), **kw)


def _min_plus(elem: str) -> SemiringOps:
    return SemiringOps("min-plus", trace(minimum, 2, elem), trace(lambda x, y: x + y, 2, elem), float("inf"))


@dataclass(frozen=True)
class Case:
    """A contraction, the path it goes through, and what it is (the golden file's header)."""

    name: str
    path: str
    about: str
    contraction: Callable[[], Contraction]
    chosen: bool = True  # whether choose_path picks ``path`` for it (else the path is asked for by name)

    def lowered(self) -> Lowered:
        c = self.contraction()
        if self.path == "sparsifier":
            return lower_sparsifier(c)
        if self.path == "emitter":
            return lower_emitter(c)
        if self.path == "emitter-rows":
            return lower_emitter_rows(c)
        if self.path.startswith("kernel:"):
            return lower(c)
        return lower_gpu(c, "sm_90", self.path)

    def header(self) -> str:
        return (f"// Golden IR: {self.name} ({self.path} path)\n// {self.about}\n"
                f"// Regenerate: {UPDATE_ENV}=1 pytest tests/test_golden_ir.py\n\n")


CASES = [
    Case("sparsifier_csr_spmv", "sparsifier", "y = A x, A CSR 8x6 f64, x dense",
         lambda: _spmv(N.CSR)),
    Case("sparsifier_csc_spmv", "sparsifier", "y = A x, A CSC 8x6 f32 with 32-bit indices, x dense",
         lambda: Contraction(("ik", "k"), (_t(N.CSC, (8, 6), "f32", 32), _t(None, (6,), "f32")), "i",
                             _t(None, (8,), "f32"))),
    Case("sparsifier_coo_spmm", "sparsifier", "C = A B, A COO 8x6, B dense 6x4, alpha scaling",
         lambda: Contraction(("ik", "kj"), (_t(N.COO, (8, 6)), _t(None, (6, 4))), "ij", _t(None, (8, 4)),
                             alpha=True)),
    Case("sparsifier_bsr_spmv", "sparsifier", "y = A x + beta y, A BSR 2x2 blocks 8x6",
         lambda: _spmv(N.BSR((2, 2)), init="beta_c")),
    Case("sparsifier_dcsr_spgemm", "sparsifier", "C = A B, A DCSR 8x6, B DCSR 6x4, C DCSR (sparse result)",
         lambda: Contraction(("ik", "kj"), (_t(N.DCSR, (8, 6)), _t(N.DCSR, (6, 4))), "ij", _t(N.DCSR, (8, 4)))),
    Case("sparsifier_sddmm", "sparsifier", "C = S * (A B) sampled at S's entries, S CSR 8x6, A 8x4, B 4x6",
         lambda: Contraction(("ij", "ik", "kj"), (_t(N.CSR, (8, 6)), _t(None, (8, 4)), _t(None, (4, 6))), "ij",
                             _t(N.CSR, (8, 6)))),
    Case("sparsifier_min_plus_spmv", "sparsifier", "y = min_k (A[i, k] + x[k]), A CSR 8x6 f64",
         lambda: _spmv(N.CSR, semiring=_min_plus("f64"))),
    Case("emitter_diai_spmv", "emitter", "y = A x, A DIA-I 8x8 (diagonals by rows)",
         lambda: _spmv(N.DIAI, 8, 8)),
    Case("emitter_delta8_spmv", "emitter", "y = A x, A DELTA(8) 8x6 (8-bit column gaps)",
         lambda: _spmv(N.DELTA(8))),
    Case("emitter_batched_csr_spmv", "emitter", "y[b] = A[b] x[b], A BatchedCSR 3x8x6, x dense 3x6",
         lambda: Contraction(("bik", "bk"), (_t(N.BatchedCSR, (3, 8, 6)), _t(None, (3, 6))), "bi",
                             _t(None, (3, 8))), chosen=False),
    Case("emitter_rows_csr_spmv", "emitter-rows", "rows [begin, end) of y = A x into a given y, A CSR 8x6",
         lambda: _spmv(N.CSR, row_range=True, init="c")),
    Case("kernel_spgemm_csr", "kernel:spgemm-csr", "C = A B, CSR x CSR -> CSR, 32-bit indices (Gustavson)",
         lambda: Contraction(("ik", "kj"), (_t(N.CSR, (8, 6), width=32), _t(N.CSR, (6, 4), width=32)), "ij",
                             _t(N.CSR, (8, 4), width=32))),
    Case("sparsifier_gpu_csr_spmv", "sparsifier-gpu", "y = A x on the GPU (y given), A CSR 8x6 f32",
         lambda: Contraction(("ik", "k"), (_t(N.CSR, (8, 6), "f32"), _t(None, (6,), "f32")), "i",
                             _t(None, (8,), "f32")), chosen=False),
    Case("emitter_gpu_delta8_spmv", "emitter-gpu", "y = A x on the GPU (y given), A DELTA(8) 8x6 f32",
         lambda: Contraction(("ik", "k"), (_t(N.DELTA(8), (8, 6), "f32"), _t(None, (6,), "f32")), "i",
                             _t(None, (8,), "f32")), chosen=False),
    Case("emitter_gpu_diai_spmv", "emitter-gpu", "y = A x on the GPU (y given), A DIA-I 8x8 f32: a thread per row",
         lambda: Contraction(("ik", "k"), (_t(N.DIAI, (8, 8), "f32"), _t(None, (8,), "f32")), "i",
                             _t(None, (8,), "f32")), chosen=False),
]


def _updating(request: pytest.FixtureRequest) -> bool:
    return bool(os.environ.get(UPDATE_ENV)) or bool(request.config.getoption("--update-golden", False))


def compare_with_golden(text: str, golden: Path, what: str) -> None:
    """Fail with a unified diff (golden file -> ``text``) unless ``golden`` holds exactly ``text``."""
    if not golden.exists():
        pytest.fail(f"{golden} is missing; write it with {UPDATE_ENV}=1 pytest tests/test_golden_ir.py")
    actual = golden.read_text()
    if actual != text:
        diff = difflib.unified_diff(actual.splitlines(keepends=True), text.splitlines(keepends=True),
                                    fromfile=f"golden/{golden.name}", tofile=f"{what} now")
        pytest.fail(f"the IR of {what} changed (if intended, regenerate with {UPDATE_ENV}=1 and review the "
                    "diff):\n" + "".join(diff), pytrace=False)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_lowered_text_matches_golden(case: Case, request: pytest.FixtureRequest) -> None:
    low = case.lowered()
    assert low.path == case.path
    text = case.header() + low.text
    golden = GOLDEN / f"{case.name}.mlir"
    if _updating(request):
        GOLDEN.mkdir(exist_ok=True)
        golden.write_text(text)
    compare_with_golden(text, golden, f"{case.name} ({case.path} path)")


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_golden_module_verifies(case: Case) -> None:
    verify_text((GOLDEN / f"{case.name}.mlir").read_text())


CHOSEN = [c for c in CASES if c.chosen and not c.path.endswith("-gpu")]


@pytest.mark.parametrize("case", CHOSEN, ids=[c.name for c in CHOSEN])
def test_choose_path_picks_the_cases_path(case: Case) -> None:
    assert choose_path(case.contraction()) == case.path


def test_a_changed_module_fails_with_a_unified_diff(tmp_path: Path) -> None:
    """A golden file that differs from the lowered text fails with a diff naming the file and the line."""
    case = CASES[0]
    text = case.header() + case.lowered().text
    doctored = tmp_path / f"{case.name}.mlir"
    doctored.write_text(text.replace("arith.mulf", "arith.addf", 1))
    with pytest.raises(pytest.fail.Exception) as err:
        compare_with_golden(text, doctored, "the case")
    message = str(err.value)
    assert f"--- golden/{case.name}.mlir" in message and "+++ the case now" in message
    assert "-      %v1 = arith.addf" in message and "+      %v1 = arith.mulf" in message
