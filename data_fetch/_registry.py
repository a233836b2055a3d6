"""Registry of dataset files and the rule that resolves a registry name to a verified local file.

Resolution order (``fetch``):

1. ``REPRO_DATA_MIRROR``: a read-only folder laid out like the registry. A file found there with the
   right hash is used in place (the returned path points into the mirror); nothing is ever copied or
   written there. A file found there with a wrong hash is refused (an error, no fall-through).
2. ``REPRO_DATA_DIR``: the writable cache (default ``pooch.os_cache("repro")``). Same hash rule.
3. Download with pooch into the cache, unless ``REPRO_OFFLINE`` is set. Failure raises
   :class:`DataUnavailableError`, naming the file, its URL and both variables.

Every environment variable is read at call time, so tests (and users) can change them freely.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

import pooch

__all__ = [
    "CACHE_ENV",
    "MIRROR_ENV",
    "OFFLINE_ENV",
    "REGISTRY_PATH",
    "DataHashMismatchError",
    "DataUnavailableError",
    "Entry",
    "cache_dir",
    "fetch",
    "file_hash",
    "file_state",
    "locate",
    "mirror_dir",
    "offline",
    "registry",
]

MIRROR_ENV = "REPRO_DATA_MIRROR"
CACHE_ENV = "REPRO_DATA_DIR"
OFFLINE_ENV = "REPRO_OFFLINE"

#: The registry shipped with the package. Read at call time (tests may point it elsewhere).
REGISTRY_PATH = Path(__file__).with_name("registry.txt")

#: requests timeout (connect, read) in seconds for a download: fail fast when offline.
DOWNLOAD_TIMEOUT = (5.0, 60.0)

_OPTIONAL_MARK = "#@optional"
_TRUE = {"1", "true", "yes", "on"}

# (resolved path, device, inode, size, mtime_ns, ctime_ns, algorithm) -> hex digest: see file_hash.
_HASH_CACHE: dict[tuple, str] = {}


class DataUnavailableError(OSError):
    """A registry file cannot be had: not in the mirror or the cache, and not downloadable.

    The message names the file, its URL and the variables ``REPRO_DATA_MIRROR`` and ``REPRO_DATA_DIR``.

    See Also
    --------
    DataHashMismatchError : the subclass for a copy with the wrong hash.
    fetch

    Examples
    --------
    A throw-away mirror and a registry of two files, downloads forbidden (``REPRO_OFFLINE=1``):

    >>> import os, tempfile
    >>> from pathlib import Path
    >>> from data_fetch import Entry, fetch
    >>> saved = {k: os.environ.get(k) for k in ("REPRO_DATA_MIRROR", "REPRO_OFFLINE")}
    >>> mirror = Path(tempfile.mkdtemp())
    >>> _ = (mirror / "a.txt").write_text("not what the registry pinned")
    >>> os.environ.update(REPRO_DATA_MIRROR=str(mirror), REPRO_OFFLINE="1")
    >>> pinned = {
    ...     name: Entry(name, "sha256:" + "0" * 64, f"https://example.invalid/{name}")
    ...     for name in ("a.txt", "b.txt")
    ... }
    >>> for name in ("a.txt", "b.txt"):  # a wrong copy in the mirror, and no copy at all
    ...     try:
    ...         fetch(name, registry=pinned)
    ...     except DataUnavailableError as err:
    ...         print(name, type(err).__name__, "REPRO_DATA_MIRROR" in str(err))
    a.txt DataHashMismatchError True
    b.txt DataUnavailableError True
    >>> for key, value in saved.items():
    ...     _ = os.environ.pop(key, None) if value is None else os.environ.update({key: value})
    """


class DataHashMismatchError(DataUnavailableError):
    """A local copy of a registry file has the wrong hash and is refused (never used).

    See Also
    --------
    DataUnavailableError : its base class, whose example raises both.
    fetch

    Examples
    --------
    A wrong copy is one way a file cannot be had, so one ``except DataUnavailableError`` catches both:

    >>> from data_fetch import DataHashMismatchError, DataUnavailableError
    >>> issubclass(DataHashMismatchError, DataUnavailableError)
    True
    """


@dataclass(frozen=True)
class Entry:
    """One registry line.

    Attributes
    ----------
    name : str
        Relative POSIX path, e.g. ``"mnist/train-images-idx3-ubyte.gz"``; also the file's path inside
        the mirror and the cache.
    hash : str
        ``"<algorithm>:<hex digest>"`` as pooch writes it, e.g. ``"sha256:440f..."``.
    url : str
        Pinned download URL.
    optional : bool
        Whether the file may be missing without ``repro data`` failing.

    See Also
    --------
    registry : reads the entries of a registry file.

    Examples
    --------
    >>> from data_fetch import registry
    >>> entry = registry()["pitprops/pitprops.RData"]
    >>> entry.hash.startswith("sha256:"), entry.url.startswith("https://"), entry.optional
    (True, True, False)
    """

    name: str
    hash: str
    url: str
    optional: bool = False

    @property
    def algorithm(self) -> str:
        """Hash algorithm name (``"sha256"``, ``"sha1"``, ...)."""
        return self.hash.split(":", 1)[0]

    @property
    def digest(self) -> str:
        """Expected hex digest, lower case."""
        return self.hash.split(":", 1)[1]


#: What ``registry=`` arguments accept: entries from :func:`registry`, a registry file, or None (default).
RegistryLike = Mapping[str, Entry] | str | os.PathLike | None


# ---------------------------------------------------------------------------------------------------
# registry parsing
# ---------------------------------------------------------------------------------------------------


def registry(path: str | os.PathLike | None = None) -> dict[str, Entry]:
    """Read a registry file.

    Parameters
    ----------
    path : path-like, optional
        Registry file; default the package's ``data_fetch/registry.txt`` (:data:`REGISTRY_PATH`).

    Returns
    -------
    dict of str to Entry
        Entries by relative name, in file order.

    Raises
    ------
    ValueError
        A malformed line (not ``name algorithm:hex url``), an unknown hash algorithm, an absolute or
        ``..`` name, or a duplicate name; the message gives the line number.

    See Also
    --------
    Entry, fetch, file_state

    Examples
    --------
    >>> from data_fetch import registry
    >>> entries = registry()
    >>> "mnist/train-images-idx3-ubyte.gz" in entries, sorted({e.optional for e in entries.values()})
    (True, [False, True])
    """
    path = Path(REGISTRY_PATH if path is None else path)
    entries: dict[str, Entry] = {}
    optional = False
    for lineno, raw in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1):
        line = raw.strip()
        if line == _OPTIONAL_MARK:
            optional = True
            continue
        if not line or line.startswith("#"):
            continue
        entry = _parse_line(line, optional, f"{path}:{lineno}")
        if entry.name in entries:
            raise ValueError(f"{path}:{lineno}: duplicate registry name {entry.name!r}.")
        entries[entry.name] = entry
    return entries


def _parse_line(line: str, optional: bool, where: str) -> Entry:
    parts = line.split()
    if len(parts) != 3:
        raise ValueError(f"{where}: expected 'relative/name algorithm:hex url', got {line!r}.")
    name, hash_, url = parts
    pure = PurePosixPath(name)
    if pure.is_absolute() or ".." in pure.parts:
        raise ValueError(f"{where}: registry name {name!r} must be a relative path without '..'.")
    algorithm, sep, digest = hash_.lower().partition(":")
    if not sep or algorithm not in hashlib.algorithms_available or not digest:
        raise ValueError(f"{where}: hash {hash_!r} must look like 'sha256:<hex>' (a hashlib algorithm).")
    int(digest, 16)  # raises ValueError on a non-hex digest
    return Entry(name=name, hash=f"{algorithm}:{digest}", url=url, optional=optional)


def _entries(registry_: RegistryLike) -> Mapping[str, Entry]:
    if registry_ is None or isinstance(registry_, (str, os.PathLike)):
        return registry(registry_)
    return registry_


def _lookup(name: str, registry_: RegistryLike) -> Entry:
    entries = _entries(registry_)
    try:
        return entries[name]
    except KeyError:
        raise ValueError(
            f"name {name!r} is not in the data registry; valid names: {', '.join(entries)}."
        ) from None


# ---------------------------------------------------------------------------------------------------
# environment (read at call time)
# ---------------------------------------------------------------------------------------------------


def mirror_dir() -> Path | None:
    """The read-only mirror folder from ``REPRO_DATA_MIRROR`` (absolute), or None when unset or empty.

    Returns
    -------
    pathlib.Path or None
        The mirror folder.

    Raises
    ------
    DataUnavailableError
        ``REPRO_DATA_MIRROR`` is set but is not a directory (a misconfiguration, never ignored).

    See Also
    --------
    cache_dir, fetch

    Examples
    --------
    >>> import os
    >>> from data_fetch import DataUnavailableError, mirror_dir
    >>> saved = os.environ.get("REPRO_DATA_MIRROR")
    >>> os.environ["REPRO_DATA_MIRROR"] = os.path.join(os.sep, "no", "such", "folder")
    >>> try:
    ...     mirror_dir()
    ... except DataUnavailableError as err:
    ...     print("is not a directory" in str(err))
    True
    >>> os.environ["REPRO_DATA_MIRROR"] = ""
    >>> mirror_dir() is None
    True
    >>> os.environ["REPRO_DATA_MIRROR"] = saved or ""
    """
    value = os.environ.get(MIRROR_ENV, "").strip()
    if not value:
        return None
    path = Path(os.path.abspath(Path(value).expanduser()))
    if not path.is_dir():
        raise DataUnavailableError(
            f"{MIRROR_ENV}={value!r} is not a directory; point it at a folder laid out like "
            f"data_fetch/registry.txt (e.g. ../shared/data) or unset it."
        )
    return path


def cache_dir() -> Path:
    """The writable cache folder: ``REPRO_DATA_DIR``, default ``pooch.os_cache("repro")``.

    Returns
    -------
    pathlib.Path
        The folder (absolute; it need not exist yet).

    See Also
    --------
    mirror_dir, fetch

    Examples
    --------
    >>> from data_fetch import cache_dir
    >>> cache_dir().is_absolute()
    True
    """
    value = os.environ.get(CACHE_ENV, "").strip()
    return Path(os.path.abspath(Path(value).expanduser())) if value else Path(pooch.os_cache("repro"))


def offline() -> bool:
    """Whether ``REPRO_OFFLINE`` forbids download attempts (``1``, ``true``, ``yes`` or ``on``)."""
    return os.environ.get(OFFLINE_ENV, "").strip().lower() in _TRUE


# ---------------------------------------------------------------------------------------------------
# hashing
# ---------------------------------------------------------------------------------------------------


def file_hash(path: str | os.PathLike, algorithm: str = "sha256") -> str:
    """Hex digest of a file, memoized for the life of the process.

    The memo trusts a file's identity and status times: it reuses a digest only while the resolved
    path, device, inode, size, modification time *and* status-change time (``st_ctime_ns``) are all
    unchanged. Writing a file in place with its modification time restored (``os.utime``) still moves
    its ctime, which no user call can set back, so such a change is re-hashed; a file replaced by
    another (rename, copy) has a new inode. Only a change that also resets the system clock or edits
    the block device underneath would go unseen.

    Parameters
    ----------
    path : path-like
        File to hash.
    algorithm : str
        A :mod:`hashlib` algorithm name.

    Returns
    -------
    str
        Lower-case hex digest.
    """
    path = Path(path).resolve()
    st = path.stat()
    key = (str(path), st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, algorithm)
    digest = _HASH_CACHE.get(key)
    if digest is None:
        h = hashlib.new(algorithm)
        with path.open("rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        digest = h.hexdigest()
        _HASH_CACHE[key] = digest
    return digest


def _hash_ok(path: Path, entry: Entry) -> bool:
    return file_hash(path, entry.algorithm) == entry.digest


def _check_copy(path: Path, entry: Entry, where: str) -> Path:
    """Return ``path`` if its hash is right, else raise DataHashMismatchError naming the file."""
    if _hash_ok(path, entry):
        return path
    got = file_hash(path, entry.algorithm)
    if where == MIRROR_ENV:
        fix = (
            f"The mirror is never written by this library: replace the file in the mirror with the "
            f"registry version, or unset {MIRROR_ENV} to use the cache ({CACHE_ENV})."
        )
    else:
        fix = f"Delete {path} and fetch it again (repro data --fetch)."
    raise DataHashMismatchError(
        f"Dataset file {entry.name!r} at {path} (from {where}) has the wrong hash and is refused: "
        f"expected {entry.hash}, got {entry.algorithm}:{got}. {fix} URL: {entry.url}. "
        f"Variables: {MIRROR_ENV}={os.environ.get(MIRROR_ENV, '') or '(unset)'}, "
        f"{CACHE_ENV}={cache_dir()}."
    )


# ---------------------------------------------------------------------------------------------------
# resolution
# ---------------------------------------------------------------------------------------------------


def _locations(entry: Entry) -> list[tuple[str, Path]]:
    """Candidate local copies, in resolution order, as (source variable, path)."""
    found = []
    mirror = mirror_dir()
    if mirror is not None:
        found.append((MIRROR_ENV, mirror / entry.name))
    found.append((CACHE_ENV, cache_dir() / entry.name))
    return found


def fetch(name: str, *, registry: RegistryLike = None) -> Path:
    """Return a local, hash-verified copy of a registry file.

    Looks in ``REPRO_DATA_MIRROR`` (used in place, never written), then in the cache
    ``REPRO_DATA_DIR``, then downloads into the cache with pooch (unless ``REPRO_OFFLINE`` is set).

    Parameters
    ----------
    name : str
        Registry name, e.g. ``"mnist/train-images-idx3-ubyte.gz"``.
    registry : mapping, path-like or None
        Registry entries (as returned by :func:`registry`) or a registry file; default the package's.

    Returns
    -------
    pathlib.Path
        Path of the verified file (inside the mirror or the cache).

    Raises
    ------
    ValueError
        ``name`` is not in the registry.
    DataHashMismatchError
        A copy in the mirror or the cache has the wrong hash (it is never used).
    DataUnavailableError
        No copy, and the download is disabled or failed.

    See Also
    --------
    file_state : where a file would come from, without fetching it.
    registry

    Examples
    --------
    The example reads the mirror ``REPRO_DATA_MIRROR`` (set in CI and the test suite) or the cache, or
    downloads the file.

    >>> from data_fetch import fetch
    >>> path = fetch("pitprops/pitprops.RData")
    >>> path.name, path.is_file()
    ('pitprops.RData', True)
    """
    entry = _lookup(name, registry)
    for where, path in _locations(entry):
        if path.is_file():
            return _check_copy(path, entry, where)
    folder = _folder_in_place(entry)
    if folder is not None and (offline() or folder == cache_dir() / entry.name):
        raise _unavailable(entry, f"{folder} is a folder, not the file; remove or rename that folder")
    return _download(entry)


def file_state(name: str, *, registry: RegistryLike = None) -> str:
    """Where a registry file would come from, without downloading anything.

    Parameters
    ----------
    name : str
        Registry name.
    registry : mapping, path-like or None
        As in :func:`fetch`.

    Returns
    -------
    str
        ``"mirror"`` or ``"cached"`` (a verified copy there), ``"missing"`` (no copy), ``"corrupt"``
        (the first copy found has the wrong hash, so :func:`fetch` would refuse it), or ``"folder"`` (no
        copy, and a folder stands where the file belongs: :func:`folder_in_place` names it).

    See Also
    --------
    fetch

    Examples
    --------
    With the mirror ``REPRO_DATA_MIRROR`` set (as in CI and the test suite) or the file in the cache:

    >>> from data_fetch import file_state
    >>> file_state("pitprops/pitprops.RData") in ("mirror", "cached")
    True
    """
    entry = _lookup(name, registry)
    for where, path in _locations(entry):
        if path.is_file():
            if not _hash_ok(path, entry):
                return "corrupt"
            return "mirror" if where == MIRROR_ENV else "cached"
    return "missing" if _folder_in_place(entry) is None else "folder"


def _folder_in_place(entry: Entry) -> Path | None:
    return next((path for _, path in _locations(entry) if path.is_dir()), None)


def folder_in_place(name: str, *, registry: RegistryLike = None) -> Path | None:
    """The first folder that stands where a copy of registry file ``name`` belongs (mirror, then cache),
    or None: a folder is never taken for the file, and a download cannot write over it."""
    return _folder_in_place(_lookup(name, registry))


def locate(name: str, *, registry: RegistryLike = None) -> Path | None:
    """Path of the first local copy of a registry file (mirror, then cache), verified or not."""
    entry = _lookup(name, registry)
    for _, path in _locations(entry):
        if path.is_file():
            return path
    return None


def _unavailable(entry: Entry, reason: str) -> DataUnavailableError:
    mirror = os.environ.get(MIRROR_ENV, "") or "(unset)"
    cache = cache_dir()
    return DataUnavailableError(
        f"Dataset file {entry.name!r} is not available: {reason}. URL: {entry.url}. "
        f"To fix: set {MIRROR_ENV} to a folder laid out like data_fetch/registry.txt that holds it "
        f"(e.g. {MIRROR_ENV}=../shared/data; now {mirror}), or place the file at "
        f"{cache / entry.name} ({CACHE_ENV}, now {cache}), or run `repro data --fetch` online."
    )


def _download(entry: Entry) -> Path:
    """Download ``entry`` into the cache with pooch, verifying its hash; fail fast when offline."""
    if offline():
        raise _unavailable(entry, f"{OFFLINE_ENV} is set, so no download was attempted")
    target = cache_dir() / entry.name
    downloader = pooch.HTTPDownloader(progressbar=False, timeout=DOWNLOAD_TIMEOUT)
    logger = pooch.get_logger()  # pooch logs "Downloading data from ..." itself; callers report instead
    level = logger.level
    logger.setLevel("WARNING")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        got = pooch.retrieve(
            entry.url, known_hash=entry.hash, fname=target.name, path=target.parent, downloader=downloader
        )
    except (OSError, ValueError) as exc:  # requests errors are OSErrors; pooch's hash check is a ValueError
        raise _unavailable(entry, f"download failed ({type(exc).__name__}: {exc})") from exc
    finally:
        logger.setLevel(level)
    return _check_copy(Path(got), entry, CACHE_ENV)
