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
    mod = importlib.import_module(f"experiments.{name}")
    df = pd.read_csv(FIGURES_DIR / f"{name}.csv", low_memory=False)
    fresh = ledger.evaluate(name, mod.CLAIMS, df, quick=False)
    stored = pd.read_csv(FIGURES_DIR / "claims" / f"{name}.csv", dtype=str, keep_default_na=False)
    assert list(stored["id"]) == list(fresh["id"])
    assert (stored["quick"].str.lower() == "false").all(), "the committed ledger must come from full runs"
    for got, want in zip(fresh.itertuples(), stored.itertuples(), strict=True):
        assert got.verdict != ledger.ERROR, f"{name}/{got.id}: {got.note}"
        assert (got.reproduced, got.verdict) == (want.reproduced, want.verdict), f"{name}/{got.id}"


def test_claims_md_is_rendered_from_the_ledger(tmp_path):
    rows = ledger.read_ledger(FIGURES_DIR)
    for name, g in rows.groupby("experiment"):
        ledger.write_ledger(tmp_path, name, g, render=False)  # written and recorded as a run does
    ledger.render_ledger(tmp_path)
    assert (tmp_path / "CLAIMS.md").read_text() == (FIGURES_DIR / "CLAIMS.md").read_text()


@pytest.mark.parametrize("name", EXPERIMENTS)
def test_figure_redraws_from_csv(name):
    mod = importlib.import_module(f"experiments.{name}")
    if not hasattr(mod, "plot"):
        pytest.skip(f"{name} has no figure")
    df = pd.read_csv(FIGURES_DIR / f"{name}.csv", low_memory=False)
    import matplotlib.pyplot as plt

    with style():
        fig = mod.plot(df, Config(quick=False))
    assert fig.axes
    plt.close(fig)
