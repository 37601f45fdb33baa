"""frontend.distributed on a 2-worker local Dask cluster against one process (frontend and scipy).

Measures, each contender timed in the same run, interleaved, best of ``--repeats`` rounds:
- SpMV and SpMM (8 columns) on a 1M-row matrix (2-D Poisson 1000^2, 5 entries a row; ``--quick``: 200^2);
- CG on 2-D Poisson 1000^2: time per iteration (``--iterations`` fixed iterations, no preconditioner);
- the coordination overhead per CG iteration: distributed CG on a tiny system (Poisson 16^2), where the
  arithmetic is negligible, so the time per iteration is the coordination: with the loop on the client
  (``loop="client"``: one task per partition per step, a gather through the client) and on the workers
  (``loop="workers"``, the default: one task per worker, its blocks in memory, one message per worker pair
  and step), 2, 4 and 8 partitions on the 2 workers; one worker's own share of it (its blocks' operations,
  timed in this process); the worker loop with one partition per worker process on 4 and 8 processes;
- a planned product (``D.plan_matmul``) called 100 times against ``frontend.matmul(D, x)`` per call, the
  worker-side compute per call and a client-worker round trip on the plan's path; the same loop on resident
  arrays (``plan.scatter``: operands, results and norms kept on the workers);
- bytes per CG iteration: the halo entries exchanged (measured by the solve's accounting) and the dot
  products' scalars; Dask's own task messages are not counted; the cost of one worker-loop message, sent one
  way back to back;
Then a cost model from these numbers (docs/distributed.md): SpMV and CG time per iteration on 8, 64 and 512
nodes for a 1e10-nonzero matrix (3-D 7-point Poisson, 1-D row blocks) at ``--bandwidth`` GB/s, and the worker
loop's CG iteration against its compute + halo time.

Run: ``PYTHONPATH=. .venv/bin/python benchmarks/bench_distributed.py [--quick]`` from the repository root
(about 3 minutes on 2 idle cores; ``--planned-only``: the planned products alone, Poisson 200^2, about 15 s).
On a 2-core machine the two workers and the one-process peer share the same two cores, so the distributed
time can show overhead, not speed-up; the cost model is where the node counts come in.
"""
from __future__ import annotations

import argparse
import os
import warnings
from collections.abc import Callable

for _var in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402
import scipy.sparse as sp  # noqa: E402

import frontend as F  # noqa: E402
from frontend import distributed as fd  # noqa: E402
from suitekit.timing import interleaved_min  # noqa: E402


def poisson2d(k: int) -> sp.csr_array:
    t = sp.diags_array([-1.0, 2.0, -1.0], offsets=[-1, 0, 1], shape=(k, k))
    return sp.csr_array(sp.kron(sp.eye_array(k), t) + sp.kron(t, sp.eye_array(k)))


def best(fns: dict[str, Callable[[], object]], repeats: int) -> dict[str, float]:
    """Seconds per call of each function: min over interleaved rounds (one warm-up call each)."""
    return interleaved_min(fns, repeats, warmup=1)


def line(name: str, times: dict[str, float], ref: str) -> None:
    cells = "  ".join(f"{k} {v * 1e3:8.2f} ms ({times[ref] / v:4.2f}x)" for k, v in times.items())
    print(f"{name:<26} {cells}")


def products(client: object, k: int, repeats: int) -> float:
    a = poisson2d(k)
    d = fd.from_package(a, partitions=2, client=client)
    x, b = np.random.default_rng(0).random(a.shape[1]), np.random.default_rng(1).random((a.shape[1], 8))
    print(f"matrix: Poisson {k}^2, {a.shape[0]} rows, {a.nnz} entries; partitions {d.bounds}")
    t = best({"scipy": lambda: a @ x, "1-proc": lambda: F.matmul(a, x),
              "1-proc 1thr": lambda: F.matmul(a, x, threads=1), "dask 2w": lambda: F.matmul(d, x)}, repeats)
    line("SpMV", t, "scipy")
    line("SpMM (8 columns)", best({"scipy": lambda: a @ b, "1-proc": lambda: F.matmul(a, b),
                                   "1-proc 1thr": lambda: F.matmul(a, b, threads=1),
                                   "dask 2w": lambda: F.matmul(d, b)}, repeats), "scipy")
    return a.nnz / t["1-proc 1thr"]  # nonzeros per second of one core


def cg_per_iteration(client: object, k: int, iterations: int, repeats: int, partitions: int = 2,
                     loop: str = "workers") -> tuple[float, float, dict]:
    """Seconds per CG iteration: distributed (``loop``) and one process; the distributed solve's info."""
    a = poisson2d(k)
    d = fd.from_package(a, partitions=partitions, client=client)
    b = np.ones(a.shape[0])
    solver = F.Solve(a, method="cg", maxiter=iterations, on_failure="warn").plan()

    def one() -> None:
        solver.execute(b)

    def dist() -> None:
        fd.solve(d, b, method="cg", maxiter=iterations, tol=1e-300, on_failure="warn", loop=loop, checkpoint=0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t = best({"1-proc": one, "dask 2w": dist}, repeats)
    info = dict(d.solve_info or {})
    return t["dask 2w"] / iterations, t["1-proc"] / iterations, info


PARTITIONS = (2, 4, 8)


def coordination(client: object, iterations: int, repeats: int, loops: tuple[str, ...] = ("client", "workers"),
                 partitions: tuple[int, ...] = PARTITIONS) -> dict[tuple[str, int], float]:
    """Seconds per CG iteration on Poisson 16^2 (compute negligible), per loop and partition count: the
    loop's own pace (``solve_info["seconds_per_iteration"]``: from the first to the last iteration, without
    the solve's start), best of ``repeats``."""
    out = {}
    a = poisson2d(16)
    b = np.ones(a.shape[0])
    for loop in loops:
        for parts in partitions:
            d = fd.from_package(a, partitions=parts, client=client)
            paces = []
            for _ in range(repeats + 1):  # the first warms the kernels up
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    fd.solve(d, b, method="cg", maxiter=iterations if loop == "workers" else iterations // 5,
                             tol=1e-300, on_failure="warn", loop=loop, checkpoint=0)
                paces.append((d.solve_info or {})["seconds_per_iteration"])
            out[loop, parts] = min(paces[1:])
    return out


def coordination_per_process(iterations: int, repeats: int, counts: tuple[int, ...] = (4, 8)) -> dict[int, float]:
    """The worker loop's seconds per CG iteration on Poisson 16^2 with one partition per worker process, on
    a cluster of ``n`` worker processes for each ``n`` in ``counts`` (every exchange crosses processes)."""
    out = {}
    for n in counts:
        client = fd.start_local(n, threads_per_worker=1)
        try:
            out[n] = coordination(client, iterations, repeats, loops=("workers",), partitions=(n,))["workers", n]
        finally:
            client.close()
    return out


def step_compute(parts: int) -> float:
    """Seconds of one worker's own work per CG iteration on Poisson 16^2 with ``parts`` partitions on 2
    workers (its blocks' vector operations, SpMV, halo combination and exports, in this process): the part of
    the worker loop's pace that is not the exchange."""
    from frontend.distributed._group import GroupState
    from frontend.distributed._plan import halo_plan, row_bounds
    from frontend.distributed._worker import apply_ops, part_from_csr
    a = poisson2d(16)
    bounds = row_bounds(a.indptr, parts)
    blocks = [part_from_csr(a[bounds[p]:bounds[p + 1]], bounds[p], None) for p in range(parts)]
    halos = halo_plan(bounds, [blk.cols for blk in blocks])
    places = ["first"] * (parts // 2) + ["second"] * (parts - parts // 2)  # contiguous runs, as placed
    mine = list(range(parts // 2))  # one worker's blocks
    group = GroupState(mine, [blocks[p] for p in mine], [halos[p] for p in mine], places,
                       [np.ones(blocks[p].rows) for p in mine], [np.zeros(blocks[p].rows) for p in mine], False)
    for name in ("r", "w", "z", "u", "p"):
        group.vec[name] = np.ones(len(group.vec["b"]))
    ops = [("lincomb", "z", [(1, "w", False), (0.5, "z", False)]),
           ("lincomb", "p", [(1, "u", False), (0.5, "p", False)]),
           ("lincomb", "x", [(1, "x", False), (0.1, "p", False)]),
           ("lincomb", "r", [(1, "r", False), (-0.1, "z", False)]), ("precond", "u", "r"),
           ("spmv", "w", "u"), ("dot", "r", "u"), ("dot", "u", "w"), ("dot", "r", "r")]
    export = [("r", True), ("w", True), ("z", True)]
    halo = [(1, "r", True), (-0.1, "w", True), (-0.05, "z", True)]
    received = {w: np.ones((len(export), group.width[w])) for w in group.peers}

    def one() -> None:
        apply_ops(group, ops, group.halo(halo, export, received))
        group.exports(export)
    return best({"step": one}, 200)["step"]


def _blast(solve: str, address: str, n: int) -> float:
    """On a worker: write ``n`` messages of a CG step (a worker's three dot products and a halo of 16 entries x
    3 vectors, as the loop writes them) to the mailbox of ``solve`` on the worker at ``address``, one way, back
    to back; the time the first was sent."""
    import time

    from distributed import get_worker
    from distributed.utils import sync

    from frontend.distributed._rank import HANDLER
    worker = get_worker()
    dots, halo = np.zeros(3, dtype=complex), np.zeros((3, 16))

    async def send() -> float:
        comm = await worker.rpc.connect(address)
        start = time.perf_counter()
        for k in range(n):
            await comm.write({"op": HANDLER, "reply": False, "solve": solve, "to": address, "key": [k, "end", "w"],
                              "dots": dots.tobytes(), "halo": halo.tobytes(), "shape": list(halo.shape),
                              "dtype": halo.dtype.str})
        worker.rpc.reuse(address, comm)
        return start
    return sync(worker.loop, send)


def _drain(box: object, n: int, timeout: float = 60.0) -> float:
    """On a worker: take the ``n`` messages :func:`_blast` sends; the time the last arrived."""
    import time

    from distributed import get_worker
    from distributed.utils import sync
    worker = get_worker()
    local = worker.state.actors[box.key]  # type: ignore[attr-defined]
    sync(worker.loop, local.take, [(k, "end", "w") for k in range(n)], timeout)  # type: ignore[attr-defined]
    return time.perf_counter()


def message_cost(client: object, n: int = 300) -> float:
    """Seconds per message of the worker loop (a CG step's dot products and halo), sent one way back to back
    from one worker to another's mailbox and handed to the waiting loop: what each further node adds to a
    reduction round (every worker handles one message from each other worker a step)."""
    import uuid

    from frontend.distributed._rank import Mailbox
    workers = sorted(client.nthreads())  # type: ignore[attr-defined]
    costs = []
    for _ in range(3):
        solve = uuid.uuid4().hex
        box = client.submit(Mailbox, solve, workers=[workers[1]], actor=True, pure=False).result()  # type: ignore[attr-defined]
        end = client.submit(_drain, box, n, workers=[workers[1]], pure=False)  # type: ignore[attr-defined]
        start = client.submit(_blast, solve, workers[1], n, workers=[workers[0]], pure=False)  # type: ignore[attr-defined]
        costs.append((end.result() - start.result()) / n)
        del box
    return min(costs)


def planned_product(client: object, k: int, calls: int, rounds: int = 5) -> None:
    """A planned SpMV called ``calls`` times (power iteration) against ``frontend.matmul(D, x)`` per call, and
    the worker-side compute per call (the local kernel on one partition's rows, one thread): NumPy in and out
    (``plan(x)``; the norm on the client), and on resident arrays (``plan(v).normalized()``: the operand, the
    result and the norm stay on the workers; the loop ends by gathering the vector; and ``w = plan(w); w / w.norm()``:
    the norm sent to the client each call). Each loop's best of ``rounds`` interleaved rounds."""
    import time
    a = poisson2d(k)
    d = fd.from_package(a, partitions=2, client=client)
    x = np.random.default_rng(2).random(a.shape[1])
    plan = d.plan_matmul(x)
    half = sp.csr_array(a[: d.bounds[1]])
    local = best({"block": lambda: F.matmul(half, x, threads=1)}, 5)["block"]
    v0 = plan.scatter(x)

    def loop(fn: Callable[[np.ndarray], np.ndarray], n: int) -> float:
        y = x
        start = time.perf_counter()
        for _ in range(n):
            y = fn(y)
            y /= np.linalg.norm(y)
        return (time.perf_counter() - start) / n

    def resident(n: int, on_client: bool = False) -> float:
        v = v0
        start = time.perf_counter()
        for _ in range(n):
            if on_client:
                v = plan(v)
                v = v / v.norm()
            else:
                v = plan(v).normalized()
        v.numpy()  # the loop's end: the vector gathered (waits for every product before it)
        return (time.perf_counter() - start) / n
    loop(plan, 3)
    resident(3)
    resident(3, True)
    runs: dict[str, list[float]] = {"numpy": [], "resident": [], "norm on client": []}
    for _ in range(rounds):
        runs["numpy"].append(loop(plan, calls))
        runs["resident"].append(resident(calls))
        runs["norm on client"].append(resident(calls, True))
    planned, on_workers, on_client = (min(v) for v in runs.values())
    unplanned = loop(lambda v: F.matmul(d, v), max(10, calls // 5))
    actor = plan._actors[0]
    rpc = client.rpc(actor._address)  # type: ignore[attr-defined]
    # the plan's path (the workers' ust_product handler) with nothing to multiply: a block it does not hold
    rt = best({"round trip": lambda: client.sync(rpc.ust_product, name="", rows=b"")},  # type: ignore[attr-defined]
              20)["round trip"]
    bound = 2 * local + rt
    print(f"{'planned SpMV x' + str(calls):<26} {planned * 1e3:.2f} ms a call (frontend.matmul(D, x): "
          f"{unplanned * 1e3:.2f} ms); worker-side compute {local * 1e3:.2f} ms a partition, a client-worker "
          f"round trip {rt * 1e3:.2f} ms: {planned / bound:.2f} x (2 x compute + round trip) (Poisson {k}^2, "
          "2 partitions)")
    print(f"{'  resident operands':<26} plan(v).normalized(): {on_workers * 1e3:.2f} ms a call, "
          f"{on_workers / bound:.2f} x the bound; v / v.norm() on the client: {on_client * 1e3:.2f} ms a call, "
          f"{on_client / bound:.2f} x")
    plan.close()


def model(rate_nnz_s: float, step_a: float, step_b: float, bandwidth_gb_s: float,
          round_s: float = 0.0, message_s: float = 0.0) -> None:
    """SpMV and CG time per iteration for a 1e10-nonzero 3-D 7-point Poisson matrix on P nodes of 16 cores.

    compute: the nonzeros of a node's block at the measured one-core SpMV rate times 16 (CG: x1.4 for the
    vector updates); coordination: the measured cost of a driver step, ``step_a + step_b * P`` (one task per
    partition, fitted on 2 and 8 partitions); halo: each block exchanges two planes of the grid per SpMV. As
    implemented the halo entries travel through the client (exported with a step's result, sent with the
    next), so the client's link carries 4 x 2 planes x P per iteration (3 vectors exported, 1 sent); the
    worker-to-worker variant (one task per neighbour pair, each link 2 planes) is shown for comparison. The
    worker-side loop: one reduction round an iteration (``round_s``, measured with 2 workers) plus, for every
    further node, one more small message each node receives and handles (``message_s``, measured: the
    all-to-all exchange of dot products), and the halo worker to worker (3 vectors exported per SpMV)."""
    nnz = 1e10
    rows = nnz / 7
    side = rows ** (1 / 3)
    plane = side ** 2 * 8  # bytes
    bw = bandwidth_gb_s * 1e9
    print(f"\ncost model: 1e10 nonzeros (3-D Poisson, {rows:.3g} rows = {side:.0f}^3, 1-D row blocks), "
          f"{bandwidth_gb_s:g} GB/s links, {rate_nnz_s / 1e6:.0f} M nonzeros/s per core (measured) x 16 cores a "
          f"node, driver step {step_a * 1e3:.2f} ms + {step_b * 1e3:.3f} ms x partitions (measured); worker loop: "
          f"a round {round_s * 1e3:.2f} ms + {message_s * 1e6:.0f} us per further node (measured)")
    print(f"{'nodes':>6} {'compute':>9} {'coord':>9} {'halo w2w':>9} {'halo via client':>16} {'SpMV':>9} "
          f"{'CG iter (client loop)':>22} {'CG iter (worker loop)':>22} {'/ (compute + halo)':>19}")
    for p in (8, 64, 512):
        compute = nnz / p / (rate_nnz_s * 16)
        coord = step_a + step_b * p
        w2w = 2 * plane / bw
        via_client = 4 * 2 * plane * p / bw
        spmv, cg_built = compute + coord, 1.4 * compute + coord + via_client
        floor = 1.4 * compute + 3 * w2w  # the iteration's arithmetic and halo, with no coordination at all
        cg_workers = floor + round_s + message_s * (p - 2)
        print(f"{p:>6} {compute * 1e3:>6.1f} ms {coord * 1e3:>6.1f} ms {w2w * 1e3:>6.1f} ms "
              f"{via_client * 1e3:>13.1f} ms {spmv * 1e3:>6.1f} ms {cg_built * 1e3:>19.1f} ms "
              f"{cg_workers * 1e3:>19.1f} ms {cg_workers / floor:>18.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="Poisson 200^2 instead of 1000^2")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--iterations", type=int, default=50)
    parser.add_argument("--no-process-sweep", action="store_true",
                        help="skip the clusters of 4 and 8 worker processes (one partition each)")
    parser.add_argument("--bandwidth", type=float, default=12.5, help="link bandwidth in GB/s (100 Gb/s)")
    parser.add_argument("--planned-only", action="store_true", help="only the planned products (Poisson 200^2)")
    args = parser.parse_args()
    k = 200 if args.quick or args.planned_only else 1000
    client = fd.start_local(2, threads_per_worker=1)
    try:
        print(f"2-worker LocalCluster (processes, 1 thread each) on {os.cpu_count()} cores; load {os.getloadavg()}")
        if args.planned_only:
            planned_product(client, k, 100)
            return
        rate = products(client, k, args.repeats)
        dist_it, one_it, info = cg_per_iteration(client, k, args.iterations, max(2, args.repeats // 2))
        print(f"{'CG per iteration':<26} 1-proc {one_it * 1e3:8.3f} ms  dask 2w {dist_it * 1e3:8.3f} ms "
              f"({one_it / dist_it:4.2f}x)")
        coord = coordination(client, 200, 2 if args.quick else 3)
        for loop in ("client", "workers"):
            cells = ", ".join(f"{coord[loop, n] * 1e3:6.2f} ms with {n}" for n in PARTITIONS)
            print(f"{'coordination per CG iter':<26} loop={loop:<8} {cells} partitions (Poisson 16^2, 2 workers)")
        own = {n: step_compute(n) for n in PARTITIONS}
        print(f"{'  of which one worker':<26} its blocks' operations: "
              + ", ".join(f"{own[n] * 1e3:.2f} ms ({n})" for n in PARTITIONS) + "; the rest is the exchange")
        planned_product(client, k, 100)
        halo = info["halo_bytes"] / max(1, info["iterations"])
        scalars = 2 * 3 * 16  # one reduction an iteration: two partitions, three (complex) scalars each
        print(f"{'bytes per CG iteration':<26} halo {halo:.0f} B + scalars {scalars} B (the vector: "
              f"{k * k * 8} B); {info['steps']} steps for {info['iterations']} iterations")
        step_b = max(0.0, (coord["client", 8] - coord["client", 2]) / 6)
        msg = message_cost(client)
        if not args.no_process_sweep:
            per = coordination_per_process(200, 2 if args.quick else 3)
            print(f"{'coordination per CG iter':<26} loop=workers, one partition per worker process: "
                  f"{coord['workers', 2] * 1e3:.2f} ms with 2 processes, "
                  + ", ".join(f"{v * 1e3:.2f} ms with {n}" for n, v in per.items()) + " (Poisson 16^2)")
        print(f"{'message cost':<26} {msg * 1e6:.0f} us a CG step's message (dot products and halo), worker to "
              "worker, one way, back to back")
        model(rate, max(0.0, coord["client", 2] - 2 * step_b), step_b, args.bandwidth, coord["workers", 2], msg)
    finally:
        client.close()


if __name__ == "__main__":
    main()
