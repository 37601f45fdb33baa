"""HMAC-SHA256 signatures for a disk cache shared between users or machines (``UST_MLIR_CACHE_SHARED=1``).

The key is 32 random bytes (hex) in ``$XDG_CONFIG_HOME/ust-mlir/cache.key`` (default
``~/.config/ust-mlir/cache.key``; ``UST_MLIR_CACHE_KEY`` names another file). It is created on first
use with mode 0600 in a 0700 folder, and refused when group or others may read or write it, or write
its folder. Everyone who shares a cache holds a copy of the same key, each in their own private folder.
"""
from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
from pathlib import Path

from mlir_bridge import trust

KEY_BYTES = 32


def key_path() -> Path:
    """Where the signing key is kept."""
    explicit = os.environ.get("UST_MLIR_CACHE_KEY")
    if explicit:
        return Path(explicit).expanduser()
    config = Path(os.environ.get("XDG_CONFIG_HOME") or "~/.config").expanduser()
    return config / "ust-mlir" / "cache.key"


def _create(path: Path) -> None:
    """Write a fresh key to ``path`` unless another process got there first (atomic, mode 0600)."""
    tmp = path.with_name(f".tmp-{secrets.token_hex(8)}")
    trust.write_private(tmp, secrets.token_hex(KEY_BYTES).encode() + b"\n")
    try:
        os.link(tmp, path)
    except FileExistsError:
        pass
    finally:
        tmp.unlink()


def load_key() -> bytes:
    """The signing key, created when missing; UntrustedFile when the key or its folder is not private."""
    path = key_path()
    folder = path.parent
    if not folder.exists():
        folder.mkdir(mode=0o700, parents=True, exist_ok=True)
    trust.require_folder(folder)
    if not path.exists():
        _create(path)
    fd = trust.open_file(path)
    with os.fdopen(fd, "rb") as fh:
        if stat.S_IMODE(os.fstat(fh.fileno()).st_mode) & 0o077:
            raise trust.UntrustedFile(f"{path}: the key must be readable by its owner only (chmod 600)")
        text = fh.read(4 * KEY_BYTES).strip()
    try:
        key = bytes.fromhex(text.decode("ascii"))
    except ValueError:
        key = b""
    if len(key) < KEY_BYTES // 2:
        raise trust.UntrustedFile(f"{path}: not a key ({KEY_BYTES} random bytes in hex expected)")
    return key


def sign(key: bytes, payload: bytes) -> str:
    """The HMAC-SHA256 of ``payload`` (hex)."""
    return hmac.new(key, payload, hashlib.sha256).hexdigest()


def verify(key: bytes, payload: bytes, mac: object) -> bool:
    """Whether ``mac`` is ``payload``'s signature under ``key`` (constant-time)."""
    return isinstance(mac, str) and hmac.compare_digest(sign(key, payload), mac)
