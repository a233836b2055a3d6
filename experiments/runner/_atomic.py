"""Writes that never leave a damaged output, and the lock that serializes ledger rebuilds.

Every file the runner writes (CSV, PNG, ``.md`` table, ``claims/*.csv``, ``CLAIMS.md``, ``runtimes.csv``,
the README's scoreboard) goes through :func:`atomic_path`: the content is written to a temporary file in the
same folder with a unique name (``.<name>.<pid>.<random>.tmp``), flushed and fsynced, then renamed over
the target. A kill at any moment leaves either the previous version or the new one, never a truncated
file; two processes writing the same output never share a temporary name. A kill between the write and
the rename can leave a hidden ``.*.tmp`` file behind; :func:`remove_stale_temporaries` clears those.

Every file the runner reads back is recorded when it is written (:func:`recorded_path`) and read only
when it matches its record: the result CSVs by their non-timing content in ``results.sha256`` (with the
mode, quick or full, of the run that wrote them), the claims files and ``runtimes.csv`` by their sha256 in
``ledger.sha256``. A file missing from its record is refused like one that does not match; a damaged
record is refused with the fix, never silently replaced.

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
    "LEDGER_DIGESTS",
    "RecordError",
    "atomic_path",
    "atomic_write_text",
    "content_digest",
    "csv_problem",
    "exit_on_termination",
    "folder_lock",
    "ledger_file_problem",
    "lock_path",
    "record_digest",
    "record_problem",
    "recorded_digest",
    "recorded_mode",
    "recorded_path",
    "remove_stale_temporaries",
    "write_error",
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
def atomic_path(path: str | os.PathLike, commit=None) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; on success fsync it and rename it over ``path``.

    The caller writes the whole content to the yielded path (``df.to_csv(tmp)``, ``fig.savefig(tmp)``).
    On an exception the temporary file is removed and ``path`` is left as it was. The temporary name keeps
    the target's suffix (``.<stem>.<pid>.<hex>.tmp.png``), so writers that infer a format from the
    suffix still work. ``commit(tmp)``, when given, does the rename (:func:`recorded_path`).
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.{os.getpid()}.{secrets.token_hex(4)}{_TMP_SUFFIX}{path.suffix}")
    try:
        try:
            yield tmp
            fd = os.open(tmp, os.O_RDONLY)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            os.chmod(tmp, 0o666 & ~_UMASK)  # the mode a plain open() gives, whatever the writer used
            if commit is not None:
                commit(tmp)
            else:
                os.replace(tmp, path)
                _fsync_dir(path.parent)
        except OSError as exc:  # a full disk: name the file (a failed write() or fsync() does not)
            if exc.filename is None:
                raise OSError(exc.errno, exc.strerror, str(path)) from exc
            raise
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
    for sub in (Path(folder), *(Path(folder) / f for f in LEDGER_FOLDERS)):
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


#: The record of an output folder's result CSVs: ``<hex>  NAME.csv  MODE`` per CSV, under a header line
#: (:data:`DIGESTS_HEADER`); ``MODE`` says whether the run that wrote it was ``quick`` or ``full``, so that
#: ``repro redraw`` never has to guess. Each digest is the sha256 of the CSV's non-timing content
#: (:func:`content_digest`: the columns ``repro verify`` compares, as written), so two runs whose numbers
#: agree have the same record, and ``diff`` of two records names the CSVs whose results differ. A CSV is
#: read back only when its digest matches: one cut off at a row boundary, with its numbers edited or
#: replaced, or missing from the record (copied without it, written before it existed) is refused (a
#: file cut inside a row has no line end and is refused by :func:`csv_problem`). A measured time or memory
#: edited by hand is not seen. A record without the header is of the earlier format, a sha256 of each whole
#: file (``sha256sum -c`` format): it is still read and checked so, and converted when a run writes into it.
DIGESTS = "results.sha256"
DIGESTS_HEADER = (
    "# sha256 of each result CSV's non-timing columns (the ones repro verify compares), as written; "
    "timing columns left out, so runs with the same numbers have the same record"
)
#: The record of the files the runner keeps beside the results and reads back, ``claims/NAME.csv`` and
#: ``runtimes.csv``: the sha256 of each whole file, in ``sha256sum`` format (``sha256sum -c ledger.sha256``
#: in the folder checks them). Apart from :data:`DIGESTS` because they change from run to run (times).
LEDGER_DIGESTS = "ledger.sha256"
#: The subfolders of an output folder that hold ledger files (the claims and the benchmarks' goals).
LEDGER_FOLDERS = ("claims", "goals")
LEDGER_HEADER = (
    "# sha256 of each claims file and of runtimes.csv as the runner wrote them (sha256sum -c ledger.sha256)"
)
MODES = {True: "quick", False: "full"}

_LINE = re.compile(r"(?P<digest>[0-9a-f]{64})  (?P<name>\S.*?)(?:  (?P<mode>quick|full))?")


class RecordError(ValueError):
    """A digest record (:data:`DIGESTS`, :data:`LEDGER_DIGESTS`) that is damaged; the message is one line
    naming it and the fix."""


def _sha256(path: Path) -> str:
    import hashlib

    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def content_digest(path: str | os.PathLike, experiment: str | None = None) -> str:
    """The sha256 of the CSV ``path`` without its timing columns (``repro verify``'s rule for
    ``experiment``, by default the one named by the file's stem), the other cells as written.

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
        keep = [i for i, c in enumerate(header) if not is_timing(experiment or path.stem, c)]
        h = hashlib.sha256()
        buf = io.StringIO()
        out = csv.writer(buf, lineterminator="\n")
        for row in [header, *rows]:
            out.writerow([row[i] if i < len(row) else "" for i in keep])
            h.update(buf.getvalue().encode("utf-8", "surrogateescape"))
            buf.seek(0)
            buf.truncate()
    return h.hexdigest()


def _damaged(record: Path, why: str) -> RecordError:
    return RecordError(
        f"{record} is damaged ({why}), so nothing shows that the files it records are the runner's: restore "
        "it (e.g. `git checkout`) or remove it, after which each file it recorded is refused until its "
        "experiment runs again"
    )


def _read_record(record: Path) -> tuple[bool, dict[str, list[tuple[str, str]]]]:
    """``(content, {name: [(digest, mode), ...]})`` of a digest record, ``(True, {})`` when there is none.

    ``content`` says whether a :data:`DIGESTS` record is of non-timing content (its header). A name may
    have two digests while its file is being replaced (:func:`_commit`). Raises :class:`RecordError`
    when the record cannot be read, is empty, not UTF-8, cut off, or has a line that is not a digest line.
    """
    try:
        raw = record.read_bytes()
    except FileNotFoundError:
        return True, {}
    except OSError as exc:
        raise _damaged(record, f"it cannot be read: {exc.strerror or exc}") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _damaged(record, "not a UTF-8 text file") from None
    if not text.strip():
        raise _damaged(record, "empty")
    if not text.endswith("\n"):
        raise _damaged(record, "cut off: its last line has no line end")
    out: dict[str, list[tuple[str, str]]] = {}
    content = False
    for i, line in enumerate(text.splitlines(), start=1):
        if line.startswith("#"):
            content = content or line == DIGESTS_HEADER
            continue
        m = _LINE.fullmatch(line)
        if m is None:
            raise _damaged(record, f"line {i} is not a line '<sha256>  NAME'")
        out.setdefault(m["name"], []).append((m["digest"], m["mode"] or ""))
    return content or not out, out


def _write_record(record: Path, header: str, entries: dict[str, list[tuple[str, str]]]) -> None:
    lines = [header]
    for name, pairs in sorted(entries.items()):
        lines += [f"{d}  {name}" + (f"  {m}" if m else "") for d, m in pairs]
    atomic_write_text(record, "\n".join(lines) + "\n")


def _converted(record: Path, content: bool, entries: dict, name: str) -> dict:
    """``entries`` of a record of the earlier whole-file format with each file that still matches it
    re-digested by content; one that does not keeps its old digest, and so still reads as damaged."""
    if not content:
        for other_name, pairs in list(entries.items()):
            other = record.parent / other_name
            with contextlib.suppress(OSError, UnicodeDecodeError):
                if other_name != name and other.is_file() and _sha256(other) == pairs[0][0]:
                    entries[other_name] = [(content_digest(other), pairs[0][1])]
    return entries


def _commit(tmp: Path, path: Path, record: Path, name: str, digest: str, mode: str, header: str) -> None:
    """Rename ``tmp`` over ``path`` and record ``digest`` for ``name`` in ``record`` (lock held).

    Three steps, so that a kill at any moment leaves ``path`` matching its record: the record first lists
    the old and the new digest, then the file is renamed, then the record lists the new digest alone.
    """
    content, entries = _read_record(record)
    if header == DIGESTS_HEADER:  # LEDGER_DIGESTS has whole-file digests only
        entries = _converted(record, content, entries, name)
    old = entries.get(name, [])[-1:] if path.is_file() else []
    both = list(dict.fromkeys([*old, (digest, mode)]))  # the same file again: listed once
    if both != entries.get(name):
        entries[name] = both
        _write_record(record, header, entries)
    os.replace(tmp, path)
    _fsync_dir(path.parent)
    if len(both) > 1:
        entries[name] = [(digest, mode)]
        _write_record(record, header, entries)


@contextlib.contextmanager
def recorded_path(
    path: str | os.PathLike, *, quick: bool | None = None, ledger: bool = False, locked: bool = False
) -> Iterator[Path]:
    """:func:`atomic_path` whose file is recorded, when it is in place, in its folder's digest record.

    A result CSV (default) goes into :data:`DIGESTS` with its :func:`content_digest` and the mode of the
    run (``quick``; None records none); a file the runner keeps beside the results (``ledger=True``:
    ``claims/NAME.csv``, ``runtimes.csv``) into the output folder's :data:`LEDGER_DIGESTS` with its
    sha256. The rename and the record happen under the folder's lock (``locked=True``: the caller holds
    it). Raises :class:`RecordError` when the record is damaged (it is never silently replaced).
    """
    path = Path(path)
    if ledger:
        folder = _output_folder(path)
        record, name, header = folder / LEDGER_DIGESTS, path.relative_to(folder).as_posix(), LEDGER_HEADER
    else:
        folder, record, name, header = path.parent, path.parent / DIGESTS, path.name, DIGESTS_HEADER
    mode = "" if quick is None else MODES[bool(quick)]

    def commit(tmp: Path) -> None:
        digest = _sha256(tmp) if ledger else content_digest(tmp, path.stem)  # the target's rule, not tmp's
        with contextlib.nullcontext() if locked else folder_lock(folder):
            _commit(tmp, path, record, name, digest, mode, header)

    with atomic_path(path, commit=commit) as tmp:
        yield tmp


def record_digest(path: str | os.PathLike, quick: bool | None = None) -> None:
    """Record the digest of the result CSV ``path`` (already in place) in its folder's :data:`DIGESTS`,
    with the run's mode (``quick``; None: none). A record of the earlier format (whole files) is
    converted (:func:`_converted`)."""
    path = Path(path)
    record = path.parent / DIGESTS
    with folder_lock(path.parent):  # two runs (--jobs) record into one file
        entries = _converted(record, *_read_record(record), path.name)
        entries[path.name] = [(content_digest(path), "" if quick is None else MODES[bool(quick)])]
        _write_record(record, DIGESTS_HEADER, entries)


def _entry_problem(path: Path, record: Path, name: str, digest_of) -> tuple[str | None, str]:
    """``(problem, mode)`` of the file ``path`` recorded as ``name`` in ``record``."""
    try:
        content, entries = _read_record(record)
    except RecordError as exc:
        return f"cannot be checked: {exc}", ""
    pairs = entries.get(name)
    if not pairs:
        return (
            f"has no digest in {record} (copied without it, or written before the record existed), so "
            "nothing shows it is the file the runner wrote",
            "",
        )
    try:
        got = digest_of(content)(path)
    except (OSError, UnicodeDecodeError):
        got = None
    for digest, mode in pairs:
        if got == digest:
            return None, mode
    what = "non-timing content" if content and digest_of is _result_digest else "sha256"
    return (
        f"is damaged: its {what} does not match the digest recorded in {record.name} when the runner wrote "
        "it (cut off, edited or replaced since)",
        "",
    )


def _result_digest(content: bool):
    return content_digest if content else _sha256


def recorded_digest(path: str | os.PathLike) -> str | None:
    """Why the result CSV ``path`` is not the one the runner wrote (None: its digest matches the record):
    a record of its folder that is damaged or does not list it, or a digest that does not match."""
    path = Path(path)
    return _entry_problem(path, path.parent / DIGESTS, path.name, _result_digest)[0]


def recorded_mode(path: str | os.PathLike) -> bool | None:
    """Whether the result CSV ``path`` came from a quick run (True) or a full one (False), as recorded
    with its digest; None when the record does not say or the file does not match it."""
    path = Path(path)
    problem, mode = _entry_problem(path, path.parent / DIGESTS, path.name, _result_digest)
    return None if problem or not mode else mode == MODES[True]


def _output_folder(path: Path) -> Path:
    """The output folder of a file it holds: ``<out>`` for ``<out>/claims/NAME.csv`` and ``<out>/X.csv``."""
    return path.parent.parent if path.parent.name in LEDGER_FOLDERS else path.parent


def ledger_file_problem(path: str | os.PathLike) -> str | None:
    """Why ``claims/NAME.csv`` or ``runtimes.csv`` at ``path`` is not the file the runner wrote (None:
    it matches its whole-file sha256 in the output folder's :data:`LEDGER_DIGESTS`)."""
    path = Path(path)
    folder = _output_folder(path)
    name = path.relative_to(folder).as_posix()
    return _entry_problem(path, folder / LEDGER_DIGESTS, name, lambda _content: _sha256)[0]


def record_problem(folder: str | os.PathLike) -> str | None:
    """The first damaged digest record of the output folder ``folder`` (one line with the fix), or None.

    Checked before a run or a redraw computes anything: a run would otherwise fail at its first write.
    """
    for record in (Path(folder) / DIGESTS, Path(folder) / LEDGER_DIGESTS):
        try:
            _read_record(record)
        except RecordError as exc:
            return f"{exc}; nothing was computed."
    return None


def write_error(exc: BaseException) -> str | None:
    """One line for an error of the machine, not of the code (a full disk, a quota, a read-only or
    forbidden folder), or for a damaged record (:class:`RecordError`); None for anything else."""
    import errno

    if isinstance(exc, RecordError):
        return str(exc)
    machine = {errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EFBIG, errno.EIO}
    if not isinstance(exc, OSError) or exc.errno not in machine:
        return None
    where = f" {exc.filename}" if exc.filename else ""
    return (
        f"cannot write{where}: {exc.strerror or exc}; free space (or choose another --out) and run again. "
        "Every output is written whole or not at all: the files already there are intact"
    )
