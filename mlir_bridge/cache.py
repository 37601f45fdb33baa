"""On-disk cache of compiled modules: ``<dir>/<key>.json`` + ``<dir>/<key>-<sha16>.so``.

The shared object is content-addressed (its name carries its sha256), so it is never
overwritten with other bytes; the json (written last) names it and carries its checksum.
Both are written to a temporary name and ``os.replace``d, so concurrent writers cannot
corrupt an entry. A corrupted, truncated or foreign entry is ignored (and later replaced).

Trust (docs/bridge.md, "Cache trust"): ``open_disk_cache`` uses a folder only when it is trusted
(``mlir_bridge.trust``: owned by the current user, not writable by group or others; otherwise it warns
once and compiled modules stay in memory), and an entry loads only when its files are regular files
of the current user, not writable by group or others. ``UST_MLIR_CACHE_SHARED=1`` opts into a folder
shared between users or machines: each json carries an HMAC (``mlir_bridge.signing``) covering the
sha256 of its .so, and a verified .so is copied into a private folder before it is loaded, so nobody
can swap it between the check and the load. No ``mlir`` import here.
"""
from __future__ import annotations

import atexit
import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from mlir_bridge import signing, trust
from mlir_bridge.signature import Signature
from mlir_bridge.toolchain import BRIDGE_FORMAT

DEFAULT_DIR = Path("~/.cache/ust-mlir")
_OFF = ("0", "false", "no", "off")
#: The largest entry json read (its signatures): far above any real one.
JSON_LIMIT = 1 << 24


@dataclass(frozen=True)
class Entry:
    """A loadable cache entry."""

    so_path: Path
    signatures: tuple[Signature, ...]
    device: str


def cache_dir() -> Path | None:
    """The disk cache folder from the environment, or None when ``UST_MLIR_CACHE=0``."""
    if os.environ.get("UST_MLIR_CACHE", "1").strip().lower() in _OFF:
        return None
    return Path(os.environ.get("UST_MLIR_CACHE_DIR") or DEFAULT_DIR).expanduser()


def shared_mode() -> bool:
    """Whether ``UST_MLIR_CACHE_SHARED`` opts into a shared folder with signed entries."""
    return os.environ.get("UST_MLIR_CACHE_SHARED", "0").strip().lower() not in _OFF + ("",)


def open_disk_cache() -> DiskCache | None:
    """The disk cache to use now: None when it is off, or when its folder (or, in shared mode, the
    signing key) cannot be trusted, which is warned once."""
    root = cache_dir()
    if root is None:
        return None
    if shared_mode():
        try:
            key = signing.load_key()
        except OSError as err:
            trust.warn_once(signing.key_path(), f"ust-mlir: not using the shared compile cache {root}: the "
                            f"signing key cannot be used ({err}); compiled modules are cached in memory only")
            return None
        return DiskCache(root.resolve(), key)
    reason = trust.folder_problem(root)
    if reason is not None:
        trust.warn_once(root, f"ust-mlir: not using the compile cache folder {root}: {reason}; compiled modules "
                        "are cached in memory only (make it private, e.g. chmod 700, or see UST_MLIR_CACHE_SHARED "
                        "in docs/bridge.md)")
        return None
    return DiskCache(root.resolve())


def _payload(meta: dict[str, Any]) -> bytes:
    """The bytes an entry's HMAC covers: its json fields but the HMAC, canonically encoded."""
    return json.dumps(meta, sort_keys=True, separators=(",", ":")).encode()


def _atomic_write(path: Path, data: bytes, mode: int = 0o600) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
    try:
        with os.fdopen(fd, "wb") as fh:
            if mode != 0o600:
                os.fchmod(fh.fileno(), mode)
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


_private_lock = threading.Lock()
_private_dirs: list[Path] = []


def _private_copy(name: str, data: bytes) -> Path:
    """``data`` (verified bytes of a shared entry) written under ``name`` in this process's own 0700 folder."""
    with _private_lock:
        if not _private_dirs:
            folder = Path(tempfile.mkdtemp(prefix="ust-mlir-verified-"))
            atexit.register(shutil.rmtree, folder, True)
            _private_dirs.append(folder)
        path = _private_dirs[0] / name
        if not path.exists():  # content-addressed: an existing copy holds these bytes
            _atomic_write(path, data)
    return path


class DiskCache:
    """One trusted cache folder (see ``open_disk_cache``); every method tolerates a missing or unwritable
    folder. ``signing_key``: the HMAC key of a shared folder (None: a private folder)."""

    def __init__(self, root: Path, signing_key: bytes | None = None) -> None:
        self.root = root
        self.signing_key = signing_key

    def _read(self, path: Path, limit: int) -> bytes:
        """A file of this folder: in a private folder, only a trusted one; in a shared one, any regular file."""
        return trust.read_file(path, owned=self.signing_key is None, limit=limit)

    def load(self, key: str, toolchain: str) -> Entry | None:
        """The valid entry for ``key``, or None (missing, corrupted, untrusted, unsigned, other toolchain)."""
        try:
            meta = json.loads(self._read(self.root / f"{key}.json", JSON_LIMIT))
            mac = meta.pop("hmac", None)
            if self.signing_key is not None and not signing.verify(self.signing_key, _payload(meta), mac):
                return None
            if meta["format"] != BRIDGE_FORMAT or meta["key"] != key or meta["toolchain"] != toolchain:
                return None
            name = f"{key}-{meta['sha256'][:16]}.so"
            if meta["so"] != name:
                return None
            data = self._read(self.root / name, int(meta["size"]))
            if hashlib.sha256(data).hexdigest() != meta["sha256"]:
                return None
            sigs = tuple(Signature.from_json(s) for s in meta["functions"])
            so_path = self.root / name if self.signing_key is None else _private_copy(name, data)
            return Entry(so_path, sigs, str(meta["device"]))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None

    def _holds(self, path: Path, data: bytes, sha: str) -> bool:
        """Whether ``path`` already holds ``data`` (a trusted file with that sha256)."""
        try:
            return hashlib.sha256(self._read(path, len(data))).hexdigest() == sha
        except OSError:
            return False

    def store(self, key: str, toolchain: str, device: str, so_src: Path,
              signatures: tuple[Signature, ...]) -> Path | None:
        """Add an entry; return the path to load the shared object from (None if the folder is unusable).

        A new folder is created with mode 0700; a shared folder's files are readable by all (0644)."""
        try:
            if not self.root.exists():
                self.root.mkdir(mode=0o700, parents=True, exist_ok=True)
            reason = trust.folder_problem(self.root) if self.signing_key is None else None
            if reason is not None:
                raise trust.UntrustedFile(f"the folder is not trusted: {reason}")
            data = trust.read_file(so_src)
            sha = hashlib.sha256(data).hexdigest()
            so_path = self.root / f"{key}-{sha[:16]}.so"
            mode = 0o600 if self.signing_key is None else 0o644
            if not self._holds(so_path, data, sha):
                _atomic_write(so_path, data, mode)
            meta: dict[str, Any] = {"format": BRIDGE_FORMAT, "key": key, "toolchain": toolchain, "device": device,
                                    "so": so_path.name, "sha256": sha, "size": len(data),
                                    "functions": [s.to_json() for s in signatures]}
            if self.signing_key is not None:
                meta["hmac"] = signing.sign(self.signing_key, _payload(meta))
            _atomic_write(self.root / f"{key}.json", json.dumps(meta, indent=1).encode(), mode)
            self._remove_stale(key, so_path)
            return so_path if self.signing_key is None else _private_copy(so_path.name, data)
        except OSError as err:
            warnings.warn(f"ust-mlir: cannot write the compile cache in {self.root}: {err}", stacklevel=3)
            return None

    def _remove_stale(self, key: str, keep: Path) -> None:
        """Remove ``key``'s other shared objects (those this user may remove)."""
        for stale in self.root.glob(f"{key}-*.so"):
            if stale != keep:
                with contextlib.suppress(OSError):
                    stale.unlink(missing_ok=True)

    def _files(self) -> list[Path]:
        try:
            return [p for p in self.root.iterdir()
                    if p.is_file() and (p.suffix in (".json", ".so")) and len(p.name.split("-")[0].split(".")[0]) == 64
                    or p.name.startswith(".tmp-")]
        except OSError:
            return []

    def info(self) -> tuple[int, int]:
        """(entries, bytes) in the folder."""
        files = self._files()
        entries = sum(1 for p in files if p.suffix == ".json" and not p.name.startswith(".tmp-"))
        size = 0
        for p in files:
            try:
                size += p.stat().st_size
            except OSError:
                pass
        return entries, size

    def clear(self) -> None:
        """Remove this cache's files (and nothing else) from the folder."""
        for p in self._files():
            p.unlink(missing_ok=True)
