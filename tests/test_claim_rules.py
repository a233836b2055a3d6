"""Ledger rules that hold across experiments (docs/design.md, "Writing a claim check").

* One published sentence, one verdict: no two claims of an experiment test one sentence in one case
  (a second reading of a sentence goes into the note of the one row, never into a second row).
* A claim this repository cannot test is *untestable here*: counted apart, never as *not reproduced*.
"""

from __future__ import annotations

import importlib

import pandas as pd
import pytest

from experiments.runner import claims as ledger
from experiments.runner import registry


@pytest.mark.parametrize("name", registry.experiment_names())
def test_no_two_rows_test_one_sentence(name):
    mod = importlib.import_module(registry.module_name(name))
    ledger.check_one_verdict_per_sentence(name, getattr(mod, "CLAIMS", []))
    ledger.check_one_verdict_per_sentence(name, getattr(mod, "GOALS", []))


def _ok(df):
    return ledger.Outcome("-", ledger.REPRODUCED)


def test_second_reading_of_a_sentence_is_refused():
    # the two rows the audit found (issue 36): a sentence and the same sentence with a parenthesised reading
    pairs = [
        (
            "Sec. 3.1: on average, t < 10 EM iterations were sufficient to achieve convergence",
            "Sec. 3.1: on average, t < 10 EM iterations were sufficient to achieve convergence (eps of the "
            "stopping rule read as loose)",
        ),
        (
            "Fig. 2(c): ... but the overlapping nature of the factors remains",
            "Fig. 2(c): ... but the overlapping nature of the factors remains (overlap measured on the "
            "raw U, as the paper's ||I - U'U||)",
        ),
    ]
    for a, b in pairs:
        claims = [ledger.Claim("a", a, "", _ok), ledger.Claim("b", b, "", _ok)]
        with pytest.raises(ValueError, match="test one sentence"):
            ledger.check_one_verdict_per_sentence("x", claims)
        with pytest.raises(ValueError, match="test one sentence"):
            ledger.evaluate("x", claims, pd.DataFrame(), quick=True)
    # one sentence on two named data sets is two cases, allowed; a different sentence is allowed
    same = "Goal: no slower than svds at equal accuracy"
    ledger.check_one_verdict_per_sentence(
        "x",
        [
            ledger.Claim("s", f"{same} (spiked)", "", _ok, case="spiked"),
            ledger.Claim("d", f"{same} (decaying)", "", _ok, case="decaying"),
            ledger.Claim("o", "Goal: no slower than randomized PCA", "", _ok),
        ],
    )
    with pytest.raises(ValueError, match="duplicate claim id"):
        ledger.check_one_verdict_per_sentence(
            "x", [ledger.Claim("a", "p", "", _ok), ledger.Claim("a", "q", "", _ok)]
        )


def test_untestable_is_counted_apart(tmp_path):
    rows = pd.DataFrame(
        [
            {
                "experiment": "e",
                "id": i,
                "claim": "c",
                "published": "",
                "reproduced": "-",
                "verdict": v,
                "note": "",
                "quick": False,
                "machine_dependent": False,
            }
            for i, v in (("a", ledger.REPRODUCED), ("b", ledger.NOT_REPRODUCED), ("c", ledger.UNTESTABLE))
        ]
    )
    md = ledger.write_ledger(tmp_path, "e", rows).read_text()
    assert "1 reproduced, 1 not reproduced, 1 untestable here" in md
    assert "*untestable here* (1)" in md
    readme = tmp_path / "README.md"
    readme.write_text(f"x\n{ledger.README_START}\n{ledger.README_END}\ny\n")
    assert ledger.update_readme(readme, tmp_path)
    text = readme.read_text()
    assert text.startswith("x\n") and text.endswith("\ny\n")  # only the scoreboard block changed
    table = [line.split(" | ") for line in text.splitlines() if line.startswith("| ")]
    head, rows = table[0], {r[0].strip("| *"): r for r in table[2:]}
    assert "untestable here" in head  # a column of its own, never counted as not reproduced
    row = dict(zip(head, rows["all"], strict=True))  # one reproduced, one not, one untestable
    counts = [row[k].strip("* ") for k in ("claims", "reproduced", "not reproduced", "untestable here")]
    assert counts == ["3", "1", "1", "1"]
