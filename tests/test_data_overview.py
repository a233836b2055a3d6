"""The data overview experiment end to end: CSV, PNG, claims, ledger."""

import pandas as pd
import pytest
from quickrun import check_reference, quick_run

from experiments import data_overview


@pytest.mark.data
def test_data_overview_quick_run(tmp_path):
    out = quick_run(data_overview, tmp_path)
    df = pd.read_csv(out / "data_overview.csv")
    assert (out / "data_overview.png").stat().st_size > 10_000
    rows = pd.read_csv(out / "claims" / "data_overview.csv")
    check_reference(out, "data_overview")
    assert set(rows.id) == {c.id for c in data_overview.CLAIMS}
    verdicts = dict(zip(rows.id, rows.verdict, strict=True))
    # The published dataset facts hold for the files in the registry.
    for claim in ("cbcl-faces", "cbcl-training", "armstrong", "golub", "lrs", "pitprops"):
        assert verdicts[claim] == "reproduced", rows.set_index("id").loc[claim].to_dict()
    # Eigenvalues: descending, leading normalized to 1, Pit Props leading eigenvalue as published.
    eig = df[df.kind == "eigenvalue"]
    for _, g in eig.groupby(["dataset", "preprocessing"]):
        assert g["value"].is_monotonic_decreasing and g["normalized"].iloc[0] == pytest.approx(1.0)
    pit = eig[eig.dataset == "Pit Props"]["value"].to_numpy()
    assert pit[:3] == pytest.approx([4.219, 2.378, 1.878], abs=5e-4)
    assert "data_overview" in (out / "CLAIMS.md").read_text()


def test_mnist_pixels_check_says_what_the_counts_show():
    import pandas as pd

    from experiments import data_overview

    def facts(counts, p=784):
        rows = [{"kind": "fact", "dataset": "mnist-basic", "fact": "n_features", "value": p},
                {"kind": "fact", "dataset": "mnist-basic", "fact": "recreated", "value": 1.0}]  # fmt: skip
        rows += [
            {"kind": "fact", "dataset": name, "fact": "n_nonconstant_pixels", "value": c}
            for name, c in zip(data_overview._PIXEL_SETS, counts, strict=True)
        ]
        return pd.DataFrame(rows)

    miss = data_overview._mnist_pixels(facts([499, 784, 784, 584, 717]))
    hit = data_overview._mnist_pixels(facts([499, 784, 784, 758, 717]))
    assert miss.verdict == "not reproduced" and "typo" in miss.note
    assert hit.verdict == "reproduced" and "758" in hit.note
