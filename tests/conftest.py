"""Shared test setup: every test session compiles into its own MLIR cache folder."""
import os

import pytest


@pytest.fixture(scope="session", autouse=True)
def _mlir_cache_dir(tmp_path_factory):
    """Point mlir_bridge's disk cache at a per-session temporary folder."""
    old = os.environ.get("UST_MLIR_CACHE_DIR")
    os.environ["UST_MLIR_CACHE_DIR"] = str(tmp_path_factory.mktemp("ust-mlir-cache"))
    yield os.environ["UST_MLIR_CACHE_DIR"]
    if old is None:
        os.environ.pop("UST_MLIR_CACHE_DIR", None)
    else:
        os.environ["UST_MLIR_CACHE_DIR"] = old


def pytest_addoption(parser):
    """``--update-golden``: rewrite tests/golden/*.mlir from the lowering paths (tests/test_golden_ir.py)."""
    parser.addoption("--update-golden", action="store_true", default=False,
                     help="regenerate the golden IR files of tests/test_golden_ir.py")
