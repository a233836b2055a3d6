"""Loaders: parse each registry file into float64 arrays with labels and feature names.

Every loader returns the raw values of the distribution (no centering, scaling or log transform); the
preprocessing a paper used belongs to the experiment. Files are obtained with :func:`data_fetch.fetch`
(mirror, cache, download), so each loader raises :class:`data_fetch.DataUnavailableError` when its
files cannot be had. ``description`` names the original data (citation) and the exact copy used.
"""

from __future__ import annotations

import gzip
import io
import math
import pickle
import re
import struct
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ._parsed import cached_arrays
from ._registry import CACHE_ENV, MIRROR_ENV, Entry, fetch, mirror_dir, registry

__all__ = [
    "SPCA_OPTIMAL_INSTANCES",
    "Dataset",
    "load_cbcl_faces",
    "load_cbcl_training",
    "load_leukemia_armstrong",
    "load_leukemia_golub",
    "load_lrs",
    "load_mnist",
    "load_numpy_pickle",
    "load_pitprops",
    "load_spca_optimal",
    "load_spca_optimal_results",
]

CITATIONS = {
    "cbcl": (
        "MIT CBCL Face Database #1, training set (Center for Biological and Computational Learning, MIT; "
        "http://cbcl.mit.edu/software-datasets/FaceData2.html)"
    ),
    "armstrong": (
        "Armstrong, S.A. et al. (2002). MLL translocations specify a distinct gene expression profile that "
        "distinguishes a unique leukemia. Nature Genetics 30:41-47. Kent Ridge Bio-medical Data Set "
        "Repository distribution (C4.5 format)"
    ),
    "golub": (
        "Golub, T.R. et al. (1999). Molecular classification of cancer: class discovery and class prediction "
        "by gene expression monitoring. Science 286:531-537; preprocessed as in Dudoit, Fridlyand & Speed "
        "(2002), data set `golub` of the Bioconductor package multtest"
    ),
    "lrs": (
        "IRAS Low Resolution Spectrometer database, 531-spectrum subset (donor J. Stutz, NASA Ames, 1988), "
        "UCI Machine Learning Repository, https://archive.ics.uci.edu/ml/datasets/Low+Resolution+Spectrometer"
    ),
    "berk_bertsimas": (
        "Berk, L. & Bertsimas, D. (2019). Certifiably optimal sparse principal component analysis. "
        "Math. Prog. Comp. 11:381-420; repository lauren897/Optimal-SPCA, Data/ (MIT licence)"
    ),
    "li_xie": (
        "Li, Y. & Xie, W. (2024). Exact and approximation algorithms for sparse PCA. INFORMS J. Computing; "
        "repository INFORMSJoC/2022.0372, data/ (MIT licence)"
    ),
    "pitprops": (
        "Jeffers, J.N.R. (1967). Two case studies in the application of principal component analysis. "
        "Applied Statistics 16:225-236; data set `pitprops` of the CRAN package elasticnet"
    ),
    "mnist": (
        "LeCun, Y., Bottou, L., Bengio, Y. & Haffner, P. (1998). Gradient-based learning applied to document "
        "recognition. Proc. IEEE 86:2278-2324; MNIST database (LeCun, Cortes & Burges), "
        "http://yann.lecun.com/exdb/mnist/"
    ),
}


@dataclass(frozen=True, eq=False)
class Dataset:
    """A loaded data set.

    Attributes
    ----------
    X : numpy.ndarray of float64, shape (n_samples, n_features)
        Raw values as distributed (no preprocessing).
    y : numpy.ndarray, shape (n_samples,), or None
        Labels (ints or strings), or None for unlabelled data.
    feature_names : list of str or None
        One name per column of ``X``, or None where columns have no names (pixels).
    description : str
        What the data are, the citation of the original data and which local copy was read.
    meta : pandas.DataFrame or None
        Extra per-sample (or per-feature, as documented by the loader) fields, or None.

    See Also
    --------
    load_cbcl_faces, load_cbcl_training, load_leukemia_armstrong, load_leukemia_golub, load_lrs,
    load_mnist, data_fetch.load_mnist_variation

    Examples
    --------
    >>> import numpy as np
    >>> from data_fetch import Dataset
    >>> ds = Dataset(X=np.zeros((3, 2)), y=None, feature_names=["a", "b"], description="two columns")
    >>> ds.X.shape, ds.feature_names
    ((3, 2), ['a', 'b'])
    """

    X: np.ndarray
    y: np.ndarray | None
    feature_names: list[str] | None
    description: str
    meta: pd.DataFrame | None = None

    def __repr__(self) -> str:
        y = "None" if self.y is None else f"array{self.y.shape} {self.y.dtype}"
        names = "None" if self.feature_names is None else f"[{len(self.feature_names)} names]"
        meta = "None" if self.meta is None else f"DataFrame{self.meta.shape}"
        return (
            f"Dataset(X=array{self.X.shape} {self.X.dtype}, y={y}, feature_names={names}, meta={meta}, "
            f"description={self.description[:60]!r}...)"
        )


# ---------------------------------------------------------------------------------------------------
# shared helpers
# ---------------------------------------------------------------------------------------------------


def _get(*names: str) -> list[tuple[Path, Entry]]:
    """Fetch registry files; return (verified path, registry entry) pairs."""
    entries = registry()
    return [(fetch(name, registry=entries), entries[name]) for name in names]


def _copy_used(files: list[tuple[Path, Entry]]) -> str:
    """Sentence naming each local copy read, where it came from and its hash."""
    mirror = mirror_dir()
    parts = []
    for path, entry in files:
        where = MIRROR_ENV if mirror is not None and path.is_relative_to(mirror) else f"cache {CACHE_ENV}"
        parts.append(f"{path} ({where}; {entry.hash[:19]}...; pinned URL {entry.url})")
    return "Copy used: " + "; ".join(parts) + "."


def _read_rda(path: Path) -> dict:
    """Read an .RData file with the ``rdata`` package (silencing its 'Unknown encoding' warning)."""
    import rdata

    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Unknown encoding", category=UserWarning)
        return rdata.read_rda(path)


def _bad_content(path: Path, what: str) -> ValueError:
    return ValueError(
        f"{path}: unexpected content ({what}); the file passed its hash check, so the parser needs fixing."
    )


# ---------------------------------------------------------------------------------------------------
# CBCL faces
# ---------------------------------------------------------------------------------------------------

_CBCL_SIDE = 19


def load_cbcl_faces() -> Dataset:
    """The 2429 faces of the MIT CBCL training set, from ``cbcl_faces/CBCL_Face.mat``.

    The .mat stores ``M = 1 - p/256`` with one image per column in column-major (MATLAB) order; this
    loader inverts that: ``p = 256 (1 - M)`` rounded to the exact integer, each column reshaped to
    19x19 with ``order='F'`` and flattened row-major. Row ``i`` is ``train/face/face{i+1:05d}.pgm``.

    Returns
    -------
    Dataset
        ``X``: (2429, 361) float64 pixel values, exact integers 0..255, each row a 19x19 image in
        row-major (C) order (``X[i].reshape(19, 19)`` shows the face upright). ``y``: None (all faces).
        ``feature_names``: ``"r{row}c{col}"``.

    See Also
    --------
    load_cbcl_training : faces and non-faces.

    Notes
    -----
    The face data of Zass & Shashua (2006, Figs. 2-3), Sigg & Buhmann (2008, Figs. 2-3) and Asteris et
    al. (2014, Fig. 4).

    References
    ----------
    MIT CBCL Face Database #1, Center for Biological and Computational Learning, MIT.

    Examples
    --------
    The example reads the data file: from ``REPRO_DATA_MIRROR`` (set in CI and the test suite), the
    cache, or a download (see :func:`data_fetch.fetch`).

    >>> from data_fetch import load_cbcl_faces
    >>> faces = load_cbcl_faces()
    >>> faces.X.shape, float(faces.X.min()), float(faces.X.max()), faces.feature_names[:2]
    ((2429, 361), 0.0, 255.0, ['r0c0', 'r0c1'])
    """
    from scipy.io import loadmat

    files = _get("cbcl_faces/CBCL_Face.mat")
    path = files[0][0]
    M = np.asarray(loadmat(path)["M"], dtype=np.float64)
    if M.shape[0] != _CBCL_SIDE**2:
        raise _bad_content(path, f"M has shape {M.shape}, expected (361, n_images)")
    P = 256.0 * (1.0 - M)
    pixels = np.rint(P)
    if np.max(np.abs(P - pixels)) > 1e-6 or pixels.min() < 0 or pixels.max() > 255:
        raise _bad_content(path, "256*(1-M) is not an integer in 0..255")
    # Column j holds image j in column-major order: reshape (19,19) with order='F' == C-reshape + transpose.
    images = pixels.T.reshape(-1, _CBCL_SIDE, _CBCL_SIDE).transpose(0, 2, 1)
    X = np.ascontiguousarray(images.reshape(images.shape[0], -1))
    desc = (
        f"CBCL faces: {X.shape[0]} face images of 19x19 pixels, 8-bit grey values 0..255 (row-major). "
        f"Source: {CITATIONS['cbcl']}. Decoded from M = 1 - p/256 (column-major) in CBCL_Face.mat "
        f"(hiroyuki-kasai/NMFLibrary). {_copy_used(files)}"
    )
    return Dataset(X=X, y=None, feature_names=_pixel_names(_CBCL_SIDE), description=desc)


def _pixel_names(side: int) -> list[str]:
    return [f"r{r}c{c}" for r in range(side) for c in range(side)]


def _numpy_globals() -> dict[tuple[str, str], object]:
    try:  # numpy >= 2
        from numpy._core.multiarray import _reconstruct
    except ImportError:  # pragma: no cover - numpy 1.x
        from numpy.core.multiarray import _reconstruct
    return {
        ("numpy", "dtype"): np.dtype,
        ("numpy", "ndarray"): np.ndarray,
        ("numpy.core.multiarray", "_reconstruct"): _reconstruct,
        ("numpy._core.multiarray", "_reconstruct"): _reconstruct,
    }


class _NumpyOnlyUnpickler(pickle.Unpickler):
    """Unpickler that resolves only ``numpy.dtype``, ``numpy.ndarray`` and numpy's ``_reconstruct``."""

    def find_class(self, module: str, name: str):
        obj = _numpy_globals().get((module, name))
        if obj is None:
            raise pickle.UnpicklingError(
                f"refused global {module}.{name}: this pickle may only reference numpy.dtype, numpy.ndarray "
                "and numpy.core.multiarray._reconstruct."
            )
        return obj


def load_numpy_pickle(file) -> object:
    """Unpickle data that may only hold builtins and NumPy arrays (never arbitrary code).

    Parameters
    ----------
    file : bytes, path-like or binary file object

    Returns
    -------
    object
        The unpickled object.

    Raises
    ------
    pickle.UnpicklingError
        The pickle references any global other than ``numpy.dtype``, ``numpy.ndarray`` or
        ``numpy.core.multiarray._reconstruct`` (``numpy._core`` on NumPy 2).
    """
    if isinstance(file, (bytes, bytearray)):
        return _NumpyOnlyUnpickler(io.BytesIO(file)).load()
    if isinstance(file, (str, Path)):
        with open(file, "rb") as f:
            return _NumpyOnlyUnpickler(f).load()
    return _NumpyOnlyUnpickler(file).load()


def load_cbcl_training() -> Dataset:
    """The full CBCL training set (faces and non-faces), from ``cbcl_faces/training.pkl``.

    The pickle is read with a restricted unpickler (:func:`load_numpy_pickle`), never ``pickle.load``.

    Returns
    -------
    Dataset
        ``X``: (6977, 361) float64 pixel values 0..255, rows are 19x19 images in row-major order.
        ``y``: int64, 1 = face (2429, first), 0 = non-face (4548). The faces are the same set as
        :func:`load_cbcl_faces` but in a different order (the pickle keeps no file names).

    See Also
    --------
    load_cbcl_faces : the faces alone, in file order.

    Notes
    -----
    The faces and non-faces of Zass & Shashua (2006, Fig. 4).

    References
    ----------
    MIT CBCL Face Database #1, Center for Biological and Computational Learning, MIT.

    Examples
    --------
    The example reads the data file: from ``REPRO_DATA_MIRROR`` (set in CI and the test suite), the
    cache, or a download (see :func:`data_fetch.fetch`).

    >>> from data_fetch import load_cbcl_training
    >>> data = load_cbcl_training()
    >>> data.X.shape, int((data.y == 1).sum()), int((data.y == 0).sum())
    ((6977, 361), 2429, 4548)
    """
    files = _get("cbcl_faces/training.pkl")
    path = files[0][0]
    items = load_numpy_pickle(path)
    if not isinstance(items, list) or not items:
        raise _bad_content(path, "expected a non-empty list of (image, label) tuples")
    images, labels = [], []
    for k, item in enumerate(items):
        if not (isinstance(item, tuple) and len(item) == 2 and isinstance(item[0], np.ndarray)):
            raise _bad_content(path, f"item {k} is not an (ndarray, label) tuple")
        img, label = item
        if img.shape != (_CBCL_SIDE, _CBCL_SIDE) or int(label) not in (0, 1):
            raise _bad_content(path, f"item {k}: image shape {img.shape}, label {label!r}")
        images.append(img.reshape(-1))
        labels.append(int(label))
    X = np.stack(images).astype(np.float64)
    y = np.asarray(labels, dtype=np.int64)
    desc = (
        f"CBCL training set: {X.shape[0]} images of 19x19 pixels, grey values 0..255 (row-major); "
        f"y = 1 face ({int(y.sum())}), 0 non-face ({int((y == 0).sum())}). Source: {CITATIONS['cbcl']}. "
        f"Read from training.pkl (aparande/FaceDetection) with a restricted unpickler. {_copy_used(files)}"
    )
    return Dataset(X=X, y=y, feature_names=_pixel_names(_CBCL_SIDE), description=desc)


# ---------------------------------------------------------------------------------------------------
# Leukemia (Armstrong et al. 2002; Golub et al. 1999)
# ---------------------------------------------------------------------------------------------------


def _nonblank_lines(path: Path) -> list[str]:
    """Lines of a text file with any of LF, CRLF, CR or CR CR LF endings, blank lines dropped."""
    return [line for line in path.read_text(encoding="latin-1").splitlines() if line.strip()]


def _read_c45_names(path: Path) -> tuple[list[str], list[str]]:
    """Classes (first line) and attribute names (``<name> : continuous`` lines) of a C4.5 .names file."""
    lines = _nonblank_lines(path)
    classes = [c.strip() for c in lines[0].rstrip(".").split(",")]
    names = []
    for lineno, line in enumerate(lines[1:], start=2):
        name, sep, kind = line.rpartition(":")
        if not sep or kind.strip().rstrip(".") != "continuous":
            raise _bad_content(path, f"line {lineno} is not '<probe> : continuous': {line!r}")
        names.append(name.strip())
    return classes, names


def _read_c45_data(path: Path, n_features: int, classes: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Comma-separated rows of ``n_features`` numbers then a class label."""
    rows = [line.split(",") for line in _nonblank_lines(path)]
    for k, row in enumerate(rows):
        if len(row) != n_features + 1 or row[-1].strip() not in classes:
            raise _bad_content(path, f"row {k}: {len(row)} fields, label {row[-1].strip()!r}")
    X = np.array([row[:-1] for row in rows], dtype=np.float64)
    y = np.array([row[-1].strip() for row in rows])
    return X, y


def load_leukemia_armstrong() -> Dataset:
    """Armstrong et al. (2002) MLL leukemia: 72 samples x 12582 Affymetrix HG-U95Av2 probe sets.

    Returns
    -------
    Dataset
        ``X``: (72, 12582) float64 raw average-difference intensities (negative values included, no log
        transform), the 57 rows of ``MLL_train.data`` then the 15 of ``MLL_test.data``. ``y``: str,
        ``"ALL"`` (24), ``"MLL"`` (20), ``"AML"`` (28). ``feature_names``: probe ids from ``MLL.names``.
        ``meta``: column ``part`` (``"train"``/``"test"``), the Kent Ridge split of each row.

    See Also
    --------
    load_leukemia_golub : the other leukemia data set.

    Notes
    -----
    The gene expression data of Sigg & Buhmann (2008, Figs. 2 and 4) and Asteris et al. (2014, Fig. 5).

    References
    ----------
    Armstrong, S. A. et al. (2002). MLL translocations specify a distinct gene expression profile that
    distinguishes a unique leukemia. Nature Genetics 30:41-47.

    Examples
    --------
    The example reads the data file: from ``REPRO_DATA_MIRROR`` (set in CI and the test suite), the
    cache, or a download (see :func:`data_fetch.fetch`).

    >>> from data_fetch import load_leukemia_armstrong
    >>> data = load_leukemia_armstrong()
    >>> data.X.shape, [int((data.y == c).sum()) for c in ("ALL", "MLL", "AML")]
    ((72, 12582), [24, 20, 28])
    """
    files = _get(
        "leukemia_armstrong_mll/MLL.names",
        "leukemia_armstrong_mll/MLL_train.data",
        "leukemia_armstrong_mll/MLL_test.data",
    )
    (names_path, _), (train_path, _), (test_path, _) = files
    classes, probes = _read_c45_names(names_path)
    X_train, y_train = _read_c45_data(train_path, len(probes), classes)
    X_test, y_test = _read_c45_data(test_path, len(probes), classes)
    X = np.vstack([X_train, X_test])
    y = np.concatenate([y_train, y_test])
    meta = pd.DataFrame({"part": ["train"] * len(y_train) + ["test"] * len(y_test)})
    counts = ", ".join(f"{c} {int((y == c).sum())}" for c in classes)
    desc = (
        f"Leukemia (Armstrong et al. 2002): {X.shape[0]} samples x {X.shape[1]} probe sets, raw Affymetrix "
        f"HG-U95Av2 average-difference values; classes {counts}; train rows ({len(y_train)}) then test rows "
        f"({len(y_test)}). Source: {CITATIONS['armstrong']}. {_copy_used(files)}"
    )
    return Dataset(X=X, y=y, feature_names=probes, description=desc, meta=meta)


def load_leukemia_golub() -> Dataset:
    """Golub et al. (1999) leukemia, preprocessed: 38 samples x 3051 genes (multtest ``golub``).

    ``golub.RData`` stores genes x samples; this loader transposes it.

    Returns
    -------
    Dataset
        ``X``: (38, 3051) float64, each sample standardized over genes (mean 0, sd 1) by the multtest
        preprocessing. ``y``: str, ``"ALL"`` (27) / ``"AML"`` (11) from ``golub.cl`` 0/1.
        ``feature_names``: the Affymetrix probe ids (third column of ``golub.gnames``, unique), e.g.
        ``"AFFX-HUMISGF3A/M97935_MA_at"``. ``meta``: one row per gene, columns ``index`` (the original
        row number among the 7129 probes), ``description`` and ``probe_id``.

    See Also
    --------
    load_leukemia_armstrong : the other leukemia data set.

    Notes
    -----
    The data of Mattei et al. (2016, Fig. 3).

    References
    ----------
    Golub, T. R. et al. (1999). Molecular classification of cancer: class discovery and class prediction
    by gene expression monitoring. Science 286:531-537. Dudoit, S., Fridlyand, J. & Speed, T. P. (2002).
    Comparison of discrimination methods for the classification of tumors using gene expression data.
    JASA 97:77-87 (the preprocessing).

    Examples
    --------
    The example reads the data file: from ``REPRO_DATA_MIRROR`` (set in CI and the test suite), the
    cache, or a download (see :func:`data_fetch.fetch`).

    >>> from data_fetch import load_leukemia_golub
    >>> data = load_leukemia_golub()
    >>> data.X.shape, int((data.y == "ALL").sum()), int((data.y == "AML").sum())
    ((38, 3051), 27, 11)
    """
    files = _get("leukemia_golub/golub.RData")
    path = files[0][0]
    data = _read_rda(path)
    genes_by_samples = np.asarray(data["golub"], dtype=np.float64)
    n_genes, n_samples = genes_by_samples.shape
    gnames = np.asarray(data["golub.gnames"]).astype(str)
    if gnames.ndim == 1:  # rdata flattens the character matrix in column-major order
        gnames = gnames.reshape((n_genes, -1), order="F")
    cl = np.asarray(data["golub.cl"], dtype=np.float64)
    if gnames.shape != (n_genes, 3) or cl.shape != (n_samples,) or not np.isin(cl, (0.0, 1.0)).all():
        raise _bad_content(path, f"golub.gnames {gnames.shape}, golub.cl {cl.shape}")
    y = np.where(cl == 0.0, "ALL", "AML")
    meta = pd.DataFrame(
        {"index": gnames[:, 0].astype(np.int64), "description": gnames[:, 1], "probe_id": gnames[:, 2]}
    )
    desc = (
        f"Leukemia (Golub et al. 1999), preprocessed: {n_samples} samples x {n_genes} genes; classes "
        f"ALL {int((y == 'ALL').sum())}, AML {int((y == 'AML').sum())}. Source: {CITATIONS['golub']}. "
        f"{_copy_used(files)}"
    )
    X = np.ascontiguousarray(genes_by_samples.T)
    return Dataset(X=X, y=y, feature_names=list(gnames[:, 2]), description=desc, meta=meta)


# ---------------------------------------------------------------------------------------------------
# UCI LRS spectra
# ---------------------------------------------------------------------------------------------------

_LRS_HEADER = [
    "name", "lrs_class", "id_type", "ra", "dec", "scale_factor",
    "blue_base_1", "blue_base_2", "red_base_1", "red_base_2",
]  # fmt: skip
_LRS_INT = {"lrs_class", "id_type", "blue_base_1", "blue_base_2", "red_base_1", "red_base_2"}
_LRS_N_BLUE, _LRS_N_RED = 44, 49


def _lrs_wavelengths(path: Path) -> list[str]:
    """Channel names ``blue_<um>`` / ``red_<um>`` from the attribute list (11..103) in ``lrs.names``."""
    found = {}
    for line in _nonblank_lines(path):
        m = re.fullmatch(r"\s*-\s*(\d+)\.\s+(\d+\.\d+)\s*", line)
        if m:
            found[int(m.group(1))] = m.group(2)
    n = _LRS_N_BLUE + _LRS_N_RED
    first = len(_LRS_HEADER) + 1
    if sorted(found) != list(range(first, first + n)):
        raise _bad_content(path, f"expected wavelengths for attributes {first}..{first + n - 1}")
    return [f"{'blue' if k < first + _LRS_N_BLUE else 'red'}_{found[k]}" for k in range(first, first + n)]


def _lrs_records(path: Path) -> list[list[str]]:
    """Whitespace fields of each record; records are separated by blank lines and wrap over lines."""
    records, current = [], []
    for line in path.read_text(encoding="latin-1").splitlines():
        if line.strip():
            current.extend(line.split())
        elif current:
            records.append(current)
            current = []
    if current:
        records.append(current)
    return records


def load_lrs() -> Dataset:
    """UCI Low Resolution Spectrometer (IRAS LRS): 531 spectra x 93 flux channels.

    Returns
    -------
    Dataset
        ``X``: (531, 93) float64 fluxes (44 blue-band then 49 red-band channels), each spectrum
        normalized by the distributors to mean 5000. ``y``: int64 LRS class (0..99; tens digit = basic
        class). ``feature_names``: ``"blue_<wavelength um>"`` / ``"red_<wavelength um>"`` from
        ``lrs.names``. ``meta``: the 10 header fields per spectrum (name, lrs_class, id_type, ra, dec,
        scale_factor, blue_base_1, blue_base_2, red_base_1, red_base_2).

    Notes
    -----
    The spectra of Asteris et al. (2014, Fig. 6).

    References
    ----------
    IRAS Low Resolution Spectrometer database (J. Stutz, NASA Ames, 1988), UCI Machine Learning
    Repository.

    Examples
    --------
    The example reads the data file: from ``REPRO_DATA_MIRROR`` (set in CI and the test suite), the
    cache, or a download (see :func:`data_fetch.fetch`).

    >>> from data_fetch import load_lrs
    >>> data = load_lrs()
    >>> data.X.shape, data.feature_names[0], data.meta.shape
    ((531, 93), 'blue_7.8636', (531, 10))
    """
    files = _get("uci_lrs/lrs.data", "uci_lrs/lrs.names")
    (data_path, _), (names_path, _) = files
    channels = _lrs_wavelengths(names_path)
    records = _lrs_records(data_path)
    n_fields = len(_LRS_HEADER) + len(channels)
    for k, rec in enumerate(records):
        if len(rec) != n_fields:
            raise _bad_content(data_path, f"record {k} has {len(rec)} fields, expected {n_fields}")
    meta = pd.DataFrame([rec[: len(_LRS_HEADER)] for rec in records], columns=_LRS_HEADER)
    for col in _LRS_HEADER[1:]:
        meta[col] = meta[col].astype(np.int64 if col in _LRS_INT else np.float64)
    X = np.array([rec[len(_LRS_HEADER) :] for rec in records], dtype=np.float64)
    y = meta["lrs_class"].to_numpy(dtype=np.int64)
    desc = (
        f"IRAS LRS spectra: {X.shape[0]} spectra x {X.shape[1]} flux channels (44 blue, 49 red), each "
        f"normalized to mean 5000; y = LRS class ({np.unique(y).size} distinct values). Source: "
        f"{CITATIONS['lrs']}; copy from the Fernandez-Delgado et al. (2014) UCI bundle. {_copy_used(files)}"
    )
    return Dataset(X=X, y=y, feature_names=channels, description=desc, meta=meta)


# ---------------------------------------------------------------------------------------------------
# Pit props
# ---------------------------------------------------------------------------------------------------


def load_pitprops() -> pd.DataFrame:
    """The Pit Props correlation matrix (Jeffers 1967), 13 x 13 over 180 observations.

    Unlike the other loaders this returns a :class:`pandas.DataFrame`, not a :class:`Dataset`: only the
    correlation matrix was published, not the observations.

    Returns
    -------
    pandas.DataFrame
        Float64, variable names (topdiam, length, ..., diaknot) as index and columns.
        ``attrs["n_samples"] = 180`` and ``attrs["description"]`` (citation and copy used).

    See Also
    --------
    repro.Covariance.from_matrix : the operator the methods take for a given matrix.

    Notes
    -----
    The data of Zass & Shashua (2006, Fig. 5).

    References
    ----------
    Jeffers, J. N. R. (1967). Two case studies in the application of principal component analysis.
    Applied Statistics 16:225-236.

    Examples
    --------
    The example reads the data file: from ``REPRO_DATA_MIRROR`` (set in CI and the test suite), the
    cache, or a download (see :func:`data_fetch.fetch`).

    >>> from data_fetch import load_pitprops
    >>> R = load_pitprops()
    >>> R.shape, R.attrs["n_samples"], list(R.columns[:3]), float(R.iloc[0, 0])
    ((13, 13), 180, ['topdiam', 'length', 'moist'], 1.0)
    """
    files = _get("pitprops/pitprops.RData")
    path = files[0][0]
    obj = _read_rda(path)["pitprops"]
    values = np.asarray(obj, dtype=np.float64)
    dims = getattr(obj, "dims", ())
    names = [str(v) for v in obj.coords[dims[0]].values] if len(dims) == 2 else []
    if values.shape != (13, 13) or len(names) != 13 or not np.allclose(values, values.T):
        raise _bad_content(path, f"pitprops has shape {values.shape} and {len(names)} names")
    frame = pd.DataFrame(values, index=names, columns=names)
    frame.attrs["n_samples"] = 180
    frame.attrs["description"] = (
        f"Pit props: correlation matrix of 13 physical properties of 180 Corsican pine pit props. "
        f"Source: {CITATIONS['pitprops']}. {_copy_used(files)}"
    )
    return frame


# ---------------------------------------------------------------------------------------------------
# MNIST
# ---------------------------------------------------------------------------------------------------

MNIST_FILES = {
    "train": ("mnist/train-images-idx3-ubyte.gz", "mnist/train-labels-idx1-ubyte.gz"),
    "test": ("mnist/t10k-images-idx3-ubyte.gz", "mnist/t10k-labels-idx1-ubyte.gz"),
}
_IDX_IMAGES, _IDX_LABELS = 2051, 2049  # magic numbers: 0x0803 (ubyte, 3-D) and 0x0801 (ubyte, 1-D)


def read_idx(path: Path, magic: int) -> np.ndarray:
    """Read a gzipped idx file of unsigned bytes (LeCun's format: big-endian header, then data).

    Parameters
    ----------
    path : pathlib.Path
        The ``.gz`` file.
    magic : int
        Expected magic number (2051 images, 2049 labels); its low byte is the number of dimensions.

    Returns
    -------
    numpy.ndarray of uint8
        Shaped as the header says, e.g. (60000, 28, 28).
    """
    with gzip.open(path, "rb") as f:
        data = f.read()
    (found,) = struct.unpack(">I", data[:4])
    if found != magic:
        raise _bad_content(path, f"idx magic number {found}, expected {magic}")
    ndim = magic & 0xFF
    dims = struct.unpack(f">{ndim}I", data[4 : 4 + 4 * ndim])
    arr = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim)
    if arr.size != math.prod(dims):
        raise _bad_content(path, f"{arr.size} data bytes for dimensions {dims}")
    return arr.reshape(dims)


def _check_split(split: str) -> str:
    if split not in MNIST_FILES:
        raise ValueError(f"split must be 'train' or 'test'; got {split!r}.")
    return split


def mnist_uint8(split: str = "train") -> tuple[np.ndarray, np.ndarray, list[tuple[Path, Entry]]]:
    """MNIST images as uint8 (n, 784), labels uint8 (n,) and the files read (internal helper).

    The parsed arrays are cached as .npz in the writable cache, keyed by the files' hashes.
    """
    files = _get(*MNIST_FILES[_check_split(split)])
    (img_path, img_entry), (lbl_path, lbl_entry) = files

    def build() -> dict[str, np.ndarray]:
        images = read_idx(img_path, _IDX_IMAGES)
        labels = read_idx(lbl_path, _IDX_LABELS)
        if images.shape[0] != labels.shape[0]:
            raise _bad_content(img_path, f"{images.shape[0]} images but {labels.shape[0]} labels")
        return {"images": images.reshape(images.shape[0], -1), "labels": labels}

    arrays = cached_arrays(f"mnist-{split}", [img_entry.hash, lbl_entry.hash], build)
    return arrays["images"], arrays["labels"], files


def load_mnist(split: str = "train") -> Dataset:
    """MNIST handwritten digits (LeCun et al. 1998).

    Parameters
    ----------
    split : {"train", "test"}
        The 60000 training or the 10000 test images.

    Returns
    -------
    Dataset
        ``X``: (60000 or 10000, 784) float64 pixel values 0..255, each row a 28x28 image in row-major
        order. ``y``: int64 digit labels 0..9. ``feature_names``: None.

    Raises
    ------
    ValueError
        ``split`` is not ``"train"`` or ``"test"``.

    See Also
    --------
    data_fetch.load_mnist_variation : one digit of an MNIST variation.

    Notes
    -----
    The large real data set of this project's Roweis (1997) claims (EM PCA at 60000 x 784).

    References
    ----------
    LeCun, Y., Bottou, L., Bengio, Y. & Haffner, P. (1998). Gradient-based learning applied to document
    recognition. Proc. IEEE 86:2278-2324.

    Examples
    --------
    The example reads the data file: from ``REPRO_DATA_MIRROR`` (set in CI and the test suite), the
    cache, or a download (see :func:`data_fetch.fetch`).

    >>> import numpy as np
    >>> from data_fetch import load_mnist
    >>> test = load_mnist(split="test")
    >>> test.X.shape, np.bincount(test.y).tolist()[:3]
    ((10000, 784), [980, 1135, 1032])
    """
    images, labels, files = mnist_uint8(split)
    X = images.astype(np.float64)
    y = labels.astype(np.int64)
    desc = (
        f"MNIST {split} split: {X.shape[0]} images of 28x28 pixels (row-major), grey values 0..255; "
        f"y = digit 0..9. Source: {CITATIONS['mnist']}. Parsed from the original idx gzip files. "
        f"{_copy_used(files)}"
    )
    return Dataset(X=X, y=y, feature_names=None, description=desc)


# ---------------------------------------------------------------------------------------------------
# Certified-optimal sparse PCA benchmarks (Berk & Bertsimas 2019; Li & Xie 2024)
# ---------------------------------------------------------------------------------------------------

from ._needs import SPCA_OPTIMAL_LI_XIE  # noqa: E402 - the names live with the file list

_BB_FILES = {
    "pitprops": ("pitprops.csv", None, None),
    "miniboone": ("miniBoone.jld", "miniBooNE", "normMiniBooNE"),
    "communities": ("communities.jld", "communities", "normCommunities"),
    "arrhythmia": ("arrhythmia.jld", "arrhythmia", "normArrhythmia"),
}
_LI_XIE = SPCA_OPTIMAL_LI_XIE

#: The instances :func:`load_spca_optimal` knows: ``(source, name)`` pairs.
SPCA_OPTIMAL_INSTANCES = tuple(("berk_bertsimas", n) for n in _BB_FILES) + tuple(
    ("li_xie", n) for n in _LI_XIE
)


def load_spca_optimal(source: str, name: str, *, correlation: bool = False) -> np.ndarray:
    """A covariance (or correlation) matrix on which exact sparse PCA solvers are measured.

    Parameters
    ----------
    source : {"berk_bertsimas", "li_xie"}
        Berk & Bertsimas (2019): "pitprops" (correlation), "miniboone", "communities", "arrhythmia" (each a
        covariance, or with ``correlation=True`` the correlation matrix they also ship). Li & Xie (2024): the
        thirteen covariance matrices "pitprops", "housing", "keggdirected", "pol", "wdbc", "dermatology",
        "spambase", "digits", "buzz", "song", "gas", "Eisen1", "Eisen2".
    name : str
        The instance.
    correlation : bool, default False
        Berk & Bertsimas's correlation matrix (``norm...`` in their files; Arrhythmia's holds NaN where a
        feature is constant). Pit Props is a correlation matrix either way.

    Returns
    -------
    ndarray, shape (p, p)
        Symmetric float64 matrix.

    Examples
    --------
    >>> from data_fetch import load_spca_optimal
    >>> load_spca_optimal("berk_bertsimas", "communities", correlation=True).shape
    (101, 101)
    >>> load_spca_optimal("li_xie", "housing").shape
    (13, 13)
    """
    if source == "berk_bertsimas":
        if name not in _BB_FILES:
            raise ValueError(
                f"name must be one of {sorted(_BB_FILES)} for source 'berk_bertsimas'; got {name!r}."
            )
        fname, raw, norm = _BB_FILES[name]
        files = _get(f"spca_optimal_berk_bertsimas/{fname}")
        path = files[0][0]
        if raw is None:
            M = np.loadtxt(path, delimiter=",", dtype=np.float64)
        else:
            import h5py

            with h5py.File(path, "r") as f:
                M = np.asarray(f[norm if correlation else raw], dtype=np.float64)
    elif source == "li_xie":
        if name not in _LI_XIE:
            raise ValueError(f"name must be one of {list(_LI_XIE)} for source 'li_xie'; got {name!r}.")
        files = _get(f"spca_optimal_li_xie/{name}_txt")
        path = files[0][0]
        M = pd.read_csv(path, index_col=0).to_numpy(dtype=np.float64)
    else:
        raise ValueError(f"source must be 'berk_bertsimas' or 'li_xie'; got {source!r}.")
    if M.ndim != 2 or M.shape[0] != M.shape[1]:
        raise _bad_content(path, f"a matrix of shape {M.shape}")
    finite = np.isfinite(M)
    if not np.allclose(np.where(finite, M, 0), np.where(finite, M, 0).T, rtol=1e-10, atol=0):
        raise _bad_content(path, "an asymmetric matrix")
    return M


def load_spca_optimal_results(table: int) -> pd.DataFrame:
    """Li & Xie's (2024) published result tables 2, 8, 9 and 10 (optimal values, gaps and times).

    Parameters
    ----------
    table : {2, 8, 9, 10}
        Table 2: their proven Pit Props optima for s = 4..10 with the times of four exact methods; tables
        8-10: the gaps (%) and times of their heuristics.

    Returns
    -------
    pandas.DataFrame
        The CSV as published (columns with the same name are suffixed ``.1``, ``.2``, ...).

    Examples
    --------
    >>> from data_fetch import load_spca_optimal_results
    >>> t = load_spca_optimal_results(2)
    >>> [int(s) for s in t["s"]]
    [4, 5, 6, 7, 8, 9, 10]
    """
    if table not in (2, 8, 9, 10):
        raise ValueError(f"table must be 2, 8, 9 or 10; got {table!r}.")
    files = _get(f"spca_optimal_li_xie/results_table{table}.csv")
    return pd.read_csv(files[0][0], index_col=0)
