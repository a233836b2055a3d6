"""Prop. 3.2 experiment: quick run, and the increase counter on hand-made error histories."""

import numpy as np
import pandas as pd
import pytest
from quickrun import check_reference, quick_run

from experiments import sigg2008_prop32 as exp


def test_increase_counter_skips_the_start_and_ignores_round_off():
    err = np.array([10.0, 5.0, 4.0, 4.0 + 4e-11, 4.5, 4.2])
    n, worst = exp._increases(err)
    assert n == 1 and worst == pytest.approx(0.5 / 4.0, rel=1e-6)  # 4 -> 4.5; 4e-11 is round-off level
    assert exp._increases(np.array([3.0, 9.0]))[0] == 0  # the first M-step is not counted


@pytest.mark.data("cbcl_faces/CBCL_Face.mat", "leukemia_armstrong_mll/MLL.names",
                  "leukemia_armstrong_mll/MLL_train.data", "leukemia_armstrong_mll/MLL_test.data")
def test_quick_run(tmp_path):
    out = quick_run(exp, tmp_path)
    df = pd.read_csv(out / "sigg2008_prop32.csv")
    assert {"run", "trace"} <= set(df.kind)
    rows = pd.read_csv(out / "claims" / "sigg2008_prop32.csv")
    assert "check failed" not in set(rows.verdict)
    assert (out / "sigg2008_prop32.png").exists()
    check_reference(out, "sigg2008_prop32")
