"""Scratch folders that do not outlive their run, even one that crashed or was killed.

Every folder a run makes in the temporary directory (`reducer-*`: the job's own, the candidates'
folders inside it) comes from `folder()`. It holds a lock file, locked (`flock`) for as long as the
process that made it lives; the kernel drops the lock when that process ends, however it ends. So:

- the folder is removed when the run closes it (`remove`), or at the latest when the interpreter
  exits (`atexit`);
- a run killed before it could do either (SIGKILL, a crash, a closed terminal) leaves a folder
  whose lock is free, and the next run removes it (`sweep`) before making its own. Folders
  without a lock file are never swept: they were not made here.
"""
from __future__ import annotations

import atexit
import fcntl
import os
import shutil
import tempfile
import threading
from pathlib import Path

PREFIX = "reducer-"
LOCK = ".reducer-lock"

_held: dict[Path, int] = {}
_lock = threading.Lock()


def folder(prefix: str = PREFIX) -> Path:
    """A new scratch folder in the temporary directory, held by this process until `remove`."""
    if not prefix.startswith(PREFIX):
        raise ValueError(f"scratch folders are named {PREFIX}*, not {prefix}*")
    sweep()
    path = Path(tempfile.mkdtemp(prefix=prefix))
    fd = os.open(path / LOCK, os.O_WRONLY | os.O_CREAT | os.O_CLOEXEC, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    with _lock:
        _held[path] = fd
    return path


def remove(path: Path) -> None:
    """Remove a folder made by `folder` (or any other), and let go of its lock."""
    path = Path(path)
    with _lock:
        fd = _held.pop(path, None)
    shutil.rmtree(path, ignore_errors=True)
    if fd is not None:
        os.close(fd)


def _abandoned(path: Path) -> bool:
    """Whether no living process holds `path`: it has a lock file, and its lock is free."""
    try:
        fd = os.open(path / LOCK, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:  # not made by `folder` (or still being made): not ours to judge
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def sweep(directory: str | None = None) -> list[Path]:
    """Remove the scratch folders that runs which ended without cleaning up left in `directory`
    (default: the temporary directory); returns them."""
    gone = []
    try:
        entries = list(os.scandir(directory or tempfile.gettempdir()))
    except OSError:
        return gone
    for entry in entries:
        if not entry.name.startswith(PREFIX) or not entry.is_dir(follow_symlinks=False):
            continue
        path = Path(entry.path)
        with _lock:
            ours = path in _held
        if not ours and _abandoned(path):
            shutil.rmtree(path, ignore_errors=True)
            gone.append(path)
    return gone


@atexit.register
def _remove_all() -> None:
    for path in list(_held):
        remove(path)
