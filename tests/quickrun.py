"""What every experiment test checks after a ``--quick`` run: files written, every claim evaluated, and
every number equal to the committed quick reference (``experiments/references/quick/``, issue 33)."""

from __future__ import annotations

import pandas as pd

from experiments.runner.claims import ERROR, VERDICTS
from experiments.runner.verify import QUICK_REFERENCES, compare_experiment


def check_outputs(out, name: str, module, min_png_bytes: int = 5_000) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Assert the PNG, CSV, ledger rows and CLAIMS.md of ``name`` in ``out``; return the CSV and rows."""
    assert (out / f"{name}.png").stat().st_size > min_png_bytes
    df = pd.read_csv(out / f"{name}.csv")
    rows = pd.read_csv(out / "claims" / f"{name}.csv")
    assert set(rows.id) == {c.id for c in module.CLAIMS}
    assert set(rows.verdict) <= set(VERDICTS) - {ERROR}, rows.to_dict("records")
    assert name in (out / "CLAIMS.md").read_text()
    check_reference(out, name)
    return df, rows


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
