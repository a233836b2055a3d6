"""Issue 35's reproducers, each pinned: the right answer or a clear error naming the argument and the fix.

1. column names (``feature_names_in_``; reordered or renamed columns refused at ``transform``),
2. a result CSV cut off mid-row (``repro redraw`` refuses it, naming it),
3. ``gsppca_vem`` on rank-1 data and on data scaled by 1e-200,
4. a matrix that is not a covariance (``-np.cov(X)``),
5. ``SpannogramPCA``'s rank, ``EMSparsePCA(renormalize=2)``, ``metrics.cardinality(tol=-1)``, indices of
   ``fscore_selection``,
6. one ``n_components`` rule,
7. the command line (seed, names, foreign CSV, temporaries), 8. the lock (in ``test_lock_symlink.py``) and
   the parsed cache (in ``test_data_fetch.py``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings

import numpy as np
import pandas as pd
import pytest
from test_cli_frictions import repro as repro_cli

import repro
from repro import EMPCA, GSPPCA, NSPCA, Covariance, EMSparsePCA, SensiblePCA, SpannogramPCA, metrics
from repro.baselines import GSPCA, SSPCA, SPCAZou, gspca, gspca_path
from repro.em_pca import LowRankWarning

ESTIMATORS = {
    "EMPCA": lambda: EMPCA(2, random_state=0),
    "SensiblePCA": lambda: SensiblePCA(2, random_state=0),
    "EMSparsePCA": lambda: EMSparsePCA(2, cardinality=3, random_state=0),
    "NSPCA": lambda: NSPCA(2, random_state=0, max_iter=200),
    "SpannogramPCA": lambda: SpannogramPCA(2, cardinality=3, n_samples=300, random_state=0),
    "GSPPCA": lambda: GSPPCA(1, random_state=0),
    "GSPCA": lambda: GSPCA(2, cardinality=3),
    "SPCAZou": lambda: SPCAZou(2, cardinality=3),
    "SSPCA": lambda: SSPCA(2, alpha=0.1, random_state=0, max_iter=100),
}


def _frame(seed=0):
    X = np.random.default_rng(seed).standard_normal((60, 5)) @ np.diag([5, 3, 2, 1, 0.5])
    return pd.DataFrame(X, columns=list("abcde"))


# --------------------------------------------------------------------------- 1. column names
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_column_names_are_recorded_and_checked(name):
    D = _frame()
    m = ESTIMATORS[name]().fit(D)
    assert list(m.feature_names_in_) == list("abcde") and m.n_features_in_ == 5
    with pytest.warns(UserWarning, match="does not have valid feature names"):  # scikit-learn's warning
        np.testing.assert_allclose(m.transform(D), m.transform(D.to_numpy()))  # same data, same scores
    with pytest.raises(ValueError, match="Feature names must be in the same order"):  # was 14.96 off
        m.transform(D[list("edcba")])
    with pytest.raises(ValueError, match="Feature names unseen at fit time"):
        m.transform(D.rename(columns={"a": "z"}))
    with pytest.raises(ValueError, match="Feature names must be in the same order"):
        m.score(D[list("edcba")])
    m.fit(D.to_numpy())  # a refit without names forgets them
    assert not hasattr(m, "feature_names_in_")


# --------------------------------------------------------------------------- 3. gsppca_vem
def test_gsppca_vem_refuses_rank_one_and_underflowing_data():
    rng = np.random.default_rng(0)
    R = np.outer(rng.standard_normal(60), rng.standard_normal(10)) + 2
    with pytest.raises(ValueError, match="estimate of sigma1 is zero: X has"):  # was NaN
        repro.gsppca_vem(R, 1, random_state=0)
    X = rng.standard_normal((60, 10))
    for s in (1e-200, 1e-250):
        with pytest.raises(ValueError, match="X is too small for float64"):  # was alpha = sigma2 = 0
            repro.gsppca_vem(X * s, 1, random_state=0)
    res = repro.gsppca_vem(X * 1e-100, 1, random_state=0)  # still fine where float64 holds it
    ref = repro.gsppca_vem(X, 1, random_state=0)
    assert res.sigma2 / 1e-200 == pytest.approx(ref.sigma2, rel=1e-9)


# --------------------------------------------------------------------------- 4. covariances
def _neg_cov():
    X = np.random.default_rng(1).standard_normal((40, 6))
    return -np.cov(X, rowvar=False)


@pytest.mark.parametrize(
    "call",
    [
        lambda C: gspca(C, 2, precomputed=True),
        lambda C: gspca_path(C, 3, precomputed=True),
        lambda C: repro.nspca(C, 1, alpha=1.0, precomputed=True, max_iter=50),
        lambda C: Covariance(matrix=C),
        lambda C: Covariance.from_matrix(C),
        lambda C: repro.leading_eigenpairs(C, 2),
        lambda C: metrics.explained_variance(C, np.eye(6)[:1]),
        lambda C: repro.spannogram_bound(Covariance.from_matrix(C), 2),
    ],
    ids=[
        "gspca",
        "gspca_path",
        "nspca",
        "Covariance",
        "from_matrix",
        "leading_eigenpairs",
        "metrics",
        "bound",
    ],
)
def test_a_matrix_that_is_not_a_covariance_is_refused(call):
    with pytest.raises(ValueError, match="not positive semi-definite"):  # was negative variances
        call(_neg_cov())
    C = -_neg_cov()
    call(C)  # a covariance is accepted
    lo = np.linalg.eigvalsh(C)[0]
    call(C - (lo + 1e-13) * np.eye(6))  # PSD up to round-off (smallest eigenvalue -1e-13): accepted


# --------------------------------------------------------------------------- 5. silent parameter changes
def test_spannogram_rank_is_never_changed_silently():
    X = np.random.default_rng(0).standard_normal((60, 10))
    with pytest.raises(ValueError, match="rank"):  # was run as 1
        SpannogramPCA(rank=1.5).fit(X)
    with pytest.raises(ValueError, match="rank=50 is more than that"):  # was run as 10
        SpannogramPCA(rank=50).fit(X)
    with pytest.raises(ValueError, match="rank"):
        repro.spannogram_bound(X, 3, rank=50)
    auto = SpannogramPCA(cardinality=3, random_state=0).fit(X)
    three = SpannogramPCA(cardinality=3, rank=3, random_state=0).fit(X)
    np.testing.assert_array_equal(auto.components_, three.components_)  # "auto" is 3 where the data allow
    two = SpannogramPCA(cardinality=2, random_state=0).fit(X[:, :2])  # and lower where they do not
    assert two.components_.shape == (1, 2)


def test_other_parameters_are_checked():
    X = np.random.default_rng(0).standard_normal((30, 6))
    with pytest.raises(ValueError, match="'renormalize' parameter of EMSparsePCA"):
        EMSparsePCA(renormalize=2).fit(X)
    with pytest.raises(ValueError, match="'tol' parameter of cardinality must be"):
        metrics.cardinality(np.eye(3), tol=-1)
    assert metrics.cardinality(np.eye(3), tol=0).tolist() == [1, 1, 1]
    with pytest.raises(ValueError, match="out of range for n_features=5"):
        metrics.fscore_selection([0, 7], [0, 1], n_features=5)
    with pytest.raises(ValueError, match="negative indices"):
        metrics.fscore_selection([0, -1], [0, 1])


# --------------------------------------------------------------------------- 6. n_components
@pytest.mark.filterwarnings("ignore::sklearn.exceptions.ConvergenceWarning")
@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_one_n_components_rule(name):
    X = np.random.default_rng(0).standard_normal((4, 10))
    est = ESTIMATORS[name]()
    if "cardinality" in est.get_params():
        est.set_params(cardinality=None)
    messages = []
    for k in (5, 4, 3, 2, 1):
        try:
            with warnings.catch_warnings():
                # 4 centred samples span 3 dimensions: SensiblePCA's k = 3 says so (its documented warning)
                warnings.simplefilter("ignore", LowRankWarning)
                est.set_params(n_components=k).fit(X)
        except ValueError as exc:
            if "is too large for X" in str(exc):  # the rule (not a method's own reason, e.g. deflation)
                messages.append((k, str(exc)))
    # every refusal says the same limit in the same words, and no k above min(n, p) = 4 is accepted
    limits = {msg.split("must be at most ")[1].split(" ")[0] for _, msg in messages}
    assert len(limits) == 1, messages
    assert all(f"n_components={k} is too large for X of shape (4, 10)" in msg for k, msg in messages)
    assert 5 in [k for k, _ in messages]


def test_function_entry_points_follow_the_rule():
    X = np.random.default_rng(0).standard_normal((4, 10))
    for call in (
        lambda: repro.em_pca(X, 5),
        lambda: repro.nspca(X, 5, alpha=1.0),
        lambda: gspca(X, 2, n_components=5),
        lambda: repro.baselines.sspca_fit(X, 5, 0.1),
        lambda: repro.gsppca_vem(X, 5),
    ):
        with pytest.raises(ValueError, match=r"n_components=5 is too large for X of shape \(4, 10\)"):
            call()


# --------------------------------------------------------------------------- Dask arrays in the baselines
@pytest.mark.parametrize(
    "call",
    [
        lambda X: GSPCA(2, cardinality=3).fit(X),
        lambda X: SPCAZou(2, cardinality=3).fit(X),
        lambda X: SSPCA(2, alpha=0.1).fit(X),
        lambda X: repro.baselines.pathspca(X, [2]),
        lambda X: repro.baselines.simple_thresholding(X, 2),
        lambda X: repro.baselines.cesr_select(X, 2),
        lambda X: repro.baselines.spca_zou_path(X, [2]),
    ],
    ids=["GSPCA", "SPCAZou", "SSPCA", "pathspca", "thresholding", "cesr", "spca_zou_path"],
)
def test_baselines_refuse_dask_arrays_instead_of_gathering_them(call):
    da = pytest.importorskip("dask.array")
    X = da.from_array(np.random.default_rng(0).standard_normal((40, 6)), chunks=(10, 6))
    with pytest.raises(ValueError, match=r"X is a dask.array.*X.compute\(\)"):
        call(X)


# --------------------------------------------------------------------------- 2 and 7. the command line
def _repro(*args):
    return repro_cli(*args, env={"REPRO_OFFLINE": "1", "MPLBACKEND": "Agg"})


@pytest.mark.parametrize(
    "args, words",
    [
        (
            ["run", "sigg2008_prop32", "--quick", "--seed", "-1"],
            "--seed: must be an integer in 0..4294967295",
        ),
        (["run", "sigg2008_prop32", "--quick", "--seed", "2**40"], "--seed: must be an integer"),
        (["run", "x" * 300, "--quick"], "has 300 characters"),
        (["run", "../figures/x", "--quick"], "is not a module name"),
        (["redraw", "a b"], "is not a module name"),
        (["run", "os.path", "--quick"], "unknown experiment(s): os.path"),
        (["run", "experiments.runner.cli", "--quick"], "unknown experiment(s): experiments.runner.cli"),
        (["run", "sigg2008_prop32", "--jobs", "0"], "--jobs must be at least 1"),
    ],
)
def test_command_line_refuses_bad_values_in_one_line(args, words, tmp_path):
    res = _repro(*args, "--out", str(tmp_path / "out"))
    assert res.returncode == 2, res.stderr
    assert words in res.stderr and "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").glob("*.csv"))  # nothing computed


def test_result_files_are_read_strictly(tmp_path, capsys):
    from experiments.runner import cli

    out = tmp_path / "out"
    assert cli.main(["run", "sigg2008_prop32", "--quick", "--out", str(out)]) == 0
    csv = out / "sigg2008_prop32.csv"
    whole = csv.read_bytes()
    cases = {
        "cut off mid-row": whole[:300],  # the case: "2/2 runs converged", exit 0
        "cut at a row boundary": b"".join(whole.splitlines(keepends=True)[:3]),  # the recorded sha256
        "a row short": whole.replace(b"\n", b"\n,", 1)[:-3] + b"\n",
        "empty": b"",
        "foreign columns": b"a,b\n1,2\n",
        "not UTF-8": b"\xff\xfe\x00a\n",
    }
    for label, content in cases.items():
        csv.write_bytes(content)
        capsys.readouterr()
        assert cli.main(["redraw", "sigg2008_prop32", "--out", str(out)]) == 1, label
        err = capsys.readouterr().err
        assert str(csv) in err and "Traceback" not in err, (label, err)
        assert "run `repro run sigg2008_prop32`" in err, (label, err)
    csv.write_bytes(whole)
    assert cli.main(["redraw", "sigg2008_prop32", "--out", str(out)]) == 0


def test_temporaries_of_a_killed_writer_are_removed(tmp_path):
    from experiments.runner import _atomic

    out = tmp_path / "out"
    (out / "claims").mkdir(parents=True)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    stale = out / f".x.{dead.pid}.0123abcd.tmp.csv"
    mine = out / f".y.{os.getpid()}.0123abcd.tmp.csv"  # a writer still running: kept
    other = out / ".notes.tmp.csv"  # not one of ours
    for p in (stale, mine, other):
        p.write_text("a\n")
    removed = _atomic.remove_stale_temporaries(out)
    assert removed == [stale] and mine.exists() and other.exists()

