"""Hand-written elementwise ``add``/``sub`` (the union) of two matrices with (dense, compressed) levels in the
same dimension order (CSR + CSR, CSC + CSC), a row-range kernel. ``mul`` (the intersection) is
:mod:`lowering.kernels.intersect_rows`, which shares this module's templates.

Through the sparsifier a sparse result is built by inserting every entry through a growing buffer with a
function call per entry (about 4x scipy's time for a union here). This kernel merges each row's two
sorted coordinate lists instead, in one pass into buffers of the bound ``nnz(A) + nnz(B)``: a branch-free
step (selects) while both lists have entries, then copies of the rest of either list. Rows whose column
ranges do not overlap (A's last coordinate before B's first, or the reverse; four loads per row) take no
merge steps: both lists are copied (the earlier one first). Rows that both start with a run (first three
coordinates consecutive: 4x4 blocks, bands) take a run-copying merge instead of the branch-free steps: the
row behind copies its whole run of smaller coordinates in a tight loop (a well-predicted branch an entry).
On the suite's block 4x4 add: 10.4 against 20.0 ms (one thread, CPU time).

- ``@merge(a_pos, a_crd, a_val, b_pos, b_crd, b_val, top, c_pos, c_crd, c_val, row_begin, row_end)`` writes
  the rows ``[row_begin, row_end)`` one after another from offset ``c_pos[row_begin]`` (set by the caller) and
  ``c_pos[r + 1]`` = the end of row ``r``; ``top[0]`` (int64) is the largest coordinate of the merged
  dimension. One chunk (rows from 0, ``c_pos[0] = 0``) gives the final buffers (views of their used part:
  the untouched tail of a large ``np.empty`` is never paged in).
- ``@union_count(a_pos, a_crd, b_pos, b_crd, c_pos, row_begin, row_end)`` counts each row's
  union (``|A_r| + |B_r|`` minus the coordinates both store, from a branch-free counting merge; none for
  rows whose column ranges do not overlap) and writes ``c_pos[r + 1]`` = the count of rows
  ``[row_begin, r]``. Several chunks count the rows before each merge chunk first, so every chunk of
  ``@merge`` starts at its exact offset: the result is written in place, no join copy. (The copy that
  joined the chunks before ran on one thread and was the first to touch half the result's pages: on the
  suite's banded add, 107 of 250 ms in a process whose memory was fresh, 9 of 31 ms after.)

A union keeps every coordinate of either operand (a sum that cancels stays a stored zero, as in the
sparsifier's kernel). Both functions run in row chunks on the frontend's thread pool.

Bounds-safe whatever the operands' index buffers hold, at no cost a row: a chunk's first and last positions
are clamped into the coordinates' length (:data:`CHUNK_ENDS`), each row's range starts where the row before
ended and ends inside the chunk's (:data:`ROW_BOUNDS`), so the rows' ranges never overlap and a chunk writes
at most its ranges' entries; a chunk whose ranges would not fit in the result's buffers is merged as empty
(:func:`chunk_room`), and every stored coordinate is clamped to ``top[0]``. A corrupted operand gives a wrong
result whose coordinates are in range, never a read or write out of bounds. (Clamping each row's two
positions and checking its room in the result instead made each row's reads wait for the rows before:
1.3-2.5x the time of the unchecked kernel on short rows; these checks cost nothing measurable.)
"""
from __future__ import annotations

import re

from ..mlir_text import type_max

_ARITH = {"float": {"add": "arith.addf", "sub": "arith.subf"}, "int": {"add": "arith.addi", "sub": "arith.subi"}}


#: The coordinates' lengths ``%a_len``/``%b_len``, capped at the largest value of the position types (``apmax``/
#: ``bpmax``: entries past it are out of the positions' reach), and as those types (``%a_len_p``/``%b_len_p``), so
#: positions are clamped in their own type and zero-extended: clamping the sign-extended ``index`` instead made
#: the union's count pass 15-20% slower on rows of 10 (docs/performance.md, "the union and intersection bounded
#: per chunk").
LENGTHS = """\
  %a_dim = memref.dim %a_crd, %c0 : memref<?x{ac}>
  %b_dim = memref.dim %b_crd, %c0 : memref<?x{bc}>
  %a_cap = arith.constant {apmax} : index
  %b_cap = arith.constant {bpmax} : index
  %a_len = arith.minui %a_dim, %a_cap : index
  %b_len = arith.minui %b_dim, %b_cap : index
  %a_len_p = arith.index_cast %a_len : index to {ap}
  %b_len_p = arith.index_cast %b_len : index to {bp}
"""

#: A row chunk's position ranges in the operands' coordinates, before its row loop (a format template over
#: ``ap``/``bp`` and ``ac``/``bc``, the position and coordinate types; needs ``%c0``): ``[%pa0, %pa1)`` and
#: ``[%pb0, %pb1)``, the chunk's first and last positions clamped into the coordinates' length with
#: ``first <= last`` (unsigned minimum: negative positions too).
CHUNK_ENDS = """\
""" + LENGTHS + """\
  %pa0_p = memref.load %a_pos[%row_begin] : memref<?x{ap}>
  %pa1_p = memref.load %a_pos[%row_end] : memref<?x{ap}>
  %pb0_p = memref.load %b_pos[%row_begin] : memref<?x{bp}>
  %pb1_p = memref.load %b_pos[%row_end] : memref<?x{bp}>
  %pa0_u = arith.index_cast %pa0_p : {ap} to index
  %pa1_u = arith.index_cast %pa1_p : {ap} to index
  %pb0_u = arith.index_cast %pb0_p : {bp} to index
  %pb1_u = arith.index_cast %pb1_p : {bp} to index
  %pa0 = arith.minui %pa0_u, %a_len : index
  %pa1_c = arith.minui %pa1_u, %a_len : index
  %pa1 = arith.maxui %pa1_c, %pa0 : index
  %pb0 = arith.minui %pb0_u, %b_len : index
  %pb1_c = arith.minui %pb1_u, %b_len : index
  %pb1 = arith.maxui %pb1_c, %pb0 : index
"""

#: ``%pa1_n``/``%pb1_n``: the chunk's last positions in the position types (after :func:`chunk_room` or
#: :data:`CHUNK_ENDS`), the row ends' clamp in :data:`ROW_BOUNDS`.
CHUNK_LIMITS = """\
  %pa1_n = arith.index_cast %pa1 : index to {ap}
  %pb1_n = arith.index_cast %pb1 : index to {bp}
"""


def chunk_room(combine: str, start: str = "") -> str:
    """:data:`CHUNK_ENDS` for a chunk written from ``%o`` into result buffers ``c_crd``/``c_val`` (a format
    template over ``cc``, the result's coordinate type, too): a chunk whose rows could need more slots than
    are left (positions changed in place after validation) is merged as empty, so no write leaves them;
    ``%o_in``: the chunk's first slot. ``combine``: the ``arith`` op giving the most entries of two rows from
    their lengths (``addi``: a union, both rows'; ``minui``: an intersection, the shorter row's), which
    bounds the chunk's too, since :data:`ROW_BOUNDS` keeps its rows' ranges apart inside the chunk's.
    ``start``: lines defining ``%o`` from the chunk's ends (none when it is defined before)."""
    return CHUNK_ENDS.replace("%pa1 =", "%pa1_f =").replace("%pb1 =", "%pb1_f =") + start + f"""\
  %cap_c = memref.dim %c_crd, %c0 : memref<?x{{cc}}>
  %cap_v = memref.dim %c_val, %c0 : memref<?x{{e}}>
  %cap = arith.minui %cap_c, %cap_v : index
  %o_in = arith.minui %o, %cap : index
  %room = arith.subi %cap, %o_in : index
  %need_a = arith.subi %pa1_f, %pa0 : index
  %need_b = arith.subi %pb1_f, %pb0 : index
  %need = arith.{combine} %need_a, %need_b : index
  %fits = arith.cmpi ule, %need, %room : index
  %pa1 = arith.select %fits, %pa1_f, %pa0 : index
  %pb1 = arith.select %fits, %pb1_f, %pb0 : index
"""


#: The row loop's first lines: ``%r1`` and the row pair's position ranges ``[%alo, %ahi)`` and ``[%blo, %bhi)``
#: (a format template over ``ap``/``bp``, the position types). ``%alo``/``%blo`` are the row before's ends (the
#: loop carries them from :data:`CHUNK_ENDS`' ``%pa0``/``%pb0``); each end is clamped into ``[start, %pa1]``:
#: the rows' ranges follow one another inside the chunk's whatever the positions hold, and one position is
#: read a row (no range depends on what the rows before wrote, so rows overlap in the processor).
ROW_BOUNDS = """\
    %r1 = arith.addi %r, %c1 : index
    %ahi_p = memref.load %a_pos[%r1] : memref<?x{ap}>
    %bhi_p = memref.load %b_pos[%r1] : memref<?x{bp}>
    %ahi_n = arith.minui %ahi_p, %pa1_n : {ap}
    %bhi_n = arith.minui %bhi_p, %pb1_n : {bp}
    %ahi_c = arith.index_castui %ahi_n : {ap} to index
    %bhi_c = arith.index_castui %bhi_n : {bp} to index
    %ahi = arith.maxui %ahi_c, %alo : index
    %bhi = arith.maxui %bhi_c, %blo : index
"""


#: :data:`ROW_BOUNDS` for a pass that only reads (the union's count): each row's two positions clamped on their
#: own into the coordinates' length with ``lo <= hi``, rows free to overlap (nothing is written from them), no
#: value carried from row to row. Ends carried through the chain's minimum made the count pass 15-20% slower
#: on rows of 10 (docs/performance.md, "the union and intersection bounded per chunk").
ROW_READ_BOUNDS = """\
    %r1 = arith.addi %r, %c1 : index
    %alo_p = memref.load %a_pos[%r] : memref<?x{ap}>
    %ahi_p = memref.load %a_pos[%r1] : memref<?x{ap}>
    %blo_p = memref.load %b_pos[%r] : memref<?x{bp}>
    %bhi_p = memref.load %b_pos[%r1] : memref<?x{bp}>
    %ahi_n = arith.minui %ahi_p, %a_len_p : {ap}
    %alo_n = arith.minui %alo_p, %ahi_n : {ap}
    %bhi_n = arith.minui %bhi_p, %b_len_p : {bp}
    %blo_n = arith.minui %blo_p, %bhi_n : {bp}
    %ahi = arith.index_castui %ahi_n : {ap} to index
    %alo = arith.index_castui %alo_n : {ap} to index
    %bhi = arith.index_castui %bhi_n : {bp} to index
    %blo = arith.index_castui %blo_n : {bp} to index
"""


def row_loop(result: str, start: str) -> str:
    """The head of a chunk's row loop: ``%{result}:3`` = (the carried value from ``start``, A's and B's last
    row end), with ``%alo``/``%blo`` the row's starts (:data:`ROW_BOUNDS`)."""
    return (f"  %{result}:3 = scf.for %r = %row_begin to %row_end step %c1 iter_args(%n0 = {start}, %alo = %pa0, "
            "%blo = %pb0) -> (index, index, index) {{\n")


def row_yield(value: str) -> str:
    """``scf.yield`` of a row of :func:`row_loop` carrying ``value`` and the row's ends."""
    return f"    scf.yield {value}, %ahi, %bhi : index, index, index\n"


#: The first and last coordinates ``%ca0``/``%ca1`` and ``%cb0``/``%cb1`` of two non-empty rows (a format template
#: over ``ac``/``bc``, the coordinate types).
ROW_ENDS = """\
      %alast = arith.subi %ahi, %c1 : index
      %blast = arith.subi %bhi, %c1 : index
      %xa0 = memref.load %a_crd[%alo] : memref<?x{ac}>
      %xa1 = memref.load %a_crd[%alast] : memref<?x{ac}>
      %xb0 = memref.load %b_crd[%blo] : memref<?x{bc}>
      %xb1 = memref.load %b_crd[%blast] : memref<?x{bc}>
      %ca0 = arith.index_cast %xa0 : {ac} to index
      %ca1 = arith.index_cast %xa1 : {ac} to index
      %cb0 = arith.index_cast %xb0 : {bc} to index
      %cb1 = arith.index_cast %xb1 : {bc} to index
"""

def merge_head(res: str, i0: str, n0: str, alim: str, ac: str, bc: str, indent: str) -> str:
    """The head of a merge of a row pair's coordinate lists: ``%res:3 = scf.while`` over ``(%i, %j, %n)``
    (A's position from ``i0`` below ``alim``, B's from ``%blo`` below ``%bhi``, a count from ``n0``) while
    both lists have entries, down to the step's two coordinates ``%ca`` and ``%cb``."""
    types = "(index, index, index)"
    lines = [f"%{res}:3 = scf.while (%i = {i0}, %j = %blo, %n = {n0}) : {types} -> {types} {{",
             f"  %ia = arith.cmpi ult, %i, {alim} : index",
             "  %jb = arith.cmpi ult, %j, %bhi : index",
             "  %go = arith.andi %ia, %jb : i1",
             "  scf.condition(%go) %i, %j, %n : index, index, index",
             "} do {",
             "^bb0(%i: index, %j: index, %n: index):",
             f"  %xa = memref.load %a_crd[%i] : memref<?x{ac}>",
             f"  %ca = arith.index_cast %xa : {ac} to index",
             f"  %xb = memref.load %b_crd[%j] : memref<?x{bc}>",
             f"  %cb = arith.index_cast %xb : {bc} to index"]
    return "".join(indent + line + "\n" for line in lines)


def match_step(op: str, e: str, cc: str, indent: str) -> str:
    """A merge step's test for equal coordinates (after :func:`merge_head`): ``%nx:3 = scf.if`` stores
    ``op(a, b)`` at ``%n`` and advances all three positions on a match; its else region starts with ``%lt``
    (A's coordinate is the smaller)."""
    lines = ["%eq = arith.cmpi eq, %ca, %cb : index",
             "%nx:3 = scf.if %eq -> (index, index, index) {",
             f"  %va = memref.load %a_val[%i] : memref<?x{e}>",
             f"  %vb = memref.load %b_val[%j] : memref<?x{e}>",
             f"  %v = {op} %va, %vb : {e}",
             f"  %cc = arith.index_cast %ca : index to {cc}",
             f"  memref.store %cc, %c_crd[%n] : memref<?x{cc}>",
             f"  memref.store %v, %c_val[%n] : memref<?x{e}>",
             "  %i1 = arith.addi %i, %c1 : index",
             "  %j1 = arith.addi %j, %c1 : index",
             "  %n1 = arith.addi %n, %c1 : index",
             "  scf.yield %i1, %j1, %n1 : index, index, index",
             "} else {",
             "  %lt = arith.cmpi ult, %ca, %cb : index"]
    return "".join(indent + line + "\n" for line in lines)


_HEAD = """\
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
{start}""" + chunk_room("addi") + CHUNK_LIMITS + row_loop("last", "%o_in") + ROW_BOUNDS + """\
{skip}{head_res}      %va = memref.load %a_val[%i] : memref<?x{e}>
      %vb = memref.load %b_val[%j] : memref<?x{e}>
      %a_first = arith.cmpi ult, %ca, %cb : index
      %b_first = arith.cmpi ult, %cb, %ca : index
      %i1 = arith.addi %i, %c1 : index
      %j1 = arith.addi %j, %c1 : index
      %ni = arith.select %b_first, %i, %i1 : index
      %nj = arith.select %a_first, %j, %j1 : index
{body}      scf.yield %ni, %nj, %nn : index, index, index
    }}
{tail}    %end = arith.index_cast %rowend : index to {cp}
    memref.store %end, %c_pos[%r1] : memref<?x{cp}>
""" + row_yield("%rowend") + """  }}
  return
"""

# both operands have entries left: one entry written per step (branch-free selects)
_UNION_STEP = """\
      %sum = {op} %va, %vb : {e}
{b_alone}      %t = arith.select %b_first, %vbo, %sum : {e}
      %v = arith.select %a_first, %va, %t : {e}
      %col = arith.minui %ca, %cb : index
      %colc = arith.index_cast %col : index to {cc}
      memref.store %colc, %c_crd[%n] : memref<?x{cc}>
      memref.store %v, %c_val[%n] : memref<?x{e}>
      %nn = arith.addi %n, %c1 : index
"""
# the rest of one operand after the other ran out (the union copies it)
_UNION_TAIL = """\
    %na = scf.for %k = %res#0 to %ahi step %c1 iter_args(%q = %res#2) -> (index) {{
      %x = memref.load %a_crd[%k] : memref<?x{ac}>
      %xi = arith.index_cast %x : {ac} to index
      %xc = arith.index_cast %xi : index to {cc}
      %v = memref.load %a_val[%k] : memref<?x{e}>
      memref.store %xc, %c_crd[%q] : memref<?x{cc}>
      memref.store %v, %c_val[%q] : memref<?x{e}>
      %q1 = arith.addi %q, %c1 : index
      scf.yield %q1 : index
    }}
    %rowend = scf.for %k = %res#1 to %bhi step %c1 iter_args(%q = %na) -> (index) {{
      %x = memref.load %b_crd[%k] : memref<?x{bc}>
      %xi = arith.index_cast %x : {bc} to index
      %xc = arith.index_cast %xi : index to {cc}
      %vb = memref.load %b_val[%k] : memref<?x{e}>
{b_alone}      memref.store %xc, %c_crd[%q] : memref<?x{cc}>
      memref.store %vbo, %c_val[%q] : memref<?x{e}>
      %q1 = arith.addi %q, %c1 : index
      scf.yield %q1 : index
    }}
"""
# rows whose column ranges do not overlap skip the merge loop: (A's last < B's first, B's last < A's first)
_DISJOINT = """\
    %ane = arith.cmpi ult, %alo, %ahi : index
    %bne = arith.cmpi ult, %blo, %bhi : index
    %bothne = arith.andi %ane, %bne : i1
    %apart:2 = scf.if %bothne -> (i1, i1) {{
""" + ROW_ENDS + """      %a_before = arith.cmpi ult, %ca1, %cb0 : index
      %b_before = arith.cmpi ult, %cb1, %ca0 : index
      scf.yield %a_before, %b_before : i1, i1
    }} else {{
      %f = arith.constant false
      scf.yield %f, %f : i1, i1
    }}
"""
# a union where A's row ends before B's starts: no merge steps (the tails copy A's row, then B's)
_UNION_SKIP = """\
    %istart = arith.addi %alo, %c0 : index
    %alim = arith.select %apart#0, %alo, %ahi : index
"""
# a union where B's row ends before A's starts: B's row copied, then A's (no merge steps)
_B_FIRST = """\
      %bq = scf.for %k = %blo to %bhi step %c1 iter_args(%q = %n0) -> (index) {{
        %x = memref.load %b_crd[%k] : memref<?x{bc}>
        %xi = arith.index_cast %x : {bc} to index
        %xc = arith.index_cast %xi : index to {cc}
        %vb = memref.load %b_val[%k] : memref<?x{e}>
{b_alone}        memref.store %xc, %c_crd[%q] : memref<?x{cc}>
        memref.store %vbo, %c_val[%q] : memref<?x{e}>
        %q1 = arith.addi %q, %c1 : index
        scf.yield %q1 : index
      }}
      %aq = scf.for %k = %alo to %ahi step %c1 iter_args(%q = %bq) -> (index) {{
        %x = memref.load %a_crd[%k] : memref<?x{ac}>
        %xi = arith.index_cast %x : {ac} to index
        %xc = arith.index_cast %xi : index to {cc}
        %v = memref.load %a_val[%k] : memref<?x{e}>
        memref.store %xc, %c_crd[%q] : memref<?x{cc}>
        memref.store %v, %c_val[%q] : memref<?x{e}>
        %q1 = arith.addi %q, %c1 : index
        scf.yield %q1 : index
      }}
"""


# the union's size of each row, as running counts from row_begin: |A_r| + |B_r| - (coordinates both store)
_COUNT = """\
func.func @union_count(%a_pos: memref<?x{ap}>, %a_crd: memref<?x{ac}>, %b_pos: memref<?x{bp}>, \
%b_crd: memref<?x{bc}>, %c_pos: memref<?x{cp}>, %row_begin: index, %row_end: index) \
attributes {{llvm.emit_c_interface}} {{
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
""" + LENGTHS + """\
  %total = scf.for %r = %row_begin to %row_end step %c1 iter_args(%acc = %c0) -> (index) {{
""" + ROW_READ_BOUNDS + """\
{disjoint}    %no_overlap = arith.ori %apart#0, %apart#1 : i1
    %common = scf.if %no_overlap -> (index) {{
      scf.yield %c0 : index
    }} else {{
{head_m}        %a_le = arith.cmpi ule, %ca, %cb : index
        %b_le = arith.cmpi ule, %cb, %ca : index
        %both = arith.cmpi eq, %ca, %cb : index
        %di = arith.select %a_le, %c1, %c0 : index
        %dj = arith.select %b_le, %c1, %c0 : index
        %dn = arith.select %both, %c1, %c0 : index
        %i1 = arith.addi %i, %di : index
        %j1 = arith.addi %j, %dj : index
        %n1 = arith.addi %n, %dn : index
        scf.yield %i1, %j1, %n1 : index, index, index
      }}
      scf.yield %m#2 : index
    }}
    %alen = arith.subi %ahi, %alo : index
    %blen = arith.subi %bhi, %blo : index
    %len = arith.addi %alen, %blen : index
    %cnt = arith.subi %len, %common : index
    %acc1 = arith.addi %acc, %cnt : index
    %v = arith.index_cast %acc1 : index to {cp}
    memref.store %v, %c_pos[%r1] : memref<?x{cp}>
    scf.yield %acc1 : index
  }}
  return
}}
"""


def _b_first(text: str, ac: str, bc: str, cc: str, e: str, b_alone: str) -> str:
    """``text`` (a union's module) with the merge loop and tails of a row wrapped in ``scf.if``: rows whose B
    part lies before A's (``%apart#1``) copy B's row, then A's."""
    start = text.index("    %res:3 = scf.while")
    end = text.index("    %end = arith.index_cast %rowend")
    merged = text[start:end].replace("    %rowend = scf.for", "    %rowend_m = scf.for")
    return (text[:start] + "    %rowend = scf.if %apart#1 -> (index) {\n"
            + _B_FIRST.format(ac=ac, bc=bc, cc=cc, e=e, b_alone=b_alone) + "      scf.yield %aq : index\n"
            + "    } else {\n" + merged + "      scf.yield %rowend_m : index\n    }\n" + text[end:])


# both rows start with a run (their first three coordinates consecutive): %uruns
_RUNS_TEST = """\
    %ua3 = arith.cmpi ugt, %alen_u, %c2 : index
    %ub3 = arith.cmpi ugt, %blen_u, %c2 : index
    %ulong = arith.andi %ua3, %ub3 : i1
    %uruns = scf.if %ulong -> (i1) {{
      %ua2 = arith.addi %alo, %c2 : index
      %ub2 = arith.addi %blo, %c2 : index
      %uxa0 = memref.load %a_crd[%alo] : memref<?x{ac}>
      %uxb0 = memref.load %b_crd[%blo] : memref<?x{bc}>
      %uxa2 = memref.load %a_crd[%ua2] : memref<?x{ac}>
      %uxb2 = memref.load %b_crd[%ub2] : memref<?x{bc}>
      %uca0 = arith.index_cast %uxa0 : {ac} to index
      %ucb0 = arith.index_cast %uxb0 : {bc} to index
      %uca2 = arith.index_cast %uxa2 : {ac} to index
      %ucb2 = arith.index_cast %uxb2 : {bc} to index
      %uda = arith.subi %uca2, %uca0 : index
      %udb = arith.subi %ucb2, %ucb0 : index
      %ura = arith.cmpi eq, %uda, %c2 : index
      %urb = arith.cmpi eq, %udb, %c2 : index
      %urab = arith.andi %ura, %urb : i1
      scf.yield %urab : i1
    }} else {{
      %uf = arith.constant false
      scf.yield %uf : i1
    }}
"""

# the run-copying merge of a union: equal coordinates give one entry; otherwise the row behind copies its whole
# run of smaller coordinates in a tight loop (one compare and a well-predicted branch an entry)
_RUN_MERGE = """\
{head_ru}{match_ru}          %sk:3 = scf.if %lt -> (index, index, index) {{
{copy_a}            scf.yield %ka#0, %j, %ka#1 : index, index, index
          }} else {{
{copy_b}            scf.yield %i, %kb#0, %kb#1 : index, index, index
          }}
          scf.yield %sk#0, %sk#1, %sk#2 : index, index, index
        }}
        scf.yield %nx#0, %nx#1, %nx#2 : index, index, index
      }}
"""

# ``%{res}:2`` = (position, output end) after copying the run of ``crd`` entries from ``%{start}`` below
# ``%{key}`` (at least one) to the output from ``%n``
_COPY_RUN = """\
            %{res}:2 = scf.while (%k = %{start}, %q = %n) : (index, index) -> (index, index) {{
              %x = memref.load %{crd}[%k] : memref<?x{t}>
              %xi = arith.index_cast %x : {t} to index
              %xc = arith.index_cast %xi : index to {cc}
{value}              memref.store %xc, %c_crd[%q] : memref<?x{cc}>
              memref.store %w, %c_val[%q] : memref<?x{e}>
              %k1 = arith.addi %k, %c1 : index
              %q1 = arith.addi %q, %c1 : index
              %inside = arith.cmpi ult, %k1, %{hi} : index
              %more = scf.if %inside -> (i1) {{
                %y = memref.load %{crd}[%k1] : memref<?x{t}>
                %yi = arith.index_cast %y : {t} to index
                %less = arith.cmpi ult, %yi, %{key} : index
                scf.yield %less : i1
              }} else {{
                %f = arith.constant false
                scf.yield %f : i1
              }}
              scf.condition(%more) %k1, %q1 : index, index
            }} do {{
            ^bb0(%k: index, %q: index):
              scf.yield %k, %q : index, index
            }}
"""


def _runs(text: str, op: str, kind: str, ac: str, bc: str, cc: str, e: str) -> str:
    """A union's ``text`` with its merge loop (``%res:3``) chosen per row: rows that both start with a run take
    the run-copying merge (:data:`_RUN_MERGE`), the others the branch-free one."""
    start = text.index("    %res:3 = scf.while")
    end = text.index("    %na = scf.for")
    steps = text[start:end].replace("%res:3 = scf.while", "%rw:3 = scf.while")
    steps = "".join("  " + line + "\n" if line else "\n" for line in steps.split("\n")).rstrip("\n") + "\n"
    copy_a = _COPY_RUN.format(res="ka", start="i", crd="a_crd", t=ac, cc=cc, e=e, hi="alim", key="cb",
                              value="              %w = memref.load %a_val[%k] : memref<?x" + e + ">\n")
    b_alone = _b_alone(op, kind, e, "              ").replace("%vbo", "%w")
    copy_b = _COPY_RUN.format(res="kb", start="j", crd="b_crd", t=bc, cc=cc, e=e, hi="bhi", key="ca",
                              value="              %vb = memref.load %b_val[%k] : memref<?x" + e + ">\n" + b_alone)
    runs = (_RUNS_TEST.format(ac=ac, bc=bc)
            + "    %res:3 = scf.if %uruns -> (index, index, index) {\n"
            + _RUN_MERGE.format(op=_ARITH[kind][op], ac=ac, bc=bc, cc=cc, e=e, copy_a=copy_a, copy_b=copy_b,
                                head_ru=merge_head("ru", "%istart", "%n0", "%alim", ac, bc, " " * 6),
                                match_ru=match_step(_ARITH[kind][op], e, cc, " " * 8))
            + "      scf.yield %ru#0, %ru#1, %ru#2 : index, index, index\n    } else {\n" + steps
            + "      scf.yield %rw#0, %rw#1, %rw#2 : index, index, index\n    }\n")
    lengths = ("    %alen_u = arith.subi %ahi, %alo : index\n"
               "    %blen_u = arith.subi %bhi, %blo : index\n")
    return text[:start] + lengths + runs + text[end:]


def _b_alone(op: str, kind: str, e: str, indent: str) -> str:
    """``%vbo``: the result where only B stores the coordinate (``vb`` for add, ``-vb`` for sub)."""
    if op == "add":
        rhs = "arith.addf %vb, %zero" if kind == "float" else "arith.addi %vb, %zero"
    else:
        rhs = "arith.negf %vb" if kind == "float" else "arith.subi %zero, %vb"
    return f"{indent}%vbo = {rhs} : {e}\n"


def build(op: str, elem: str, kind: str, ap: str, ac: str, bp: str, bc: str, cp: str, cc: str) -> str:
    """The module (``@merge`` and ``@union_count``) for ``op`` in ``add``/``sub`` on values of MLIR type
    ``elem`` (``kind`` ``"float"`` or ``"int"``) with the operands' and result's position/coordinate types."""
    if op not in ("add", "sub") or kind not in _ARITH:
        raise ValueError(f"merge kernel: no {op!r} on {kind} values")
    start = (f"  %o_p = memref.load %c_pos[%row_begin] : memref<?x{cp}>\n"
             f"  %o = arith.index_cast %o_p : {cp} to index\n")
    b_alone = _b_alone(op, kind, elem, "      ")
    body = _UNION_STEP.format(op=_ARITH[kind][op], e=elem, cc=cc, b_alone=b_alone)
    tail = _UNION_TAIL.format(ac=ac, bc=bc, cc=cc, e=elem, b_alone=b_alone)
    skip = _DISJOINT.format(ac=ac, bc=bc) + _UNION_SKIP
    text = _HEAD.format(ap=ap, ac=ac, bp=bp, bc=bc, cp=cp, cc=cc, e=elem, apmax=type_max(ap), bpmax=type_max(bp),
                        start=start, body=body, tail=tail, skip=skip,
                        head_res=merge_head("res", "%istart", "%n0", "%alim", ac, bc, " " * 4))
    text = _b_first(text, ac, bc, cc, elem, _b_alone(op, kind, elem, "        "))
    text = _runs(text, op, kind, ac, bc, cc, elem)
    zero = "0.0" if kind == "float" else "0"
    return (f"func.func @merge(%a_pos: memref<?x{ap}>, %a_crd: memref<?x{ac}>, %a_val: memref<?x{elem}>, "
            f"%b_pos: memref<?x{bp}>, %b_crd: memref<?x{bc}>, %b_val: memref<?x{elem}>, %top: memref<?xi64>, "
            f"%c_pos: memref<?x{cp}>, %c_crd: memref<?x{cc}>, %c_val: memref<?x{elem}>, %row_begin: index, "
            "%row_end: index) attributes {llvm.emit_c_interface} {\n"
            f"  %zero = arith.constant {zero} : {elem}\n" + clamped_coordinates(text, cc) + "}\n"
            + _count(ap, ac, bp, bc, cp))


_CRD_STORE = re.compile(r"^(\s*)memref\.store (%\w+), %c_crd\[([^\]]*)\] : memref<\?x(i\d+)>$", re.M)


def clamped_coordinates(text: str, cc: str) -> str:
    """A ``@merge`` body (a union's or an intersection's) with every coordinate it stores clamped to ``top[0]``
    (the largest coordinate of the merged dimension; unsigned minimum: negative coordinates too), so the
    result's coordinates stay in range whatever the operands' coordinates hold (the result may be handed to
    scipy, which indexes with them). The merges only compare coordinates (no address is computed from one),
    so the clamp stays off their compare chains."""
    head = "  %top0 = arith.constant 0 : index\n  %top64 = memref.load %top[%top0] : memref<?xi64>\n"
    top = "%top64"
    if cc != "i64":
        top = "%top_c"
        head += f"  %top_c = arith.trunci %top64 : i64 to {cc}\n"
    body = _CRD_STORE.sub(lambda m: f"{m[1]}{m[2]}_t = arith.minui {m[2]}, {top} : {m[4]}\n"
                                    f"{m[1]}memref.store {m[2]}_t, %c_crd[{m[3]}] : memref<?x{m[4]}>", text)
    return head + body


def _count(ap: str, ac: str, bp: str, bc: str, cp: str) -> str:
    """``@union_count`` for the operands' and result's position/coordinate types."""
    return _COUNT.format(ap=ap, ac=ac, bp=bp, bc=bc, cp=cp, apmax=type_max(ap), bpmax=type_max(bp),
                         disjoint=_DISJOINT.format(ac=ac, bc=bc),
                         head_m=merge_head("m", "%alo", "%c0", "%ahi", ac, bc, " " * 6))
