"""Who may have written what the bridge loads: ownership and permission checks on folders and files.

The bridge ``dlopen``s shared objects from the disk cache and from the compile worker's output folder,
and the subprocess worker unpickles its job from a file; whoever can write those can run code in this
process. So:

* a **trusted folder** (symlinks followed) is owned by the current user and not writable by group or
  others;
* a **trusted file** is a regular file (not a symlink) owned by the current user and not writable by
  group or others.

An untrusted folder is reported once per folder and process (``warn_once``). No ``mlir`` import here.
"""
from __future__ import annotations

import os
import stat
import threading
import warnings
from pathlib import Path

_WRITABLE_BY_OTHERS = stat.S_IWGRP | stat.S_IWOTH
_warned: set[str] = set()
_warned_lock = threading.Lock()


class UntrustedFile(PermissionError):
    """A file or folder that someone other than the current user may have written."""


def current_uid() -> int:
    """The user whose files are trusted (the effective uid)."""
    return os.geteuid()


def owner(st: os.stat_result) -> int:
    """The uid owning the file or folder with status ``st`` (one place for tests to fake another owner)."""
    return st.st_uid


def _problem(st: os.stat_result) -> str | None:
    """Why a file or folder with status ``st`` is not trusted, or None."""
    me, uid = current_uid(), owner(st)
    if uid != me:
        return f"it is owned by uid {uid}, not by the current user (uid {me})"
    if st.st_mode & _WRITABLE_BY_OTHERS:
        return f"it is writable by group or others (mode {stat.S_IMODE(st.st_mode):04o})"
    return None


def folder_problem(path: Path) -> str | None:
    """Why the folder ``path`` is not trusted, or None (a missing folder is trusted: it will be created
    private)."""
    try:
        st = path.stat()
    except FileNotFoundError:
        return None
    except OSError as err:
        return f"it cannot be inspected ({err.strerror})"
    if not stat.S_ISDIR(st.st_mode):
        return "it is not a folder"
    reason = _problem(st)
    if reason is not None and path.is_symlink():
        return f"it is a symlink to {path.resolve()}, and {reason}"
    return reason


def require_folder(path: Path) -> None:
    """Raise UntrustedFile unless ``path`` is an existing trusted folder."""
    reason = "it does not exist" if not path.exists() else folder_problem(path)
    if reason is not None:
        raise UntrustedFile(f"{path}: not a trusted folder: {reason}")


def open_file(path: Path, *, owned: bool = True) -> int:
    """A read-only descriptor of the regular file ``path``, refusing symlinks and, with ``owned``,
    files that are not trusted (UntrustedFile; OSError when missing)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        reason = "it is not a regular file" if not stat.S_ISREG(st.st_mode) else _problem(st) if owned else None
        if reason is not None:
            raise UntrustedFile(f"{path}: not a trusted file: {reason}")
    except BaseException:
        os.close(fd)
        raise
    return fd


def require_file(path: Path) -> None:
    """Raise UntrustedFile (or OSError) unless ``path`` is a trusted file."""
    os.close(open_file(path))


def read_file(path: Path, *, owned: bool = True, limit: int = 1 << 30) -> bytes:
    """The bytes of ``path`` (checked as ``open_file``); UntrustedFile when it holds more than ``limit``."""
    with os.fdopen(open_file(path, owned=owned), "rb") as fh:
        data = fh.read(limit + 1)
    if len(data) > limit:
        raise UntrustedFile(f"{path}: larger than the {limit} bytes expected")
    return data


def seal(path: Path) -> None:
    """Make a file this process produced (e.g. a linker's output) read-only to group and others, after
    checking it is a regular file owned by the current user."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or owner(st) != current_uid():
            raise UntrustedFile(f"{path}: not a regular file of the current user")
        os.fchmod(fd, stat.S_IMODE(st.st_mode) & ~_WRITABLE_BY_OTHERS)
    finally:
        os.close(fd)


def write_private(path: Path, data: bytes) -> None:
    """Write ``data`` to ``path`` with mode 0600, never through a symlink."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    with os.fdopen(fd, "wb") as fh:
        fh.write(data)


def warn_once(path: Path, message: str) -> None:
    """``warnings.warn(message)`` the first time this process reports ``path``."""
    with _warned_lock:
        if str(path) in _warned:
            return
        _warned.add(str(path))
    warnings.warn(message, stacklevel=3)
