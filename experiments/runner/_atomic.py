"""Writes that never leave a damaged output, and the lock that serializes ledger rebuilds.

Every file the runner writes (CSV, PNG, ``.md`` table, ``claims/*.csv``, ``CLAIMS.md``, ``runtimes.csv``,
the README's scoreboard) goes through :func:`atomic_path`: the content is written to a temporary file in the
same folder with a unique name (``.<name>.<pid>.<random>.tmp``), flushed and fsynced, then renamed over
the target. A kill at any moment leaves either the previous version or the new one, never a truncated
file; two processes writing the same output never share a temporary name. A kill between the write and
the rename can leave a hidden ``.*.tmp`` file behind; :func:`remove_stale_temporaries` clears those.

:func:`folder_lock` is an advisory ``fcntl`` lock (a file in the user's own cache, ``~/.cache/repro/locks``,
named by the folder's real path; see :func:`lock_path`), held while the ledger is
rebuilt and the README's scoreboard rewritten, so two runs into one folder never read a half-updated set.
Only the standard library is imported here (the command line's ``--help`` must stay fast).
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import time
from collections.abc import Iterator
from pathlib import Path

__all__ = [
    "DIGESTS",
    "DIGESTS_HEADER",
    "atomic_path",
    "atomic_write_text",
    "content_digest",
    "csv_problem",
    "exit_on_termination",
    "folder_lock",
    "lock_path",
    "record_digest",
    "recorded_digest",
    "remove_stale_temporaries",
]

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


_TMP_NAME = re.compile(r"\.(?P<stem>.+)\.(?P<pid>\d+)\.[0-9a-f]{8}\.tmp(\..*)?")


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists (on this host)."""
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True  # exists (another user's), or cannot tell: keep its file
    return True


def remove_stale_temporaries(folder: str | os.PathLike, older_than_s: float = 3600.0) -> list[Path]:
    """Delete this module's temporary files in ``folder`` (and ``claims/``) left by a killed writer.

    They only exist when a process was killed between writing and renaming (SIGKILL, a power cut: the
    command line turns SIGTERM and SIGHUP into an exit that removes them). A file whose writer (the pid
    in its name) no longer runs is removed at once; one whose writer still runs is kept unless older than
    ``older_than_s`` (a pid reused by another process).
    """
    removed = []
    now = time.time()
    for sub in (Path(folder), Path(folder) / "claims"):
        if not sub.is_dir():
            continue
        for p in sub.glob(f".*{_TMP_SUFFIX}*"):
            m = _TMP_NAME.fullmatch(p.name)
            if m is None:
                continue  # not one of ours
            with contextlib.suppress(OSError):
                if not _alive(int(m["pid"])) or now - p.stat().st_mtime > older_than_s:
                    p.unlink()
                    removed.append(p)
    return removed


def exit_on_termination() -> None:
    """Turn SIGTERM and SIGHUP into ``SystemExit`` in this process, so that a terminated run unwinds:
    :func:`atomic_path` then removes its temporary file (a SIGKILL cannot be caught; the next run's
    :func:`remove_stale_temporaries` removes what it leaves)."""
    import signal

    def stop(signum, _frame):
        raise SystemExit(128 + signum)

    for sig in (getattr(signal, "SIGTERM", None), getattr(signal, "SIGHUP", None)):
        if sig is not None:
            with contextlib.suppress(ValueError, OSError):  # not the main thread
                signal.signal(sig, stop)


def _lock_dir() -> Path | None:
    """The user's own lock folder, ``$XDG_CACHE_HOME/repro/locks`` (default ``~/.cache/repro/locks``),
    created with mode 0700; None when it is not a folder of this user's that others cannot write."""
    import stat

    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    folder = Path(base) / "repro" / "locks"
    try:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        st = os.lstat(folder)
    except OSError:
        return None
    getuid = getattr(os, "getuid", None)
    if not stat.S_ISDIR(st.st_mode) or (getuid is not None and st.st_uid != getuid()) or st.st_mode & 0o022:
        return None
    return folder


def lock_path(folder: str | os.PathLike) -> Path:
    """The lock file of an output folder: in the user's own cache (:func:`_lock_dir`), named by the
    folder's real path, so that ``figures/`` holds only outputs; in the output folder itself
    (``.repro.lock``) when that cache is not the user's alone.

    Never in the shared temporary folder: a predictable name there could be created (and held) by
    another local user, making every run into that folder wait and then fail.
    """
    import hashlib

    key = hashlib.sha256(str(Path(folder).resolve()).encode()).hexdigest()[:16]
    locks = _lock_dir()
    if locks is None:
        return Path(folder) / ".repro.lock"
    return locks / f"repro-{key}.lock"


def _open_lock(path: Path) -> int:
    """Open (or create) the lock file ``path`` without following a symlink.

    A symlink planted under its name would redirect the open (and a create) to another file;
    ``O_NOFOLLOW`` refuses that, and a symlink found there is reported, not removed.
    """
    flags = os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        return os.open(path, flags, 0o666)
    except OSError as exc:
        if os.path.islink(path):
            raise RuntimeError(
                f"the lock file {path} is a symbolic link (to {os.readlink(path)!r}); refusing to follow it. "
                "Remove the link and run again."
            ) from exc
        raise


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
    fd = _open_lock(lock_path(folder))
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


def csv_problem(path: str | os.PathLike) -> str | None:
    """What makes ``path`` other than a whole CSV as the runner writes it (None: nothing): empty, cut off
    (no line end after the last row), not UTF-8, no header of unique names, or a row of another length.

    The runner's CSVs are read as strictly as they are written (atomically, whole): a file cut off
    mid-row by a copy, a full disk or an editor is refused, never read as fewer or partly empty rows.
    """
    import csv
    import io

    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        return f"is damaged: it cannot be read ({exc.strerror or exc})"
    if not raw.strip():
        return "is damaged: empty"
    if not raw.endswith(b"\n"):
        return "is damaged: cut off (its last line has no line end: a truncated write or copy)"
    if b"\r\n" in raw:  # the runner writes "\n" only: a copy through a text-mode tool rewrote the file
        return "is damaged: its lines end in CR LF, not as the runner writes them (a rewritten copy)"
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        return "is damaged: not a UTF-8 text file (not a result CSV)"
    rows = csv.reader(io.StringIO(text, newline=""))
    header = next(rows, [])
    if not header or any(not h.strip() for h in header) or len(set(header)) != len(header):
        return "is damaged: no valid header (empty or repeated column names: not a result CSV)"
    for i, row in enumerate(rows, start=2):
        if len(row) != len(header):
            return (
                f"is damaged: line {i} has {len(row)} field(s) where the header has {len(header)} "
                "(cut off or edited)"
            )
    return None


#: The record of an output folder's result CSVs: ``<hex>  NAME.csv`` per CSV, under a header line
#: (:data:`DIGESTS_HEADER`). Each digest is the sha256 of the CSV's non-timing content
#: (:func:`content_digest`: the columns ``repro verify`` compares, as written), so two runs whose numbers
#: agree have the same record, and ``diff`` of two records names the CSVs whose results differ. Written
#: after each CSV is in place, so a CSV it lists is one the runner wrote whole: a file cut off at a row
#: boundary or with its numbers edited or replaced no longer matches and is refused (a file cut inside
#: a row has no line end and is refused by :func:`csv_problem`). A measured time or memory edited by
#: hand is not seen. A record without the header is of the earlier format, a sha256 of each whole file
#: (``sha256sum -c`` format): it is still read and checked so, and converted when a run writes into it.
DIGESTS = "results.sha256"
DIGESTS_HEADER = (
    "# sha256 of each result CSV's non-timing columns (the ones repro verify compares), as written; "
    "timing columns left out, so runs with the same numbers have the same record"
)


def _sha256(path: Path) -> str:
    import hashlib

    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def content_digest(path: str | os.PathLike) -> str:
    """The sha256 of the CSV ``path`` without its timing columns (``repro verify``'s rule for the
    experiment named by the file's stem), the other cells as written.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "toy.csv").write_text("k,variance,seconds\\n1,0.5,0.01\\n")
    >>> first = content_digest(folder / "toy.csv")
    >>> _ = (folder / "toy.csv").write_text("k,variance,seconds\\n1,0.5,0.02\\n")  # another time
    >>> content_digest(folder / "toy.csv") == first
    True
    """
    import csv
    import hashlib
    import io

    from ._columns import is_timing

    path = Path(path)
    with open(path, newline="", encoding="utf-8", errors="surrogateescape") as f:
        rows = csv.reader(f)
        header = next(rows, [])
        keep = [i for i, c in enumerate(header) if not is_timing(path.stem, c)]
        h = hashlib.sha256()
        buf = io.StringIO()
        out = csv.writer(buf, lineterminator="\n")
        for row in [header, *rows]:
            out.writerow([row[i] if i < len(row) else "" for i in keep])
            h.update(buf.getvalue().encode("utf-8", "surrogateescape"))
            buf.seek(0)
            buf.truncate()
    return h.hexdigest()


def _read_digests(folder: Path) -> tuple[bool, dict[str, str]]:
    """``(content, digests)``: whether the record is of non-timing content (its header), and its lines."""
    try:
        text = (folder / DIGESTS).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return True, {}
    out = {}
    content = False
    for line in text.splitlines():
        if line.startswith("#"):
            content = content or line == DIGESTS_HEADER
            continue
        digest, _, name = line.partition("  ")
        if len(digest) == 64 and name:
            out[name] = digest
    return content or not out, out


def record_digest(path: str | os.PathLike) -> None:
    """Record the digest of the result CSV ``path`` (just written) in its folder's :data:`DIGESTS`.

    A record of the earlier format (whole files) is converted: each CSV that still matches it gets its
    content digest; one that does not keeps its old digest, and so still reads as damaged.
    """
    path = Path(path)
    folder = path.parent
    with folder_lock(folder):  # two runs (--jobs) record into one file
        content, digests = _read_digests(folder)
        if not content:
            for name, digest in list(digests.items()):
                other = folder / name
                with contextlib.suppress(OSError, UnicodeDecodeError):
                    if name != path.name and other.is_file() and _sha256(other) == digest:
                        digests[name] = content_digest(other)
        digests[path.name] = content_digest(path)
        lines = [DIGESTS_HEADER, *(f"{d}  {n}" for n, d in sorted(digests.items()))]
        atomic_write_text(folder / DIGESTS, "\n".join(lines) + "\n")


def recorded_digest(path: str | os.PathLike) -> str | None:
    """Why the result CSV ``path`` does not match its recorded digest (None: it matches, or the folder
    has no record of it: an output folder written before the record existed)."""
    path = Path(path)
    content, digests = _read_digests(path.parent)
    want = digests.get(path.name)
    if want is None:
        return None
    try:
        got = content_digest(path) if content else _sha256(path)
    except (OSError, UnicodeDecodeError):
        got = None
    if got == want:
        return None
    what = "non-timing content" if content else "sha256"
    return (
        f"is damaged: its {what} does not match the digest recorded in {DIGESTS} when the runner wrote it "
        "(cut off, edited or replaced since)"
    )
