"""The experiment tests reuse the CI's quick run only when it is complete, intact and newer than the code."""

from __future__ import annotations

import os
import time

import pytest
from quickrun import QUICK_OUT_ENV, _newest_code_change, finished_quick_run

from experiments.runner._atomic import record_digest

NAME = "zass2006_fig3"


@pytest.fixture
def run_folder(tmp_path):
    """A folder laid out like ``repro run ... --quick --out``: PNG, CSV with its digest, claims, ledger."""
    (tmp_path / "claims").mkdir()
    (tmp_path / f"{NAME}.png").write_bytes(b"png")
    (tmp_path / f"{NAME}.csv").write_text("a,b\n1,2\n")
    record_digest(tmp_path / f"{NAME}.csv")
    (tmp_path / "claims" / f"{NAME}.csv").write_text("id,verdict\n")
    (tmp_path / "CLAIMS.md").write_text(NAME)
    return tmp_path


def test_a_complete_run_newer_than_the_code_is_reused(run_folder):
    assert finished_quick_run(NAME, {QUICK_OUT_ENV: str(run_folder)}) == run_folder


def test_no_folder_named_means_a_fresh_run(run_folder):
    assert finished_quick_run(NAME, {}) is None
    assert finished_quick_run(NAME, {QUICK_OUT_ENV: "  "}) is None


@pytest.mark.parametrize("missing", [f"{NAME}.png", f"{NAME}.csv", f"claims/{NAME}.csv", "CLAIMS.md"])
def test_an_incomplete_run_is_not_reused(run_folder, missing):
    (run_folder / missing).unlink()
    assert finished_quick_run(NAME, {QUICK_OUT_ENV: str(run_folder)}) is None


def test_another_experiment_of_the_folder_is_not_this_one(run_folder):
    assert finished_quick_run("zass2006_fig2", {QUICK_OUT_ENV: str(run_folder)}) is None


def test_a_csv_changed_after_the_run_is_not_reused(run_folder):
    (run_folder / f"{NAME}.csv").write_text("a,b\n1,3\n")
    assert finished_quick_run(NAME, {QUICK_OUT_ENV: str(run_folder)}) is None


def test_a_run_older_than_the_last_code_change_is_not_reused(run_folder):
    before = _newest_code_change() - 60
    assert before < time.time()
    os.utime(run_folder / f"{NAME}.png", (before, before))
    assert finished_quick_run(NAME, {QUICK_OUT_ENV: str(run_folder)}) is None
