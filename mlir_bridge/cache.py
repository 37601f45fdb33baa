"""On-disk cache of compiled modules: ``<dir>/<key>.json`` + ``<dir>/<key>-<sha16>.so``.

The shared object is content-addressed (its name carries its sha256), so it is never
overwritten with other bytes; the json (written last) names it and carries its checksum.
Both are written to a temporary name and ``os.replace``d, so concurrent writers cannot
corrupt an entry. A corrupted, truncated or foreign entry is ignored (and later replaced).
No ``mlir`` import here.
"""
from __future__ import annotations

import hashlib
import json
import os
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path

from mlir_bridge.signature import Signature
from mlir_bridge.toolchain import BRIDGE_FORMAT

DEFAULT_DIR = Path("~/.cache/ust-mlir")


@dataclass(frozen=True)
class Entry:
    """A loadable cache entry."""

    so_path: Path
    signatures: tuple[Signature, ...]
    device: str


def cache_dir() -> Path | None:
    """The disk cache folder from the environment, or None when ``UST_MLIR_CACHE=0``."""
    if os.environ.get("UST_MLIR_CACHE", "1").strip().lower() in ("0", "false", "no", "off"):
        return None
    return Path(os.environ.get("UST_MLIR_CACHE_DIR") or DEFAULT_DIR).expanduser()


def _sha256(path: Path) -> str:
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read()).hexdigest()


def _atomic_write(path: Path, data: bytes) -> None:
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


class DiskCache:
    """One cache folder; every method tolerates a missing or unwritable folder."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def load(self, key: str, toolchain: str) -> Entry | None:
        """The valid entry for ``key``, or None (missing, corrupted, other toolchain)."""
        try:
            meta = json.loads((self.root / f"{key}.json").read_text())
            if meta["format"] != BRIDGE_FORMAT or meta["key"] != key or meta["toolchain"] != toolchain:
                return None
            so_path = self.root / meta["so"]
            if so_path.name != f"{key}-{meta['sha256'][:16]}.so" or _sha256(so_path) != meta["sha256"]:
                return None
            sigs = tuple(Signature.from_json(s) for s in meta["functions"])
            return Entry(so_path, sigs, str(meta["device"]))
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None

    def store(self, key: str, toolchain: str, device: str, so_src: Path,
              signatures: tuple[Signature, ...]) -> Path | None:
        """Add an entry; return the cached .so path (None if the folder is unusable)."""
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            data = so_src.read_bytes()
            sha = hashlib.sha256(data).hexdigest()
            so_path = self.root / f"{key}-{sha[:16]}.so"
            if not so_path.exists() or _sha256(so_path) != sha:
                _atomic_write(so_path, data)
            meta = {"format": BRIDGE_FORMAT, "key": key, "toolchain": toolchain, "device": device,
                    "so": so_path.name, "sha256": sha, "size": len(data),
                    "functions": [s.to_json() for s in signatures]}
            _atomic_write(self.root / f"{key}.json", json.dumps(meta, indent=1).encode())
            for stale in self.root.glob(f"{key}-*.so"):
                if stale != so_path:
                    stale.unlink(missing_ok=True)
            return so_path
        except OSError as err:
            warnings.warn(f"ust-mlir: cannot write the compile cache in {self.root}: {err}", stacklevel=3)
            return None

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
