"""Compiled code is loaded only from folders and files of the current user.

Each attack plants a forged cache entry: a json naming a shared object whose constructor creates a
marker file, so "loaded" is observable. The control case shows that the same entry is loaded when it
is trusted; every other case must leave the marker absent and still compute the right result.
"""
from __future__ import annotations

import hashlib
import json
import os
import pickle
import stat
import subprocess
import sys
import uuid
import warnings
from pathlib import Path

import numpy as np
import pytest

import mlir_bridge as mb
from bridge_kernels import csr_buffers, random_csr, spmv
from frontend import NamedFormats as N
from lowering.pipelines import Pipeline
from mlir_bridge import isolate, signing, trust, worker
from mlir_bridge.stage import normalize
from mlir_bridge.toolchain import BRIDGE_FORMAT, toolchain_version

PIPE = Pipeline()
HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OTHER_UID = os.geteuid() + 4242


def _text() -> str:
    return spmv(4, 4, name=f"spmv_trust_{uuid.uuid4().hex[:8]}")


def _run(text: str) -> mb.CompiledModule:
    """Compile ``text`` as a fresh process would (memory cache cleared) and check its result."""
    mb.clear_cache(disk=False)
    mod = mb.compile_module(text, PIPE)
    a = random_csr(4, 4, 0.5, seed=1)
    y = mod.function(mod.names[0])(*csr_buffers(a), np.ones(4), np.zeros(4))
    np.testing.assert_allclose(y, a @ np.ones(4))
    return mod


def _private(path: Path) -> Path:
    path.mkdir(mode=0o700, parents=True)
    path.chmod(0o700)
    return path


class Forgery:
    """A planted entry for ``text``: ``json`` and ``so`` in the victim folder; ``marker`` appears when loaded."""

    def __init__(self, folder: Path, work: Path, text: str) -> None:
        key = mb.cache_key(text, PIPE.describe(), mb.get_target("cpu"))
        with pytest.MonkeyPatch.context() as mp:  # the real signatures, compiled without any disk cache
            mp.setenv("UST_MLIR_CACHE", "0")
            functions = [s.to_json() for s in _run(text).signatures.values()]
        self.marker = work / "planted-code-ran"
        src = work / "planted.c"
        src.write_text('#include <stdio.h>\n__attribute__((constructor)) static void planted(void) {\n'
                       f'  FILE *f = fopen("{self.marker}", "w"); if (f) {{ fputs("ran", f); fclose(f); }}\n}}\n')
        self.built = work / "planted.so"
        subprocess.run(["cc", "-shared", "-fPIC", str(src), "-o", str(self.built)], check=True)
        data = self.built.read_bytes()
        sha = hashlib.sha256(data).hexdigest()
        self.meta = {"format": BRIDGE_FORMAT, "key": key, "toolchain": toolchain_version(), "device": "cpu",
                     "so": f"{key}-{sha[:16]}.so", "sha256": sha, "size": len(data), "functions": functions}
        self.json, self.so = folder / f"{key}.json", folder / self.meta["so"]
        self.so.write_bytes(data)
        self.write_json(self.meta)
        for p in (self.json, self.so):
            p.chmod(0o600)

    def write_json(self, meta: dict) -> None:
        self.json.unlink(missing_ok=True)
        self.json.write_text(json.dumps(meta))
        self.json.chmod(0o600)

    @property
    def ran(self) -> bool:
        return self.marker.exists()


def _fake_owner(monkeypatch: pytest.MonkeyPatch, *paths: Path) -> None:
    """Make ``trust`` see ``paths`` (their inodes) as owned by another user."""
    ids = {(p.lstat().st_dev, p.lstat().st_ino) for p in paths}
    monkeypatch.setattr(trust, "owner", lambda st: OTHER_UID if (st.st_dev, st.st_ino) in ids else st.st_uid)


@pytest.fixture
def victim(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A private cache folder in use for this test."""
    folder = _private(tmp_path / "cache")
    monkeypatch.setenv("UST_MLIR_CACHE_DIR", str(folder))
    return folder


def _trust_warnings(record: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in record if "not using the" in str(w.message)]


# ----- entries ------------------------------------------------------------------------------------------------
def test_a_trusted_planted_entry_is_loaded(victim: Path, tmp_path: Path) -> None:
    """The control: the forgery is well formed, so the refusals below are the checks' doing."""
    text = _text()
    forged = Forgery(victim, tmp_path, text)
    _run(text)
    assert forged.ran


@pytest.mark.parametrize("attack", ["so_symlink", "json_symlink", "so_group_writable", "json_world_writable",
                                    "so_other_owner", "json_other_owner", "chown_other_owner"])
def test_an_untrusted_entry_in_a_private_folder_is_not_loaded(victim: Path, tmp_path: Path,
                                                              monkeypatch: pytest.MonkeyPatch, attack: str) -> None:
    text = _text()
    forged = Forgery(victim, tmp_path, text)
    if attack.endswith("symlink"):
        target = forged.so if attack == "so_symlink" else forged.json
        moved = tmp_path / f"elsewhere-{target.name}"
        target.rename(moved)
        target.symlink_to(moved)
    elif attack == "so_group_writable":
        forged.so.chmod(0o620)
    elif attack == "json_world_writable":
        forged.json.chmod(0o602)
    elif attack == "chown_other_owner":
        if os.geteuid() != 0:
            pytest.skip("only root can give files to another user (the faked-owner cases cover this)")
        os.chown(forged.so, OTHER_UID, OTHER_UID)
        os.chown(forged.json, OTHER_UID, OTHER_UID)
    else:
        _fake_owner(monkeypatch, forged.so if attack == "so_other_owner" else forged.json)
    _run(text)
    assert not forged.ran
    assert mb.cache_info().misses == 1
    _run(text)  # the rebuilt entry is ours and valid
    assert mb.cache_info().disk_hits == 1 and not forged.ran


def test_an_entry_naming_a_file_outside_the_folder_is_not_loaded(victim: Path, tmp_path: Path) -> None:
    text = _text()
    forged = Forgery(victim, tmp_path, text)
    outside = tmp_path / "outside"
    _private(outside)
    (outside / forged.so.name).write_bytes(forged.so.read_bytes())
    forged.so.unlink()
    forged.write_json(dict(forged.meta, so=f"../outside/{forged.so.name}"))
    _run(text)
    assert not forged.ran


# ----- folders ------------------------------------------------------------------------------------------------
def test_a_world_writable_folder_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _private(tmp_path / "cachetest")
    text = _text()
    forged = Forgery(folder, tmp_path, text)
    folder.chmod(0o777)
    monkeypatch.setenv("UST_MLIR_CACHE_DIR", str(folder))
    before = sorted(folder.iterdir())
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        _run(text)
        _run(_text())
        assert mb.cache_info().dir is None
    assert not forged.ran
    assert sorted(folder.iterdir()) == before  # nothing read, nothing written
    found = _trust_warnings(record)
    assert len(found) == 1, found
    assert str(folder) in found[0] and "writable by group or others (mode 0777)" in found[0]


def test_a_folder_owned_by_another_user_is_not_used(victim: Path, tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    text = _text()
    forged = Forgery(victim, tmp_path, text)
    _fake_owner(monkeypatch, victim)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        _run(text)
    assert not forged.ran
    assert mb.cache_info().dir is None and mb.cache_info().misses == 1
    found = _trust_warnings(record)
    assert len(found) == 1 and str(victim) in found[0] and f"owned by uid {OTHER_UID}" in found[0]


def test_a_symlink_to_an_untrusted_folder_is_not_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shared = _private(tmp_path / "open")
    text = _text()
    forged = Forgery(shared, tmp_path, text)
    shared.chmod(0o777)
    link = tmp_path / "link"
    link.symlink_to(shared)
    monkeypatch.setenv("UST_MLIR_CACHE_DIR", str(link))
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        _run(text)
    assert not forged.ran
    found = _trust_warnings(record)
    assert len(found) == 1 and "symlink" in found[0] and str(link) in found[0]


def test_a_symlink_to_a_private_folder_is_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = _private(tmp_path / "mine")
    link = tmp_path / "link"
    link.symlink_to(target)
    monkeypatch.setenv("UST_MLIR_CACHE_DIR", str(link))
    text = _text()
    _run(text)
    _run(text)
    assert mb.cache_info().disk_hits == 1 and len(list(target.glob("*.json"))) == 1


@pytest.mark.parametrize("configured", [False, True])
def test_a_fresh_folder_is_created_private(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, configured: bool) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    if configured:
        folder = tmp_path / "new" / "nested" / "cache"
        monkeypatch.setenv("UST_MLIR_CACHE_DIR", str(folder))
    else:
        folder = tmp_path / "home" / ".cache" / "ust-mlir"
        monkeypatch.delenv("UST_MLIR_CACHE_DIR")
    old = os.umask(0o002)  # a permissive umask must not leak into the folder or its files
    try:
        _run(_text())
    finally:
        os.umask(old)
    assert stat.S_IMODE(folder.stat().st_mode) == 0o700
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o600 for p in folder.iterdir())
    assert mb.cache_info().dir == str(folder)


# ----- shared mode (opt-in, signed entries) ------------------------------------------------------------------
@pytest.fixture
def shared(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A world-writable folder used in shared mode, with the signing key in a private config folder."""
    folder = tmp_path / "team-cache"
    folder.mkdir()
    folder.chmod(0o777)
    monkeypatch.setenv("UST_MLIR_CACHE_DIR", str(folder))
    monkeypatch.setenv("UST_MLIR_CACHE_SHARED", "1")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.delenv("UST_MLIR_CACHE_KEY", raising=False)
    return folder


def test_shared_mode_signs_entries_and_loads_verified_copies(shared: Path, tmp_path: Path) -> None:
    text = _text()
    _run(text)
    key_file = tmp_path / "config" / "ust-mlir" / "cache.key"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert stat.S_IMODE(key_file.parent.stat().st_mode) == 0o700
    meta = json.loads(next(shared.glob("*.json")).read_text())
    assert len(meta["hmac"]) == 64
    assert all(stat.S_IMODE(p.stat().st_mode) == 0o644 for p in shared.iterdir())  # readable by the team
    mod = _run(text)
    assert mb.cache_info().disk_hits == 1
    assert Path(mod.path).parent != shared  # loaded from a private copy of the verified bytes
    assert stat.S_IMODE(Path(mod.path).parent.stat().st_mode) == 0o700


def test_shared_mode_across_processes(shared: Path) -> None:
    code = ("import sys, numpy as np, mlir_bridge as mb; from lowering.pipelines import Pipeline; "
            "from bridge_kernels import spmv; m = mb.compile_module(spmv(4, 4, name=sys.argv[1]), Pipeline()); "
            "print(mb.cache_info().disk_hits, m.path)")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE), str(ROOT)]))
    name = f"spmv_shared_{uuid.uuid4().hex[:8]}"
    runs = [subprocess.run([sys.executable, "-c", code, name], capture_output=True, text=True, env=env,
                           timeout=300) for _ in range(2)]
    assert all(r.returncode == 0 for r in runs), runs[-1].stderr
    assert [r.stdout.split()[0] for r in runs] == ["0", "1"]


@pytest.mark.parametrize("forgery", ["unsigned", "other_key", "edited_after_signing"])
def test_shared_mode_refuses_unsigned_or_forged_entries(shared: Path, tmp_path: Path, forgery: str) -> None:
    text = _text()
    forged = Forgery(shared, tmp_path, text)
    meta = dict(forged.meta)
    if forgery == "other_key":
        meta["hmac"] = signing.sign(b"x" * 32, json.dumps(meta, sort_keys=True, separators=(",", ":")).encode())
    elif forgery == "edited_after_signing":
        honest = dict(meta, sha256="0" * 64)
        meta["hmac"] = signing.sign(signing.load_key(), json.dumps(honest, sort_keys=True,
                                                                  separators=(",", ":")).encode())
    forged.write_json(meta)
    _run(text)
    assert not forged.ran and mb.cache_info().misses == 1


def test_shared_mode_refuses_a_key_others_can_read(shared: Path, tmp_path: Path) -> None:
    key_file = tmp_path / "config" / "ust-mlir" / "cache.key"
    signing.load_key()
    key_file.chmod(0o644)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        _run(_text())
    found = _trust_warnings(record)
    assert len(found) == 1 and str(key_file) in found[0] and "chmod 600" in found[0]
    assert list(shared.iterdir()) == []


def test_the_trust_model_and_shared_mode_are_documented() -> None:
    bridge = (ROOT / "docs" / "bridge.md").read_text()
    for words in ("UST_MLIR_CACHE_SHARED", "cache.key", "0700", "HMAC"):
        assert words in bridge
    assert "UST_MLIR_CACHE_SHARED" in (ROOT / "docs" / "operations.md").read_text()  # the caches' bullet


# ----- the compile worker's folder ---------------------------------------------------------------------------
def test_worker_outputs_are_private_and_checked(tmp_path: Path) -> None:
    out = _private(tmp_path / "job")
    old = os.umask(0o002)
    try:
        isolate.run_job(worker.Job(_text(), normalize(PIPE)[0], "compile"), out)
    finally:
        os.umask(old)
    files = {p.name: stat.S_IMODE(p.stat().st_mode) for p in out.iterdir()}
    assert {"llvm.mlirbc", "signatures.json"} <= set(files)
    assert all(mode == 0o600 for mode in files.values()), files
    out.chmod(0o777)
    with pytest.raises(trust.UntrustedFile, match="writable by group or others"):
        isolate.run_job(worker.Job(_text(), normalize(PIPE)[0], "compile"), out)


class _Planted:
    """Unpickling this creates ``path``: what a planted job.pkl could do."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def __reduce__(self):  # noqa: ANN204
        return (Path.touch, (self.path,))


@pytest.mark.parametrize("attack", ["open_folder", "symlink"])
def test_the_subprocess_worker_refuses_a_planted_job(tmp_path: Path, attack: str) -> None:
    out = _private(tmp_path / "job")
    marker = tmp_path / "unpickled"
    payload = tmp_path / "payload.pkl"
    payload.write_bytes(pickle.dumps(_Planted(marker)))
    payload.chmod(0o600)
    if attack == "open_folder":
        (out / "job.pkl").write_bytes(payload.read_bytes())
        (out / "job.pkl").chmod(0o600)
        out.chmod(0o777)
    else:
        (out / "job.pkl").symlink_to(payload)
    with pytest.raises(OSError):
        worker.main(["worker", str(out)])
    assert not marker.exists()


# ----- the GPU binary cache ----------------------------------------------------------------------------------
def test_gpu_builds_obey_the_same_rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from lowering.contraction import Contraction, TensorSpec
    from lowering.gpu.dispatch import lower_gpu
    from mlir_bridge.gpu import GPU, build_gpu

    operands = (TensorSpec(N.CSR, (8, 6), "f32", 32, 32), TensorSpec(None, (6,), "f32", 32, 32))
    low = lower_gpu(Contraction(("ik", "k"), operands, "i", TensorSpec(None, (8,), "f32")), "sm_80")
    open_folder = tmp_path / "open"
    open_folder.mkdir()
    open_folder.chmod(0o777)
    monkeypatch.setenv("UST_MLIR_CACHE_DIR", str(open_folder))
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        build = build_gpu(low.text + f"// {uuid.uuid4().hex}\n", low.pipeline)
    assert list(open_folder.iterdir()) == [] and open_folder not in build.so_path.parents
    folder = _private(tmp_path / "mine")
    monkeypatch.setenv("UST_MLIR_CACHE_DIR", str(folder))
    text = low.text + f"// {uuid.uuid4().hex}\n"
    key = mb.cache_key(text, low.pipeline.describe(), GPU)
    planted = tmp_path / "planted.so"
    planted.write_bytes(b"\x7fELF not really")
    sha = hashlib.sha256(planted.read_bytes()).hexdigest()
    (folder / f"{key}-{sha[:16]}.so").symlink_to(planted)
    (folder / f"{key}.json").write_text(json.dumps({
        "format": BRIDGE_FORMAT, "key": key, "toolchain": toolchain_version(), "device": "cuda",
        "so": f"{key}-{sha[:16]}.so", "sha256": sha, "size": planted.stat().st_size, "functions": []}))
    (folder / f"{key}.json").chmod(0o600)
    build = build_gpu(text, low.pipeline)
    assert build.so_path.parent == folder and not build.so_path.is_symlink() and build.signatures
