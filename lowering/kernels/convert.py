"""Conversion kernels between 2-D layouts as MLIR text: plain loops over raw buffers (``scf``/``memref``).

The frontend's direct conversions (:mod:`frontend.storage._direct`) run them in row (or entry) ranges, one
range per thread. Every function writes only inside the range it is given, so ranges run in parallel.
Bounds-safe (in bounds whatever ``ptr``/``idx`` hold): the transposes and ``to_blocks_*`` clamp every row's
positions to ``len(idx)`` and every column to ``m - 1`` (:func:`_clamped_rows`), the same in the count and
fill passes; ``coo_ptr`` refuses what is out of range. The others trust their buffers (their callers check them):

- ``transpose_count(ptr, idx, cnt, bad, lo, hi, m)``: ``cnt[j] += 1`` for every entry of rows ``[lo, hi)`` in
  column ``j``, ``bad[0] = 1`` where a row's positions or columns are out of range or its columns do not
  increase; ``transpose_offsets(cnt, optr, chunks, m)``: the ranges' counts to their first slots;
  ``transpose_fill(ptr, idx, val, cur, oidx, oval, lo, hi, m)``: each entry goes to slot ``cur[j]++`` of its
  column (a counting sort: rows stay increasing within a column).
- ``expand(ptr, out, lo, hi)``: ``out[k] = i`` for the entries ``k`` of rows ``i`` in ``[lo, hi)``.
- ``coo_ptr(maj, oth, ptr, bad, lo, hi, n, nnz, m)``: the row pointers of sorted COO entries ``[lo, hi)``,
  from the steps between neighbours (no histogram); ``bad[0] = 1`` where entries are out of order, a row is
  outside ``[0, n)`` or another coordinate outside ``[0, m)``.
- ``dia_rows_<s><z>``: rows of diagonals (offset ``d``; other coordinate ``d + i`` for ``s = m`` (``x - y``),
  ``d - i`` for ``s = p`` (``x + y``); the range level follows the row (``z = r``) or the other dimension
  (``z = o``)), nonzeros only, in one pass from a given first slot (the caller bounds every range's slots);
  ``shift_down(idx, val, frm, to, count)`` closes the gaps between ranges. ``dia_module(lay, nd)``: the same
  for exactly ``nd`` diagonals (``dia_rows_<s><z><nd>``, extra arguments ``ia, ib``): the rows ``[ia, ib)``,
  whose every slot is inside, as a straight-line row without checks.

Block kernels (a module per block shape ``r x c``, constants so that divisions are shifts):

- ``to_blocks_count(ptr, idx, bptr, mark, blo, bhi, n, m)`` / ``to_blocks_fill(ptr, idx, val, bptr, bidx, bval,
  mark, blo, bhi, n, m)``: the distinct block columns of each block row (``mark``: one word per block column,
  negative at first, one array per range), sorted, then the entries written into their blocks (``bval``
  comes zeroed: fresh pages are zero already).
- ``from_blocks_count(bptr, bidx, bval, ptr, blo, bhi, n, m)`` / ``from_blocks_fill(...)``: rows of a block
  row, nonzero slots inside the shape only.

``*_count`` functions write counts at ``ptr[i + 1]`` (the caller takes prefix sums). Index buffers are
``memref<?x{index}>``; values are raw bits (``memref<?xi{bits}>``, ``lanes`` words per value: 2 for complex),
and the nonzero test of float bits ignores the sign bit (``-0.0`` is zero, NaN is not), like ``x != 0``.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

INDEX_TYPES = ("i32", "i64")
VALUE_BITS = (8, 16, 32, 64)
#: Version of the kernels' text (part of nothing but the text itself; bump on semantic changes).
VERSION = "2"


@dataclass(frozen=True)
class Layout:
    """Buffer types of one kernel module: index ``ity`` (``i32``/``i64``), value words ``i{bits}`` with
    ``lanes`` words per value, ``floats``: nonzero tests ignore each word's sign bit."""

    ity: str
    bits: int
    lanes: int
    floats: bool

    def __post_init__(self) -> None:
        if self.ity not in INDEX_TYPES or self.bits not in VALUE_BITS or self.lanes not in (1, 2):
            raise ValueError(f"unsupported conversion kernel layout {self}")

    @property
    def vty(self) -> str:
        return f"i{self.bits}"


class _Fn:
    """Lines of one function with fresh SSA names and helpers for the loads/stores the kernels repeat."""

    def __init__(self, lay: Layout, name: str, params: list[tuple[str, str]], gap: str = "i8") -> None:
        self.lay, self.n = lay, 0
        self.lines: list[str] = []
        I, V = lay.ity, lay.vty
        kinds = {"I": f"memref<?x{I}>", "V": f"memref<?x{V}>", "B": "memref<?xi8>", "G": f"memref<?x{gap}>",
                 "x": "index"}
        sig = ", ".join(f"%{p}: {kinds[k]}" for p, k in params)
        self.head = f"  func.func @{name}({sig}) attributes {{llvm.emit_c_interface}} {{"
        self.emit("%c0 = arith.constant 0 : index")
        self.emit("%c1 = arith.constant 1 : index")
        self.emit(f"%vz = arith.constant 0 : {V}")
        self.emit("%false = arith.constant false")
        self.emit("%true = arith.constant true")
        self.depth = 2

    def emit(self, line: str) -> None:
        self.lines.append("    " + line)

    def v(self, rhs: str) -> str:
        self.n += 1
        name = f"%s{self.n}"
        self.emit(f"{name} = {rhs}")
        return name

    def name(self) -> str:
        self.n += 1
        return f"%s{self.n}"

    def c(self, value: int) -> str:
        return self.v(f"arith.constant {value} : index")

    def ld(self, buf: str, at: str) -> str:
        """``buf[at]`` of an index buffer as an ``index``."""
        I = self.lay.ity
        return self.v(f"arith.index_cast {self.v(f'memref.load %{buf}[{at}] : memref<?x{I}>')} : {I} to index")

    def st(self, value: str, buf: str, at: str) -> None:
        """``buf[at] = value`` (an ``index``) into an index buffer."""
        I = self.lay.ity
        cast = self.v(f"arith.index_cast {value} : index to {I}")
        self.emit(f"memref.store {cast}, %{buf}[{at}] : memref<?x{I}>")

    def add(self, a: str, b: str) -> str:
        return self.v(f"arith.addi {a}, {b} : index")

    def mul(self, a: str, b: str) -> str:
        return self.v(f"arith.muli {a}, {b} : index")

    def cmp(self, pred: str, a: str, b: str) -> str:
        return self.v(f"arith.cmpi {pred}, {a}, {b} : index")

    def words(self, src: str, s: str) -> list[str]:
        """The words of value ``s`` of ``src``, loaded."""
        V, L = self.lay.vty, self.lay.lanes
        base = s if L == 1 else self.mul(s, self.c(L))
        return [self.v(f"memref.load %{src}[{base if k == 0 else self.add(base, self.c(k))}] : memref<?x{V}>")
                for k in range(L)]

    def put(self, dst: str, d: str, words: list[str]) -> None:
        """``words`` (of one value) to slot ``d`` of ``dst``."""
        V, L = self.lay.vty, self.lay.lanes
        base = d if L == 1 else self.mul(d, self.c(L))
        for k, w in enumerate(words):
            self.emit(f"memref.store {w}, %{dst}[{base if k == 0 else self.add(base, self.c(k))}] : memref<?x{V}>")

    def is_nonzero(self, words: list[str]) -> str:
        """i1: whether the value of ``words`` is nonzero (float words: sign bit ignored)."""
        V = self.lay.vty
        out = ""
        for w in words:
            if self.lay.floats:
                w = self.v(f"arith.shli {w}, {self.v(f'arith.constant 1 : {V}')} : {V}")
            nz = self.v(f"arith.cmpi ne, {w}, %vz : {V}")
            out = nz if not out else self.v(f"arith.ori {out}, {nz} : i1")
        return out

    def copy_value(self, src: str, s: str, dst: str, d: str) -> None:
        """Value ``s`` of ``src`` to slot ``d`` of ``dst`` (all its words)."""
        self.put(dst, d, self.words(src, s))

    def nonzero(self, src: str, s: str) -> str:
        """i1: whether value ``s`` of ``src`` is nonzero."""
        return self.is_nonzero(self.words(src, s))

    def open_for(self, iv: str, lo: str, hi: str, carried: list[tuple[str, str, str]] | None = None) -> str:
        """``scf.for``; ``carried``: (arg name, init, type); returns the results' name (or '')."""
        if not carried:
            self.emit(f"scf.for %{iv} = {lo} to {hi} step %c1 {{")
            return ""
        res = self.name()
        args = ", ".join(f"%{a} = {init}" for a, init, _ in carried)
        tys = ", ".join(t for _, _, t in carried)
        self.emit(f"{res}:{len(carried)} = scf.for %{iv} = {lo} to {hi} step %c1 iter_args({args}) -> ({tys}) {{")
        return res

    def text(self) -> str:
        return "\n".join([self.head, *self.lines, "    return", "  }"])


def _row_bounds(f: _Fn, ptr: str, i: str) -> tuple[str, str]:
    return f.ld(ptr, i), f.ld(ptr, f.add(i, "%c1"))


def _clamped_rows(f: _Fn, check: bool, row: Any, body: Any) -> str | None:
    """Rows ``[lo, hi)`` of ``ptr``/``idx`` walked in bounds whatever the buffers hold: the range's first
    position and each row's end clamped to ``len(idx)`` (unsigned: negative ones too) and never below the
    previous row's end (rows never overlap), each column clamped to ``m - 1``. The count and fill passes walk
    the same entries, so a fill never writes past what its count sized. ``row(i)``: values for the row's
    entries; ``body(i, k, j, r)``: one entry (``j`` its clamped column). ``check``: returns an i1 that is set
    where a clamp changed something or a row's columns do not increase (the buffers are not valid)."""
    size = f.v(f"memref.dim %idx, %c0 : memref<?x{f.lay.ity}>")
    top = f.v("arith.subi %m, %c1 : index")
    first_raw = f.ld("ptr", "%lo")
    first = f.v(f"arith.minui {first_raw}, {size} : index")
    carried = [("pv", first, "index")]
    if check:
        carried.append(("bd", f.cmp("ne", first, first_raw), "i1"))
    res = f.open_for("i", "%lo", "%hi", carried)
    r = row("%i")
    end_raw = f.ld("ptr", f.add("%i", "%c1"))
    end = f.v(f"arith.maxui {f.v(f'arith.minui {end_raw}, {size} : index')}, %pv : index")
    if check:
        bad_row = f.v(f"arith.ori %bd, {f.cmp('ne', end, end_raw)} : i1")
        inner = f.open_for("k", "%pv", end, [("nx", "%c0", "index"), ("bk", bad_row, "i1")])
    else:
        f.open_for("k", "%pv", end)
    j_raw = f.ld("idx", "%k")
    j = f.v(f"arith.minui {j_raw}, {top} : index")
    body("%i", "%k", j, r)
    if check:
        ok = f.v(f"arith.andi {f.cmp('ule', j_raw, top)}, {f.cmp('uge', j_raw, '%nx')} : i1")
        wrong = f.v(f"arith.xori {ok}, %true : i1")
        bad = f.v(f"arith.ori %bk, {wrong} : i1")
        f.emit(f"scf.yield {f.add(j, '%c1')}, {bad} : index, i1")
        f.emit("}")
        f.emit(f"scf.yield {end}, {inner}#1 : index, i1")
    else:
        f.emit("}")
        f.emit(f"scf.yield {end} : index")
    f.emit("}")
    return f"{res}#1" if check else None


def _store_flag(f: _Fn, flag: str | None) -> None:
    """``bad[0] = flag`` (an i1)."""
    f.emit(f"memref.store {f.v(f'arith.extui {flag} : i1 to i8')}, %bad[%c0] : memref<?xi8>")


def _no_row(i: str) -> None:
    return None


def _transpose_count(lay: Layout) -> str:
    f = _Fn(lay, "transpose_count", [("ptr", "I"), ("idx", "I"), ("cnt", "I"), ("bad", "B"), ("lo", "x"),
                                     ("hi", "x"), ("m", "x")])
    I = lay.ity
    one = f.v(f"arith.constant 1 : {I}")

    def body(i: str, k: str, j: str, r: Any) -> None:
        n = f.v(f"memref.load %cnt[{j}] : memref<?x{I}>")
        f.emit(f"memref.store {f.v(f'arith.addi {n}, {one} : {I}')}, %cnt[{j}] : memref<?x{I}>")
    _store_flag(f, _clamped_rows(f, True, _no_row, body))
    return f.text()


def _transpose_offsets(lay: Layout) -> str:
    """``cnt`` (``chunks`` rows of ``m`` column counts, one per row range) becomes every range's first slot
    in every column and ``optr`` the column pointers: one pass, columns outer."""
    f = _Fn(lay, "transpose_offsets", [("cnt", "I"), ("optr", "I"), ("chunks", "x"), ("m", "x")])
    I = lay.ity
    zero = f.v(f"arith.constant 0 : {I}")
    f.emit(f"memref.store {zero}, %optr[%c0] : memref<?x{I}>")
    res = f.open_for("j", "%c0", "%m", [("s", zero, I)])
    inner = f.open_for("k", "%c0", "%chunks", [("a", "%s", I)])
    at = f.add(f.mul("%k", "%m"), "%j")
    c = f.v(f"memref.load %cnt[{at}] : memref<?x{I}>")
    f.emit(f"memref.store %a, %cnt[{at}] : memref<?x{I}>")
    f.emit(f"scf.yield {f.v(f'arith.addi %a, {c} : {I}')} : {I}")
    f.emit("}")
    f.emit(f"memref.store {inner}#0, %optr[{f.add('%j', '%c1')}] : memref<?x{I}>")
    f.emit(f"scf.yield {inner}#0 : {I}")
    f.emit("}")
    del res
    return f.text()


def _transpose_fill(lay: Layout) -> str:
    f = _Fn(lay, "transpose_fill", [("ptr", "I"), ("idx", "I"), ("val", "V"), ("cur", "I"), ("oidx", "I"),
                                    ("oval", "V"), ("lo", "x"), ("hi", "x"), ("m", "x")])
    I = lay.ity

    def row(i: str) -> str:
        return f.v(f"arith.index_cast {i} : index to {I}")

    def body(i: str, k: str, j: str, ii: str) -> None:
        p = f.ld("cur", j)
        f.st(f.add(p, "%c1"), "cur", j)
        f.emit(f"memref.store {ii}, %oidx[{p}] : memref<?x{I}>")
        f.copy_value("val", k, "oval", p)
    _clamped_rows(f, False, row, body)
    return f.text()


def _bucket_count(lay: Layout) -> str:
    """``cnt[idx[k] >> shift] += 1`` for the entries of rows ``[lo, hi)`` (a few thousand buckets: in L1)."""
    f = _Fn(lay, "bucket_count", [("ptr", "I"), ("idx", "I"), ("cnt", "I"), ("bad", "B"), ("lo", "x"),
                                  ("hi", "x"), ("shift", "x"), ("m", "x")])
    I = lay.ity
    one = f.v(f"arith.constant 1 : {I}")

    def body(i: str, k: str, j: str, r: Any) -> None:
        b = f.v(f"arith.shrui {j}, %shift : index")
        n = f.v(f"memref.load %cnt[{b}] : memref<?x{I}>")
        f.emit(f"memref.store {f.v(f'arith.addi {n}, {one} : {I}')}, %cnt[{b}] : memref<?x{I}>")
    _store_flag(f, _clamped_rows(f, True, _no_row, body))
    return f.text()


def _bucket_scatter(lay: Layout) -> str:
    """Pass 1 of the bucketed transpose: every entry of rows ``[lo, hi)`` goes to slot ``p = cur[column >>
    shift]++`` (one write stream per bucket): its row to ``oidx[p]``, its value to ``oval[p]``, its column
    inside the bucket to ``tcol[p]`` (16 bits)."""
    f = _Fn(lay, "bucket_scatter", [("ptr", "I"), ("idx", "I"), ("val", "V"), ("cur", "I"), ("oidx", "I"),
                                    ("oval", "V"), ("tcol", "G"), ("lo", "x"), ("hi", "x"), ("shift", "x"),
                                    ("m", "x")], gap="i16")
    I = lay.ity
    mask = f.v("arith.subi " + f.v("arith.shli %c1, %shift : index") + ", %c1 : index")

    def row(i: str) -> str:
        return f.v(f"arith.index_cast {i} : index to {I}")

    def body(i: str, k: str, j: str, ii: str) -> None:
        bk = f.v(f"arith.shrui {j}, %shift : index")
        p = f.ld("cur", bk)
        f.st(f.add(p, "%c1"), "cur", bk)
        f.emit(f"memref.store {ii}, %oidx[{p}] : memref<?x{I}>")
        low = f.v(f"arith.index_cast {f.v(f'arith.andi {j}, {mask} : index')} : index to i16")
        f.emit(f"memref.store {low}, %tcol[{p}] : memref<?xi16>")
        f.copy_value("val", k, "oval", p)
    _clamped_rows(f, False, row, body)
    return f.text()


def _bucket_sort(lay: Layout) -> str:
    """Pass 2: buckets ``[blo, bhi)`` (``bstart``: their first slots; ``width = 1 << shift`` columns each, the
    last cut at ``m``) sorted by column in place: each bucket's rows and values are copied to the scratch
    ``srow``/``sval`` (as long as the largest bucket: in the cache) and written back in column order by a
    counting sort (``cur``: ``width`` words of scratch); the column pointers ``optr[j]`` of their columns are
    set."""
    f = _Fn(lay, "bucket_sort", [("bstart", "I"), ("tcol", "G"), ("optr", "I"), ("oidx", "I"), ("oval", "V"),
                                 ("srow", "I"), ("sval", "V"), ("cur", "I"), ("blo", "x"), ("bhi", "x"),
                                 ("shift", "x"), ("m", "x")], gap="i16")
    I = lay.ity
    one = f.v(f"arith.constant 1 : {I}")
    zero = f.v(f"arith.constant 0 : {I}")
    width = f.v("arith.shli %c1, %shift : index")
    f.open_for("b", "%blo", "%bhi")
    s, e = _row_bounds(f, "bstart", "%b")
    j0 = f.v("arith.shli %b, %shift : index")
    cols = f.v(f"arith.minui {width}, {f.v(f'arith.subi %m, {j0} : index')} : index")
    f.open_for("z", "%c0", cols)
    f.emit(f"memref.store {zero}, %cur[%z] : memref<?x{I}>")
    f.emit("}")

    def local(at: str) -> str:
        w = f.v(f"memref.load %tcol[{at}] : memref<?xi16>")
        return f.v(f"arith.index_cast {f.v(f'arith.extui {w} : i16 to i64')} : i64 to index")

    f.open_for("p", s, e)
    c = local("%p")
    n = f.v(f"memref.load %cur[{c}] : memref<?x{I}>")
    f.emit(f"memref.store {f.v(f'arith.addi {n}, {one} : {I}')}, %cur[{c}] : memref<?x{I}>")
    q0 = f.v("arith.subi %p, " + s + " : index")
    f.emit(f"memref.store {f.v(f'memref.load %oidx[%p] : memref<?x{I}>')}, %srow[{q0}] : memref<?x{I}>")
    f.copy_value("oval", "%p", "sval", q0)
    f.emit("}")
    s_i = f.v(f"arith.index_cast {s} : index to {I}")
    f.open_for("c2", "%c0", cols, [("run", s_i, I)])
    t = f.v(f"memref.load %cur[%c2] : memref<?x{I}>")
    f.emit(f"memref.store %run, %cur[%c2] : memref<?x{I}>")
    f.emit(f"memref.store %run, %optr[{f.add(j0, '%c2')}] : memref<?x{I}>")
    f.emit(f"scf.yield {f.v(f'arith.addi %run, {t} : {I}')} : {I}")
    f.emit("}")
    f.open_for("p2", s, e)
    c3 = local("%p2")
    q = f.ld("cur", c3)
    f.st(f.add(q, "%c1"), "cur", c3)
    q1 = f.v("arith.subi %p2, " + s + " : index")
    f.emit(f"memref.store {f.v(f'memref.load %srow[{q1}] : memref<?x{I}>')}, %oidx[{q}] : memref<?x{I}>")
    f.copy_value("sval", q1, "oval", q)
    f.emit("}")
    f.emit("}")
    return f.text()


def _expand(lay: Layout) -> str:
    f = _Fn(lay, "expand", [("ptr", "I"), ("out", "I"), ("lo", "x"), ("hi", "x")])
    I = lay.ity
    f.open_for("i", "%lo", "%hi")
    ii = f.v(f"arith.index_cast %i : index to {I}")
    a, b = _row_bounds(f, "ptr", "%i")
    f.open_for("k", a, b)
    f.emit(f"memref.store {ii}, %out[%k] : memref<?x{I}>")
    f.emit("}")
    f.emit("}")
    return f.text()


def _coo_ptr(lay: Layout) -> str:
    """Row pointers of sorted entries ``[lo, hi)``: for entry ``k`` with row ``a``, ``ptr[r] = k`` for the rows
    ``r`` after the previous entry's row up to ``a`` (entry 0: from row 0); the last entry also fills the
    rows after it with ``nnz = hi``. Out of order entries, or a row outside ``[0, n)`` or other coordinate
    outside ``[0, m)``, set ``bad[0]`` and write nothing outside ``ptr[0 .. n]``."""
    f = _Fn(lay, "coo_ptr", [("maj", "I"), ("oth", "I"), ("ptr", "I"), ("bad", "B"), ("lo", "x"), ("hi", "x"),
                             ("n", "x"), ("nnz", "x"), ("m", "x")])
    res = f.open_for("k", "%lo", "%hi", [("bad0", "%false", "i1")])
    a = f.ld("maj", "%k")
    inside = f.v(f"arith.andi {f.cmp('ult', a, '%n')}, {f.cmp('ult', f.ld('oth', '%k'), '%m')} : i1")
    first = f.cmp("eq", "%k", "%c0")
    out = f.name()
    f.emit(f"{out} = scf.if {first} -> (i1) {{")
    a1 = f.add(a, "%c1")
    top = f.v(f"arith.select {inside}, {a1}, %c0 : index")
    f.open_for("r0", "%c0", top)
    f.st("%c0", "ptr", "%r0")
    f.emit("}")
    f.emit(f"scf.yield {inside} : i1")
    f.emit("} else {")
    km = f.v("arith.subi %k, %c1 : index")
    ap, bp, b = f.ld("maj", km), f.ld("oth", km), f.ld("oth", "%k")
    up = f.cmp("sgt", a, ap)
    same = f.cmp("eq", a, ap)
    later = f.cmp("sgt", b, bp)
    ok = f.v(f"arith.ori {up}, {f.v(f'arith.andi {same}, {later} : i1')} : i1")
    ok = f.v(f"arith.andi {ok}, {inside} : i1")
    start = f.v(f"arith.maxsi {f.add(ap, '%c1')}, %c0 : index")
    stop = f.v(f"arith.select {ok}, {f.add(a, '%c1')}, %c0 : index")
    f.open_for("r1", start, stop)
    f.st("%k", "ptr", "%r1")
    f.emit("}")
    f.emit(f"scf.yield {ok} : i1")
    f.emit("}")
    bad = f.v(f"arith.ori %bad0, {f.v(f'arith.xori {out}, %true : i1')} : i1")
    f.emit(f"scf.yield {bad} : i1")
    f.emit("}")
    # the rows after the last entry
    last = f.cmp("eq", "%hi", "%nnz")
    some = f.cmp("ugt", "%hi", "%lo")
    f.emit(f"scf.if {f.v(f'arith.andi {last}, {some} : i1')} {{")
    al = f.ld("maj", f.v("arith.subi %hi, %c1 : index"))
    from_row = f.v(f"arith.minui {f.add(al, '%c1')}, {f.add('%n', '%c1')} : index")
    f.open_for("r2", from_row, f.add("%n", "%c1"))
    f.st("%nnz", "ptr", "%r2")
    f.emit("}")
    f.emit("}")
    flag = f.v(f"arith.extui {res}#0 : i1 to i8")
    f.emit(f"memref.store {flag}, %bad[%c0] : memref<?xi8>")
    return f.text()


_DIA_PARAMS = [("off", "I"), ("val", "V"), ("ptr", "I"), ("oidx", "I"), ("oval", "V"), ("lo", "x"), ("hi", "x")]


def _dia_rows(f: _Fn, sign: str, zrow: bool, lo: str, hi: str, p0: str, nd: str, iv: str = "i") -> str:
    """The row loop ``[lo, hi)`` of diagonals ``off[0 .. nd)`` from slot ``p0`` on, each slot checked: its
    result's name (``#0``: the slot after the last row)."""
    rows = f.open_for(iv, lo, hi, [(f"p0{iv}", p0, "index")])
    res = f.open_for(f"t{iv}", "%c0", nd, [(f"p{iv}", f"%p0{iv}", "index")])
    i, p = f"%{iv}", f"%p{iv}"
    d = f.ld("off", f"%t{iv}")
    other = f.add(d, i) if sign == "m" else f.v(f"arith.subi {d}, {i} : index")
    inside = f.v(f"arith.andi {f.cmp('sge', other, '%c0')}, {f.cmp('slt', other, '%m')} : i1")
    # a range level storing fewer slots than its dimension (scipy DIA data narrower than the shape)
    inside = f.v(f"arith.andi {inside}, {f.cmp('slt', i if zrow else other, '%extz')} : i1")
    nxt = f.name()
    f.emit(f"{nxt} = scf.if {inside} -> (index) {{")
    slot = f.add(f.mul(f"%t{iv}", "%extz"), i if zrow else other)
    words = f.words("val", slot)  # loaded once: stored, and tested for zero
    f.st(other, "oidx", p)
    f.put("oval", p, words)
    f.emit(f"scf.yield {f.add(p, f.v(f'arith.select {f.is_nonzero(words)}, %c1, %c0 : index'))} : index")
    f.emit("} else {")
    f.emit(f"scf.yield {p} : index")
    f.emit("}")
    f.emit(f"scf.yield {nxt} : index")
    f.emit("}")
    f.st(f"{res}#0", "ptr", f.add(i, "%c1"))
    f.emit(f"scf.yield {res}#0 : index")
    f.emit("}")
    return f"{rows}#0"


def _dia(lay: Layout, sign: str, zrow: bool) -> str:
    """Rows ``[lo, hi)`` of diagonals ``off[0 .. nd)`` written from slot ``start`` on, ``ptr[i + 1]`` after
    each row; the value of (diagonal t, row i) is at ``t * extz + (i if zrow else other)`` (a slot exists
    only where that coordinate is below ``extz``: narrow DIA data). Every slot
    inside the shape is stored and kept only when nonzero (no branch), so a range writes at most as many
    slots as it has inside the shape."""
    f = _Fn(lay, f"dia_rows_{sign}{'r' if zrow else 'o'}",
            _DIA_PARAMS + [("nd", "x"), ("m", "x"), ("extz", "x"), ("start", "x")])
    _dia_rows(f, sign, zrow, "%lo", "%hi", "%start", "%nd")
    return f.text()


def _dia_unrolled(lay: Layout, sign: str, zrow: bool, nd: int) -> str:
    """``dia_rows`` for exactly ``nd`` diagonals with the rows ``[ia, ib)`` whose every slot lies inside the
    shape and the data (the caller computes them) walked by a straight-line row: the offsets and each
    diagonal's first slot are loaded once, and a slot is stored unconditionally and kept when nonzero (its
    store is overwritten by the next slot's otherwise: inside rows never write past their range's slots). The
    rows before ``ia`` and from ``ib`` on take the checked loop."""
    f = _Fn(lay, f"dia_rows_{sign}{'r' if zrow else 'o'}{nd}",
            _DIA_PARAMS + [("m", "x"), ("extz", "x"), ("start", "x"), ("ia", "x"), ("ib", "x")])
    a = f.v(f"arith.maxui %lo, {f.v('arith.minui %ia, %hi : index')} : index")
    b = f.v(f"arith.maxui {a}, {f.v('arith.minui %ib, %hi : index')} : index")
    n = f.c(nd)
    before = _dia_rows(f, sign, zrow, "%lo", a, "%start", n, "e")
    ds = [f.ld("off", f.c(t)) for t in range(nd)]
    # slot of (t, i): t * extz + i (zrow), t * extz + d + i (other = d + i) or t * extz + d - i (other = d - i)
    bases = [f.mul(f.c(t), "%extz") if zrow else f.add(f.mul(f.c(t), "%extz"), ds[t]) for t in range(nd)]
    rows = f.open_for("u", a, b, [("pu", before, "index")])
    p = "%pu"
    for t in range(nd):
        other = f.add(ds[t], "%u") if sign == "m" else f.v(f"arith.subi {ds[t]}, %u : index")
        slot = f.v(f"arith.subi {bases[t]}, %u : index") if sign == "p" and not zrow else f.add(bases[t], "%u")
        words = f.words("val", slot)
        f.st(other, "oidx", p)
        f.put("oval", p, words)
        p = f.add(p, f.v(f"arith.select {f.is_nonzero(words)}, %c1, %c0 : index"))
    f.st(p, "ptr", f.add("%u", "%c1"))
    f.emit(f"scf.yield {p} : index")
    f.emit("}")
    _dia_rows(f, sign, zrow, b, "%hi", f"{rows}#0", n, "w")
    return f.text()


def dia_module(lay: Layout, nd: int) -> str:
    """The module of the diagonal kernels for exactly ``nd`` diagonals (all four orientations)."""
    if nd < 1:
        raise ValueError(f"need at least one diagonal, got {nd}")
    return "module {\n" + "\n".join(_dia_unrolled(lay, s, z, nd) for s in "mp" for z in (True, False)) + "\n}\n"


def _shift_down(lay: Layout) -> str:
    """``idx[to + q], val[to + q] = idx[frm + q], val[frm + q]`` for ``q`` in ``[0, count)``, ``to < frm``
    (forward, so overlapping ranges move correctly)."""
    f = _Fn(lay, "shift_down", [("idx", "I"), ("val", "V"), ("frm", "x"), ("to", "x"), ("count", "x")])
    I = lay.ity
    f.open_for("q", "%c0", "%count")
    a, b = f.add("%frm", "%q"), f.add("%to", "%q")
    f.emit(f"memref.store {f.v(f'memref.load %idx[{a}] : memref<?x{I}>')}, %idx[{b}] : memref<?x{I}>")
    f.copy_value("val", a, "val", b)
    f.emit("}")
    return f.text()


def _delta(lay: Layout, fill: bool, gbits: int) -> str:
    """Rows ``[lo, hi)`` as gaps (column minus previous column minus one; the previous column of a row's
    first entry is -1) of ``bits`` bits: a gap above ``2**bits - 1`` becomes zero entries of that gap."""
    G = f"i{gbits}"
    params = [("ptr", "I"), ("idx", "I")] + ([("val", "V")] if fill else []) + [("optr", "I")]
    if fill:
        params += [("ogap", "G"), ("oval", "V")]
    f = _Fn(lay, f"delta_fill_{gbits}" if fill else "delta_count", params + [("lo", "x"), ("hi", "x"),
                                                                            ("bits", "x")], gap=G)
    V = lay.vty
    big = f.v("arith.subi %c0, %c1 : index")
    most = f.v("arith.subi " + f.v("arith.shli %c1, %bits : index") + ", %c1 : index")
    f.open_for("i", "%lo", "%hi")
    a, b = _row_bounds(f, "ptr", "%i")
    start = f.ld("optr", "%i") if fill else "%c0"
    res = f.open_for("k", a, b, [("p", start, "index"), ("prev", big, "index")])
    col = f.ld("idx", "%k")
    gap = f.v(f"arith.subi {f.v(f'arith.subi {col}, %prev : index')}, %c1 : index")
    npad = f.v(f"arith.shrui {gap}, %bits : index")
    if fill:
        mg = f.v(f"arith.index_cast {most} : index to {G}")
        f.open_for("z", "%c0", npad)
        at = f.add("%p", "%z")
        f.emit(f"memref.store {mg}, %ogap[{at}] : memref<?x{G}>")
        if lay.lanes == 1:
            f.emit(f"memref.store %vz, %oval[{at}] : memref<?x{V}>")
        else:
            at2 = f.mul(at, f.c(2))
            f.emit(f"memref.store %vz, %oval[{at2}] : memref<?x{V}>")
            f.emit(f"memref.store %vz, %oval[{f.add(at2, '%c1')}] : memref<?x{V}>")
        f.emit("}")
        q = f.add("%p", npad)
        rest = f.v(f"arith.subi {gap}, {f.v(f'arith.shli {npad}, %bits : index')} : index")
        f.emit(f"memref.store {f.v(f'arith.index_cast {rest} : index to {G}')}, %ogap[{q}] : memref<?x{G}>")
        f.copy_value("val", "%k", "oval", q)
    f.emit(f"scf.yield {f.add(f.add('%p', npad), '%c1')}, {col} : index, index")
    f.emit("}")
    if not fill:
        f.st(f"{res}#0", "optr", f.add("%i", "%c1"))
    f.emit("}")
    return f.text()


def _delta_nopad(lay: Layout) -> str:
    """DELTA(8) in one pass for rows ``[lo, hi)`` whose gaps all fit in 8 bits: gap ``k`` to ``ogap[k]``,
    value to ``oval[k]`` (the positions stay the source's); ``bad[0] = 1`` where a gap does not fit (the
    caller then takes the two-pass kernels)."""
    f = _Fn(lay, "delta8_nopad", [("ptr", "I"), ("idx", "I"), ("val", "V"), ("ogap", "G"), ("oval", "V"),
                                  ("bad", "B"), ("lo", "x"), ("hi", "x")])
    res = f.open_for("i", "%lo", "%hi", [("bad0", "%false", "i1")])
    a, b = _row_bounds(f, "ptr", "%i")
    big = f.v("arith.subi %c0, %c1 : index")
    inner = f.open_for("k", a, b, [("prev", big, "index"), ("bad1", "%bad0", "i1")])
    col = f.ld("idx", "%k")
    gap = f.v(f"arith.subi {f.v(f'arith.subi {col}, %prev : index')}, %c1 : index")
    over = f.cmp("ugt", gap, f.c(255))
    f.emit(f"memref.store {f.v(f'arith.index_cast {gap} : index to i8')}, %ogap[%k] : memref<?xi8>")
    f.copy_value("val", "%k", "oval", "%k")
    f.emit(f"scf.yield {col}, {f.v(f'arith.ori %bad1, {over} : i1')} : index, i1")
    f.emit("}")
    f.emit(f"scf.yield {inner}#1 : i1")
    f.emit("}")
    f.emit(f"memref.store {f.v(f'arith.extui {res}#0 : i1 to i8')}, %bad[%c0] : memref<?xi8>")
    return f.text()


def _structured(lay: Layout, nm: tuple[int, int] | None = None) -> str:
    """Rows ``[lo, hi)`` in groups of ``m`` columns (``groups`` per row), ``nk`` slots each at ``out[(i *
    groups + g) * nk ..]``: the group's entries and, when it has fewer, its smallest free columns with zeros
    (coordinates increasing). A group with more than ``nk`` entries sets ``bad[0]`` (its slots are cut).
    ``nm = (n, m)``: both are constants (``nm_fill_const``: loops over them unrolled), not arguments."""
    params = [("ptr", "I"), ("idx", "I"), ("val", "V"), ("ocrd", "I"), ("oval", "V"), ("bad", "B"), ("lo", "x"),
              ("hi", "x"), ("groups", "x")]
    f = _Fn(lay, "nm_fill" if nm is None else "nm_fill_const", params + ([("m", "x"), ("nk", "x")] if nm is None
                                                                          else []))
    if nm is not None:
        f.emit(f"%nk = arith.constant {nm[0]} : index")
        f.emit(f"%m = arith.constant {nm[1]} : index")
    I, V = lay.ity, lay.vty
    res = f.open_for("i", "%lo", "%hi", [("bad0", "%false", "i1")])
    a, b = _row_bounds(f, "ptr", "%i")
    gres = f.open_for("g", "%c0", "%groups", [("k", a, "index"), ("bad1", "%bad0", "i1")])
    col0 = f.mul("%g", "%m")
    lim = f.add(col0, "%m")
    out0 = f.mul(f.add(f.mul("%i", "%groups"), "%g"), "%nk")
    # the group's entries: [k, e); first the common case of exactly nk entries (no scan)
    kn = f.add("%k", "%nk")
    fits = f.name()
    f.emit(f"{fits} = scf.if {f.cmp('ule', kn, b)} -> (i1) {{")
    last_in = f.cmp("ult", f.ld("idx", f.v(f"arith.subi {kn}, %c1 : index")), lim)
    after = f.name()
    f.emit(f"{after} = scf.if {f.cmp('ult', kn, b)} -> (i1) {{")
    f.emit(f"scf.yield {f.cmp('uge', f.ld('idx', kn), lim)} : i1")
    f.emit("} else {")
    f.emit("scf.yield %true : i1")
    f.emit("}")
    f.emit(f"scf.yield {f.v(f'arith.andi {last_in}, {after} : i1')} : i1")
    f.emit("} else {")
    f.emit("scf.yield %false : i1")
    f.emit("}")
    wres = f.name()
    f.emit(f"{wres} = scf.if {fits} -> (index) {{")
    f.emit(f"scf.yield {kn} : index")
    f.emit("} else {")
    scan = f.name()
    f.emit(f"{scan} = scf.while (%q = %k) : (index) -> index {{")
    has = f.cmp("ult", "%q", b)
    cond = f.name()
    f.emit(f"{cond} = scf.if {has} -> (i1) {{")
    f.emit(f"scf.yield {f.cmp('ult', f.ld('idx', '%q'), lim)} : i1")
    f.emit("} else {")
    f.emit("scf.yield %false : i1")
    f.emit("}")
    f.emit(f"scf.condition({cond}) %q : index")
    f.emit("} do {")
    f.emit("^bb0(%q2: index):")
    f.emit(f"scf.yield {f.add('%q2', '%c1')} : index")
    f.emit("}")
    f.emit(f"scf.yield {scan} : index")
    f.emit("}")
    cnt = f.v(f"arith.subi {wres}, %k : index")
    full = f.cmp("eq", cnt, "%nk")
    f.emit(f"scf.if {full} {{")
    f.open_for("u", "%c0", "%nk")
    src = f.add("%k", "%u")
    f.st(f.v(f"arith.subi {f.ld('idx', src)}, {col0} : index"), "ocrd", f.add(out0, "%u"))
    f.copy_value("val", src, "oval", f.add(out0, "%u"))
    f.emit("}")
    f.emit("} else {")
    # walk the group's columns: entries where present, else free columns while slots are left
    need0 = f.v(f"arith.subi %nk, {f.v(f'arith.minui {cnt}, %nk : index')} : index")
    f.open_for("w", "%c0", "%m", [("kk", "%k", "index"), ("o", "%c0", "index"), ("need", need0, "index")])
    col = f.add(col0, "%w")
    room = f.cmp("ult", "%o", "%nk")
    here = f.name()
    f.emit(f"{here} = scf.if {f.cmp('ult', '%kk', wres)} -> (i1) {{")
    f.emit(f"scf.yield {f.cmp('eq', f.ld('idx', '%kk'), col)} : i1")
    f.emit("} else {")
    f.emit("scf.yield %false : i1")
    f.emit("}")
    pad = f.v(f"arith.andi {f.v(f'arith.xori {here}, %true : i1')}, {f.cmp('ugt', '%need', '%c0')} : i1")
    put = f.v(f"arith.andi {f.v(f'arith.ori {here}, {pad} : i1')}, {room} : i1")
    at = f.add(out0, "%o")
    f.emit(f"scf.if {put} {{")
    f.st("%w", "ocrd", at)
    f.emit(f"scf.if {here} {{")
    f.copy_value("val", "%kk", "oval", at)
    f.emit("} else {")
    base = at if lay.lanes == 1 else f.mul(at, f.c(2))
    for k in range(lay.lanes):
        f.emit(f"memref.store %vz, %oval[{base if k == 0 else f.add(base, f.c(k))}] : memref<?x{V}>")
    f.emit("}")
    f.emit("}")
    kk1 = f.add("%kk", f.v(f"arith.select {here}, %c1, %c0 : index"))
    o1 = f.add("%o", f.v(f"arith.select {put}, %c1, %c0 : index"))
    need1 = f.v(f"arith.subi %need, {f.v(f'arith.select {pad}, %c1, %c0 : index')} : index")
    need1 = f.v(f"arith.select {f.v(f'arith.andi {pad}, {room} : i1')}, {need1}, %need : index")
    f.emit(f"scf.yield {kk1}, {o1}, {need1} : index, index, index")
    f.emit("}")
    f.emit("}")
    over = f.cmp("ugt", cnt, "%nk")
    f.emit(f"scf.yield {wres}, {f.v(f'arith.ori %bad1, {over} : i1')} : index, i1")
    f.emit("}")
    f.emit(f"scf.yield {gres}#1 : i1")
    f.emit("}")
    del I
    f.emit(f"memref.store {f.v(f'arith.extui {res}#0 : i1 to i8')}, %bad[%c0] : memref<?xi8>")
    return f.text()


def module(lay: Layout) -> str:
    """The module of the layout-independent kernels (transpose, expand, COO pointers, diagonals)."""
    funcs = [_transpose_count(lay), _transpose_offsets(lay), _transpose_fill(lay), _expand(lay), _coo_ptr(lay)]
    funcs += [_bucket_count(lay), _bucket_scatter(lay), _bucket_sort(lay)]
    funcs += [_dia(lay, s, z) for s in "mp" for z in (True, False)] + [_shift_down(lay)]
    funcs += [_delta(lay, False, 8)] + [_delta(lay, True, g) for g in (8, 16, 32)] + [_structured(lay)]
    funcs += [_delta_nopad(lay)]
    return "module {\n" + "\n".join(funcs) + "\n}\n"


def _to_blocks(lay: Layout, r: int, c: int, fill: bool) -> str:
    """Block rows ``[blo, bhi)``; each row's positions clamped to ``len(idx)`` (its end never below its start)
    and every column to ``m - 1``, the same in both passes, so that they read and write in bounds whatever
    ``ptr``/``idx`` hold. A block column's mark holds the block row (count) or the slot (fill)
    that last saw it (``mark`` starts negative). Fill: blocks are listed in order of first appearance,
    sorted (insertion sort, or a scan of the marks over the block-column range when that is cheaper),
    their slots marked, then every entry is written into its block."""
    params = [("ptr", "I"), ("idx", "I")] + ([("val", "V")] if fill else []) + [("bptr", "I")]
    if fill:
        params += [("bidx", "I"), ("bval", "V")]
    f = _Fn(lay, f"to_blocks_{'fill' if fill else 'count'}",
            params + [("mark", "I"), ("blo", "x"), ("bhi", "x"), ("n", "x"), ("m", "x")])
    I = lay.ity
    R, C = f.c(r), f.c(c)
    size = f.v(f"memref.dim %idx, %c0 : memref<?x{I}>")
    top_col = f.v("arith.subi %m, %c1 : index")

    def bounds(i: str) -> tuple[str, str]:  # the row's positions clamped to len(idx), never decreasing
        a = f.v(f"arith.minui {f.ld('ptr', i)}, {size} : index")
        b = f.v(f"arith.minui {f.ld('ptr', f.add(i, '%c1'))}, {size} : index")
        return a, f.v(f"arith.maxui {b}, {a} : index")

    def column(k: str) -> str:  # clamped to [0, m - 1] (unsigned: negative ones too)
        return f.v(f"arith.minui {f.ld('idx', k)}, {top_col} : index")
    f.open_for("br", "%blo", "%bhi")
    if not fill:
        tag = f.v(f"arith.index_cast %br : index to {I}")
        res = f.open_for("t", "%c0", R, [("nb", "%c0", "index")])
        i = f.add(f.mul("%br", R), "%t")
        inner = f.name()
        f.emit(f"{inner} = scf.if {f.cmp('ult', i, '%n')} -> (index) {{")
        a, b = bounds(i)
        kres = f.open_for("k", a, b, [("q", "%nb", "index")])
        bc = f.v(f"arith.divui {column('%k')}, {C} : index")
        seen = f.v(f"memref.load %mark[{bc}] : memref<?x{I}>")
        new = f.v(f"arith.cmpi ne, {seen}, {tag} : {I}")
        f.emit(f"memref.store {tag}, %mark[{bc}] : memref<?x{I}>")
        f.emit(f"scf.yield {f.add('%q', f.v(f'arith.select {new}, %c1, %c0 : index'))} : index")
        f.emit("}")
        f.emit(f"scf.yield {kres}#0 : index")
        f.emit("} else {")
        f.emit("scf.yield %nb : index")
        f.emit("}")
        f.emit(f"scf.yield {inner} : index")
        f.emit("}")
        f.st(f"{res}#0", "bptr", f.add("%br", "%c1"))
        f.emit("}")
        return f.text()
    base = f.ld("bptr", "%br")
    top = f.ld("bptr", f.add("%br", "%c1"))
    base_i = f.v(f"arith.index_cast {base} : index to {I}")
    # 1. list the block columns in order of first appearance (slots base ..), tracking their range
    big = f.v("arith.constant -1 : index")
    res = f.open_for("t", "%c0", R, [("nb", base, "index"), ("lo", big, "index"), ("hi", "%c0", "index")])
    i = f.add(f.mul("%br", R), "%t")
    inner = f.name()
    f.emit(f"{inner}:3 = scf.if {f.cmp('ult', i, '%n')} -> (index, index, index) {{")
    a, b = bounds(i)
    kres = f.open_for("k", a, b, [("q", "%nb", "index"), ("l", "%lo", "index"), ("h", "%hi", "index")])
    bc = f.v(f"arith.divui {column('%k')}, {C} : index")
    seen = f.v(f"memref.load %mark[{bc}] : memref<?x{I}>")
    new = f.v(f"arith.cmpi slt, {seen}, {base_i} : {I}")
    f.emit(f"scf.if {new} {{")
    f.st("%q", "mark", bc)
    f.st(bc, "bidx", "%q")
    f.emit("}")
    q1 = f.add("%q", f.v(f"arith.select {new}, %c1, %c0 : index"))
    f.emit(f"scf.yield {q1}, {f.v(f'arith.minui %l, {bc} : index')}, {f.v(f'arith.maxui %h, {bc} : index')}"
           " : index, index, index")
    f.emit("}")
    f.emit(f"scf.yield {kres}#0, {kres}#1, {kres}#2 : index, index, index")
    f.emit("} else {")
    f.emit("scf.yield %nb, %lo, %hi : index, index, index")
    f.emit("}")
    f.emit(f"scf.yield {inner}#0, {inner}#1, {inner}#2 : index, index, index")
    f.emit("}")
    nb = f.v(f"arith.subi {top}, {base} : index")
    lo, hi = f"{res}#1", f"{res}#2"
    # 2. sort them: a scan of the marks over [lo, hi] when nb * nb / 4 exceeds that range, else insertion sort
    span = f.v(f"arith.subi {f.add(hi, '%c1')}, {lo} : index")
    quad = f.v(f"arith.shrui {f.mul(nb, nb)}, {f.c(2)} : index")
    scan = f.v(f"arith.andi {f.cmp('ugt', quad, span)}, {f.cmp('ugt', nb, '%c1')} : i1")
    f.emit(f"scf.if {scan} {{")
    f.open_for("x", lo, f.add(hi, "%c1"), [("o", base, "index")])
    seen = f.v(f"memref.load %mark[%x] : memref<?x{I}>")
    mine = f.v(f"arith.cmpi sge, {seen}, {base_i} : {I}")
    f.emit(f"scf.if {mine} {{")
    f.st("%x", "bidx", "%o")
    f.emit("}")
    f.emit(f"scf.yield {f.add('%o', f.v(f'arith.select {mine}, %c1, %c0 : index'))} : index")
    f.emit("}")
    f.emit("} else {")
    f.open_for("ins", f.add(base, "%c1"), top)
    key = f.ld("bidx", "%ins")
    wres = f.name()
    f.emit(f"{wres} = scf.while (%j = %ins) : (index) -> index {{")
    more = f.cmp("ugt", "%j", base)
    cond = f.name()
    f.emit(f"{cond} = scf.if {more} -> (i1) {{")
    f.emit(f"scf.yield {f.cmp('ugt', f.ld('bidx', f.v('arith.subi %j, %c1 : index')), key)} : i1")
    f.emit("} else {")
    f.emit("scf.yield %false : i1")
    f.emit("}")
    f.emit(f"scf.condition({cond}) %j : index")
    f.emit("} do {")
    f.emit("^bb0(%j2: index):")
    j1 = f.v("arith.subi %j2, %c1 : index")
    f.st(f.ld("bidx", j1), "bidx", "%j2")
    f.emit(f"scf.yield {j1} : index")
    f.emit("}")
    f.st(key, "bidx", wres)
    f.emit("}")
    f.emit("}")
    # 3. mark every block column with its slot, then write the entries
    f.open_for("mk", base, top)
    f.st("%mk", "mark", f.ld("bidx", "%mk"))
    f.emit("}")
    f.open_for("t2", "%c0", R)
    i2 = f.add(f.mul("%br", R), "%t2")
    f.emit(f"scf.if {f.cmp('ult', i2, '%n')} {{")
    a2, b2 = bounds(i2)
    f.open_for("k2", a2, b2)
    col = column("%k2")
    bc2 = f.v(f"arith.divui {col}, {C} : index")
    slot = f.ld("mark", bc2)
    within = f.v(f"arith.subi {col}, {f.mul(bc2, C)} : index")
    f.copy_value("val", "%k2", "bval", f.add(f.mul(f.add(f.mul(slot, R), "%t2"), C), within))
    f.emit("}")
    f.emit("}")
    f.emit("}")
    f.emit("}")
    return f.text()


def _from_blocks(lay: Layout, r: int, c: int, fill: bool) -> str:
    params = [("bptr", "I"), ("bidx", "I"), ("bval", "V"), ("ptr", "I")]
    if fill:
        params += [("oidx", "I"), ("oval", "V")]
    f = _Fn(lay, f"from_blocks_{'fill' if fill else 'count'}",
            params + [("blo", "x"), ("bhi", "x"), ("n", "x"), ("m", "x")])
    R, C = f.c(r), f.c(c)
    f.open_for("br", "%blo", "%bhi")
    b0, b1 = _row_bounds(f, "bptr", "%br")
    row0 = f.mul("%br", R)
    f.open_for("t", "%c0", R)
    i = f.add(row0, "%t")
    f.emit(f"scf.if {f.cmp('ult', i, '%n')} {{")
    start = f.ld("ptr", i) if fill else "%c0"
    res = f.open_for("b", b0, b1, [("p", start, "index")])
    col0 = f.mul(f.ld("bidx", "%b"), C)
    slot0 = f.mul(f.add(f.mul("%b", R), "%t"), C)
    inner = f.open_for("j", "%c0", C, [("q", "%p", "index")])
    col = f.add(col0, "%j")
    slot = f.add(slot0, "%j")
    words = f.words("bval", slot)  # loaded once: tested for zero, and stored when filling
    keep = f.v(f"arith.andi {f.cmp('ult', col, '%m')}, {f.is_nonzero(words)} : i1")
    if fill:
        f.emit(f"scf.if {keep} {{")
        f.st(col, "oidx", "%q")
        f.put("oval", "%q", words)
        f.emit("}")
    f.emit(f"scf.yield {f.add('%q', f.v(f'arith.select {keep}, %c1, %c0 : index'))} : index")
    f.emit("}")
    f.emit(f"scf.yield {inner}#0 : index")
    f.emit("}")
    if not fill:
        f.st(f"{res}#0", "ptr", f.add(i, "%c1"))
    f.emit("}")
    f.emit("}")
    f.emit("}")
    return f.text()


def _from_blocks_rows(lay: Layout, r: int, c: int) -> str:
    """BSR -> rows in one pass: block rows ``[blo, bhi)`` written from slot ``start`` on, ``ptr[i + 1]``
    after each row (the caller bounds the range's slots by its blocks' ``r * c``)."""
    f = _Fn(lay, "from_blocks_rows", [("bptr", "I"), ("bidx", "I"), ("bval", "V"), ("ptr", "I"), ("oidx", "I"),
                                      ("oval", "V"), ("blo", "x"), ("bhi", "x"), ("n", "x"), ("m", "x"),
                                      ("start", "x")])
    R, C = f.c(r), f.c(c)
    f.open_for("br", "%blo", "%bhi", [("p0", "%start", "index")])
    b0, b1 = _row_bounds(f, "bptr", "%br")
    row0 = f.mul("%br", R)
    rres = f.open_for("t", "%c0", R, [("p1", "%p0", "index")])
    i = f.add(row0, "%t")
    nxt = f.name()
    f.emit(f"{nxt} = scf.if {f.cmp('ult', i, '%n')} -> (index) {{")
    res = f.open_for("b", b0, b1, [("p", "%p1", "index")])
    col0 = f.mul(f.ld("bidx", "%b"), C)
    slot0 = f.mul(f.add(f.mul("%b", R), "%t"), C)
    # a block row slice of c nonzeros inside the shape is a plain copy; else one slot at a time, compacted
    every = f.cmp("ule", f.add(col0, C), "%m")
    for j in range(c):
        every = f.v(f"arith.andi {every}, {f.nonzero('bval', f.add(slot0, f.c(j)))} : i1")
    done = f.name()
    f.emit(f"{done} = scf.if {every} -> (index) {{")
    f.open_for("jc", "%c0", C)
    at = f.add("%p", "%jc")
    f.st(f.add(col0, "%jc"), "oidx", at)
    f.copy_value("bval", f.add(slot0, "%jc"), "oval", at)
    f.emit("}")
    f.emit(f"scf.yield {f.add('%p', C)} : index")
    f.emit("} else {")
    inner = f.open_for("j", "%c0", C, [("q", "%p", "index")])
    col = f.add(col0, "%j")
    slot = f.add(slot0, "%j")
    words = f.words("bval", slot)  # loaded once: tested for zero, and stored
    keep = f.v(f"arith.andi {f.cmp('ult', col, '%m')}, {f.is_nonzero(words)} : i1")
    f.st(col, "oidx", "%q")
    f.put("oval", "%q", words)
    f.emit(f"scf.yield {f.add('%q', f.v(f'arith.select {keep}, %c1, %c0 : index'))} : index")
    f.emit("}")
    f.emit(f"scf.yield {inner}#0 : index")
    f.emit("}")
    f.emit(f"scf.yield {done} : index")
    f.emit("}")
    f.st(f"{res}#0", "ptr", f.add(i, "%c1"))
    f.emit(f"scf.yield {res}#0 : index")
    f.emit("} else {")
    f.emit("scf.yield %p1 : index")
    f.emit("}")
    f.emit(f"scf.yield {nxt} : index")
    f.emit("}")
    f.emit(f"scf.yield {rres}#0 : index")
    f.emit("}")
    return f.text()


def nm_module(lay: Layout, n: int, m: int) -> str:
    """The module of the n:m kernel for constant ``n`` and ``m``."""
    if not 0 < n <= m:
        raise ValueError(f"n:m needs 0 < n <= m, got {n}:{m}")
    return "module {\n" + _structured(lay, (n, m)) + "\n}\n"


def block_module(lay: Layout, r: int, c: int) -> str:
    """The module of the block kernels for ``r x c`` blocks."""
    if r < 1 or c < 1:
        raise ValueError(f"block shape must be positive, got {r}x{c}")
    funcs = [_to_blocks(lay, r, c, False), _to_blocks(lay, r, c, True), _from_blocks(lay, r, c, False),
             _from_blocks(lay, r, c, True), _from_blocks_rows(lay, r, c)]
    return "module {\n" + "\n".join(funcs) + "\n}\n"


def compile_kernels(text: str) -> Any:
    """A module of these kernels compiled (memref-only functions: the solvers' CPU pipeline and cache)."""
    from ..solve.pipeline import compile_solver

    return compile_solver(text)
