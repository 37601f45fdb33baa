"""A hand-written SDDMM (sampled dense-dense product) kernel over the stored entries of a sparse matrix.

For every stored entry ``p`` at ``(i, j)``: ``out[p] = a[p] * dot(x[i, :], yt[j, :])`` (``scaled``) or
``out[p] = dot(x[i, :], yt[j, :])`` (the values of ``x @ yt.T`` at the pattern, for ``sampled_addmm``).
Both dense operands are row-major with the inner dimension ``k`` contiguous (``yt`` is ``Y`` transposed);
``k`` is a runtime size (``memref.dim`` of ``x``).

The dot product runs over ``k`` in ``vector<lanes x E>`` chunks with a fused multiply-add, then a scalar
tail; ``unroll`` stored entries of a row run together (one load of ``x``'s chunk feeds ``unroll``
independent accumulators, which hides the FMA latency), the row's last entries one by one.

Two row-range shapes (the frontend runs chunks of them on its thread pool, split by entries):

- ``rows="compressed"`` (CSR; CSC with ``x`` and ``yt`` swapped):
  ``@sddmm(pos, crd, a, x, yt, out, row_begin, row_end)`` writes the entries of rows ``[row_begin, row_end)``;
- ``rows="coordinates"`` (COO): ``@sddmm(row, col, a, x, yt, out, begin, end)`` writes the entries
  ``[begin, end)`` from their row and column coordinates.

Each module also holds ``@transpose(y, yt, lo, hi)``: ``yt = y.T`` for the columns ``[lo, hi)`` of a
``k x n`` ``y``, cache-blocked, in column ranges (threads); as fast as NumPy's copy at k = 16 and 2-3x
faster at k = 3 or 64.

``a`` is passed in both variants and read only when ``scaled``. Nothing is allocated; the kernel reads
only ``x`` rows named by rows in range and ``yt`` rows named by stored coordinates (the frontend checks the
shapes before the call).

Bounds-safe whatever the index buffers hold: the row range is clamped to the positions' and ``x``'s rows,
each entry range into the coordinates', values' and output's length (``lo <= hi``, unsigned: negative
positions too), and every coordinate used as a row of ``x`` or ``yt`` to that operand's last row, so a
corrupted pattern gives wrong values, never a read or write out of bounds.
"""
from __future__ import annotations

from ..mlir_text import MlirText

#: Vector lanes per value type (256-bit vectors: AVX2; LLVM splits wider ones on smaller targets).
LANES = {"f32": 8, "f64": 4}
#: Stored entries per unrolled step.
UNROLL = 4
#: Columns of ``y`` per block of the transpose (a block of ``yt``, ``TRANSPOSE_BLOCK * k`` values, stays in L1).
TRANSPOSE_BLOCK = 256

_TRANSPOSE = """\
// @transpose: yt[j, k] = y[k, j] for the columns j in [lo, hi), in blocks of {b} columns (reads along rows of y)
func.func @transpose(%y: memref<?x?x{e}>, %yt: memref<?x?x{e}>, %lo: index, %hi: index)
    attributes {{llvm.emit_c_interface}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cb = arith.constant {b} : index
  %kk = memref.dim %y, %c0 : memref<?x?x{e}>
  scf.for %jb = %lo to %hi step %cb {{
    %je0 = arith.addi %jb, %cb : index
    %je = arith.minui %je0, %hi : index
    scf.for %k = %c0 to %kk step %c1 {{
      scf.for %j = %jb to %je step %c1 {{
        %v = memref.load %y[%k, %j] : memref<?x?x{e}>
        memref.store %v, %yt[%j, %k] : memref<?x?x{e}>
      }}
    }}
  }}
  return
}}
"""


def build(elem: str, pos_t: str, crd_t: str, *, rows: str, scaled: bool, lanes: int | None = None,
          unroll: int = UNROLL) -> str:
    """The module text of ``@sddmm`` (module docstring) for values ``elem`` (``f32``/``f64``), positions or
    row coordinates of type ``pos_t`` and column coordinates of type ``crd_t`` (``i8`` to ``i64``, sign-extended
    on load)."""
    if elem not in LANES:
        raise ValueError(f"sddmm kernel: takes f32 or f64 values, got {elem}")
    for t in (pos_t, crd_t):
        if t not in ("i8", "i16", "i32", "i64"):
            raise ValueError(f"sddmm kernel: takes i8, i16, i32 or i64 indices, got {t}")
    if rows not in ("compressed", "coordinates"):
        raise ValueError(f"sddmm kernel: rows must be 'compressed' or 'coordinates', got {rows!r}")
    lanes = LANES[elem] if lanes is None else lanes
    if lanes < 1 or unroll < 1:
        raise ValueError(f"sddmm kernel: lanes and unroll must be >= 1, got {lanes} and {unroll}")
    return _Kernel(elem, pos_t, crd_t, rows, scaled, lanes, unroll).module()


class _Kernel:
    def __init__(self, elem: str, pos_t: str, crd_t: str, rows: str, scaled: bool, lanes: int,
                 unroll: int) -> None:
        self.e, self.p, self.c, self.rows = elem, pos_t, crd_t, rows
        self.scaled, self.lanes, self.unroll = scaled, lanes, unroll
        self.vt = f"vector<{lanes}x{elem}>"
        self.t = MlirText(depth=1)

    def module(self) -> str:
        e, p, c = self.e, self.p, self.c
        t = self.t
        t.emit("%c0 = arith.constant 0 : index")
        t.emit("%c1 = arith.constant 1 : index")
        t.emit(f"%cu = arith.constant {self.unroll} : index")
        t.emit(f"%cl = arith.constant {self.lanes} : index")
        t.emit(f"%zero = arith.constant 0.0 : {e}")
        t.emit(f"%vzero = arith.constant dense<0.0> : {self.vt}")
        t.emit(f"%kk = memref.dim %x, %c1 : memref<?x?x{e}>")
        t.emit("%krem = arith.remui %kk, %cl : index")
        t.emit("%kv = arith.subi %kk, %krem : index")  # k below kv: vector chunks; kv..kk: the scalar tail
        limit, xmax, ymax = self._limits()
        if self.rows == "compressed":
            npos = t.assign(f"arith.maxui {t.assign(f'memref.dim %pos, %c0 : memref<?x{p}>')}, %c1 : index")
            rows = self._min(t.assign(f"arith.subi {npos}, %c1 : index"),
                             t.assign(f"memref.dim %x, %c0 : memref<?x?x{e}>"))
            hi = self._min("%hi", rows)
            t.emit(f"scf.for %r = {self._min('%lo', hi)} to {hi} step %c1 {{")
            with t.nested():
                r1 = t.assign("arith.addi %r, %c1 : index")
                f = self._min(self._load_index("%pos", r1, p), limit)
                b = self._min(self._load_index("%pos", "%r", p), f)
                self._entries(b, f, lambda q: "%r", ymax)
            t.emit("}")
            names = ("pos", "crd")
        else:
            hi = self._min("%hi", self._min(limit, t.assign(f"memref.dim %pos, %c0 : memref<?x{p}>")))
            self._entries(self._min("%lo", hi), hi, lambda q: self._min(self._load_index("%pos", q, p), xmax), ymax)
            names = ("row", "col")
        t.emit("return")
        head = (f"func.func @sddmm(%pos: memref<?x{p}>, %crd: memref<?x{c}>, %a: memref<?x{e}>, "
                f"%x: memref<?x?x{e}>, %yt: memref<?x?x{e}>, %out: memref<?x{e}>, %lo: index, %hi: index) "
                "attributes {llvm.emit_c_interface} {")
        transpose = _TRANSPOSE.format(e=e, b=TRANSPOSE_BLOCK)
        doc = f"// @sddmm over {self.rows} rows ({names[0]}, {names[1]}), {'scaled' if self.scaled else 'unscaled'}"
        return "\n".join([doc, head, *t.constant_lines(1), *t.lines, "}", transpose])

    # ----- pieces ---------------------------------------------------------------------------------------------
    def _min(self, a: str, b: str) -> str:
        return self.t.assign(f"arith.minui {a}, {b} : index")

    def _limits(self) -> tuple[str, str, str]:
        """(the entries any range may reach: the coordinates', values' and output's length, 0 when ``x`` or
        ``yt`` has no rows; the largest row of ``x``; the largest row of ``yt``): what keeps every access in
        bounds whatever the index buffers hold."""
        t, e = self.t, self.e
        dims = [t.assign(f"memref.dim %{b}, %c0 : memref<?x{ty}>")
                for b, ty in (("crd", self.c), ("a", e), ("out", e))]
        limit = self._min(self._min(dims[0], dims[1]), dims[2])
        nx = t.assign(f"memref.dim %x, %c0 : memref<?x?x{e}>")
        ny = t.assign(f"memref.dim %yt, %c0 : memref<?x?x{e}>")
        empty = t.assign(f"arith.cmpi eq, {self._min(nx, ny)}, %c0 : index")
        limit = t.assign(f"arith.select {empty}, %c0, {limit} : index")
        return limit, t.assign(f"arith.subi {nx}, %c1 : index"), t.assign(f"arith.subi {ny}, %c1 : index")

    def _load_index(self, buf: str, idx: str, ty: str) -> str:
        v = self.t.assign(f"memref.load {buf}[{idx}] : memref<?x{ty}>")
        return self.t.assign(f"arith.index_cast {v} : {ty} to index")

    def _entries(self, lo: str, hi: str, row_of: object, ymax: str) -> None:
        """The entries ``[lo, hi)``: ``unroll`` at a time, then the rest one by one. ``row_of(q)`` emits the
        row index of entry ``q`` (a loop-invariant name for compressed rows); column coordinates are clamped to
        ``ymax``."""
        t, u = self.t, self.unroll
        n = t.assign(f"arith.subi {hi}, {lo} : index")
        whole = t.assign(f"arith.subi {hi}, {t.assign(f'arith.remui {n}, %cu : index')} : index")
        if u > 1:
            q = t.fresh("q")
            t.emit(f"scf.for {q} = {lo} to {whole} step %cu {{")
            with t.nested():
                self._group(q, u, row_of, ymax)
            t.emit("}")
            lo = whole
        q = t.fresh("q")
        t.emit(f"scf.for {q} = {lo} to {hi} step %c1 {{")
        with t.nested():
            self._group(q, 1, row_of, ymax)
        t.emit("}")

    def _group(self, q0: str, u: int, row_of: object, ymax: str) -> None:
        """``u`` consecutive entries from ``q0``: their dots, scaled and stored."""
        t = self.t
        qs = [q0] + [t.assign(f"arith.addi {q0}, {t.constant(str(d), 'index', str(d))} : index")
                     for d in range(1, u)]
        rows = [row_of(q) for q in qs]  # type: ignore[operator]
        cols = [self._min(self._load_index("%crd", q, self.c), ymax) for q in qs]
        self._scalar_part(qs, self._vector_part(u, rows, cols), rows, cols)

    def _vector_part(self, u: int, rows: list[str], cols: list[str]) -> list[str]:
        """The dots over ``k < kv`` in vector chunks: one accumulator per entry; their sums."""
        t, e, vt = self.t, self.e, self.vt
        k, accs = t.fresh("k"), [t.fresh("acc") for _ in range(u)]
        res = t.fresh("vs")
        inits = ", ".join(f"{a} = %vzero" for a in accs)
        t.emit(f"{res}:{u} = scf.for {k} = %c0 to %kv step %cl iter_args({inits}) -> ({', '.join([vt] * u)}) {{")
        with t.nested():
            xs: dict[str, str] = {}
            nxt = []
            for a, r, j in zip(accs, rows, cols):
                if r not in xs:
                    xs[r] = t.assign(f"vector.load %x[{r}, {k}] : memref<?x?x{e}>, {vt}")
                yv = t.assign(f"vector.load %yt[{j}, {k}] : memref<?x?x{e}>, {vt}")
                nxt.append(t.assign(f"vector.fma {xs[r]}, {yv}, {a} : {vt}"))
            t.emit(f"scf.yield {', '.join(nxt)} : {', '.join([vt] * u)}")
        t.emit("}")
        return [t.assign(f"vector.reduction <add>, {res}#{d} fastmath<reassoc> : {vt} into {e}") for d in range(u)]

    def _scalar_part(self, qs: list[str], sums: list[str], rows: list[str], cols: list[str]) -> None:
        """The rest of the dots (``k`` from ``kv``), scaled and stored."""
        t, e, u = self.t, self.e, len(qs)
        k, ss = t.fresh("k"), [t.fresh("s") for _ in range(u)]
        tail = t.fresh("ts")
        inits = ", ".join(f"{s} = {v}" for s, v in zip(ss, sums))
        t.emit(f"{tail}:{u} = scf.for {k} = %kv to %kk step %c1 iter_args({inits}) -> ({', '.join([e] * u)}) {{")
        with t.nested():
            xs = {}
            nxt = []
            for s, r, j in zip(ss, rows, cols):
                if r not in xs:
                    xs[r] = t.assign(f"memref.load %x[{r}, {k}] : memref<?x?x{e}>")
                yv = t.assign(f"memref.load %yt[{j}, {k}] : memref<?x?x{e}>")
                m = t.assign(f"arith.mulf {xs[r]}, {yv} fastmath<contract> : {e}")
                nxt.append(t.assign(f"arith.addf {s}, {m} fastmath<contract> : {e}"))
            t.emit(f"scf.yield {', '.join(nxt)} : {', '.join([e] * u)}")
        t.emit("}")
        for d, q in enumerate(qs):
            v = f"{tail}#{d}"
            if self.scaled:
                av = t.assign(f"memref.load %a[{q}] : memref<?x{e}>")
                v = t.assign(f"arith.mulf {av}, {v} : {e}")
            t.emit(f"memref.store {v}, %out[{q}] : memref<?x{e}>")
