"""The committed full-run outputs agree with the code: each ledger row is what the experiment's claim
checks give on its committed CSV, and every figure can be redrawn from its CSV alone.

This pins the reproduced values: a change to a check, or a CSV edited by hand, shows up here.
"""

import importlib

import pandas as pd
import pytest

from experiments.runner import claims as ledger
from experiments.runner import registry
from experiments.runner._common import FIGURES_DIR, Config, style

EXPERIMENTS = [n for n in registry.experiment_names() if (FIGURES_DIR / f"{n}.csv").exists()]


def test_every_experiment_has_committed_outputs():
    missing = [n for n in registry.experiment_names() if n not in EXPERIMENTS]
    assert not missing, f"run `repro run {' '.join(missing)}` and commit figures/"


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_ledger_rows_match_checks_on_committed_csv(name):
    mod = importlib.import_module(registry.module_name(name))
    df = pd.read_csv(FIGURES_DIR / f"{name}.csv", low_memory=False)
    for folder in registry.verdict_folders(name):  # a benchmark: its goals, and its published numbers
        rows = mod.GOALS if folder == "goals" else mod.CLAIMS
        fresh = ledger.evaluate(name, rows, df, quick=False, goals=folder == "goals")
        stored = pd.read_csv(FIGURES_DIR / folder / f"{name}.csv", dtype=str, keep_default_na=False)
        assert list(stored["id"]) == list(fresh["id"])
        assert (stored["quick"].str.lower() == "false").all(), "the committed ledger must come from full runs"
        for got, want in zip(fresh.itertuples(), stored.itertuples(), strict=True):
            assert got.verdict != ledger.ERROR, f"{name}/{got.id}: {got.note}"
            assert (got.reproduced, got.verdict) == (want.reproduced, want.verdict), f"{name}/{got.id}"


def test_no_stale_ledger_files():
    """Every committed claims (goals) file belongs to an experiment that writes one."""
    for folder in ("claims", "goals"):
        for path in (FIGURES_DIR / folder).glob("*.csv"):
            assert folder in registry.verdict_folders(path.stem), f"stale {path}"


@pytest.mark.parametrize("folder, page", [("claims", "CLAIMS.md"), ("goals", "BENCHMARKS.md")])
def test_claims_md_is_rendered_from_the_ledger(tmp_path, folder, page):
    rows = ledger.read_ledger(FIGURES_DIR, folder)
    for name, g in rows.groupby("experiment"):
        ledger.write_ledger(tmp_path, name, g, render=False, folder=folder)  # recorded as a run does
    (ledger.render_benchmarks if folder == "goals" else ledger.render_ledger)(tmp_path)
    assert (tmp_path / page).read_text() == (FIGURES_DIR / page).read_text()


def test_the_ledger_holds_no_goal_and_benchmarks_no_reproduction():
    claims, goals = ledger.read_ledger(FIGURES_DIR), ledger.read_ledger(FIGURES_DIR, "goals")
    assert not claims["claim"].str.contains("goal", case=False).any()
    assert set(goals["verdict"]) <= set(ledger.GOAL_VERDICTS)
    assert set(goals["experiment"]) == set(registry.benchmark_names())


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_figure_redraws_from_csv(name):
    mod = importlib.import_module(registry.module_name(name))
    if not hasattr(mod, "plot"):
        pytest.skip(f"{name} has no figure")
    df = pd.read_csv(FIGURES_DIR / f"{name}.csv", low_memory=False)
    import matplotlib.pyplot as plt

    with style():
        fig = mod.plot(df, Config(quick=False))
    assert fig.axes
    plt.close(fig)
