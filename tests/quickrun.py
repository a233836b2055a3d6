"""What every experiment test checks after a ``--quick`` run: files written, every claim evaluated."""

from __future__ import annotations

import pandas as pd

from experiments.runner.claims import ERROR, VERDICTS


def check_outputs(out, name: str, module, min_png_bytes: int = 5_000) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Assert the PNG, CSV, ledger rows and CLAIMS.md of ``name`` in ``out``; return the CSV and rows."""
    assert (out / f"{name}.png").stat().st_size > min_png_bytes
    df = pd.read_csv(out / f"{name}.csv")
    rows = pd.read_csv(out / "claims" / f"{name}.csv")
    assert set(rows.id) == {c.id for c in module.CLAIMS}
    assert set(rows.verdict) <= set(VERDICTS) - {ERROR}, rows.to_dict("records")
    assert name in (out / "CLAIMS.md").read_text()
    return df, rows
