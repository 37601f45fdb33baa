"""docs/architecture.md's "Which path runs" table is what runs: each row is built from its operation and operand
formats and the reported path compared with the table's."""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

import frontend as F
from frontend import Tensor
from frontend.ops._api import paths_of

ROOT = Path(__file__).resolve().parents[1]


def table_rows() -> list[tuple[str, str, str]]:
    text = (ROOT / "docs" / "architecture.md").read_text()
    section = text.split("## Which path runs", 1)[1].split("\n## ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[2].startswith("`") and cells[0] != "operation":
            rows.append((cells[0], cells[1], cells[2].strip("`")))
    return rows


def operand(fmt: str, seed: int) -> Tensor:
    a = sp.random_array((48, 48), density=0.15, format="csr", random_state=seed) + sp.eye_array(48)
    return Tensor.from_package(a.tocsr()).convert(fmt)


def call(operation: str, formats: list[str]) -> tuple:
    """``(op, *args)`` for a row: its operation text names the function and which operands are dense."""
    name = re.match(r"`(\w+)\(", operation).group(1)
    a = operand(formats[0], 0)
    if name == "einsum":
        return F.einsum, "ij,ik,kj->ij", a, np.ones((48, 4)), np.ones((4, 48))
    if name == "matmul":
        b = operand(formats[1], 1) if len(formats) > 1 else np.ones(48)
        return F.matmul, a, b
    op = getattr(F, name)
    if name in ("sum", "softmax"):
        return op, a, int(re.search(r"A, (\d)\)", operation).group(1))
    return op, a, operand(formats[1], 1)


ROWS = table_rows()


def test_the_table_has_every_family():
    assert len(ROWS) >= 15
    assert {path for _, _, path in ROWS} >= {"emitter-rows", "emitter", "sparsifier", "kernel:spgemm-csr"}


@pytest.mark.parametrize("operation, operands, path", ROWS, ids=[f"{o} {f}" for o, f, _ in ROWS])
def test_row_runs_on_its_path(operation, operands, path):
    formats = [f.strip() for f in re.split(r",\s*(?![^()]*\))", operands)]
    op, *args = call(operation, formats)
    assert paths_of(op, *args) == [path]
