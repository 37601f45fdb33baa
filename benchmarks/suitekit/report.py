"""The suite's report: a table per operation, geometric-mean and worst ratios, and the JSON / Markdown files."""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from .peers import PEER_NAMES

Record = dict[str, Any]
CONTENDERS = ("ours", "optimize", *PEER_NAMES)


def fmt_time(t: float) -> str:
    if t < 1e-3:
        return f"{t * 1e6:.1f}us"
    return f"{t * 1e3:.2f}ms" if t < 1 else f"{t:.2f}s"


def cell(rec: Record, who: str) -> str:
    status, t = rec["status"].get(who, "n/a"), rec["times"].get(who)
    if who == "optimize":
        return optimize_cell(rec)
    if t is None:
        return "n/a" if status == "n/a" else status.split(":")[0].upper()
    pct = rec["pct_bound"].get(who)
    text = f"{fmt_time(t)} {pct:.0f}%" if pct is not None else fmt_time(t)
    return text if status == "ok" else f"{text} !!{status.upper()}!!"


def optimize_cell(rec: Record) -> str:
    """``Matmul(optimize=True)``'s time, its share of the bound in CSR's bytes / in the chosen storage's, and
    the storage; ``= ours`` where it chose the default's storage (not timed twice)."""
    chosen = rec.get("chosen") or ""
    status, t = rec["status"].get("optimize", "n/a"), rec["times"].get("optimize")
    if not chosen:
        return "n/a"
    if t is None:
        return f"= ours ({chosen})" if status == "n/a" else status.split(":")[0].upper()
    pct, own = rec["pct_bound"].get("optimize"), rec.get("pct_chosen")
    share = "" if pct is None or own is None else f" {pct:.0f}%/{own:.0f}%"
    text = f"{fmt_time(t)}{share} {chosen}"
    return text if status == "ok" else f"{text} !!{status.upper()}!!"


def moved(rec: Record) -> str:
    """MB the operation moves in CSR (the bound's bytes) and, where optimize chose another storage, in that one."""
    if rec["bytes"] is None:
        return "n/a"
    text = f"{rec['bytes'] / 1e6:.1f}"
    other = rec.get("chosen_bytes")
    return text if other is None or not rec.get("chosen") else f"{text} / {other / 1e6:.1f}"


def ratio_text(r: float | None) -> str:
    return "n/a" if r is None else f"{r:.2f}"


def summarize(records: list[Record]) -> dict[str, Any]:
    """Per operation: geometric mean and worst (largest) of ours/best-peer and of ours/each peer."""
    out: dict[str, Any] = {}
    for op in dict.fromkeys(r["op"] for r in records):
        rows = [r for r in records if r["op"] == op]
        entry = {"vs_best": _stats([(r["matrix"], r["ratio"]) for r in rows]),
                 "optimize_vs_ours": _stats([(r["matrix"], peer_ratio(r, "optimize", inverse=True)) for r in rows])}
        for peer in PEER_NAMES:
            entry[f"vs_{peer}"] = _stats([(r["matrix"], peer_ratio(r, peer)) for r in rows])
        out[op] = entry
    return out


def peer_ratio(rec: Record, peer: str, inverse: bool = False) -> float | None:
    """ours / peer time (``inverse``: peer / ours), None unless both ran and the peer agreed."""
    ours, theirs = rec["times"].get("ours"), rec["times"].get(peer)
    if ours is None or theirs is None or rec["status"].get(peer) != "ok":
        return None
    return theirs / ours if inverse else ours / theirs


def _stats(pairs: list[tuple[str, float | None]]) -> dict[str, Any] | None:
    known = [(m, r) for m, r in pairs if r is not None]
    if not known:
        return None
    worst = max(known, key=lambda p: p[1])
    return {"geomean": math.exp(sum(math.log(r) for _, r in known) / len(known)), "worst": worst[1],
            "worst_matrix": worst[0], "count": len(known)}


def op_table(records: list[Record], op: str) -> list[list[str]]:
    """Header and rows of one operation's table."""
    shown = CONTENDERS if any(r.get("chosen") for r in records if r["op"] == op) else (
        tuple(c for c in CONTENDERS if c != "optimize"))
    head = ["matrix", "rows", "nnz", "MB moved (CSR / chosen)", *shown, "ours/best"]
    body = [[r["matrix"] + (f" ({r['note']})" if r["note"] else ""), str(r["rows"]), str(r["nnz"]), moved(r),
             *(cell(r, c) for c in shown),
             ratio_text(r["ratio"]) + (f" {r['best_peer']}" if r["best_peer"] else "")]
            for r in records if r["op"] == op]
    return [head, *body]


def summary_table(summary: dict[str, Any]) -> list[list[str]]:
    def s(st: dict[str, Any] | None) -> str:
        return "n/a" if st is None else f"{st['geomean']:.2f} / {st['worst']:.2f} ({st['worst_matrix']})"
    head = ["op", "vs best peer", *(f"vs {p}" for p in PEER_NAMES), "optimize / ours"]
    return [head, *([op, s(e["vs_best"]), *(s(e[f"vs_{p}"]) for p in PEER_NAMES), s(e.get("optimize_vs_ours"))]
                    for op, e in summary.items())]


def text_table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = ["  ".join(c.ljust(w) if i == 0 else c.rjust(w) for i, (c, w) in enumerate(zip(r, widths))) for r in rows]
    lines.insert(1, "-" * len(lines[0]))
    return "\n".join(lines)


def markdown_table(rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(r) + " |" for r in rows]
    lines.insert(1, "|" + " --- |" * len(rows[0]))
    return "\n".join(lines)


def mismatches(records: list[Record]) -> list[str]:
    return [f"{r['op']} on {r['matrix']}: {who} {st}" for r in records for who, st in r["status"].items()
            if st not in ("ok", "n/a")]


def print_report(records: list[Record], summary: dict[str, Any]) -> None:
    for op in summary:
        print(f"\n== {op}: time per call and % of the bandwidth bound (ours/best < 1: we are faster; optimize: "
              "% of the bound in CSR's bytes / in the chosen storage's)")
        print(text_table(op_table(records, op)))
    print("\n== summary: ours / peer time, geometric mean / worst (matrix)")
    print(text_table(summary_table(summary)))
    bad = mismatches(records)
    if bad:
        print("\n!!!!!! MISMATCHES / ERRORS !!!!!!\n" + "\n".join(bad))


def summary_lines(meta: dict[str, Any], summary: dict[str, Any]) -> list[str]:
    """The machine, threads and command of a run, and its summary table (suite.md's head)."""
    return [(f"Machine: {meta['cpu']}, {meta['cores']} cores, {meta['memory_gb']} GB RAM. "
             f"Read bandwidth {meta['bandwidth_gbs']:.1f} GB/s ({meta['bandwidth_how']})."), "",
            "Threads: " + "; ".join(f"{k}: {v}" for k, v in meta["threads"].items()) + ".", "",
            (f"Command: `{meta['command']}`; {meta['wall_s']:.0f} s, peak RSS {meta['peak_rss_mb']:.0f} MB. "
             "Times are the minimum over interleaved repeats; % is the share of the bandwidth bound "
             "(bytes the operation must move / read bandwidth); ours/best < 1 means ours is faster. optimize: "
             "`Matmul(..., optimize=True)` (CG: the solver layout of the chosen storage), its % of the bound "
             "in CSR's bytes / in the chosen storage's; `= ours` where it keeps the default's storage."), "",
            "Summary: ours / peer, geometric mean / worst (matrix)", "", markdown_table(summary_table(summary))]


def write_results(out_dir: Path, meta: dict[str, Any], records: list[Record], summary: dict[str, Any]) -> None:
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "suite.json").write_text(json.dumps({"meta": meta, "summary": summary, "records": records},
                                                  indent=1, default=str))
    lines = ["# Benchmark suite (`make bench`, `benchmarks/suite.py`)", "", *summary_lines(meta, summary)]
    for op in summary:
        lines += ["", f"## {op}", "", markdown_table(op_table(records, op))]
    bad = mismatches(records)
    if bad:
        lines += ["", "## Mismatches and errors", "", *(f"- {b}" for b in bad)]
    (out_dir / "suite.md").write_text("\n".join(lines) + "\n")
