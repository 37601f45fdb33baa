"""Shared test setup: every test run compiles into its own MLIR cache folder (one per run, shared by its workers)."""
import os

import pytest


@pytest.fixture(scope="session", autouse=True)
def _mlir_cache_dir(tmp_path_factory):
    """Point mlir_bridge's disk cache at a per-run temporary folder, shared by the run's pytest-xdist workers
    (entries are written under a temporary name and renamed: concurrent writers are safe)."""
    old = os.environ.get("UST_MLIR_CACHE_DIR")
    worker = os.environ.get("PYTEST_XDIST_WORKER")  # set in pytest-xdist's worker processes only
    root = tmp_path_factory.getbasetemp() if worker is None else tmp_path_factory.getbasetemp().parent
    folder = root / "ust-mlir-cache"
    folder.mkdir(mode=0o700, exist_ok=True)
    os.environ["UST_MLIR_CACHE_DIR"] = str(folder)
    yield os.environ["UST_MLIR_CACHE_DIR"]
    if old is None:
        os.environ.pop("UST_MLIR_CACHE_DIR", None)
    else:
        os.environ["UST_MLIR_CACHE_DIR"] = old


def pytest_addoption(parser):
    """``--update-golden``: rewrite tests/golden/*.mlir from the lowering paths (tests/test_golden_ir.py)."""
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="regenerate the golden IR files of tests/test_golden_ir.py")
