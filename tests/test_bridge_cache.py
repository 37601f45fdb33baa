"""mlir_bridge caching: disk entries across processes, corruption, threads, memory, UST_MLIR_CACHE=0."""
import json
import os
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import numpy as np
import pytest

import mlir_bridge as mb
from bridge_kernels import csr_buffers, random_csr, spgemm, spmv
from concurrency import run_on_threads
from lowering.pipelines import Pipeline

PIPE = Pipeline()
HERE = Path(__file__).resolve().parent

# Prints what a fresh process saw: compile counters, whether mlir was imported, a result.
CHILD = """
import json, sys, time
import numpy as np
t0 = time.perf_counter()
import mlir_bridge as mb
from lowering.pipelines import Pipeline
from bridge_kernels import spmv
fn = mb.compile_module(spmv(4, 4, name=sys.argv[1]), Pipeline()).function(sys.argv[1])
y = fn(np.array([0, 1, 2, 3, 4]), np.array([0, 1, 2, 3]), np.arange(1.0, 5.0), np.ones(4), np.zeros(4))
info = mb.cache_info()
print(json.dumps({"y": y.tolist(), "misses": info.misses, "disk_hits": info.disk_hits,
                  "mlir": "mlir" in sys.modules, "ms": 1e3 * (time.perf_counter() - t0)}))
"""


def run_child(name: str, env_extra: dict | None = None) -> dict:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE), str(HERE.parent)]), **(env_extra or {}))
    out = subprocess.run([sys.executable, "-c", CHILD, name], capture_output=True, text=True, env=env,
                         timeout=300)
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout.strip().splitlines()[-1])


def unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


def entry_files(key: str) -> tuple[Path, Path]:
    root = Path(mb.cache_info().dir)
    meta = root / f"{key}.json"
    return meta, root / json.loads(meta.read_text())["so"]


def replace(path: Path, data: bytes) -> None:
    path.unlink()
    path.write_bytes(data)


def recompiles(text: str) -> bool:
    """Compile ``text`` as a new process would (memory cache cleared): did it miss the disk?"""
    mb.clear_cache(disk=False)
    mod = mb.compile_module(text, PIPE)
    a = random_csr(4, 4, 0.5, seed=1)
    np.testing.assert_allclose(mod.function(mod.names[0])(*csr_buffers(a), np.ones(4), np.zeros(4)),
                               a @ np.ones(4))
    return mb.cache_info().misses == 1


def test_disk_cache_across_processes():
    name = unique("spmv_proc")
    first = run_child(name)
    second = run_child(name)
    assert first["y"] == second["y"] == [1.0, 2.0, 3.0, 4.0]
    assert (first["misses"], first["disk_hits"]) == (1, 0)
    assert (second["misses"], second["disk_hits"]) == (0, 1)
    assert second["mlir"] is False  # the hit path never imports mlir


def test_concurrent_processes_write_one_valid_entry():
    name = unique("spmv_race")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE), str(HERE.parent)]))
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, name], stdout=subprocess.PIPE, text=True, env=env)
             for _ in range(3)]
    for p in procs:
        out, _ = p.communicate(timeout=300)
        assert p.returncode == 0 and json.loads(out)["y"] == [1.0, 2.0, 3.0, 4.0]
    assert run_child(name)["disk_hits"] == 1


@pytest.mark.parametrize("damage", ["truncate_so", "flip_so", "bad_json", "foreign_toolchain", "missing_so"])
def test_damaged_entry_is_rebuilt(damage):
    text = spmv(4, 4, name=unique("spmv_damage"))
    mb.compile_module(text, PIPE)
    meta, so = entry_files(mb.cache_key(text, PIPE.describe(), mb.get_target("cpu")))
    # Damage by writing new files: the loaded .so's own pages must stay intact (rewriting a
    # mapped file in place would crash this test process, not the bridge).
    if damage == "truncate_so":
        replace(so, so.read_bytes()[:100])
    elif damage == "flip_so":
        data = bytearray(so.read_bytes())
        data[len(data) // 2] ^= 0xFF
        replace(so, bytes(data))
    elif damage == "bad_json":
        replace(meta, meta.read_bytes()[:40])
    elif damage == "foreign_toolchain":
        d = json.loads(meta.read_text())
        d["toolchain"] = "some-other-llvm"
        replace(meta, json.dumps(d).encode())
    else:
        so.unlink()
    assert recompiles(text)
    assert not recompiles(text)  # the rebuilt entry is valid again


def test_threads_compile_once_and_call_concurrently():
    text = spmv(6, 6, name="spmv_threads") + f"// {uuid.uuid4().hex}\n"
    mb.clear_cache(disk=False)
    mods = []
    barrier = threading.Barrier(8)

    def work(seed: int) -> None:
        barrier.wait()
        mod = mb.compile_module(text, PIPE)
        mods.append(mod)
        fn = mod.function("spmv_threads")
        a = random_csr(6, 6, 0.5, seed=seed)
        x = np.random.default_rng(seed).standard_normal(6)
        for _ in range(200):
            np.testing.assert_allclose(fn(*csr_buffers(a), x, np.zeros(6)), a @ x)

    errors = run_on_threads(work, 8)
    assert not errors, errors
    assert len({id(m) for m in mods}) == 1
    info = mb.cache_info()
    assert info.misses == 1 and info.memory_hits == 7


def test_cache_disabled(monkeypatch, tmp_path):
    monkeypatch.setenv("UST_MLIR_CACHE", "0")
    monkeypatch.setenv("UST_MLIR_CACHE_DIR", str(tmp_path))
    assert mb.cache_info().dir is None
    text = spmv(4, 4, name=unique("spmv_nocache"))
    mod = mb.compile_module(text, PIPE)
    a = random_csr(4, 4, 0.5, seed=2)
    np.testing.assert_allclose(mod.function(mod.names[0])(*csr_buffers(a), np.ones(4), np.zeros(4)), a @ np.ones(4))
    assert list(tmp_path.iterdir()) == []
    assert not Path(mod.path).exists()  # compiled in a temporary folder, still loaded


def test_cache_info_and_clear(monkeypatch, tmp_path):
    monkeypatch.setenv("UST_MLIR_CACHE_DIR", str(tmp_path))  # its own folder: other test processes write elsewhere
    mb.compile_module(spmv(4, 4, name=unique("spmv_info")), PIPE)
    info = mb.cache_info()
    assert info.entries >= 1 and info.bytes > 0 and info.memory_entries >= 1
    other = Path(info.dir) / "not-ours.txt"
    other.write_text("keep me")
    mb.clear_cache()
    info = mb.cache_info()
    assert (info.entries, info.memory_entries, info.misses) == (0, 0, 0)
    assert other.exists()  # only cache files are removed


def test_subprocess_isolation(monkeypatch):
    monkeypatch.setenv("UST_MLIR_ISOLATION", "subprocess")
    text = spgemm(3, 3, 3, name=unique("spgemm_sub"))
    fn = mb.compile_module(text, PIPE).function(text.split("@")[1].split("(")[0])
    a = random_csr(3, 3, 0.6, seed=3)
    pos, crd, val = fn(*csr_buffers(a), *csr_buffers(a))
    c = (a @ a).tocsr()
    c.sort_indices()
    np.testing.assert_array_equal(crd, c.indices)
    np.testing.assert_allclose(val, c.data)
    from bridge_kernels import DIA_SPMV
    with pytest.raises(mb.CompileError, match="crashed"):
        mb.compile_module(DIA_SPMV + "// subprocess\n", PIPE)


def _rss() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="needs /proc")
def test_repeated_calls_do_not_grow_memory():
    fn = mb.compile_module(spgemm(40, 40, 40), PIPE).function("spgemm")
    a = random_csr(40, 40, 0.2, seed=4)
    args = (*csr_buffers(a), *csr_buffers(a))
    call = fn.bind(*args)
    for _ in range(500):  # warm up allocator pools
        fn(*args)
        call()
    before = _rss()
    for _ in range(5000):
        fn(*args)
        call()
    grown = _rss() - before
    assert grown < 10 * 2**20, f"grew {grown / 2**20:.1f} MiB over 10,000 calls"
    assert len(fn(*args)[1]) == (a @ a).nnz
