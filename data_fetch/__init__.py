"""Datasets of the reproduction: a pooch registry of pinned, hash-checked files, and their loaders.

Files resolve through :func:`fetch`: the read-only mirror ``REPRO_DATA_MIRROR`` (used in place), then the
writable cache ``REPRO_DATA_DIR`` (default ``pooch.os_cache("repro")``), then a pooch download into the
cache (skipped when ``REPRO_OFFLINE=1``). A wrong hash is never accepted. ``repro data`` (the same as
``python -m data_fetch``) lists the files and their state; ``repro data --fetch`` downloads the missing
ones.
"""

from ._cli import cli
from ._registry import (
    DataHashMismatchError,
    DataUnavailableError,
    Entry,
    cache_dir,
    fetch,
    file_state,
    mirror_dir,
    registry,
)
from .loaders import (
    Dataset,
    load_cbcl_faces,
    load_cbcl_training,
    load_leukemia_armstrong,
    load_leukemia_golub,
    load_lrs,
    load_mnist,
    load_pitprops,
    load_spca_optimal,
    load_spca_optimal_results,
)
from .mnist_variations import load_mnist_variation

__all__ = [
    "DataHashMismatchError",
    "DataUnavailableError",
    "Dataset",
    "Entry",
    "cache_dir",
    "cli",
    "fetch",
    "file_state",
    "load_cbcl_faces",
    "load_cbcl_training",
    "load_leukemia_armstrong",
    "load_leukemia_golub",
    "load_lrs",
    "load_mnist",
    "load_mnist_variation",
    "load_pitprops",
    "load_spca_optimal",
    "load_spca_optimal_results",
    "mirror_dir",
    "registry",
]
