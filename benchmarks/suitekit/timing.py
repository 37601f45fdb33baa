"""Timing that survives a shared machine: contenders interleaved round-robin, the minimum of the samples;
and the streaming read bandwidth the bound divides by."""
from __future__ import annotations

import math
import random
import time
from collections.abc import Callable
from typing import Any

MIN_SAMPLE = 1e-3  # seconds: small operations repeat inside one sample until it lasts this long


def call_time(fn: Callable[[], Any]) -> tuple[float, Any]:
    t0 = time.perf_counter()
    out = fn()
    return time.perf_counter() - t0, out


def interleaved_min(fns: dict[str, Callable[[], Any]], repeats: int, warmup: int = 2) -> dict[str, float]:
    """Minimum seconds per call of each function over ``repeats`` rounds that run every function once each
    (interleaved, so a change in the shared machine's load hits all alike), after ``warmup`` calls of each."""
    for fn in fns.values():
        for _ in range(warmup):
            fn()
    best = {name: math.inf for name in fns}
    for _ in range(repeats):
        for name, fn in fns.items():
            best[name] = min(best[name], call_time(fn)[0])
    return best


def round_robin(runs: dict[str, Callable[[], Any]], single: dict[str, float], repeats: int,
                budget: float) -> dict[str, float]:
    """Minimum seconds per call of each function over ``repeats`` rounds; a sample repeats a function
    ``ceil(MIN_SAMPLE / single[name])`` times. The first round runs in the given order, every later one in a
    seeded shuffle of it, so no contender always runs right after the same peer: a peer's OpenMP threads
    still spinning, or the memory it just gave back to the system, would otherwise always land on the one that
    follows it. (Rotating the order is not enough: it keeps every contender's predecessor.) After two rounds,
    stops once ``budget`` seconds have passed."""
    inner = {k: max(1, math.ceil(MIN_SAMPLE / max(single[k], 1e-9))) for k in runs}
    best = {k: math.inf for k in runs}
    names = list(runs)
    start = time.perf_counter()
    shuffle = random.Random(len(names)).shuffle
    for done in range(1, repeats + 1):
        order = list(names)
        if done > 1:
            shuffle(order)
        for k in order:
            fn = runs[k]
            n = inner[k]
            t0 = time.perf_counter()
            for _ in range(n):
                fn()
            best[k] = min(best[k], (time.perf_counter() - t0) / n)
        if done >= 2 and time.perf_counter() - start > budget:
            break
    return best


def read_bandwidth(torch: Any, megabytes: int = 800, runs: int = 5) -> tuple[float, str]:
    """Streaming read bandwidth in bytes/s: ``torch.sum`` of a float32 tensor of ``megabytes`` MB with torch's
    default threads (NumPy's one-thread sum without torch), the fastest of ``runs``."""
    n = megabytes * 2**20 // 4
    if torch is not None:
        data = torch.ones(n, dtype=torch.float32)
        how = f"torch.sum of {megabytes} MB float32, {torch.get_num_threads()} threads, best of {runs}"
        total = torch.sum
    else:
        import numpy as np
        data = np.ones(n, dtype=np.float32)
        how = f"numpy sum of {megabytes} MB float32, 1 thread, best of {runs}"
        total = np.sum

    def fn() -> Any:
        return total(data)
    fn()
    best = min(call_time(fn)[0] for _ in range(runs))
    return n * 4 / best, how
