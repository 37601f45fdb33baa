"""Hand-written elementwise ``mul`` (the intersection) of two matrices with (dense, compressed) levels in the
same dimension order (CSR * CSR, CSC * CSC), a row-range kernel.

Each row pair takes one of four methods, picked from the two rows' lengths and first/last coordinates:

- **Nothing** when either row is empty or their column ranges do not overlap (four loads).
- **Binary search** of each entry of the shorter row in the longer one (from the last hit on) when the longer
  row has more than :data:`SEARCH_RATIO` times the shorter one's entries (power-law rows):
  ``short * log(long)`` steps instead of ``short + long``.
- **Run-skipping merge** when both rows start with a run (their first three coordinates consecutive: 4x4
  blocks, bands): while the coordinates differ, the row behind skips its run of smaller coordinates in a
  tight loop (one load, one compare an entry, a well-predicted branch); values are loaded only for
  matching coordinates. On the suite's block 4x4 rows: about a third of the branch-free merge's time.
- **Branch-free merge** otherwise (random columns, where a branch per step would be mispredicted half the
  time): one step per entry of either row with selects; the product is stored at the row's next output
  position every step and kept (the position advanced) on a match only.

- ``@merge(a_pos, a_crd, a_val, b_pos, b_crd, b_val, top, c_pos, c_crd, c_val, row_begin, row_end)`` writes the
  rows ``[row_begin, row_end)`` one after another from offset ``min(a_pos[row_begin], b_pos[row_begin])``
  (a bound of the rows before: a row of the intersection holds at most the shorter row's entries; the caller
  moves each chunk down after the ones before, which never happens when the two patterns are equal) and
  ``c_pos[r + 1]`` = the end of row ``r``. The rows ``[r0, r1)`` write inside ``[min(a_pos[r0], b_pos[r0]),
  min(a_pos[r1], b_pos[r1]))``, so chunks never overlap and ``min(nnz(A), nnz(B))`` slots hold the result.
  ``top[0]`` (int64) is the largest coordinate of the merged dimension.

Bounds-safe whatever the operands' index buffers hold, as the union (:mod:`lowering.kernels.merge_rows`): the
chunk's ends are clamped into the coordinates' length and each row's range follows the row before's inside
them, the start offset is clamped into the result's buffers, a chunk whose shorter ranges would not fit in them
is taken as empty (:func:`~.merge_rows.chunk_room`), and every stored coordinate is clamped to ``top[0]``.
Every method reads only inside the clamped ranges and writes at most the shorter row's entries, so a
corrupted operand gives a wrong result, never a read or write out of bounds.
"""
from __future__ import annotations

from ..mlir_text import type_max
from .merge_rows import (
    CHUNK_LIMITS,
    ROW_BOUNDS,
    ROW_ENDS,
    chunk_room,
    clamped_coordinates,
    match_step,
    merge_head,
    row_loop,
    row_yield,
)

#: A row pair is searched (binary search of the shorter row's entries in the longer one) when the longer row
#: has more than this many times the shorter one's entries; below it the rows are merged.
SEARCH_RATIO = 16

_MUL = {"float": "arith.mulf", "int": "arith.muli"}

# rows: lengths, column ranges, and the method of each row pair
_ROW_START = (chunk_room("minui", "  %o = arith.minui %pa0, %pb0 : index\n") + CHUNK_LIMITS + row_loop("last", "%o_in")
              + ROW_BOUNDS)
_ROW = _ROW_START + """\
    %ane = arith.cmpi ult, %alo, %ahi : index
    %bne = arith.cmpi ult, %blo, %bhi : index
    %bothne = arith.andi %ane, %bne : i1
    %rowend = scf.if %bothne -> (index) {{
""" + ROW_ENDS + """      %a_before = arith.cmpi ult, %ca1, %cb0 : index
      %b_before = arith.cmpi ult, %cb1, %ca0 : index
      %apart = arith.ori %a_before, %b_before : i1
      %got = scf.if %apart -> (index) {{
        scf.yield %n0 : index
      }} else {{
        %alen = arith.subi %ahi, %alo : index
        %blen = arith.subi %bhi, %blo : index
        %alen_s = arith.muli %alen, %cratio : index
        %blen_s = arith.muli %blen, %cratio : index
        %a3 = arith.cmpi ugt, %alen, %c2 : index
        %b3 = arith.cmpi ugt, %blen, %c2 : index
        %long_rows = arith.andi %a3, %b3 : i1
        %a_long = arith.cmpi ugt, %alen, %blen_s : index
        %b_long = arith.cmpi ugt, %blen, %alen_s : index
        %m = scf.if %a_long -> (index) {{
{search_in_a}          scf.yield %sa : index
        }} else {{
          %m2 = scf.if %b_long -> (index) {{
{search_in_b}            scf.yield %sb : index
          }} else {{
            %runs = scf.if %long_rows -> (i1) {{
              %a2 = arith.addi %alo, %c2 : index
              %b2 = arith.addi %blo, %c2 : index
              %xa2 = memref.load %a_crd[%a2] : memref<?x{ac}>
              %xb2 = memref.load %b_crd[%b2] : memref<?x{bc}>
              %ca2 = arith.index_cast %xa2 : {ac} to index
              %cb2 = arith.index_cast %xb2 : {bc} to index
              %da = arith.subi %ca2, %ca0 : index
              %db = arith.subi %cb2, %cb0 : index
              %ra = arith.cmpi eq, %da, %c2 : index
              %rb = arith.cmpi eq, %db, %c2 : index
              %rab = arith.andi %ra, %rb : i1
              scf.yield %rab : i1
            }} else {{
              %f = arith.constant false
              scf.yield %f : i1
            }}
            %m3 = scf.if %runs -> (index) {{
{merge}              scf.yield %mm#2 : index
            }} else {{
{steps}              scf.yield %ms#2 : index
            }}
            scf.yield %m3 : index
          }}
          scf.yield %m2 : index
        }}
        scf.yield %m : index
      }}
      scf.yield %got : index
    }} else {{
      scf.yield %n0 : index
    }}
    %end = arith.index_cast %rowend : index to {cp}
    memref.store %end, %c_pos[%r1] : memref<?x{cp}>
""" + row_yield("%rowend") + """  }}
  return
"""

# the run-skipping merge: %mm#2 = the row's end in the output
_MERGE = """\
{head_mm}{match_mm}                %sk:2 = scf.if %lt -> (index, index) {{
{skip_a}                  scf.yield %ia2, %j : index, index
                }} else {{
{skip_b}                  scf.yield %i, %jb2 : index, index
                }}
                scf.yield %sk#0, %sk#1, %n : index, index, index
              }}
              scf.yield %nx#0, %nx#1, %nx#2 : index, index, index
            }}
"""

# the branch-free merge: one step per entry of either row (selects), values loaded every step, the product
# stored at the row's next output position and kept (the position advanced) on a match only
_STEPS = """\
{head_ms}                %va = memref.load %a_val[%i] : memref<?x{e}>
                %vb = memref.load %b_val[%j] : memref<?x{e}>
                %a_first = arith.cmpi ult, %ca, %cb : index
                %b_first = arith.cmpi ult, %cb, %ca : index
                %both = arith.cmpi eq, %ca, %cb : index
                %i1 = arith.addi %i, %c1 : index
                %j1 = arith.addi %j, %c1 : index
                %ni = arith.select %b_first, %i, %i1 : index
                %nj = arith.select %a_first, %j, %j1 : index
                %v = {mul} %va, %vb : {e}
                %cc = arith.index_cast %ca : index to {cc}
                memref.store %cc, %c_crd[%n] : memref<?x{cc}>
                memref.store %v, %c_val[%n] : memref<?x{e}>
                %inc = arith.index_castui %both : i1 to index
                %nn = arith.addi %n, %inc : index
                scf.yield %ni, %nj, %nn : index, index, index
              }}
"""

# ``%{res} = the first k in (start, hi) with crd[k] >= key`` (hi when none), one entry at a time
_SKIP = """\
                  %{res}0 = arith.addi %{start}, %c1 : index
                  %{res} = scf.while (%k = %{res}0) : (index) -> index {{
                    %inside = arith.cmpi ult, %k, %{hi} : index
                    %behind = scf.if %inside -> (i1) {{
                      %x = memref.load %{crd}[%k] : memref<?x{t}>
                      %xi = arith.index_cast %x : {t} to index
                      %less = arith.cmpi ult, %xi, %{key} : index
                      scf.yield %less : i1
                    }} else {{
                      %f = arith.constant false
                      scf.yield %f : i1
                    }}
                    scf.condition(%behind) %k : index
                  }} do {{
                  ^bb0(%k: index):
                    %k1 = arith.addi %k, %c1 : index
                    scf.yield %k1 : index
                  }}
"""

# each entry of the short row (s) searched in the long row (l) from the last position on; %{res} = the end
_SEARCH = """\
{ind}%{res}f:2 = scf.for %p = %{slo} to %{shi} step %c1 iter_args(%lo = %{llo}, %n = %n0) -> (index, index) {{
{ind}  %xs = memref.load %{scrd}[%p] : memref<?x{st}>
{ind}  %key = arith.index_cast %xs : {st} to index
{ind}  %bs:2 = scf.while (%l = %lo, %h = %{lhi}) : (index, index) -> (index, index) {{
{ind}    %open = arith.cmpi ult, %l, %h : index
{ind}    scf.condition(%open) %l, %h : index, index
{ind}  }} do {{
{ind}  ^bb0(%l: index, %h: index):
{ind}    %span = arith.subi %h, %l : index
{ind}    %half = arith.shrui %span, %c1 : index
{ind}    %mid = arith.addi %l, %half : index
{ind}    %xm = memref.load %{lcrd}[%mid] : memref<?x{lt}>
{ind}    %cm = arith.index_cast %xm : {lt} to index
{ind}    %below = arith.cmpi ult, %cm, %key : index
{ind}    %mid1 = arith.addi %mid, %c1 : index
{ind}    %l2 = arith.select %below, %mid1, %l : index
{ind}    %h2 = arith.select %below, %h, %mid : index
{ind}    scf.yield %l2, %h2 : index, index
{ind}  }}
{ind}  %at = arith.cmpi ult, %bs#0, %{lhi} : index
{ind}  %hit = scf.if %at -> (i1) {{
{ind}    %xh = memref.load %{lcrd}[%bs#0] : memref<?x{lt}>
{ind}    %ch = arith.index_cast %xh : {lt} to index
{ind}    %same = arith.cmpi eq, %ch, %key : index
{ind}    scf.yield %same : i1
{ind}  }} else {{
{ind}    %f = arith.constant false
{ind}    scf.yield %f : i1
{ind}  }}
{ind}  %nn = scf.if %hit -> (index) {{
{ind}    %va = memref.load %a_val[{ia}] : memref<?x{e}>
{ind}    %vb = memref.load %b_val[{ib}] : memref<?x{e}>
{ind}    %v = {mul} %va, %vb : {e}
{ind}    %cc = arith.index_cast %key : index to {cc}
{ind}    memref.store %cc, %c_crd[%n] : memref<?x{cc}>
{ind}    memref.store %v, %c_val[%n] : memref<?x{e}>
{ind}    %n1 = arith.addi %n, %c1 : index
{ind}    scf.yield %n1 : index
{ind}  }} else {{
{ind}    scf.yield %n : index
{ind}  }}
{ind}  scf.yield %bs#0, %nn : index, index
{ind}}}
{ind}%{res} = arith.addi %{res}f#1, %c0 : index
"""


def build(elem: str, kind: str, ap: str, ac: str, bp: str, bc: str, cp: str, cc: str, *,
          ratio: int = SEARCH_RATIO) -> str:
    """The module (``@merge``) of the intersection product on values of MLIR type ``elem`` (``kind``
    ``"float"`` or ``"int"``) with the operands' and result's position/coordinate types."""
    if kind not in _MUL:
        raise ValueError(f"intersection kernel: no product of {kind} values")
    mul = _MUL[kind]
    skip_a = _SKIP.format(res="ia2", start="i", hi="ahi", crd="a_crd", t=ac, key="cb")
    skip_b = _SKIP.format(res="jb2", start="j", hi="bhi", crd="b_crd", t=bc, key="ca")
    merge = _MERGE.format(ac=ac, bc=bc, cc=cc, e=elem, mul=mul, skip_a=skip_a, skip_b=skip_b,
                          head_mm=merge_head("mm", "%alo", "%n0", "%ahi", ac, bc, " " * 12),
                          match_mm=match_step(mul, elem, cc, " " * 14))
    # long A: B's entries searched in A (A's match at the search position %bs#0, B's at %p)
    search_in_a = _SEARCH.format(ind="          ", res="sa", slo="blo", shi="bhi", scrd="b_crd", st=bc,
                                 llo="alo", lhi="ahi", lcrd="a_crd", lt=ac, ia="%bs#0", ib="%p",
                                 e=elem, mul=mul, cc=cc)
    search_in_b = _SEARCH.format(ind="            ", res="sb", slo="alo", shi="ahi", scrd="a_crd", st=ac,
                                 llo="blo", lhi="bhi", lcrd="b_crd", lt=bc, ia="%p", ib="%bs#0",
                                 e=elem, mul=mul, cc=cc)
    steps = _STEPS.format(ac=ac, bc=bc, cc=cc, e=elem, mul=mul,
                          head_ms=merge_head("ms", "%alo", "%n0", "%ahi", ac, bc, " " * 14))
    rows = _ROW.format(ap=ap, ac=ac, bp=bp, bc=bc, cp=cp, cc=cc, e=elem, apmax=type_max(ap), bpmax=type_max(bp),
                       search_in_a=search_in_a,
                       search_in_b=search_in_b, merge=merge, steps=steps)
    body = clamped_coordinates(rows, cc)
    return (f"func.func @merge(%a_pos: memref<?x{ap}>, %a_crd: memref<?x{ac}>, %a_val: memref<?x{elem}>, "
            f"%b_pos: memref<?x{bp}>, %b_crd: memref<?x{bc}>, %b_val: memref<?x{elem}>, %top: memref<?xi64>, "
            f"%c_pos: memref<?x{cp}>, %c_crd: memref<?x{cc}>, %c_val: memref<?x{elem}>, %row_begin: index, "
            "%row_end: index) "
            "attributes {llvm.emit_c_interface} {\n"
            "  %c0 = arith.constant 0 : index\n"
            "  %c1 = arith.constant 1 : index\n"
            "  %c2 = arith.constant 2 : index\n"
            f"  %cratio = arith.constant {ratio} : index\n"
            + body + "}\n")


