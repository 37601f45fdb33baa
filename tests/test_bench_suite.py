"""Smoke test of the benchmark suite (benchmarks/suite.py): the tiny family, one repeat, scipy and torch only."""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.fixture(scope="module")
def suite_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str]:
    sys.path.insert(0, str(BENCH))
    try:
        import suite
    finally:
        sys.path.remove(str(BENCH))
    out = tmp_path_factory.mktemp("suite")
    assert suite.main(["--only", "tiny", "--repeats", "1", "--peers", "scipy", "torch", "--bandwidth-mb", "16",
                       "--out", str(out)]) == 0
    return json.loads((out / "suite.json").read_text()), (out / "suite.md").read_text()


def test_tiny_family_has_ratios_and_no_mismatch(suite_run: tuple[dict, str]) -> None:
    results, _ = suite_run
    records = results["records"]
    assert {r["op"] for r in records} >= {"spmv", "spmm16", "spmm64", "spgemm", "sddmm", "minplus", "maxplus",
                                          "delta", "trsv"}
    assert {r["matrix"] for r in records} == {"tiny 8x8", "tiny 64x64"}
    for r in records:
        assert r["status"]["ours"] == "ok", r
        assert r["status"]["scipy"] == "ok", r  # ours agrees with scipy
        assert r["status"]["mkl"] == r["status"]["graphblas"] == "n/a"
        assert r["ratio"] is not None and r["ratio"] > 0 and r["pct_bound"]["ours"] > 0
    assert results["summary"]["spmv"]["vs_best"]["geomean"] > 0


def test_markdown_names_the_machine_and_threads(suite_run: tuple[dict, str]) -> None:
    _, md = suite_run
    assert "cores" in md and "torch.get_num_threads()" in md and "threads=None (None is the default" in md
    assert "| tiny 8x8 |" in md and "MISMATCH" not in md
