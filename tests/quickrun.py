"""What every experiment test checks after a ``--quick`` run: files written, every claim evaluated, and
every number equal to the committed quick reference (``experiments/references/quick/``, issue 33).

:func:`quick_run` gives the folder of an experiment's quick run: the one the CI made just before the tests
(``.ci/run`` runs ``repro run all --quick`` and names its folder in ``REPRO_QUICK_OUT``), when that folder
holds this experiment's complete outputs written after the last change to the code, else a fresh run into
the test's own folder. The CI then runs each quick experiment once, not twice; the checks are the same.
"""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from experiments.runner import registry
from experiments.runner._atomic import recorded_digest
from experiments.runner._common import read_result
from experiments.runner.claims import ERROR, GOAL_VERDICTS, VERDICTS
from experiments.runner.verify import QUICK_REFERENCES, compare_experiment

QUICK_OUT_ENV = "REPRO_QUICK_OUT"
ROOT = Path(__file__).resolve().parent.parent
# what an experiment's outputs depend on: the library, the experiments and runner, the data loaders
_CODE = ("repro", "experiments", "data_fetch")


def _newest_code_change() -> float:
    return max(p.stat().st_mtime for d in _CODE for p in (ROOT / d).rglob("*.py"))


def finished_quick_run(name: str, environ=os.environ) -> Path | None:
    """The folder named by ``REPRO_QUICK_OUT`` if it holds a complete quick run of ``name`` newer than the
    code (its PNG, its CSV matching the digest the runner recorded, its claims rows, the ledger); else None.
    """
    folder = environ.get(QUICK_OUT_ENV, "").strip()
    if not folder:
        return None
    out = Path(folder)
    folders = registry.verdict_folders(name)
    pages = [out / ("BENCHMARKS.md" if f == "goals" else "CLAIMS.md") for f in folders]
    files = [out / f"{name}.png", out / f"{name}.csv", *(out / f / f"{name}.csv" for f in folders), *pages]
    if not all(f.is_file() for f in files) or recorded_digest(out / f"{name}.csv") is not None:
        return None
    if min(f.stat().st_mtime for f in files[:3]) <= _newest_code_change():
        return None  # written before the code last changed: not a run of this code
    return out


def quick_run(module, tmp_path) -> Path:
    """The folder of ``module``'s quick run: the CI's own (:func:`finished_quick_run`), or a fresh one.

    A fresh run goes into ``tmp_path`` and must exit 0. The CI's run exited 0 too (``repro run all
    --quick`` fails the CI otherwise) and was made by the same code, with the same numbers (an experiment's
    numbers do not depend on ``--jobs`` nor on the process it runs in), so the checks that follow are the
    same either way. Tests that change anything before running (monkeypatched settings, a damaged input)
    must run the experiment themselves.
    """
    name = registry.stem(module.__name__)
    done = finished_quick_run(name)
    if done is not None:
        return done
    assert module.main(["--quick", "--out", str(tmp_path)]) == 0
    return tmp_path


def check_outputs(out, name: str, module, min_png_bytes: int = 5_000) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Assert the PNG, CSV, ledger rows and CLAIMS.md (a benchmark's goal rows and BENCHMARKS.md) of
    ``name`` in ``out``; return the CSV and the rows (of a benchmark: its goals, then its claims)."""
    assert (out / f"{name}.png").stat().st_size > min_png_bytes
    df = read_result(out, name)  # as the runner reads it: whole, matching its digest, no dtype guessing
    frames = []
    for folder in registry.verdict_folders(name):
        rows = pd.read_csv(out / folder / f"{name}.csv")
        checks, verdicts = (module.GOALS, GOAL_VERDICTS) if folder == "goals" else (module.CLAIMS, VERDICTS)
        assert set(rows.id) == {c.id for c in checks}
        assert set(rows.verdict) <= set(verdicts) - {ERROR}, rows.to_dict("records")
        assert name in (out / ("BENCHMARKS.md" if folder == "goals" else "CLAIMS.md")).read_text()
        frames.append(rows)
    check_reference(out, name)
    return df, pd.concat(frames, ignore_index=True)


def check_reference(out, name: str) -> None:
    """The quick regression: every number of this quick run as in the committed quick reference.

    The same comparison as ``repro verify NAME --quick``, on the run the test already made. When a
    change is meant to move a number, regenerate the references (``repro verify all --quick --update``)
    and say in the commit why and what moved.
    """
    report = compare_experiment(name, out, QUICK_REFERENCES)
    assert report.ok, (
        f"a quick-run number moved against the committed reference:\n{report.text()}\n"
        "If the change is meant, run `repro verify all --quick --update` and say what moved in the commit."
    )
