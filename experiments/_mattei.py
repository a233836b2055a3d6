"""What the Mattei et al. (2016) experiments share: the count of the GSPPCA fits whose VEM hit its cap
(one module, so no experiment imports another)."""

from __future__ import annotations

import pandas as pd


def capped_note(df: pd.DataFrame, column: str = "capped") -> str:
    """``"VEM at its iteration cap in k of N fits"`` from the boolean ``column`` (one row per fit)."""
    if column not in df:
        return "VEM cap not recorded"
    return f"VEM at its iteration cap in {int(df[column].sum())} of {len(df)} GSPPCA fits"
