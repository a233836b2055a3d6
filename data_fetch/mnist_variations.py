"""MNIST variations of Larochelle et al. (2007): the originals when available, else a documented recreation.

Larochelle, H., Erhan, D., Courville, A., Bergstra, J. & Bengio, Y. (2007). An empirical evaluation of
deep architectures on problems with many factors of variation. ICML 2007. Data:
http://www.iro.umontreal.ca/~lisa/icml2007data/ (``mnist.zip``, ``mnist_background_random.zip``,
``mnist_background_images.zip``; registry names ``mnist_variations/*.zip``, optional entries).

Original data (when the zip can be had through :func:`data_fetch.fetch`)
    The ``*_train.amat`` member is read: 12000 images (their 10000 train + 2000 validation), one image
    per line as 784 values in [0, 1] followed by the label. The two background variants store each
    28x28 image transposed relative to mnist-basic (skdata's ``TRANSPOSE_IMAGES``); they are transposed
    back. Values are multiplied by 255 to match :func:`data_fetch.load_mnist` (so they are not integers).

Recreation (when the zip cannot be had: a ``UserWarning`` says so, and ``description`` says so)
    The published recipe is: basic = a subsample of MNIST; back-rand = background pixels drawn uniformly
    in 0..255; back-image = random patches of natural grey-scale images, patches of low variance
    rejected. It leaves open how digit and background combine and which images are used. The choices
    made here, all in this module:

    * digits: the MNIST **train** split (:data:`MNIST_SPLIT`), images of the requested digit, ``n`` drawn
      without replacement and kept in file order;
    * combination: **pixelwise max(digit, background)** (:func:`combine`), so the stroke stays visible
      (digit pixels of 255 stay 255 and no pixel gets darker than the digit);
    * back-rand background: independent integers uniform in 0..255 per pixel;
    * back-image background: 28x28 (:data:`PATCH_SIZE`) patches from the two photographs shipped inside
      scikit-learn (``sklearn.datasets.load_sample_images()``: ``china.jpg`` and ``flower.jpg``, see
      :data:`NATURAL_IMAGES`), converted to grey with ITU-R BT.601 luma (0.299 R + 0.587 G + 0.114 B,
      rounded), since the 20 images of the original are not available; image and position uniform at
      random; a patch with standard deviation below :data:`MIN_PATCH_STD` (on 0..255) is rejected and
      redrawn.

    With the same ``random_state`` the three variants use the same digit images (the subsample is drawn
    first), so a background variant is ``>=`` the basic one pixel by pixel.
"""

from __future__ import annotations

import functools
import io
import logging
import warnings
import zipfile
from pathlib import Path

import numpy as np

from ._parsed import cached_arrays
from ._registry import OFFLINE_ENV, DataHashMismatchError, DataUnavailableError, fetch, registry
from .loaders import CITATIONS, Dataset, _copy_used, mnist_uint8

__all__ = [
    "MIN_PATCH_STD",
    "MNIST_SPLIT",
    "NATURAL_IMAGES",
    "PATCH_SIZE",
    "VARIANTS",
    "combine",
    "load_mnist_variation",
    "natural_patches",
]

#: Variant name -> registry name of the original zip.
VARIANTS = {
    "basic": "mnist_variations/mnist.zip",
    "back-rand": "mnist_variations/mnist_background_random.zip",
    "back-image": "mnist_variations/mnist_background_images.zip",
}
#: Variants whose .amat images are stored transposed relative to mnist-basic.
TRANSPOSED = frozenset({"back-rand", "back-image"})
#: MNIST split the recreated digits come from.
MNIST_SPLIT = "train"
#: Side of the square background patches (the MNIST image side).
PATCH_SIZE = 28
#: Patches whose pixel standard deviation (grey values 0..255) is below this are rejected.
MIN_PATCH_STD = 10.0
#: The natural images used for back-image: scikit-learn's sample images.
NATURAL_IMAGES = ("china.jpg", "flower.jpg")
_MAX_DRAWS = 10_000
_LOG = logging.getLogger("data_fetch")
#: Whether this process has said (once, in plain words) that the variations are recreated.
_ANNOUNCED: list[str] = []

LAROCHELLE_2007 = (
    "Larochelle, H., Erhan, D., Courville, A., Bergstra, J. & Bengio, Y. (2007). An empirical evaluation "
    "of deep architectures on problems with many factors of variation. ICML 2007"
)


def combine(digits: np.ndarray, background: np.ndarray) -> np.ndarray:
    """Put digits on a background: pixelwise ``max(digit, background)`` (the recreation's one rule)."""
    return np.maximum(digits, background)


@functools.lru_cache(maxsize=1)
def _grey_images() -> tuple[np.ndarray, ...]:
    """scikit-learn's sample photographs in :data:`NATURAL_IMAGES` order, as grey float64 0..255."""
    from sklearn.datasets import load_sample_images

    sample = load_sample_images()
    by_name = {Path(f).name: img for f, img in zip(sample.filenames, sample.images, strict=True)}
    greys = []
    for name in NATURAL_IMAGES:
        rgb = by_name[name].astype(np.float64)
        grey = np.rint(rgb @ np.array([0.299, 0.587, 0.114]))  # ITU-R BT.601 luma
        grey.setflags(write=False)
        greys.append(grey)
    return tuple(greys)


def natural_patches(n: int, rng: np.random.Generator) -> np.ndarray:
    """Draw ``n`` grey 28x28 patches of the natural images, rejecting low-variance ones.

    Parameters
    ----------
    n : int
        Number of patches.
    rng : numpy.random.Generator
        Source of the image choice and position.

    Returns
    -------
    numpy.ndarray of float64, shape (n, 784)
        Patches flattened row-major, grey values 0..255, each with std >= :data:`MIN_PATCH_STD`.
    """
    images = _grey_images()
    out = np.empty((n, PATCH_SIZE * PATCH_SIZE))
    for i in range(n):
        for _ in range(_MAX_DRAWS):
            img = images[rng.integers(len(images))]
            r = rng.integers(img.shape[0] - PATCH_SIZE + 1)
            c = rng.integers(img.shape[1] - PATCH_SIZE + 1)
            patch = img[r : r + PATCH_SIZE, c : c + PATCH_SIZE]
            if patch.std() >= MIN_PATCH_STD:
                out[i] = patch.reshape(-1)
                break
        else:  # pragma: no cover - cannot happen with the shipped photographs
            raise RuntimeError(f"no patch with std >= {MIN_PATCH_STD} found in {_MAX_DRAWS} draws.")
    return out


def _check_name(name: str) -> str:
    if name not in VARIANTS:
        raise ValueError(f"name must be one of {', '.join(map(repr, VARIANTS))}; got {name!r}.")
    return name


def _subsample(available: int, n: int, digit: int, where: str, rng: np.random.Generator) -> np.ndarray:
    """Sorted indices of ``n`` of ``available`` images, drawn without replacement."""
    if n > available:
        raise ValueError(
            f"n must be in 1..{available} (the number of digit-{digit} images in {where}); got {n}."
        )
    return np.sort(rng.choice(available, size=n, replace=False))


def _read_amat_zip(path: Path, transposed: bool) -> dict[str, np.ndarray]:
    """Images (n, 784) in [0, 1], upright, and int labels from the ``*_train.amat`` member of a zip."""
    with zipfile.ZipFile(path) as zf:
        members = [m for m in zf.namelist() if m.endswith("_train.amat")]
        if len(members) != 1:
            raise ValueError(f"{path}: expected one '*_train.amat' member, found {members}.")
        with zf.open(members[0]) as f:
            table = np.loadtxt(io.TextIOWrapper(f, encoding="ascii"), dtype=np.float64, ndmin=2)
    if table.shape[1] != PATCH_SIZE * PATCH_SIZE + 1:
        raise ValueError(f"{path}: {members[0]} has {table.shape[1]} columns, expected 785.")
    images, labels = table[:, :-1], table[:, -1].astype(np.int64)
    if transposed:
        images = images.reshape(-1, PATCH_SIZE, PATCH_SIZE).transpose(0, 2, 1).reshape(len(images), -1)
    return {"images": np.ascontiguousarray(images), "labels": labels}


def _from_original(name: str, path: Path, digit: int, n: int, rng: np.random.Generator) -> Dataset:
    entry = registry()[VARIANTS[name]]
    arrays = cached_arrays(
        f"larochelle-{name}-train", [entry.hash], lambda: _read_amat_zip(path, name in TRANSPOSED)
    )
    pool = arrays["images"][arrays["labels"] == digit]
    idx = _subsample(len(pool), n, digit, f"the {name} training .amat", rng)
    X = pool[idx] * 255.0
    desc = (
        f"MNIST variation mnist-{name} (original data): {n} images of digit {digit}, drawn without "
        f"replacement from the {len(pool)} in the *_train.amat file (10000 train + 2000 validation images)"
        f"{', transposed back to upright' if name in TRANSPOSED else ''}; values in [0, 1] multiplied by 255 "
        f"to match load_mnist. Source: {LAROCHELLE_2007}. {_copy_used([(path, entry)])}"
    )
    return Dataset(X=X, y=np.full(n, digit, dtype=np.int64), feature_names=None, description=desc)


def _recreate(name: str, digit: int, n: int, rng: np.random.Generator) -> Dataset:
    images, labels, files = mnist_uint8(MNIST_SPLIT)
    pool = images[labels == digit]
    idx = _subsample(len(pool), n, digit, f"the MNIST {MNIST_SPLIT} split", rng)
    digits = pool[idx].astype(np.float64)
    if name == "basic":
        X, how = digits, "no background"
    elif name == "back-rand":
        X = combine(digits, rng.integers(0, 256, size=digits.shape).astype(np.float64))
        how = "background pixels i.i.d. uniform integers in 0..255"
    else:
        X = combine(digits, natural_patches(n, rng))
        how = (
            f"background = random {PATCH_SIZE}x{PATCH_SIZE} patches of scikit-learn's sample photographs "
            f"{' and '.join(NATURAL_IMAGES)} (grey by BT.601 luma; the 20 original images are unavailable), "
            f"patches with std < {MIN_PATCH_STD:g} rejected"
        )
    combination = "" if name == "basic" else "; combined as pixelwise max(digit, background)"
    desc = (
        f"MNIST variation mnist-{name}, RECREATED (not the original Larochelle et al. data, which could not "
        f"be had): {n} images of digit {digit} drawn without replacement from the {len(pool)} in the MNIST "
        f"{MNIST_SPLIT} split, {how}{combination}; grey values 0..255. Recipe of {LAROCHELLE_2007}; choices "
        f"documented in data_fetch.mnist_variations. MNIST: {CITATIONS['mnist']}. {_copy_used(files)}"
    )
    return Dataset(X=X, y=np.full(n, digit, dtype=np.int64), feature_names=None, description=desc)


def load_mnist_variation(name: str, digit: int = 7, n: int = 500, random_state=None) -> Dataset:
    """Images of one digit from an MNIST variation (Larochelle et al. 2007), original or recreated.

    Parameters
    ----------
    name : {"basic", "back-rand", "back-image"}
        mnist-basic, mnist-back-rand (random-noise background) or mnist-back-image (natural-image
        background).
    digit : int, default 7
        Digit class, 0..9.
    n : int, default 500
        Number of images, 1..(number of images of ``digit`` available).
    random_state : None, int or numpy.random.Generator
        Seeds the subsample and, when recreating, the backgrounds. The same value gives the same output.

    Returns
    -------
    Dataset
        ``X``: (n, 784) float64 grey values 0..255 (row-major 28x28, upright), ``y``: ``digit`` repeated.
        ``description`` says whether the original zip was used or the data were recreated, and how.

    Raises
    ------
    ValueError
        Unknown ``name`` (the message lists the valid ones), ``digit`` not in 0..9, ``n`` out of range.
    DataHashMismatchError
        A local copy of the zip has the wrong hash (never used, never silently replaced by a recreation).

    Warns
    -----
    UserWarning
        The original zip cannot be had (e.g. offline): the data are recreated from MNIST following the
        published recipe, with the choices listed in the module docstring. The warning is raised on every
        such call (callers may record it); besides, the first recreation in a process logs one plain
        line on the ``data_fetch`` logger (stderr by default) saying that and why.

    See Also
    --------
    data_fetch.load_mnist : the MNIST digits the variations are recreated from.

    Notes
    -----
    The data of Mattei et al. (2016, Table 2).

    References
    ----------
    Larochelle, H., Erhan, D., Courville, A., Bergstra, J. & Bengio, Y. (2007). An empirical evaluation
    of deep architectures on problems with many factors of variation. ICML.

    Examples
    --------
    The example reads the MNIST files (and the variation's zip where present) from ``REPRO_DATA_MIRROR``
    (set in CI and the test suite), the cache, or a download; without the zip the images are recreated
    with a UserWarning, silenced here.

    >>> import warnings
    >>> from data_fetch import load_mnist_variation
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     data = load_mnist_variation("basic", digit=7, n=20, random_state=0)
    >>> data.X.shape, set(data.y.tolist()), float(data.X.min()) >= 0.0, float(data.X.max()) <= 255.0
    ((20, 784), {7}, True, True)
    """
    from repro._validation import check_int, check_random_state  # lazy: keep `import data_fetch` light

    _check_name(name)
    digit = check_int(digit, "digit", low=0, high=9)
    n = check_int(n, "n", low=1)
    rng = check_random_state(random_state)
    try:
        path = fetch(VARIANTS[name])
    except DataHashMismatchError:
        raise
    except DataUnavailableError as exc:
        if not _ANNOUNCED:  # one plain line per process on stderr; the warning below is per call
            _ANNOUNCED.append(name)
            _LOG.warning(
                "MNIST variations: the original Larochelle et al. (2007) archives are not in "
                "REPRO_DATA_MIRROR or the cache (they are optional) and %s, so mnist-basic, back-rand and "
                "back-image are recreated from MNIST (recipe and choices: data_fetch.mnist_variations).",
                "REPRO_OFFLINE forbids a download" if OFFLINE_ENV in str(exc) else "could not be downloaded",
            )
        warnings.warn(
            f"MNIST variation {name!r}: the original Larochelle et al. (2007) data cannot be had "
            f"({str(exc).split('. URL:')[0]}); recreating it from MNIST following the published recipe "
            f"(choices in data_fetch.mnist_variations). Results are not the original data set.",
            UserWarning,
            stacklevel=2,
        )
        return _recreate(name, digit, n, rng)
    return _from_original(name, path, digit, n, rng)
