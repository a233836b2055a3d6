"""Cache of parsed arrays (.npz) in the writable cache, keyed by the hashes of the source files.

``<REPRO_DATA_DIR>/parsed/<tag>-<key>.npz`` where ``key`` is the first 16 hex digits of a sha256 over
the source files' registry hashes and :data:`PARSER_VERSION`. A changed source file (new hash) or a
changed parser (new version) gives a new key, so a stale entry is never read. Nothing is written
into ``REPRO_DATA_MIRROR``. Writing is best effort: a read-only cache only costs the parse time.
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

__all__ = ["PARSER_VERSION", "cached_arrays", "parsed_path"]

#: Bump when a parser changes what it stores, so old .npz files are not read.
PARSER_VERSION = 1


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
    path = parsed_path(tag, source_hashes)
    if path.is_file():
        try:
            with np.load(path, allow_pickle=False) as z:
                return {k: z[k] for k in z.files}
        except (OSError, ValueError, EOFError, zipfile.BadZipFile):
            pass  # unreadable (e.g. a truncated write): rebuild and overwrite
    arrays = build()
    _save(path, arrays)
    return arrays


def _save(path: Path, arrays: dict[str, np.ndarray]) -> None:
    """Write atomically (temporary file, then rename); give up silently if the cache is not writable."""
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=path.stem, suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "wb") as f:
            np.savez(f, **arrays)
        os.replace(tmp, path)
        tmp = None
    except OSError:
        pass
    finally:
        if tmp is not None and os.path.exists(tmp):
            os.unlink(tmp)
