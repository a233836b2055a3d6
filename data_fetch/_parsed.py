"""Cache of parsed arrays (.npz) in the writable cache, keyed by the hashes of the source files.

``<REPRO_DATA_DIR>/parsed/<tag>-<key>.npz`` where ``key`` is the first 16 hex digits of a sha256 over
the source files' registry hashes and :data:`PARSER_VERSION`. A changed source file (new hash) or a
changed parser (new version) gives a new key, so a stale entry is never read. Nothing is written
into ``REPRO_DATA_MIRROR``. Writing is best effort: a read-only cache only costs the parse time.

The entry is verified as well as its sources: each .npz stores, under the key ``__sha256__``, a sha256
over the source key and every array's name, dtype, shape and bytes. On load the digest is computed
again; an entry whose digest does not match (a flipped bit in an array header or in the data, a
truncated write, a file edited by hand) is ignored and rebuilt from the verified source files. Files
are written atomically (temporary file, fsync, rename) with the mode a plain ``open`` gives (umask).
"""

from __future__ import annotations

import hashlib
import os
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


def arrays_digest(arrays: dict[str, np.ndarray], salt: str = "") -> str:
    """sha256 over ``salt`` and each array's name, dtype, shape and bytes (in name order)."""
    h = hashlib.sha256(salt.encode())
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
    if path.is_file():
        try:
            with np.load(path, allow_pickle=False) as z:
                loaded = {k: z[k] for k in z.files}
            stored = loaded.pop(_DIGEST_KEY, None)
            if stored is not None and str(stored) == arrays_digest(loaded, salt):
                return loaded
        except (OSError, ValueError, EOFError, zipfile.BadZipFile):
            pass  # unreadable (e.g. a truncated write): rebuild and overwrite
    arrays = build()
    _save(path, arrays, arrays_digest(arrays, salt))
    return arrays


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
