"""Cache of parsed arrays (.npz) in the writable cache, keyed by the hashes of the source files.

``<REPRO_DATA_DIR>/parsed/<tag>-<key>.npz`` where ``key`` is the first 16 hex digits of a sha256 over
the source files' registry hashes and :data:`PARSER_VERSION`. A changed source file (new hash) or a
changed parser (new version) gives a new key, so a stale entry is never read. Nothing is written
into ``REPRO_DATA_MIRROR``. Writing is best effort: a read-only cache only costs the parse time.

The entry is verified as well as its sources: each .npz stores, under the key ``__sha256__``, an
HMAC-SHA256 over the source key and every array's name, dtype, shape and bytes, keyed by a secret of
this cache (``parsed/.hmac-key``: 32 random bytes, mode 0600). On load the MAC is computed again; an
entry whose MAC does not match (a flipped bit in an array header or in the data, a truncated write, a
file edited by hand, even with its digest recomputed) is ignored and rebuilt from the verified source
files. Files are written atomically (temporary file, fsync, rename) with the mode a plain ``open`` gives
(umask).

Security note: an entry is trusted only as far as its own writer: whoever can read the key (this user)
can write an entry that is served. A key that is not this user's alone (another owner, readable or
writable by group or others, a symlink) is not used: nothing is then read from or written to the parsed
cache, every load parses the verified source files again (slower, never tampered).
"""

from __future__ import annotations

import hashlib
import hmac
import os
import stat
import tempfile
import zipfile
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np

from ._registry import cache_dir

__all__ = ["PARSER_VERSION", "arrays_digest", "cached_arrays", "parsed_path"]

#: Bump when a parser changes what it stores, so old .npz files are not read.
PARSER_VERSION = 2

_DIGEST_KEY = "__sha256__"
_UMASK = os.umask(0)
os.umask(_UMASK)


def arrays_digest(arrays: dict[str, np.ndarray], salt: str = "", key: bytes | None = None) -> str:
    """sha256 over ``salt`` and each array's name, dtype, shape and bytes (in name order); an
    HMAC-SHA256 keyed by ``key`` when given (what the cache stores: see the security note above)."""
    h = hmac.new(key, salt.encode(), hashlib.sha256) if key is not None else hashlib.sha256(salt.encode())
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"\n{name}\n{a.dtype.str}\n{a.shape}\n".encode())
        h.update(memoryview(a).cast("B") if a.size else b"")
    return h.hexdigest()


def parsed_path(tag: str, source_hashes: Iterable[str]) -> Path:
    """Path of the .npz holding the arrays parsed from files with the given registry hashes."""
    material = "\n".join([f"v{PARSER_VERSION}", *source_hashes]).encode()
    key = hashlib.sha256(material).hexdigest()[:16]
    return cache_dir() / "parsed" / f"{tag}-{key}.npz"


def cached_arrays(
    tag: str, source_hashes: Iterable[str], build: Callable[[], dict[str, np.ndarray]]
) -> dict[str, np.ndarray]:
    """Load parsed arrays from the cache, or build them and store them there.

    Parameters
    ----------
    tag : str
        Readable part of the file name, e.g. ``"mnist-train"``.
    source_hashes : iterable of str
        Registry hashes (``"sha256:<hex>"``) of the files the arrays come from.
    build : callable
        Returns the arrays (a dict of name to non-object ndarray) when the cache has no entry.

    Returns
    -------
    dict of str to numpy.ndarray
    """
    source_hashes = list(source_hashes)
    path = parsed_path(tag, source_hashes)
    salt = path.stem
    key = _cache_key(path.parent)
    if key is None:  # no key of this user's alone: the cache is not trusted (module docstring)
        return build()
    if path.is_file():
        try:
            with np.load(path, allow_pickle=False) as z:
                loaded = {k: z[k] for k in z.files}
            stored = loaded.pop(_DIGEST_KEY, None)
            if stored is not None and hmac.compare_digest(str(stored), arrays_digest(loaded, salt, key)):
                return loaded
        except (OSError, ValueError, EOFError, zipfile.BadZipFile):
            pass  # unreadable (e.g. a truncated write): rebuild and overwrite
    arrays = build()
    _save(path, arrays, arrays_digest(arrays, salt, key))
    return arrays


_KEY_NAME = ".hmac-key"


def _cache_key(folder: Path) -> bytes | None:
    """The parsed cache's secret (created on first use), or None when it is not this user's alone."""
    path = folder / _KEY_NAME
    try:
        folder.mkdir(parents=True, exist_ok=True)
        if not os.path.lexists(path):
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(os.urandom(32))
                f.flush()
                os.fsync(f.fileno())
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            key = f.read()
    except OSError:  # not writable, a symlink, a race lost to another creator: not trusted
        return None
    getuid = getattr(os, "getuid", None)
    if not stat.S_ISREG(st.st_mode) or st.st_mode & 0o077 or (getuid is not None and st.st_uid != getuid()):
        return None
    return key if len(key) == 32 else None


def _save(path: Path, arrays: dict[str, np.ndarray], digest: str) -> None:
    """Write atomically (temporary file, fsync, rename); give up silently if the cache is not writable."""
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.stem}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays, **{_DIGEST_KEY: np.array(digest)})
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes it 0600; the cache is an ordinary folder
        os.replace(tmp, path)
        tmp = None
    except OSError:
        pass
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
