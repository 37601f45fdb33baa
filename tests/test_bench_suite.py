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


def test_round_robin_varies_each_contenders_predecessor() -> None:
    """Every contender runs once a round; from the second round on the order is shuffled, so over the rounds a
    contender follows more than one peer (a rotation would keep the same one), and the minimum is kept."""
    sys.path.insert(0, str(BENCH))
    try:
        from suitekit.timing import round_robin
    finally:
        sys.path.remove(str(BENCH))
    calls: list[str] = []
    names = ["ours", "scipy", "torch", "mkl", "graphblas"]
    runs = {k: (lambda k=k: calls.append(k)) for k in names}
    best = round_robin(runs, {k: 1.0 for k in names}, repeats=8, budget=60.0)
    assert set(best) == set(names) and all(0 <= t < 1 for t in best.values())
    rounds = [calls[i:i + len(names)] for i in range(0, len(calls), len(names))]
    assert len(rounds) == 8 and all(sorted(r) == sorted(names) for r in rounds)
    assert rounds[0] == names
    for k in names:
        before = {r[i - 1] for r in rounds for i in range(1, len(r)) if r[i] == k}  # within rounds
        assert len(before) >= 2, (k, before)
