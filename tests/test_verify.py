"""``repro verify`` (issue 33): the comparison rules, the report, the exit status, the quick references.

The quick regression itself runs in the experiment tests: ``tests/quickrun.py`` compares the quick run
each of them makes with ``experiments/references/quick/``.
"""

from __future__ import annotations

import json
import textwrap

import numpy as np
import pandas as pd
import pytest

from experiments.runner import cli, registry, verify
from experiments.runner.verify import (
    ATOL,
    QUICK_REFERENCES,
    RTOL,
    column_rule,
    compare_experiment,
    compare_frames,
)


def _frame(**over):
    df = pd.DataFrame(
        {
            "method": ["EM", "EM", "PCA"],
            "n_iter": [12, 30, 1],
            "support": [3.0, np.nan, 5.0],  # a count stored as float (NaN where it does not apply)
            "variance": [1.5, 2.25, np.inf],
            "converged": [True, False, True],
            "seconds": [0.1, 0.2, 0.3],
        }
    )
    return df.assign(**over)


# --------------------------------------------------------------------------- rules
def test_default_rules():
    df = _frame()
    assert column_rule("x", "seconds") == "timing"
    assert column_rule("x", "ours_s") == "timing" and column_rule("x", "speedup_plain") == "timing"
    assert column_rule("x", "peak_rss_mb") == "timing" and column_rule("x", "wall_seconds") == "timing"
    assert column_rule("x", "method", df.method, df.method) == "text"
    assert column_rule("x", "converged", df.converged, df.converged) == "text"
    assert column_rule("x", "n_iter", df.n_iter, df.n_iter) == "exact"
    assert column_rule("x", "support", df.support, df.support) == "exact"
    assert column_rule("x", "variance", df.variance, df.variance.add(0.1)) == (RTOL, ATOL)
    # declared where the default is wrong: a speed ratio is timing, and so is a tracemalloc peak
    assert column_rule("bench_em_pca", "ratio") == "timing"
    assert column_rule("roweis1997_claims", "peak_bytes") == "timing"


def test_identical_frames_pass_and_timing_is_skipped():
    r = compare_frames("toy", _frame(), _frame(seconds=[9.0, 9.0, 9.0]))
    assert r.ok and r.skipped == ["seconds"] and not r.moved
    assert "no number moved" in r.text()


def test_a_float_within_tolerance_passes_and_beyond_fails():
    v = np.array([1.5, 2.25, np.inf])
    assert compare_frames("toy", _frame(), _frame(variance=v * (1 + 0.5 * RTOL))).ok
    r = compare_frames("toy", _frame(), _frame(variance=[1.5, 2.25 * (1 + 3 * RTOL), np.inf]))
    assert not r.ok and [m.column for m in r.moved] == ["variance"]
    m = r.moved[0]
    assert m.n_moved == 1 and m.max_rel == pytest.approx(3 * RTOL)
    assert m.examples[0]["row"] == 1 and "method=EM" in m.examples[0]["key"]
    assert "variance" not in m.examples[0]["key"]  # the key names the row by its other columns
    # rounding noise near zero: within ATOL
    assert compare_frames("toy", _frame(variance=[0.0, 1e-12, 1.0]), _frame(variance=[1e-9, 0.0, 1.0])).ok


def test_counts_text_and_nan_are_exact():
    assert not compare_frames("toy", _frame(), _frame(n_iter=[12, 31, 1])).ok  # one more iteration
    assert not compare_frames("toy", _frame(), _frame(support=[3.0, np.nan, 6.0])).ok
    assert not compare_frames("toy", _frame(), _frame(support=[3.0, 4.0, 5.0])).ok  # NaN -> a value
    assert not compare_frames("toy", _frame(), _frame(method=["EM", "EM", "SVD"])).ok
    assert not compare_frames("toy", _frame(), _frame(converged=[True, True, True])).ok
    big = _frame(n_iter=[100_000, 30, 1])
    assert not compare_frames("toy", big, big.assign(n_iter=[100_001, 30, 1])).ok  # within rtol, still moved


def test_rows_and_columns_added_or_removed_are_changes():
    df = _frame()
    r = compare_frames("toy", df, df.iloc[:2])
    assert not r.ok and r.rows == (3, 2) and "rows: 3 -> 2" in r.text()
    r = compare_frames("toy", df, df.drop(columns="variance"))
    assert not r.ok and r.columns_removed == ["variance"]
    r = compare_frames("toy", df, df.assign(extra=1.0))
    assert not r.ok and r.columns_added == ["extra"]
    # a timing column that appears (the quick references leave them out) is not a change
    assert compare_frames("toy", df.drop(columns="seconds"), df).ok


# --------------------------------------------------------------------------- references on disk
def _write_run(folder, df, verdicts: dict, timing=()):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "claims").mkdir(exist_ok=True)
    df.to_csv(folder / "toy.csv", index=False)
    pd.DataFrame(
        {
            "experiment": "toy",
            "id": list(verdicts),
            "verdict": list(verdicts.values()),
            "machine_dependent": [i in timing for i in verdicts],
        }
    ).to_csv(folder / "claims" / "toy.csv", index=False)


def test_verdict_changes_fail_and_timing_verdicts_are_reported_apart(tmp_path):
    _write_run(tmp_path / "ref", _frame(), {"a": "reproduced", "t": "reproduced"}, timing=("t",))
    _write_run(tmp_path / "new", _frame(), {"a": "reproduced", "t": "too close to call"}, timing=("t",))
    r = compare_experiment("toy", tmp_path / "new", tmp_path / "ref")
    assert r.ok and r.timing_verdicts == [{"id": "t", "old": "reproduced", "new": "too close to call"}]
    assert "timing verdict (not counted) t" in r.text()
    _write_run(tmp_path / "new", _frame(), {"a": "not reproduced", "t": "reproduced"}, timing=("t",))
    r = compare_experiment("toy", tmp_path / "new", tmp_path / "ref")
    assert not r.ok and r.verdicts == [{"id": "a", "old": "reproduced", "new": "not reproduced"}]


@pytest.mark.parametrize(
    "damage",
    ["missing", "empty", "garbage", "no-claims", "bad-claims"],
)
def test_missing_or_malformed_reference_is_an_error_never_a_pass(tmp_path, damage):
    _write_run(tmp_path / "ref", _frame(), {"a": "reproduced"})
    _write_run(tmp_path / "new", _frame(), {"a": "reproduced"})
    ref = tmp_path / "ref"
    if damage == "missing":
        (ref / "toy.csv").unlink()
    elif damage == "empty":
        (ref / "toy.csv").write_text("")
    elif damage == "garbage":
        (ref / "toy.csv").write_text('a,b\n1,2,3,4\n"unclosed\n')
    elif damage == "no-claims":
        (ref / "claims" / "toy.csv").unlink()
    else:
        (ref / "claims" / "toy.csv").write_text("x,y\n1,2\n")
    r = compare_experiment("toy", tmp_path / "new", ref)
    assert not r.ok and r.error and "ERROR" in r.text()
    assert "repro run toy --out" in r.error  # how to make it


def test_write_reference_leaves_timing_out_and_is_deterministic(tmp_path):
    _write_run(tmp_path / "run", _frame(), {"a": "reproduced", "t": "reproduced"}, timing=("t",))
    ref = tmp_path / "ref"
    verify.write_reference("toy", tmp_path / "run", ref)
    first = (ref / "toy.csv").read_bytes(), (ref / "claims" / "toy.csv").read_bytes()
    assert "seconds" not in pd.read_csv(ref / "toy.csv").columns
    assert "(timing)" in first[1].decode()
    _write_run(
        tmp_path / "run",
        _frame(seconds=[5.0, 6.0, 7.0]),
        {"a": "reproduced", "t": "too close to call"},
        ("t",),
    )
    verify.write_reference("toy", tmp_path / "run", ref)
    assert ((ref / "toy.csv").read_bytes(), (ref / "claims" / "toy.csv").read_bytes()) == first
    assert compare_experiment("toy", tmp_path / "run", ref).ok


def test_every_experiment_has_a_quick_reference():
    for name in registry.experiment_names():
        df = pd.read_csv(QUICK_REFERENCES / f"{name}.csv", low_memory=False)
        assert len(df) and not [c for c in df.columns if column_rule(name, c) == "timing"], name
        for folder in registry.verdict_folders(name):  # a benchmark's goals, and its published numbers
            claims = pd.read_csv(QUICK_REFERENCES / folder / f"{name}.csv")
            assert set(claims.experiment) == {name} and claims.verdict.notna().all()


# --------------------------------------------------------------------------- the command
TOY = textwrap.dedent(
    '''
    """Toy verify experiment: a value read from the environment."""
    import os

    import matplotlib.pyplot as plt
    import pandas as pd

    from experiments.runner import _common
    from experiments.runner.claims import NOT_REPRODUCED, REPRODUCED, Claim, Outcome

    TITLE = "Toy verify"

    def _check(df):
        return Outcome(f"{df.value.iloc[0]:g}", REPRODUCED if df.value.iloc[0] < 2 else NOT_REPRODUCED)

    CLAIMS = [Claim("small", "The value is below 2.", "2", _check)]

    def compute(cfg):
        v = float(os.environ.get("TOY_VALUE", "1.0"))
        return pd.DataFrame({"label": ["a", "b"], "count": [3, 4], "value": [v, 0.5], "seconds": [0.1, 0.2]})

    def plot(df, cfg):
        fig, ax = plt.subplots(figsize=(2, 2))
        ax.plot(df.value)
        return fig

    def main(argv=None):
        return _common.run(__name__, argv)
    '''
)


@pytest.fixture
def toy(tmp_path, monkeypatch):
    pkg = tmp_path / "src" / "toyverify"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "exp.py").write_text(TOY)
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    return tmp_path / "ref"


def test_cli_update_then_verify_then_a_moved_number(toy, monkeypatch, capsys):
    args = ["verify", "toyverify.exp", "--quick", "--reference", str(toy)]
    assert cli.main(args) == 2  # no reference yet: an error, not a pass, said before anything runs
    err = capsys.readouterr().err
    assert "does not exist; nothing was run" in err and len(err.strip().splitlines()) == 1
    assert cli.main([*args, "--update"]) == 0
    assert (toy / "exp.csv").is_file() and (toy / "claims" / "exp.csv").is_file()
    assert cli.main(args) == 0
    out = capsys.readouterr().out
    assert "exp: no number moved" in out and "numbers moved: none" in out
    monkeypatch.setenv("TOY_VALUE", "2.5")
    assert cli.main(args) == 1
    out = capsys.readouterr().out
    assert "exp: MOVED" in out and "column value" in out and "1 -> 2.5 (+1.5)" in out
    assert "verdict small: reproduced -> not reproduced" in out and "numbers moved: exp" in out
    # what made each side's numbers: the environment records of the run and of the reference (--update
    # wrote it), here the same machine's
    assert "environments: 0 field(s) differ" in out and "packages.numpy" in out
    assert json.loads((toy / "environment.json").read_text())["quick"] is True
    assert cli.main([*args, "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    (exp,) = report["experiments"]
    assert not report["ok"] and exp["moved"][0]["column"] == "value" and exp["timing_columns"] == ["seconds"]
    assert exp["moved"][0]["examples"][0]["old"] == "1" and exp["moved"][0]["examples"][0]["new"] == "2.5"


def test_cli_refusals(capsys):
    assert cli.main(["verify", "no_such_experiment", "--quick"]) == 2
    assert "unknown experiment" in capsys.readouterr().err
    assert cli.main(["verify", "data_overview", "--update"]) == 2  # full references: `repro run`
    assert "needs --quick" in capsys.readouterr().err
    assert cli.main(["verify", "data_overview", "--jobs", "0"]) == 2


def test_update_keeps_values_that_moved_within_tolerance(tmp_path):
    # a float that moved within its tolerance (rtol 1e-5) leaves the reference's bytes alone
    df = pd.DataFrame({"part": ["a", "b"], "variance": [1.0, 2.5]})
    _write_run(tmp_path / "run", df, {"a": "reproduced"})
    ref = tmp_path / "ref"
    verify.write_reference("toy", tmp_path / "run", ref)
    first = (ref / "toy.csv").read_bytes()
    df.assign(variance=[1.000001, 2.5000001]).to_csv(tmp_path / "run" / "toy.csv", index=False)
    verify.write_reference("toy", tmp_path / "run", ref)
    assert (ref / "toy.csv").read_bytes() == first
    df.assign(variance=[1.0, 2.6]).to_csv(tmp_path / "run" / "toy.csv", index=False)
    verify.write_reference("toy", tmp_path / "run", ref)  # beyond the tolerance: rewritten
    assert pd.read_csv(ref / "toy.csv").variance.tolist() == [1.0, 2.6]


def test_the_module_examples_run():
    import doctest

    result = doctest.testmod(verify)
    assert result.attempted > 0 and result.failed == 0


def test_library_defaults_match_their_reference():
    """Every public estimator and function with its defaults gives the numbers recorded in
    experiments/references/library_defaults.csv (what `repro verify all` compares): a changed default
    tolerance, start count or sample count moves them (the experiments set their own parameters)."""
    import pandas as pd

    from experiments.runner import defaults_probe
    from experiments.runner.verify import compare_frames

    new = defaults_probe.probe()
    assert not new.quantity.str.startswith("error").any(), new[new.quantity.str.startswith("error")]
    report = compare_frames(defaults_probe.NAME, pd.read_csv(defaults_probe.REFERENCE), new)
    assert report.ok, report.text()


def test_library_defaults_probe_notices_a_changed_default(monkeypatch):
    """The probe can fail: EMPCA's default tol 1e-6 -> 1e-2 moves its row (the issue's example)."""
    import pandas as pd

    import repro
    from experiments.runner import defaults_probe
    from experiments.runner.verify import compare_frames

    init = repro.EMPCA.__init__
    defaults = list(init.__defaults__ or ())
    kwdefaults = dict(init.__kwdefaults__ or {})
    assert kwdefaults.get("tol") == 1e-6
    monkeypatch.setattr(init, "__kwdefaults__", {**kwdefaults, "tol": 1e-2})
    assert defaults == list(init.__defaults__ or ())
    cases = defaults_probe.cases()
    monkeypatch.setattr(defaults_probe, "cases", lambda: {"EMPCA": cases["EMPCA"]})
    old = pd.read_csv(defaults_probe.REFERENCE)
    old = old[old.case == "EMPCA"].reset_index(drop=True)
    report = compare_frames(defaults_probe.NAME, old, defaults_probe.probe())
    assert not report.ok
    assert "value" in [m.column for m in report.moved]


def test_round_off_columns_are_declared_with_their_tolerance():
    """NSPCA's support sizes either side of a missed jump (asteris2014_fig4) are not compared; its sweep
    count (zass2006_fig3) may move by one sweep and no more, with the last sweep's move within 5%."""
    import pandas as pd

    from experiments.runner.verify import compare_frames

    old = pd.DataFrame({"cardinality": [90, 110], "nnz_below": [52, 56], "variance": [1.0, 2.0]})
    new = old.assign(nnz_below=[77, 103])
    r = compare_frames("asteris2014_fig4", old, new)
    assert r.ok and "nnz_below" in r.skipped
    assert not compare_frames("asteris2014_fig4", old, new.assign(variance=[1.0, 2.1])).ok
    old = pd.DataFrame({"seed": [1, 2], "n_iter": [271, 40], "max_coord_move": [1.03e-4, 2e-4]})
    one_sweep = old.assign(n_iter=[270, 40], max_coord_move=[1.04e-4, 2e-4])
    assert compare_frames("zass2006_fig3", old, one_sweep).ok
    assert not compare_frames("zass2006_fig3", old, old.assign(n_iter=[268, 40])).ok
    assert not compare_frames("zass2006_fig3", old, old.assign(max_coord_move=[1.2e-4, 2e-4])).ok


def _roc(n_pos: int, n_neg: int, seed: int, shift: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """The ROC of scores drawn from two normal classes, as roc_curve draws it (collinear points dropped)."""
    from sklearn.metrics import roc_curve

    rng = np.random.default_rng(seed)
    y = np.r_[np.ones(n_pos), np.zeros(n_neg)]
    score = np.r_[rng.normal(1.5 + shift, 1, n_pos), rng.normal(0, 1, n_neg)]
    fpr, tpr, _ = roc_curve(y, score)
    return fpr, tpr


def _roc_frame(curves: dict) -> pd.DataFrame:
    rows = [
        {"kind": "auc", "label": k, "split": 0, "auc": float(np.trapezoid(t, f))}
        for k, (f, t) in curves.items()
    ]
    for k, (f, t) in curves.items():
        rows += [
            {"kind": "roc", "label": k, "split": 0, "fpr": a, "tpr": b} for a, b in zip(f, t, strict=True)
        ]
    return pd.DataFrame(rows).assign(method=lambda d: d.label, alpha=np.nan, beta=np.nan)


def test_an_roc_is_compared_as_a_curve():
    """zass2006_fig4's ROC rows: a curve two points shorter (a collinear point dropped, one sample ranked
    past its neighbour by round-off) is the same curve; a changed classifier is not, nor a curve gone."""
    fpr, tpr = _roc(1429, 2548, seed=4)
    old = _roc_frame({"PCA": (fpr, tpr), "NMF": _roc(1429, 2548, seed=5)})
    # two points fewer, as in two runs on two BLAS kernels: a collinear point dropped ...
    mid = (
        np.r_[fpr[:10], (fpr[10] + fpr[11]) / 2, fpr[10:]],
        np.r_[tpr[:10], (tpr[10] + tpr[11]) / 2, tpr[10:]],
    )
    longer = _roc_frame({"PCA": mid, "NMF": _roc(1429, 2548, seed=5)})
    # ... and a positive ranked one negative later (one step of each axis)
    k = len(fpr) // 2
    f2, t2 = fpr.copy(), tpr.copy()
    t2[k] -= 1 / 1429
    moved = _roc_frame(
        {"PCA": (np.delete(f2, [k + 1]), np.delete(t2, [k + 1])), "NMF": _roc(1429, 2548, seed=5)}
    )
    for new in (longer, moved):
        assert len(new) != len(old)
        report = compare_frames("zass2006_fig4", old, new)
        assert report.ok, report.text()
    # without the curve rule the same data read as thousands of moved rows
    assert not compare_frames("some_experiment", old, longer).ok
    # a real change of a curve is caught: a better classifier, or a curve that one run lacks
    better = _roc_frame({"PCA": _roc(1429, 2548, seed=4, shift=0.1), "NMF": _roc(1429, 2548, seed=5)})
    report = compare_frames("zass2006_fig4", old, better)
    assert not report.ok and "tpr (curve)" in [m.column for m in report.moved]
    assert "label=PCA" in report.text() and "curves moved" in report.text()
    gone = old[~((old.kind == "roc") & (old.label == "NMF"))]
    assert "no such curve" in compare_frames("zass2006_fig4", old, gone).text()
    # the other rows still compare row by row: an AUC row that moved is a moved number
    auc = old.copy()
    auc.loc[0, "auc"] += 1e-3
    assert [m.column for m in compare_frames("zass2006_fig4", old, auc).moved] == ["auc"]


def test_the_committed_roc_curves_of_two_runs_agree():
    """The committed zass2006_fig4.csv against the one of the run before (two curves two points shorter,
    every AUC within 8e-6): no curve moved, where row by row 7,636 of 8,104 rows did."""
    import io
    import subprocess

    from experiments.runner._paths import FIGURES_DIR, REPO_ROOT

    try:
        old_text = subprocess.run(
            ["git", "show", "27627d2:figures/zass2006_fig4.csv"], cwd=REPO_ROOT, capture_output=True,
            text=True, check=True,
        ).stdout  # fmt: skip
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("needs the git history of figures/")
    old = pd.read_csv(io.StringIO(old_text), low_memory=False)
    new = pd.read_csv(FIGURES_DIR / "zass2006_fig4.csv", low_memory=False)
    assert len(old) - len(new) == 4
    report = compare_frames("zass2006_fig4", old, new)
    assert report.ok, report.text()
