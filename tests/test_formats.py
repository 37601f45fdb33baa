"""The format DSL: construction, parsing/printing, equality, coordinate maps, validation, MLIR."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from frontend import Dimension, LevelFormat as F, LevelProperty as P, NamedFormats, TensorFormat

i, j, k = Dimension("i"), Dimension("j"), Dimension("k")
ALL = NamedFormats.all()
MLIR_FORMATS = {n: f for n, f in ALL.items() if f.mlir_support() == "sparsifier" and f.num_levels}


@pytest.mark.parametrize("name", list(ALL))
def test_named_format_round_trips_through_text(name):
    fmt = ALL[name]
    back = TensorFormat.parse(str(fmt))
    assert back == fmt and hash(back) == hash(fmt)
    assert str(back) == str(fmt)
    assert TensorFormat.parse(fmt.map_text(mlir=True)) == fmt


def test_issue_examples_parse():
    texts = [
        "(i, j) -> (i : dense, j : compressed)",
        "(i, j) -> (i // 2 : dense, j // 3 : compressed, i % 2 : dense, j % 3 : dense)",
        "(i, j) -> (j - i : compressed, i : range)",
        "(i, j) -> (i : compressed(nonunique), j : singleton)",
        "(i, j) -> (i : dense, j : delta(2))",
        "(i, j) -> (i : dense, j // 4 : dense, j % 4 : structured[2, 4])",
    ]
    for t in texts:
        assert str(TensorFormat.parse(t)) == t


def test_python_api_builds_the_same_formats():
    csr = TensorFormat([i, j], {i: F.DENSE, j: F.COMPRESSED})
    assert csr == NamedFormats.CSR
    bsr = TensorFormat([i, j], {i // 2: F.DENSE, j // 3: F.COMPRESSED, i % 2: F.DENSE, j % 3: F.DENSE})
    assert bsr == NamedFormats.BSR((2, 3))
    assert TensorFormat([i, j], {j - i: F.COMPRESSED, i: F.RANGE}) == NamedFormats.DIAI
    assert TensorFormat([i, j], {i: F.DENSE, j: (F.DELTA, 2)}) == NamedFormats.DELTA(2)
    assert TensorFormat([i, j], {i: F.DENSE, j // 4: F.DENSE, j % 4: (F.STRUCTURED, (2, 4))}) == NamedFormats.NM(2, 4)
    coo = TensorFormat([i, j], {i: (F.COMPRESSED, P.NONUNIQUE), j: (F.SINGLETON, P.SOA)})
    assert coo == NamedFormats.COO
    assert TensorFormat([i, j], {i: (F.COMPRESSED, (P.NONUNIQUE, P.UNORDERED)), j: F.SINGLETON}) != coo


def test_equality_is_structural_and_ignores_names():
    a, b = Dimension("row"), Dimension("col")
    other = TensorFormat([a, b], {a: F.DENSE, b: F.COMPRESSED}, name="mine")
    assert other == NamedFormats.CSR and hash(other) == hash(NamedFormats.CSR)
    assert other.name == "mine" and NamedFormats.CSR.name == "CSR"
    assert NamedFormats.CSR != NamedFormats.CSC
    assert NamedFormats.BSR((2, 3)) != NamedFormats.BSR((3, 2))
    assert NamedFormats.DELTA(2) != NamedFormats.DELTA(3)
    assert len({NamedFormats.CSR, other, NamedFormats.CSC}) == 2
    # explicit default properties describe the same storage
    assert TensorFormat.parse("(i, j) -> (i : dense, j : compressed(unique, ordered))") == NamedFormats.CSR


def test_coordinate_maps_issue_examples():
    assert NamedFormats.CSC.dim2lvl([2, 1]) == [1, 2]
    assert NamedFormats.BSR((2, 2)).dim2lvl([2, 1]) == [1, 0, 0, 1]
    assert NamedFormats.DIAI.dim2lvl([2, 1]) == [-1, 2]


@pytest.mark.parametrize("name", [n for n in ALL if ALL[n].num_dimensions])
def test_lvl2dim_inverts_dim2lvl_vectorized(name):
    fmt = ALL[name]
    rng = np.random.default_rng(0)
    coords = [rng.integers(0, 13, size=50) for _ in range(fmt.num_dimensions)]
    back = fmt.lvl2dim(fmt.dim2lvl(coords))
    for c, b in zip(coords, back):
        np.testing.assert_array_equal(c, b)


def test_level_extents_and_properties():
    assert NamedFormats.BSR((2, 3)).level_extents([5, 7]) == [3, 3, 2, 3]
    assert NamedFormats.CSC.level_extents([4, 6]) == [6, 4]
    assert NamedFormats.DIAI.level_extents([3, 4]) == [6, 3]
    assert NamedFormats.CSR.num_dimensions == 2 and NamedFormats.BSR((2, 2)).num_levels == 4
    assert NamedFormats.COO.is_unique and NamedFormats.COO.is_ordered
    nonunique = TensorFormat.parse("(i) -> (i : compressed(nonunique))")
    assert not nonunique.is_unique
    assert not TensorFormat.parse("(i, j) -> (i : dense, j : compressed(unordered))").is_ordered
    assert NamedFormats.Dense(3).is_dense and not NamedFormats.CSR.is_dense
    assert NamedFormats.COO(3).num_levels == 3 and NamedFormats.CSF(4).num_dimensions == 4


BAD_FORMATS = {
    "(i, i) -> (i : dense)": "repeated dimension",
    "(i, j) -> (i : dense)": "unused dimension 'j'",
    "(i, j) -> (i : dense, k : dense)": "unknown dimension 'k'",
    "(i, j) -> (i % 2 : dense, j : dense)": "no matching i // 2",
    "(i, j) -> (i // 2 : dense, j : dense)": "no matching i % 2",
    "(i, j) -> (i // 2 : dense, i % 3 : dense, j : dense)": "different block sizes",
    "(i, j) -> (i // j : dense, j : dense)": "non-constant",
    "(i, j) -> (i // 0 : dense, i % 0 : dense, j : dense)": "non-positive",
    "(i, j) -> ((i // 2) // 2 : dense, j : dense)": "nested expression",
    "(i, j, k) -> (i + j - k : compressed, i : range, k : dense)": "nested expression",
    "(i, j) -> (j - i : compressed, i : dense)": "needs a range level",
    "(i, j) -> (i + j : compressed, j : dense)": "needs a range level",
    "(i, j) -> (i : range, j - i : compressed)": "must come after",
    "(i, j) -> (j - i : range, i : dense)": "range on the compound expression",
    "(i, j) -> (i : compressed(unique, nonunique), j : singleton)": "contradictory",
    "(i, j) -> (i : compressed(ordered, unordered), j : singleton)": "contradictory",
    "(i, j) -> (i : compressed(soa), j : singleton)": "soa applies only",
    "(i, j) -> (i : dense(nonunique), j : dense)": "takes no properties",
    "(i, j) -> (i : dense, j : batch)": "batch level j after a non-batch level",
    "(i, j) -> (i : dense, j : sparse)": "unknown level type 'sparse'",
    "(i, j) -> (i : dense, j : compressed(weird))": "unknown level property 'weird'",
    "(i, j) -> (i : dense, j : delta(0))": "bit width",
    "(i, j) -> (i : dense, j // 4 : dense, j % 4 : structured[4, 2])": "0 < n <= m",
    "(i, j) -> (i : dense, j // 4 : dense, j % 4 : structured[2, 8])": "modulus must equal",
    "(i, j) -> (i : singleton, j : compressed)": "singleton level cannot be the first",
    "(i, j) -> (i : dense, j : dense, i : compressed)": "repeated level",
    "(i, j) -> (i : dense j : dense)": "column 22",
    "(i, j) -> (i : dense, j : dense": "column 32",
    "(i, j) -> (i $ dense)": "column 14",
    "(i, j) (i : dense, j : dense)": "expected '->' at column 8",
    "(i, j) -> (i * 2 : dense, j : dense)": "multiplication",
    "(i, j) -> (i + 1 : compressed, i : range, j : dense)": "not a dimension and a constant",
    "(dense, j) -> (dense : dense, j : dense)": "reserved word",
    "": "expected '('",
}


@pytest.mark.parametrize("text,message", list(BAD_FORMATS.items()))
def test_validation_errors_name_the_problem(text, message):
    with pytest.raises(ValueError, match=None) as info:
        TensorFormat.parse(text)
    assert message in str(info.value), str(info.value)


def test_python_api_errors():
    with pytest.raises(TypeError):
        i // 2.5
    with pytest.raises(TypeError):
        TensorFormat([i, "j"], {i: F.DENSE})
    with pytest.raises(ValueError, match="delta needs a bit width"):
        TensorFormat([i, j], {i: F.DENSE, j: F.DELTA})
    with pytest.raises(ValueError, match="structured needs"):
        TensorFormat([i, j], {i: F.DENSE, j: (F.STRUCTURED, 2)})
    with pytest.raises(TypeError):
        TensorFormat([i, j], {i: F.DENSE, j: "compressed"})
    with pytest.raises(ValueError, match="non-positive"):
        TensorFormat([i, j], {i // -2: F.DENSE, i % -2: F.DENSE, j: F.DENSE})
    with pytest.raises(TypeError):
        TensorFormat.parse(42)


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="(ij) ->:,+-/%*[]0123456789densecompressingltorayubqf_#<>{}=", max_size=80))
def test_parser_never_hangs_or_crashes(text):
    try:
        TensorFormat.parse(text)
    except ValueError:
        pass


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=60))
def test_parser_on_arbitrary_unicode(text):
    try:
        TensorFormat.parse(text)
    except ValueError:
        pass


def test_mlir_spellings_and_full_encoding_accepted():
    text = "(d0, d1) -> (d0 floordiv 2 : dense, d1 floordiv 2 : compressed, d0 mod 2 : dense, d1 mod 2 : dense)"
    assert TensorFormat.parse(text) == NamedFormats.BSR((2, 2))
    enc = NamedFormats.CSC.to_mlir(32, 32)
    assert TensorFormat.parse(enc) == NamedFormats.CSC
    assert TensorFormat.parse("(i) -> (i : compressed(nonordered))") == TensorFormat.parse(
        "(i) -> (i : compressed(unordered))")


@pytest.mark.parametrize("name", list(MLIR_FORMATS))
@pytest.mark.parametrize("widths", [(64, 64), (32, 32), (32, 64), (0, 8)])
def test_every_encoding_is_parsed_by_mlir(name, widths):
    ir = pytest.importorskip("mlir.ir")
    fmt = MLIR_FORMATS[name]
    text = fmt.to_mlir(*widths)
    shape = [6] * fmt.num_dimensions
    with ir.Context():
        attr = ir.Attribute.parse(text)
        assert "sparse_tensor.encoding" in str(attr)
        ty = ir.Type.parse(fmt.mlir_type(shape, "float32", *widths))
        assert "xf32" in str(ty)


@pytest.mark.parametrize("name", ["DIAI", "DIAJ", "SkewDIAI", "SkewDIAJ", "DELTA(2)"])
def test_non_mlir_formats_refuse_to_encode(name):
    fmt = ALL[name]
    assert fmt.mlir_support() == "emitter"
    with pytest.raises(ValueError, match="own code generator"):
        fmt.to_mlir()


def test_bad_widths_and_scalar():
    with pytest.raises(ValueError, match="pos_width"):
        NamedFormats.CSR.to_mlir(pos_width=7)
    with pytest.raises(ValueError, match="scalar"):
        NamedFormats.Scalar.to_mlir()
    assert NamedFormats.Scalar.mlir_type([], "f64") == "tensor<f64>"
    assert NamedFormats.Dense(2).mlir_type([3, 4], "float64") == "tensor<3x4xf64>"


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "frontend", *args], capture_output=True, text=True, timeout=60)


def test_cli_encoding_named_and_text():
    r = _cli("encoding", "CSR")
    assert r.returncode == 0 and "#sparse_tensor.encoding" in r.stdout
    r = _cli("encoding", "(i, j) -> (i : dense, j : compressed)", "--shape", "8x8", "--dtype", "f64")
    assert r.returncode == 0
    assert "tensor<8x8xf64, #sparse_tensor.encoding<{ map = (i, j) -> (i : dense, j : compressed)" in r.stdout
    r = _cli("encoding", "DIAI")
    assert r.returncode == 0 and "own code generator" in r.stdout


def test_cli_formats_lists_everything():
    r = _cli("formats")
    assert r.returncode == 0
    for name in ("CSR", "BSR((2, 3))", "DIAI", "DELTA(2)", "NM(2, 4)", "COO(3)"):
        assert name in r.stdout


@pytest.mark.parametrize("args", [("encoding", "(i, j) -> (i : dense)"), ("encoding", "NOPE"),
                                  ("encoding", "CSR", "--shape", "8y8")])
def test_cli_errors_are_one_line(args):
    r = _cli(*args)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr and r.stderr.startswith("error:") and r.stderr.count("\n") == 1


@pytest.mark.parametrize("operation, columns", [("CSR @ dense", 0), ("COO @ dense", 0), ("DELTA(8) @ dense", 4),
                                                ("CSR @ CSR", 0)])
def test_cli_plan_prints_the_path_matmul_takes(operation, columns):
    from frontend import Matmul
    from frontend.__main__ import _plan_operand

    r = _cli("plan", operation, "--shape", "40x30", "--columns", str(columns), "--density", "0.2")
    assert r.returncode == 0, r.stderr
    left, right = operation.split("@")
    a = _plan_operand(left, [40, 30], "float64", 0.2, 0)
    n = columns or (0 if right.strip() == "dense" else 30)
    b = _plan_operand(right, [30] if n == 0 else [30, n], "float64", 0.2, 1)
    assert f"path      : {Matmul(a, b).info.path}\n" in r.stdout
    assert "reason    : " in r.stdout


def test_cli_encoding_says_mlir_support_not_a_path():
    assert "mlir     : encoded" in _cli("encoding", "CSR").stdout
    assert "mlir     : not encodable" in _cli("encoding", "DELTA(8)").stdout


def test_cli_plan_elementwise_prints_the_kernels_paths():
    from frontend import ops
    from frontend.__main__ import _plan_operand

    r = _cli("plan", "CSR + CSR", "--shape", "30x20")
    assert r.returncode == 0, r.stderr
    a, b = (_plan_operand("CSR", [30, 20], "float64", 0.1, seed) for seed in (0, 1))
    assert f"path      : {', '.join(ops.paths_of(ops.add, a, b))}" in r.stdout


@pytest.mark.parametrize("args", [("plan", "CSR ^ dense"), ("plan", "CSR @ nope"), ("plan", "COO(3) @ dense")])
def test_cli_plan_errors_are_one_line(args):
    r = _cli(*args)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr and r.stderr.startswith("error:") and r.stderr.count("\n") == 1
