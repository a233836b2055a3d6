"""Tests of data_fetch: file resolution (mirror, cache, download), the CLI, and every loader.

Resolution tests use a temporary registry, mirror and cache, and a pooch.retrieve that fails at once, so
they never touch the network. Loader tests (``@pytest.mark.data``) read the real files through
REPRO_DATA_MIRROR (see tests/conftest.py) and check values published in shared/data/SOURCES.md.
"""

from __future__ import annotations

import hashlib
import io
import os
import pickle
import re
import warnings
import zipfile
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pooch
import pytest
import requests

import data_fetch
from data_fetch import (
    DataHashMismatchError,
    DataUnavailableError,
    cli,
    fetch,
    file_state,
    load_mnist_variation,
    registry,
)
from data_fetch import _registry as reg
from data_fetch import mnist_variations as mv
from data_fetch.loaders import load_numpy_pickle

MNIST = ["mnist/train-images-idx3-ubyte.gz", "mnist/train-labels-idx1-ubyte.gz"]
MNIST_TEST = ["mnist/t10k-images-idx3-ubyte.gz", "mnist/t10k-labels-idx1-ubyte.gz"]


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """Every path under ``folder`` with its size and mtime (to prove nothing was written)."""
    out = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs + files:
            p = Path(root, name)
            st = p.stat()
            out[str(p.relative_to(folder))] = (st.st_size, st.st_mtime_ns)
    return out


# ---------------------------------------------------------------------------------------------------
# resolution with a temporary registry
# ---------------------------------------------------------------------------------------------------


@pytest.fixture
def fake(tmp_path, monkeypatch):
    """Temporary registry (two required files, one optional), empty mirror and cache, no network."""
    content = {"a/one.txt": b"one\n", "b/two.bin": bytes(range(256)), "c/opt.dat": b"optional"}
    lines = ["# test registry"]
    for name, data in content.items():
        if name == "c/opt.dat":
            lines.append("#@optional")
        lines.append(f"{name} sha256:{_sha256(data)} https://example.invalid/{name}")
    registry_file = tmp_path / "registry.txt"
    registry_file.write_text("\n".join(lines) + "\n")
    mirror, cache = tmp_path / "mirror", tmp_path / "cache"
    mirror.mkdir()
    calls = []

    def no_network(url, **kwargs):
        calls.append((url, kwargs))
        raise requests.ConnectionError(f"network disabled in tests ({url})")

    monkeypatch.setattr(pooch, "retrieve", no_network)
    monkeypatch.setattr(reg, "REGISTRY_PATH", registry_file)
    monkeypatch.setenv("REPRO_DATA_MIRROR", str(mirror))
    monkeypatch.setenv("REPRO_DATA_DIR", str(cache))
    monkeypatch.delenv("REPRO_OFFLINE", raising=False)
    return SimpleNamespace(registry=registry_file, mirror=mirror, cache=cache, content=content, calls=calls)


def _put(folder: Path, name: str, data: bytes) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


def test_registry_file_parses(fake):
    entries = registry()
    assert list(entries) == ["a/one.txt", "b/two.bin", "c/opt.dat"]
    assert [e.optional for e in entries.values()] == [False, False, True]
    assert entries["a/one.txt"].algorithm == "sha256"
    assert entries["a/one.txt"].digest == _sha256(b"one\n")


@pytest.mark.parametrize(
    ("line", "match"),
    [
        ("a/x sha256:abc", "expected"),
        ("a/x md99:abc https://x", "hashlib algorithm"),
        ("../x sha256:abc https://x", "relative path"),
        ("a/x sha256:xyz https://x", "invalid literal"),
    ],
)
def test_registry_rejects_bad_lines(tmp_path, line, match):
    path = tmp_path / "r.txt"
    path.write_text(line + "\n")
    with pytest.raises(ValueError, match=match):
        registry(path)


def test_unknown_name_is_refused(fake):
    with pytest.raises(ValueError, match=r"not in the data registry.*a/one\.txt"):
        fetch("nope.txt")


def test_offline_without_copy_names_file_url_and_variables(fake):
    with pytest.raises(DataUnavailableError) as info:
        fetch("a/one.txt")
    msg = str(info.value)
    for part in ("a/one.txt", "https://example.invalid/a/one.txt", "REPRO_DATA_MIRROR", "REPRO_DATA_DIR"):
        assert part in msg
    assert len(fake.calls) == 1  # one download attempt, which failed at once
    timeout = fake.calls[0][1]["downloader"].kwargs["timeout"]
    assert timeout[0] <= 10  # a short connect timeout: fail fast when offline
    assert file_state("a/one.txt") == "missing"


def test_repro_offline_skips_the_download(fake, monkeypatch):
    monkeypatch.setenv("REPRO_OFFLINE", "1")
    with pytest.raises(DataUnavailableError, match="REPRO_OFFLINE"):
        fetch("a/one.txt")
    assert fake.calls == []


def test_mirror_file_is_used_in_place(fake):
    _put(fake.mirror, "a/one.txt", fake.content["a/one.txt"])
    before = _snapshot(fake.mirror)
    path = fetch("a/one.txt")
    assert path == fake.mirror / "a/one.txt"
    assert path.read_bytes() == b"one\n"
    assert file_state("a/one.txt") == "mirror"
    assert _snapshot(fake.mirror) == before  # nothing written, nothing touched
    assert not fake.cache.exists()  # nothing copied to the cache
    assert fake.calls == []


def test_mirror_bad_hash_is_refused_without_fall_through(fake):
    _put(fake.mirror, "a/one.txt", b"tampered\n")
    _put(fake.cache, "a/one.txt", fake.content["a/one.txt"])  # a good copy must not be used silently
    with pytest.raises(DataHashMismatchError) as info:
        fetch("a/one.txt")
    msg = str(info.value)
    assert "a/one.txt" in msg and str(fake.mirror / "a/one.txt") in msg and "REPRO_DATA_MIRROR" in msg
    assert isinstance(info.value, DataUnavailableError)
    assert file_state("a/one.txt") == "corrupt"
    assert fake.calls == []


def test_cache_bad_hash_is_refused(fake):
    path = _put(fake.cache, "b/two.bin", b"short")
    with pytest.raises(DataHashMismatchError, match=re.escape(str(path))) as info:
        fetch("b/two.bin")
    assert "Delete" in str(info.value)
    assert path.read_bytes() == b"short"  # refused, not replaced or deleted behind the user's back
    assert fake.calls == []


def test_a_folder_in_place_of_the_file_is_reported_as_a_folder(fake, monkeypatch):
    folder = fake.cache / "b/two.bin"
    folder.mkdir(parents=True)
    assert file_state("b/two.bin") == "folder"
    assert reg.folder_in_place("b/two.bin") == folder
    with pytest.raises(DataUnavailableError, match=re.escape(f"{folder} is a folder, not the file")):
        fetch("b/two.bin")  # a download could not write over it: refused, not attempted
    assert fake.calls == [] and folder.is_dir()
    monkeypatch.setenv("REPRO_OFFLINE", "1")
    mirror_folder = fake.mirror / "a/one.txt"
    mirror_folder.mkdir(parents=True)
    assert file_state("a/one.txt") == "folder"
    with pytest.raises(DataUnavailableError, match="is a folder, not the file; remove or rename"):
        fetch("a/one.txt")
    _put(fake.cache, "a/one.txt", fake.content["a/one.txt"])  # a good copy elsewhere is used
    assert file_state("a/one.txt") == "cached" and reg.folder_in_place("a/one.txt") == mirror_folder


def test_cached_file_is_used(fake):
    _put(fake.cache, "b/two.bin", fake.content["b/two.bin"])
    assert fetch("b/two.bin") == fake.cache / "b/two.bin"
    assert file_state("b/two.bin") == "cached"


def test_download_goes_to_the_cache_and_is_verified(fake, monkeypatch):
    def fake_retrieve(url, known_hash, fname, path, **kwargs):
        return str(_put(Path(path), fname, fake.content["b/two.bin"]))

    monkeypatch.setattr(pooch, "retrieve", fake_retrieve)
    got = fetch("b/two.bin")
    assert got == fake.cache / "b/two.bin"
    assert _snapshot(fake.mirror) == {}

    def bad_retrieve(url, known_hash, fname, path, **kwargs):
        return str(_put(Path(path), fname, b"wrong bytes"))

    monkeypatch.setattr(pooch, "retrieve", bad_retrieve)
    with pytest.raises(DataHashMismatchError, match=re.escape("a/one.txt")):
        fetch("a/one.txt")


def test_missing_mirror_folder_is_an_error(fake, tmp_path, monkeypatch):
    monkeypatch.setenv("REPRO_DATA_MIRROR", str(tmp_path / "no-such-dir"))
    with pytest.raises(DataUnavailableError, match="REPRO_DATA_MIRROR"):
        fetch("a/one.txt")


def test_env_is_read_at_call_time(fake, tmp_path, monkeypatch):
    other = tmp_path / "other-cache"
    _put(other, "a/one.txt", fake.content["a/one.txt"])
    monkeypatch.setenv("REPRO_DATA_DIR", str(other))
    assert fetch("a/one.txt") == other / "a/one.txt"
    assert data_fetch.cache_dir() == other


def test_hashes_are_memoized_per_path_size_mtime(tmp_path, monkeypatch):
    path = _put(tmp_path, "f.bin", b"x" * 1000)
    first = reg.file_hash(path)
    assert first == _sha256(b"x" * 1000)

    def no_rehash(*args, **kwargs):
        raise AssertionError("file rehashed")

    monkeypatch.setattr(hashlib, "new", no_rehash)
    assert reg.file_hash(path) == first
    monkeypatch.undo()
    path.write_bytes(b"y" * 1001)  # new size and mtime: hashed again
    assert reg.file_hash(path) == _sha256(b"y" * 1001)


def test_cli_lists_states_and_exit_code(fake, capsys):
    assert cli([]) == 1  # required files missing
    out = capsys.readouterr().out
    assert "a/one.txt" in out and "missing" in out and "optional" in out
    _put(fake.mirror, "a/one.txt", fake.content["a/one.txt"])
    _put(fake.cache, "b/two.bin", fake.content["b/two.bin"])
    assert cli(["list"]) == 0  # the optional c/opt.dat is missing but does not count
    out = capsys.readouterr().out
    assert re.search(r"a/one.txt\s+mirror\s+4 B", out)
    assert re.search(r"b/two.bin\s+cached\s+256 B", out)
    assert re.search(r"c/opt.dat\s+missing", out)


def test_cli_fetch_reports_failures_without_traceback(fake, capsys):
    assert cli(["--fetch"]) == 1
    out = capsys.readouterr().out
    assert "FAILED: a/one.txt" in out and "ConnectionError" in out
    assert "failed (optional): c/opt.dat" in out
    assert "Traceback" not in out
    _put(fake.mirror, "a/one.txt", fake.content["a/one.txt"])
    _put(fake.mirror, "b/two.bin", fake.content["b/two.bin"])
    assert cli(["fetch"]) == 0


def test_shipped_registry_lists_every_source():
    entries = registry()
    required = [e for e in entries.values() if not e.optional]
    optional = [e for e in entries.values() if e.optional]
    assert len(required) == 13 + 21 and all(e.algorithm == "sha256" for e in required)
    pinned = re.compile(r"https://raw\.githubusercontent\.com/[^/]+/[^/]+/[0-9a-f]{40}/")
    assert all(pinned.match(e.url) for e in required)
    assert sorted(e.name for e in optional) == sorted(mv.VARIANTS.values())
    assert all(e.algorithm == "sha1" and "icml2007data" in e.url for e in optional)


# ---------------------------------------------------------------------------------------------------
# restricted unpickler
# ---------------------------------------------------------------------------------------------------


class _Evil:
    def __reduce__(self):
        return (os.system, ("echo pwned",))


def test_restricted_unpickler_refuses_code():
    with pytest.raises(pickle.UnpicklingError, match="refused global"):
        load_numpy_pickle(pickle.dumps(_Evil(), protocol=3))
    with pytest.raises(pickle.UnpicklingError, match=re.escape("builtins.eval")):
        load_numpy_pickle(pickle.dumps(eval, protocol=3))


def test_restricted_unpickler_reads_numpy_arrays():
    data = [(np.arange(6, dtype=np.uint8).reshape(2, 3), 1)]
    back = load_numpy_pickle(io.BytesIO(pickle.dumps(data, protocol=3)))
    np.testing.assert_array_equal(back[0][0], data[0][0])
    assert back[0][1] == 1


# ---------------------------------------------------------------------------------------------------
# loaders on the real files
# ---------------------------------------------------------------------------------------------------


@pytest.mark.data("cbcl_faces/CBCL_Face.mat", "cbcl_faces/training.pkl")
def test_cbcl_faces():
    from scipy.io import loadmat

    ds = data_fetch.load_cbcl_faces()
    X = ds.X
    assert X.shape == (2429, 361) and X.dtype == np.float64 and ds.y is None
    assert np.array_equal(X, np.rint(X)) and X.min() == 0 and X.max() == 255
    # Independent decoding of single pixels: M[c*19 + r, i] is pixel (r, c) of face i (column-major).
    M = loadmat(fetch("cbcl_faces/CBCL_Face.mat"))["M"]
    for i, r, c in [(0, 0, 1), (0, 1, 0), (5, 3, 17), (2428, 18, 2)]:
        assert X[i].reshape(19, 19)[r, c] == 256 * (1 - M[c * 19 + r, i])
    # Pinned values of face00001 (row 0): first row starts 104 122 142; pixel (1, 0) is 90; centre 175.
    np.testing.assert_array_equal(X[0].reshape(19, 19)[0, :3], [104, 122, 142])
    assert X[0].reshape(19, 19)[1, 0] == 90 and X[0, 180] == 175 and X[2428, 180] == 242
    # The same face in training.pkl (another copy, another order) is equal image for image, upright:
    train = data_fetch.load_cbcl_training()
    faces = train.X[train.y == 1]
    for i in (0, 1, 2428):
        assert np.flatnonzero((faces == X[i]).all(axis=1)).size >= 1
        transposed = X[i].reshape(19, 19).T.reshape(-1)
        assert np.flatnonzero((faces == transposed).all(axis=1)).size == 0
    assert np.array_equal(np.unique(faces, axis=0), np.unique(X, axis=0))  # same set (2426 distinct)
    assert "CBCL" in ds.description and "Copy used" in ds.description


@pytest.mark.data("cbcl_faces/training.pkl")
def test_cbcl_training():
    ds = data_fetch.load_cbcl_training()
    assert ds.X.shape == (6977, 361) and ds.X.dtype == np.float64
    assert np.bincount(ds.y).tolist() == [4548, 2429]
    assert (ds.y[:2429] == 1).all()  # faces first
    assert ds.X.min() == 0 and ds.X.max() == 255


ARMSTRONG = [f"leukemia_armstrong_mll/{f}" for f in ("MLL.names", "MLL_train.data", "MLL_test.data")]


def _counts(y: np.ndarray) -> dict[str, int]:
    return {str(c): int((y == c).sum()) for c in np.unique(y)}


@pytest.mark.data(*ARMSTRONG)
def test_leukemia_armstrong():
    ds = data_fetch.load_leukemia_armstrong()
    assert ds.X.shape == (72, 12582) and ds.X.dtype == np.float64
    assert len(ds.feature_names) == 12582
    assert ds.feature_names[0] == "AFFX-MurIL2_at" and ds.feature_names[-1] == "109_at"
    assert _counts(ds.y) == {"ALL": 24, "MLL": 20, "AML": 28}
    assert ds.meta["part"].tolist() == ["train"] * 57 + ["test"] * 15
    assert _counts(ds.y[:57]) == {"ALL": 20, "MLL": 17, "AML": 20}
    assert ds.X.min() == -15584 and ds.X.max() == 58380


@pytest.mark.data("leukemia_golub/golub.RData")
def test_leukemia_golub():
    ds = data_fetch.load_leukemia_golub()
    assert ds.X.shape == (38, 3051) and ds.X.dtype == np.float64
    assert (ds.y == "ALL").sum() == 27 and (ds.y == "AML").sum() == 11
    assert list(ds.y[:27]) == ["ALL"] * 27
    assert ds.feature_names[0] == "AFFX-HUMISGF3A/M97935_MA_at"
    assert len(set(ds.feature_names)) == 3051
    assert ds.meta.loc[0, "description"] == "AFFX-HUMISGF3A/M97935_MA_at (endogenous control)"
    assert ds.meta.loc[0, "index"] == 36
    # Each array (sample) was standardized over genes: rows of X have mean 0 and sd 1.
    np.testing.assert_allclose(ds.X.mean(axis=1), 0, atol=1e-5)
    np.testing.assert_allclose(ds.X.std(axis=1, ddof=1), 1, atol=1e-5)
    assert ds.X.min() == pytest.approx(-1.60767) and ds.X.max() == pytest.approx(3.89822)


@pytest.mark.data("uci_lrs/lrs.data", "uci_lrs/lrs.names")
def test_lrs():
    ds = data_fetch.load_lrs()
    assert ds.X.shape == (531, 93) and ds.X.dtype == np.float64
    np.testing.assert_allclose(ds.X.mean(axis=1), 5000, atol=0.003)
    assert ds.feature_names[0] == "blue_7.8636" and ds.feature_names[44] == "red_10.9929"
    assert ds.feature_names[-1] == "red_22.9216"
    assert isinstance(ds.meta, pd.DataFrame) and ds.meta.shape == (531, 10)
    assert ds.meta.loc[0, "name"] == "12043-6225" and ds.meta.loc[0, "lrs_class"] == 28
    assert ds.meta.loc[0, "dec"] == pytest.approx(-62.428)
    np.testing.assert_array_equal(ds.y, ds.meta["lrs_class"])
    assert np.unique(ds.y).size == 48
    assert np.bincount(ds.y // 10).tolist() == [12, 90, 273, 38, 96, 1, 2, 6, 7, 6]


@pytest.mark.data("pitprops/pitprops.RData")
def test_pitprops():
    C = data_fetch.load_pitprops()
    assert isinstance(C, pd.DataFrame) and C.shape == (13, 13)
    names = ["topdiam", "length", "moist", "testsg", "ovensg", "ringtop", "ringbut", "bowmax", "bowdist",
             "whorls", "clear", "knots", "diaknot"]  # fmt: skip
    assert list(C.index) == names and list(C.columns) == names
    assert C.attrs["n_samples"] == 180 and "Jeffers" in C.attrs["description"]
    np.testing.assert_array_equal(C.to_numpy(), C.to_numpy().T)
    np.testing.assert_array_equal(np.diag(C.to_numpy()), 1.0)
    eig = np.linalg.eigvalsh(C.to_numpy())[::-1]
    np.testing.assert_allclose(eig[:3], [4.219, 2.378, 1.878], atol=5e-4)


@pytest.fixture(scope="module")
def mnist_train():
    return data_fetch.load_mnist("train")


@pytest.mark.data(*MNIST)
def test_mnist_train(mnist_train):
    ds = mnist_train
    assert ds.X.shape == (60000, 784) and ds.X.dtype == np.float64
    assert ds.y[:10].tolist() == [5, 0, 4, 1, 9, 2, 1, 3, 1, 4]
    assert np.bincount(ds.y).tolist() == [5923, 6742, 5958, 6131, 5842, 5421, 5918, 6265, 5851, 5949]
    assert ds.X.min() == 0 and ds.X.max() == 255
    assert ds.X.mean() / 255 == pytest.approx(0.1307, abs=5e-5)


@pytest.mark.data(*MNIST_TEST)
def test_mnist_test_and_parsed_cache():
    mirror = Path(os.environ["REPRO_DATA_MIRROR"])
    before = _snapshot(mirror)
    ds = data_fetch.load_mnist("test")
    assert ds.X.shape == (10000, 784) and ds.y[:10].tolist() == [7, 2, 1, 0, 4, 1, 4, 9, 5, 9]
    assert np.bincount(ds.y).tolist() == [980, 1135, 1032, 1010, 982, 892, 958, 1028, 974, 1009]
    again = data_fetch.load_mnist("test")  # from the parsed .npz cache
    np.testing.assert_array_equal(again.X, ds.X)
    parsed = list((data_fetch.cache_dir() / "parsed").glob("mnist-test-*.npz"))
    assert len(parsed) == 1
    assert _snapshot(mirror) == before  # nothing written into the mirror


def test_mnist_bad_split():
    with pytest.raises(ValueError, match="split"):
        data_fetch.load_mnist("valid")


# ---------------------------------------------------------------------------------------------------
# MNIST variations
# ---------------------------------------------------------------------------------------------------


def _variation(name, **kwargs):
    with pytest.warns(UserWarning, match="recreating it from MNIST"):
        return load_mnist_variation(name, **kwargs)


@pytest.mark.data(*MNIST)
def test_mnist_variation_recreated(mnist_train):
    sevens = mnist_train.X[mnist_train.y == 7]
    basic = _variation("basic", n=50, random_state=3)
    assert basic.X.shape == (50, 784) and basic.X.dtype == np.float64
    assert (basic.y == 7).all() and "RECREATED" in basic.description
    # basic rows are MNIST sevens, unchanged
    for row in basic.X[:5]:
        assert (sevens == row).all(axis=1).any()
    for name in ("back-rand", "back-image"):
        X = _variation(name, n=50, random_state=3).X
        assert X.shape == (50, 784) and X.min() >= 0 and X.max() <= 255
        np.testing.assert_array_equal(X, _variation(name, n=50, random_state=3).X)  # reproducible
        assert not np.array_equal(X, basic.X)
        # max-combination on the same digits: every digit pixel is preserved (never darkened)
        assert (X >= basic.X).all()
        assert (X[basic.X == 255] == 255).all()
        assert (X[basic.X == 0] > 0).mean() > 0.5  # the background shows where the digit is blank
    other = _variation("back-rand", n=50, random_state=4).X
    assert not np.array_equal(other, _variation("back-rand", n=50, random_state=3).X)


@pytest.mark.data(*MNIST)
def test_mnist_variation_back_image_patches_are_textured():
    patches = mv.natural_patches(200, np.random.default_rng(0))
    assert patches.shape == (200, 784)
    assert (patches.std(axis=1) >= mv.MIN_PATCH_STD).all()
    assert patches.min() >= 0 and patches.max() <= 255


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"name": "back-rot"}, "'basic', 'back-rand', 'back-image'"),
        ({"name": "basic", "digit": 10}, "digit"),
        ({"name": "basic", "digit": 2.5}, "digit"),
        ({"name": "basic", "n": 0}, "n must be"),
    ],
)
def test_mnist_variation_bad_args(kwargs, match):
    with pytest.raises(ValueError, match=match):
        load_mnist_variation(**kwargs)


@pytest.mark.data(*MNIST)
def test_mnist_variation_n_above_available():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        with pytest.raises(ValueError, match=r"n must be in 1\.\.6265"):
            load_mnist_variation("basic", n=6266)


def _amat_zip(tmp_path: Path, member: str, images: np.ndarray, labels: list[int]) -> bytes:
    lines = [" ".join(f"{v:.6f}" for v in img) + f" {lab}" for img, lab in zip(images, labels, strict=True)]
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        zf.writestr(member, "\n".join(lines) + "\n")
        zf.writestr(member.replace("_train", "_test"), "")
    return buf.getvalue()


@pytest.mark.parametrize(
    ("name", "member", "transposed"),
    [("basic", "mnist_train.amat", False), ("back-rand", "mnist_background_random_train.amat", True)],
)
def test_mnist_variation_from_original_zip(tmp_path, monkeypatch, name, member, transposed):
    """With the zip available (fake one here) it is read, transposed back where needed, and scaled."""
    stored = np.zeros((3, 784))
    stored[:, 1] = [1.0, 0.5, 0.25]  # pixel (0, 1) as stored in the .amat
    data = _amat_zip(tmp_path, member, stored, [7, 3, 7])
    mirror = tmp_path / "mirror"
    _put(mirror, mv.VARIANTS[name], data)
    lines = [f"{mv.VARIANTS[name]} sha1:{hashlib.sha1(data).hexdigest()} http://example.invalid/x.zip"]
    (tmp_path / "registry.txt").write_text("\n".join(lines) + "\n")
    monkeypatch.setattr(reg, "REGISTRY_PATH", tmp_path / "registry.txt")
    monkeypatch.setenv("REPRO_DATA_MIRROR", str(mirror))
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no recreation warning
        ds = load_mnist_variation(name, digit=7, n=2, random_state=0)
    assert "original data" in ds.description
    upright = ds.X.reshape(2, 28, 28)
    r, c = (1, 0) if transposed else (0, 1)
    np.testing.assert_allclose(upright[:, r, c], [255.0, 63.75])
    assert upright.sum() == pytest.approx(255.0 + 63.75)
    with pytest.raises(ValueError, match=r"n must be in 1\.\.2"):
        load_mnist_variation(name, digit=7, n=3)


def test_mnist_variation_bad_zip_hash_is_not_recreated(tmp_path, monkeypatch):
    mirror = tmp_path / "mirror"
    _put(mirror, mv.VARIANTS["basic"], b"not the zip")
    line = f"{mv.VARIANTS['basic']} sha1:{'0' * 40} http://example.invalid/x"
    (tmp_path / "registry.txt").write_text(line + "\n")
    monkeypatch.setattr(reg, "REGISTRY_PATH", tmp_path / "registry.txt")
    monkeypatch.setenv("REPRO_DATA_MIRROR", str(mirror))
    with pytest.raises(DataHashMismatchError, match=re.escape("mnist.zip")):
        load_mnist_variation("basic")


# ---------------------------------------------------------------------------------------------------
# integrity of the parsed cache and of the hash memo; one plain message for the recreated variations
# ---------------------------------------------------------------------------------------------------


def test_parsed_cache_with_a_flipped_header_is_rebuilt(tmp_path, monkeypatch):
    from data_fetch import _parsed

    monkeypatch.setenv("REPRO_DATA_DIR", str(tmp_path))
    builds = []

    def build():  # big enough that a short read of the member never reaches the zip's CRC check
        builds.append(1)
        images = (np.arange(2000 * 784) % 251).astype(np.uint8).reshape(2000, 784)
        return {"images": images, "labels": np.arange(2000)}

    first = _parsed.cached_arrays("toy", ["sha256:00"], build)
    path = _parsed.parsed_path("toy", ["sha256:00"])
    raw = path.read_bytes()
    assert raw.count(b"(2000, 784)") == 1
    path.write_bytes(raw.replace(b"(2000, 784)", b"(2000, 684)"))  # one digit of the array header changed
    again = _parsed.cached_arrays("toy", ["sha256:00"], build)
    assert again["images"].shape == (2000, 784) and len(builds) == 2
    np.testing.assert_array_equal(again["images"], first["images"])
    # a changed data byte is caught as well, and the rebuilt entry is read without a rebuild
    raw = path.read_bytes()
    i = raw.index(bytes(range(100, 120)))
    path.write_bytes(raw[:i] + b"\x00" + raw[i + 1 :])
    _parsed.cached_arrays("toy", ["sha256:00"], build)
    assert len(builds) == 3
    _parsed.cached_arrays("toy", ["sha256:00"], build)
    assert len(builds) == 3


def test_parsed_cache_edited_with_its_digest_recomputed_is_rebuilt(tmp_path, monkeypatch):
    """Issue 35: tampered labels with the digest recomputed were served; the entry is keyed (HMAC)."""
    import hashlib

    from data_fetch import _parsed

    monkeypatch.setenv("REPRO_DATA_DIR", str(tmp_path))
    builds = []

    def build():
        builds.append(1)
        return {"images": np.arange(12, dtype=np.uint8).reshape(3, 4), "labels": np.array([7, 1, 7])}

    _parsed.cached_arrays("toy", ["sha256:02"], build)
    path = _parsed.parsed_path("toy", ["sha256:02"])
    with np.load(path) as z:
        arrays = {k: z[k] for k in z.files if k != "__sha256__"}
    arrays["labels"] = np.array([1, 1, 1])  # tampered, and the public sha256 recomputed as before
    h = hashlib.sha256(path.stem.encode())
    for name in sorted(arrays):
        a = np.ascontiguousarray(arrays[name])
        h.update(f"\n{name}\n{a.dtype.str}\n{a.shape}\n".encode())
        h.update(memoryview(a).cast("B"))
    np.savez(path, **arrays, __sha256__=np.array(h.hexdigest()))
    again = _parsed.cached_arrays("toy", ["sha256:02"], build)
    assert again["labels"].tolist() == [7, 1, 7] and len(builds) == 2
    key = path.parent / ".hmac-key"
    assert key.stat().st_mode & 0o777 == 0o600
    key.chmod(0o644)  # readable by others: not used, nothing is read from the cache
    _parsed.cached_arrays("toy", ["sha256:02"], build)
    assert len(builds) == 3


def test_parsed_cache_file_mode_follows_the_umask(tmp_path, monkeypatch):
    from data_fetch import _parsed

    monkeypatch.setenv("REPRO_DATA_DIR", str(tmp_path))
    _parsed.cached_arrays("mode", ["sha256:01"], lambda: {"a": np.zeros(3)})
    mode = _parsed.parsed_path("mode", ["sha256:01"]).stat().st_mode & 0o777
    umask = os.umask(0)
    os.umask(umask)
    assert mode == 0o666 & ~umask


def test_hash_memo_sees_an_in_place_change_with_mtime_restored(tmp_path):
    f = tmp_path / "data.bin"
    f.write_bytes(b"a" * 1000)
    first = reg.file_hash(f)
    st = f.stat()
    with open(f, "r+b") as fh:  # same size, same inode, mtime put back
        fh.write(b"b")
    os.utime(f, ns=(st.st_atime_ns, st.st_mtime_ns))
    assert f.stat().st_mtime_ns == st.st_mtime_ns and f.stat().st_size == st.st_size
    assert reg.file_hash(f) == _sha256(b"b" + b"a" * 999) != first


@pytest.mark.data(*MNIST)
def test_recreated_variations_say_so_once_and_plainly(monkeypatch, caplog):
    monkeypatch.setattr(mv, "_ANNOUNCED", [])
    with caplog.at_level("INFO"):
        for name in ("basic", "back-rand"):
            _variation(name, n=5, random_state=0)  # each call still warns (callers record it)
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and "recreated from MNIST" in lines[0] and "REPRO_OFFLINE" in lines[0]
    assert not any("Downloading data from" in m for m in lines)


def test_download_attempt_is_not_logged_by_pooch(fake, monkeypatch, caplog):
    monkeypatch.delenv("REPRO_OFFLINE", raising=False)

    def noisy(url, **kwargs):
        pooch.get_logger().info("Downloading data from '%s' to file '%s'.", url, kwargs.get("fname"))
        raise requests.ConnectionError("no network in tests")

    monkeypatch.setattr(pooch, "retrieve", noisy)
    with caplog.at_level("INFO"), pytest.raises(DataUnavailableError, match="repro data --fetch"):
        fetch("a/one.txt", registry=fake.registry)
    assert not any("Downloading data from" in r.getMessage() for r in caplog.records)


def test_data_cli_names_itself_repro_data(fake, capsys):
    assert cli([], prog="repro data") == 1
    out = capsys.readouterr().out
    assert "repro data --fetch" in out and "python -m data_fetch" not in out
