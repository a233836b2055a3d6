"""Writes that never leave a damaged output, and the lock that serializes ledger rebuilds.

Every file the runner writes (CSV, PNG, ``.md`` table, ``claims/*.csv``, ``CLAIMS.md``, ``runtimes.csv``,
the README section) goes through :func:`atomic_path`: the content is written to a temporary file in the
same folder with a unique name (``.<name>.<pid>.<random>.tmp``), flushed and fsynced, then renamed over
the target. A kill at any moment leaves either the previous version or the new one, never a truncated
file; two processes writing the same output never share a temporary name. A kill between the write and
the rename can leave a hidden ``.*.tmp`` file behind; :func:`remove_stale_temporaries` clears those.

:func:`folder_lock` is an advisory ``fcntl`` lock (a file in the temporary directory named by the
folder's real path), held while the ledger is
rebuilt and the README section rewritten, so two runs into one folder never read a half-updated set.
Only the standard library is imported here (the command line's ``--help`` must stay fast).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import time
from collections.abc import Iterator
from pathlib import Path

__all__ = ["atomic_path", "atomic_write_text", "folder_lock", "lock_path", "remove_stale_temporaries"]

_TMP_SUFFIX = ".tmp"
_UMASK = os.umask(0)
os.umask(_UMASK)


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; on success fsync it and rename it over ``path``.

    The caller writes the whole content to the yielded path (``df.to_csv(tmp)``, ``fig.savefig(tmp)``).
    On an exception the temporary file is removed and ``path`` is left as it was. The temporary name keeps
    the target's suffix (``.<stem>.<pid>.<hex>.tmp.png``), so writers that infer a format from the
    suffix still work.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.{secrets.token_hex(4)}{_TMP_SUFFIX}{path.suffix}")
    try:
        yield tmp
        fd = os.open(tmp, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        os.chmod(tmp, 0o666 & ~_UMASK)  # the mode a plain open() gives, whatever the writer used
        os.replace(tmp, path)
        _fsync_dir(path.parent)
    finally:
        if tmp.exists():
            tmp.unlink()


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically; return ``path``."""
    path = Path(path)
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return path


def remove_stale_temporaries(folder: str | os.PathLike, older_than_s: float = 3600.0) -> list[Path]:
    """Delete this module's temporary files in ``folder`` (and ``claims/``) older than ``older_than_s``.

    They only exist when a process was killed between writing and renaming; a younger one may belong to
    a run still in progress and is kept.
    """
    removed = []
    now = time.time()
    for sub in (Path(folder), Path(folder) / "claims"):
        if not sub.is_dir():
            continue
        for p in sub.glob(f".*{_TMP_SUFFIX}*"):
            with contextlib.suppress(OSError):
                if now - p.stat().st_mtime > older_than_s:
                    p.unlink()
                    removed.append(p)
    return removed


def lock_path(folder: str | os.PathLike) -> Path:
    """The lock file of an output folder: in the temporary directory, named by the folder's real path.

    Kept out of the folder itself so that ``figures/`` holds only outputs.
    """
    import hashlib
    import tempfile

    key = hashlib.sha256(str(Path(folder).resolve()).encode()).hexdigest()[:16]
    return Path(tempfile.gettempdir()) / f"repro-{key}.lock"


@contextlib.contextmanager
def folder_lock(folder: str | os.PathLike, timeout_s: float = 600.0) -> Iterator[None]:
    """Hold an exclusive advisory lock on the folder's :func:`lock_path` (waits up to ``timeout_s``).

    Released when the block ends or the process dies (the kernel drops ``flock`` locks with the file
    descriptor), so a killed run never leaves the folder locked.
    """
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows: no lock, writes are still atomic
        yield
        return
    fd = os.open(lock_path(folder), os.O_RDWR | os.O_CREAT, 0o666)
    try:
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"the lock of {folder} ({lock_path(folder)}) is held by another run for over "
                        f"{timeout_s:.0f} s."
                    ) from None
                time.sleep(0.05)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
