"""Tensor files: Matrix Market (``.mtx``) and FROSTT (``.tns``), read into COO and written from any format.

* ``.mtx``: ``coordinate`` and ``array`` layouts; ``real``, ``integer``, ``complex`` and ``pattern``
  fields (pattern entries read as 1.0); ``general``, ``symmetric``, ``skew-symmetric`` and ``hermitian``
  symmetry, expanded to every entry on reading.  Array files become a COO tensor holding every listed
  entry (zeros included, as the file stores them).
* ``.tns``: one entry per line, ``i1 ... in value``, 1-based; the order is the number of columns minus
  one and the extents are the largest index of each column (pass ``shape=`` to keep trailing empty rows).
  ``#`` lines are comments.

Both are parsed with NumPy's C reader (no Python loop over entries); only a malformed file is rescanned
line by line to name the offending line in the ``ValueError``.  Duplicate coordinates are refused
(``sum_duplicates=True`` adds them).  A trailing ``.gz`` reads/writes gzip.

Sizes come from what a file holds, not from its header: the entries a ``.mtx`` size line declares are
checked against the file's bytes (each entry needs two per number) and then against its parsed lines
before anything proportional to them is allocated, and a mismatch is a ``ValueError`` naming the file, the
declared and the found count.  ``.tns`` files declare nothing: their extents come from their lines (or
``shape=``), and the COO result holds only the listed entries.
"""
from __future__ import annotations

import gzip
import io
import re
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from frontend.format import NamedFormats
from frontend.storage._convert import coordinates
from frontend.storage._protocol import StoredTensor, TensorT
from frontend.storage._validate import validate

FIELDS = ("real", "integer", "complex", "pattern")
SYMMETRIES = ("general", "symmetric", "skew-symmetric", "hermitian")


def _kind(path: Path) -> str:
    suffixes = [s.lower() for s in path.suffixes]
    if suffixes and suffixes[-1] == ".gz":
        suffixes = suffixes[:-1]
    ext = suffixes[-1] if suffixes else ""
    if ext not in (".mtx", ".tns"):
        raise ValueError(f"{path}: unknown tensor file type {ext or '(none)'!r}; expected .mtx or .tns")
    return ext


def _read_text(path: Path) -> str:
    raw = path.read_bytes()
    if path.suffix.lower() == ".gz":
        raw = gzip.decompress(raw)
    return raw.decode("ascii", errors="replace")


def _write_text(path: Path, text: str) -> None:
    data = text.encode("ascii")
    path.write_bytes(gzip.compress(data) if path.suffix.lower() == ".gz" else data)


# ----- parsing helpers -----------------------------------------------------------------------------------
class _Body:
    """The data lines of a file: text from ``start_line`` (1-based) on, parsed as a numeric table."""

    def __init__(self, path: Path, text: str, start_line: int, comment: str) -> None:
        self.path, self.text, self.start, self.comment = path, text, start_line, comment

    def _lines(self) -> list[tuple[int, str]]:
        """(line number, content) of the data lines (error path only)."""
        out = []
        for k, line in enumerate(self.text.splitlines()):
            s = line.strip()
            if s and not s.startswith(self.comment):
                out.append((self.start + k, s))
        return out

    def _starts(self) -> Iterator[int]:
        """Offsets of the data lines in the text, found without building a list of lines."""
        pattern = rf"^[^\S\n]*[^{re.escape(self.comment)}\s]"
        return (m.start() for m in re.finditer(pattern, self.text, re.MULTILINE))

    def _number(self, offset: int) -> int:
        return self.start + self.text.count("\n", 0, offset)

    def _count(self) -> tuple[int, int | None]:
        """(number of data lines, offset of the last one)."""
        found, last = 0, None
        for offset in self._starts():
            found, last = found + 1, offset
        return found, last

    def line_of(self, entry: int) -> int:
        """The line number of data entry ``entry`` (of the last entry when there are fewer)."""
        last = None
        for k, offset in enumerate(self._starts()):
            last = offset
            if k == entry:
                break
        return self.start if last is None else self._number(last)

    def check_room(self, declared: int, ncols: int) -> None:
        """Refuse a declared number of entries the text cannot hold (each needs ``ncols`` numbers, a separator
        or newline after each), before anything proportional to it is allocated."""
        if declared * 2 * max(ncols, 1) > len(self.text) + 1:
            found, last = self._count()
            line = self.start if last is None else self._number(last)
            raise ValueError(f"{self.path}:{line}: expected {declared} entries, found {found}")

    def fail(self, entry: int, message: str) -> ValueError:
        return ValueError(f"{self.path}:{self.line_of(entry)}: {message}")

    def table(self, ncols: int | None) -> np.ndarray:
        """The numbers as an ``(entries, ncols)`` float64 array (``ncols=None``: from the first line)."""
        try:
            with warnings.catch_warnings():  # "input contained no data": an empty table is fine here
                warnings.simplefilter("ignore", UserWarning)
                arr = np.loadtxt(io.StringIO(self.text), dtype=np.float64, comments=self.comment, ndmin=2)
        except ValueError:
            arr = None
        if arr is not None and (ncols is None or arr.shape[1] == ncols or arr.size == 0):
            return arr if arr.size else np.zeros((0, ncols or 0))
        lines = self._lines()
        want = ncols if ncols is not None else (len(lines[0][1].split()) if lines else 0)
        for number, line in lines:  # find the first bad line
            parts = line.split()
            if len(parts) != want:
                raise ValueError(f"{self.path}:{number}: expected {want} numbers, got {len(parts)}: {line!r}")
            for p in parts:
                try:
                    float(p)
                except ValueError:
                    raise ValueError(f"{self.path}:{number}: not a number: {p!r}") from None
        raise ValueError(f"{self.path}:{self.start}: cannot read the data lines")


def _indices(body: _Body, col: np.ndarray, extent: int | None, name: str) -> np.ndarray:
    """1-based index column -> 0-based int64, checked integral and in range."""
    idx = col.astype(np.int64)
    bad = (idx != col) | (idx < 1) | ((idx > extent) if extent is not None else False)
    if bad.any():
        k = int(np.argmax(bad))
        limit = f"1..{extent}" if extent is not None else "a positive integer"
        raise body.fail(k, f"{name} index {col[k]:g} is not {limit}")
    return idx - 1


def _coo_tensor(body: _Body, cls: type[TensorT], shape: Sequence[int], coords: list[np.ndarray], values: np.ndarray,
                entry_of: np.ndarray, sum_duplicates: bool, index_type: Any) -> TensorT:
    """Sorted, duplicate-checked COO ``cls``, validated; ``entry_of`` maps each entry to its data line index."""
    n = len(shape)
    order = np.lexsort(coords[::-1]) if coords and len(values) else np.arange(len(values))
    coords = [c[order] for c in coords]
    values, entry_of = values[order], entry_of[order]
    if len(values) > 1:
        same = np.ones(len(values) - 1, dtype=bool)
        for c in coords:
            same &= c[1:] == c[:-1]
        if same.any():
            if not sum_duplicates:
                k = int(np.argmax(same))
                at = tuple(int(c[k]) + 1 for c in coords)
                raise body.fail(int(entry_of[k + 1]), f"duplicate entry {at} (first at line "
                                f"{body.line_of(int(entry_of[k]))}); pass sum_duplicates=True to add them")
            first = np.concatenate(([True], ~same))
            starts = np.flatnonzero(first)
            values = np.add.reduceat(values, starts)
            coords = [c[first] for c in coords]
    itype = np.dtype(index_type)
    crd = [c.astype(itype) for c in coords]
    pos = [np.array([0, len(values)], dtype=itype)] + [None] * (n - 1)
    return validate(cls(NamedFormats.COO(n), shape, pos, crd, values, index_type=itype))


# ----- Matrix Market ---------------------------------------------------------------------------------------
def _mtx_header(path: Path, text: str) -> tuple[list[str], list[int], int]:
    """Banner words, size line numbers and the offset where the data lines start."""
    offset, number = 0, 0
    banner: list[str] | None = None
    while offset < len(text):
        end = text.find("\n", offset)
        end = len(text) if end < 0 else end
        line, number = text[offset:end].strip(), number + 1
        offset = end + 1
        if banner is None:
            words = line.lower().split()
            if len(words) != 5 or words[0] != "%%matrixmarket":
                raise ValueError(f"{path}:1: not a Matrix Market banner: {line!r} (expected "
                                 "'%%MatrixMarket matrix coordinate|array field symmetry')")
            banner = words[1:]
            continue
        if not line or line.startswith("%"):
            continue
        try:
            sizes = [int(w) for w in line.split()]
        except ValueError:
            raise ValueError(f"{path}:{number}: size line must be integers, got {line!r}") from None
        return banner, sizes + [number], offset
    raise ValueError(f"{path}:{number}: missing size line")


def _read_mtx(path: Path, text: str, cls: type[TensorT], sum_duplicates: bool, index_type: Any) -> TensorT:
    banner, sizes, offset = _mtx_header(path, text)
    obj, layout, field, symmetry = banner
    size_line = sizes.pop()
    if obj != "matrix":
        raise ValueError(f"{path}:1: object {obj!r} not supported (only 'matrix')")
    if layout not in ("coordinate", "array"):
        raise ValueError(f"{path}:1: layout must be 'coordinate' or 'array', got {layout!r}")
    if field not in FIELDS + ("double",):
        raise ValueError(f"{path}:1: field must be one of {', '.join(FIELDS)}, got {field!r}")
    if symmetry not in SYMMETRIES:
        raise ValueError(f"{path}:1: symmetry must be one of {', '.join(SYMMETRIES)}, got {symmetry!r}")
    if field == "pattern" and layout == "array":
        raise ValueError(f"{path}:1: pattern matrices must use the coordinate layout")
    want = 3 if layout == "coordinate" else 2
    if len(sizes) != want or any(s < 0 for s in sizes):
        raise ValueError(f"{path}:{size_line}: size line needs {want} non-negative integers "
                         f"({'rows columns entries' if want == 3 else 'rows columns'}), got {sizes}")
    m, n = sizes[0], sizes[1]
    if symmetry != "general" and m != n:
        raise ValueError(f"{path}:{size_line}: a {symmetry} matrix must be square, got {m} x {n}")
    body = _Body(path, text[offset:], size_line + 1, "%")
    nval = {"pattern": 0, "complex": 2}.get(field, 1)
    ncols = (2 if layout == "coordinate" else 0) + nval
    count = sizes[2] if layout == "coordinate" else _array_count(m, n, symmetry)
    body.check_room(count, ncols)  # the size line is only a claim: check it against the file's bytes first
    table = body.table(ncols)
    if layout == "coordinate":
        rows = _indices(body, table[:, 0], m, "row")
        cols = _indices(body, table[:, 1], n, "column")
    if table.shape[0] != count:
        where = min(table.shape[0], count)
        raise body.fail(where, f"expected {count} entries, found {table.shape[0]}")
    if layout == "array":  # positions only once the file is known to list that many values
        rows, cols = _array_positions(m, n, symmetry)
    values = _mtx_values(body, table[:, ncols - nval:], field)
    entry = np.arange(count)
    if symmetry != "general":
        rows, cols, values, entry = _expand(body, rows, cols, values, entry, symmetry)
    return _coo_tensor(body, cls, (m, n), [rows, cols], values, entry, sum_duplicates, index_type)


def _array_count(m: int, n: int, symmetry: str) -> int:
    """How many values an array file of an ``m x n`` matrix lists (the stored triangle if symmetric)."""
    if symmetry == "general":
        return m * n
    return n * (n - 1) // 2 if symmetry == "skew-symmetric" else n * (n + 1) // 2


def _array_positions(m: int, n: int, symmetry: str) -> tuple[np.ndarray, np.ndarray]:
    """Row and column of each value of an array file (column-major; lower triangle if symmetric)."""
    if symmetry == "general":
        cols, rows = np.divmod(np.arange(m * n, dtype=np.int64), m)
        return rows, cols
    r, c = np.triu_indices(n, 1 if symmetry == "skew-symmetric" else 0)
    return c.astype(np.int64), r.astype(np.int64)  # column r, rows c >= r: column-major lower triangle


def _mtx_values(body: _Body, cols: np.ndarray, field: str) -> np.ndarray:
    if field == "pattern":
        return np.ones(cols.shape[0])
    if field == "complex":
        return cols[:, 0] + 1j * cols[:, 1]
    if field == "integer":
        ints = cols[:, 0].astype(np.int64)
        bad = ints != cols[:, 0]
        if bad.any():
            raise body.fail(int(np.argmax(bad)), f"integer field holds {cols[int(np.argmax(bad)), 0]:g}")
        return ints
    return cols[:, 0].copy()


def _expand(body: _Body, rows: np.ndarray, cols: np.ndarray, values: np.ndarray, entry: np.ndarray,
            symmetry: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Adds the mirrored entries of a symmetric/skew/hermitian matrix (stored triangle only)."""
    diag = rows == cols
    if symmetry == "skew-symmetric" and (values[diag] != 0).any():
        raise body.fail(int(entry[diag][np.argmax(values[diag] != 0)]), "skew-symmetric matrix with a "
                        "nonzero diagonal entry")
    off = ~diag
    mirrored = values[off]
    if symmetry == "skew-symmetric":
        mirrored = -mirrored
    elif symmetry == "hermitian":
        mirrored = np.conj(mirrored)
    return (np.concatenate([rows, cols[off]]), np.concatenate([cols, rows[off]]),
            np.concatenate([values, mirrored]), np.concatenate([entry, entry[off]]))


# ----- FROSTT ------------------------------------------------------------------------------------------
def _read_tns(path: Path, text: str, cls: type[TensorT], sum_duplicates: bool, index_type: Any,
              shape: Sequence[int] | None) -> TensorT:
    body = _Body(path, text, 1, "#")
    table = body.table(None if shape is None else len(shape) + 1)
    if table.shape[0] == 0 and shape is None:
        raise ValueError(f"{path}:1: no entries, so the order and extents are unknown; pass shape=")
    order = table.shape[1] - 1 if shape is None else len(shape)
    if order < 1:
        raise ValueError(f"{path}:{body.line_of(0)}: a line needs at least one index and a value")
    coords = [_indices(body, table[:, k], None if shape is None else int(shape[k]), f"mode-{k + 1}")
              for k in range(order)]
    extents = tuple(int(c.max()) + 1 if len(c) else 0 for c in coords) if shape is None else tuple(shape)
    return _coo_tensor(body, cls, extents, coords, table[:, order].copy(), np.arange(table.shape[0]),
                       sum_duplicates, index_type)


def read(path: Any, cls: type[TensorT], *, sum_duplicates: bool = False, index_type: Any = np.int64,
         shape: Sequence[int] | None = None) -> TensorT:
    """A COO ``cls`` (:class:`Tensor` or a subclass) from a ``.mtx`` or ``.tns`` file (``shape`` only for
    ``.tns``)."""
    p = Path(path)
    ext = _kind(p)
    text = _read_text(p)
    if ext == ".mtx":
        if shape is not None:
            raise ValueError("shape= applies to .tns files (Matrix Market files state their size)")
        return _read_mtx(p, text, cls, sum_duplicates, index_type)
    return _read_tns(p, text, cls, sum_duplicates, index_type, shape)


# ----- writing -----------------------------------------------------------------------------------------
def _entries(t: StoredTensor) -> tuple[np.ndarray, np.ndarray]:
    """Dimension coordinates ``(ndim, n)`` sorted row-major and values of ``t``'s entries."""
    dims, vals = coordinates(t)
    if dims.shape[1] > 1:
        order = np.lexsort(dims[::-1])
        dims, vals = dims[:, order], vals[order]
    return dims, np.asarray(vals)


def _field_of(dtype: np.dtype) -> str:
    return {"c": "complex", "i": "integer", "u": "integer", "b": "integer"}.get(dtype.kind, "real")


def _format_table(columns: list[np.ndarray], formats: list[str], chunk: int = 100_000) -> str:
    """Lines of the columns in the given ``%`` formats; one ``%`` per chunk of rows (not per row), with
    integer columns kept as Python ints (exact beyond 2**53)."""
    if not columns or len(columns[0]) == 0:
        return ""
    k, n = len(columns), len(columns[0])
    line = " ".join(formats) + "\n"
    parts = []
    for start in range(0, n, chunk):
        stop = min(start + chunk, n)
        flat = np.empty((stop - start) * k, dtype=object)
        for c, col in enumerate(columns):
            flat[c::k] = col[start:stop].tolist()
        parts.append((line * (stop - start)) % tuple(flat))
    return "".join(parts)


def _value_columns(vals: np.ndarray, field: str) -> tuple[list[np.ndarray], list[str]]:
    if field == "pattern":
        return [], []
    if field == "complex":
        return [vals.real, vals.imag], ["%.17g", "%.17g"]
    if field == "integer":
        if vals.dtype.kind not in "iub":
            raise ValueError(f"field 'integer' needs integer values, got {vals.dtype}")
        return [vals.astype(np.int64)], ["%d"]
    if vals.dtype.kind == "c":
        raise ValueError("complex values need field='complex'")
    return [vals.astype(np.float64)], ["%.17g"]


def _check_symmetry(dims: np.ndarray, vals: np.ndarray, symmetry: str) -> np.ndarray:
    """Mask of the entries to write (lower triangle) after checking the stated symmetry."""
    i, j = dims
    low, up = i > j, i < j
    if symmetry == "skew-symmetric" and (vals[i == j] != 0).any():
        raise ValueError("not skew-symmetric: nonzero diagonal entry")
    if symmetry == "hermitian" and (np.imag(vals[i == j]) != 0).any():
        raise ValueError("not hermitian: diagonal entry with an imaginary part")
    lo_key = np.lexsort((j[low], i[low]))
    up_key = np.lexsort((i[up], j[up]))  # mirrored (j, i) sorted the same way
    lo_v, up_v = vals[low][lo_key], vals[up][up_key]
    mirror = {"symmetric": up_v, "skew-symmetric": -up_v, "hermitian": np.conj(up_v)}[symmetry]
    same_pattern = (low.sum() == up.sum() and np.array_equal(i[low][lo_key], j[up][up_key])
                    and np.array_equal(j[low][lo_key], i[up][up_key]))
    if not same_pattern or not np.array_equal(lo_v, mirror):
        raise ValueError(f"the tensor is not {symmetry}; write it with symmetry='general'")
    return i >= j


def _write_mtx(t: StoredTensor, field: str | None, symmetry: str, layout: str | None) -> str:
    if t.ndim != 2:
        raise ValueError(f"Matrix Market holds matrices; this tensor has {t.ndim} dimensions (use .tns)")
    if symmetry not in SYMMETRIES:
        raise ValueError(f"symmetry must be one of {', '.join(SYMMETRIES)}, got {symmetry!r}")
    layout = layout or ("array" if t.tensor_format.is_dense else "coordinate")
    if layout not in ("coordinate", "array"):
        raise ValueError(f"layout must be 'coordinate' or 'array', got {layout!r}")
    field = field or _field_of(np.dtype(t.dtype))
    if field not in FIELDS:
        raise ValueError(f"field must be one of {', '.join(FIELDS)}, got {field!r}")
    m, n = t.shape
    if layout == "array":
        if field == "pattern":
            raise ValueError("pattern matrices must use the coordinate layout")
        dense = t.to_dense()
        if symmetry != "general":
            dims = np.indices((m, n)).reshape(2, -1)
            keep = _check_symmetry(dims, dense.reshape(-1), symmetry)
            if symmetry == "skew-symmetric":
                keep &= dims[0] != dims[1]
            vals = dense.reshape(-1)[keep]
            r, c = dims[0][keep], dims[1][keep]
            order = np.lexsort((r, c))  # column-major
            vals = vals[order]
        else:
            vals = dense.T.reshape(-1)
        cols, fmts = _value_columns(vals, field)
        head = f"%%MatrixMarket matrix array {field} {symmetry}\n% written by ust-mlir\n{m} {n}\n"
        return head + _format_table(cols, fmts)
    dims, vals = _entries(t)
    if symmetry != "general":
        keep = _check_symmetry(dims, vals, symmetry)
        dims, vals = dims[:, keep], vals[keep]
    cols, fmts = _value_columns(vals, field)
    head = f"%%MatrixMarket matrix coordinate {field} {symmetry}\n% written by ust-mlir\n{m} {n} {len(vals)}\n"
    return head + _format_table([dims[0] + 1, dims[1] + 1] + cols, ["%d", "%d"] + fmts)


def _write_tns(t: StoredTensor) -> str:
    if t.ndim < 1:
        raise ValueError("FROSTT files hold tensors of order 1 or more")
    dims, vals = _entries(t)
    if vals.dtype.kind == "c":
        raise ValueError("FROSTT files hold real values; this tensor is complex (use .mtx for matrices)")
    cols, fmts = _value_columns(vals, "integer" if vals.dtype.kind in "iub" else "real")
    return _format_table([d + 1 for d in dims] + cols, ["%d"] * t.ndim + fmts)


def write(t: StoredTensor, path: Any, *, field: str | None = None, symmetry: str = "general",
          layout: str | None = None) -> None:
    """Writes ``t`` (any format; padding zeros are not written) as ``.mtx`` or ``.tns``.

    ``.mtx``: ``layout`` defaults to ``array`` for all-dense formats, else ``coordinate``; ``field`` from
    the dtype (or ``"pattern"``); a non-general ``symmetry`` is checked, then only the lower triangle is
    written.  ``.tns`` writes 1-based indices and the value per line."""
    p = Path(path)
    text = _write_mtx(t, field, symmetry, layout) if _kind(p) == ".mtx" else _write_tns(t)
    _write_text(p, text)
