"""README.md stays true: its commands exist and its Python example runs."""

import re
from pathlib import Path

import numpy as np
import pytest

README = Path(__file__).resolve().parent.parent / "README.md"


def test_setup_commands_are_the_two_documented_ones():
    text = README.read_text()
    blocks = re.findall(r"```bash\n(.*?)```", text, flags=re.S)
    main, quick = (line.split("#")[0].strip() for line in blocks[0].strip().splitlines())
    assert main == "pip install -e . && repro run all"
    assert quick.startswith("repro run all --quick")  # the quick variant next to the main command
    assert "min" in blocks[0].splitlines()[0]  # its cost beside it
    assert blocks[1].strip() == 'pip install -e ".[test]" && pytest'
    ci = (README.parent / ".ci" / "run").read_text()
    assert 'pip install -e ".[test]" && pytest' in ci


@pytest.mark.data(
    "leukemia_armstrong_mll/MLL.names",
    "leukemia_armstrong_mll/MLL_train.data",
    "leukemia_armstrong_mll/MLL_test.data",
    "cbcl_faces/CBCL_Face.mat",
    "spca_optimal_berk_bertsimas/pitprops.csv",
)
def test_python_example_runs():
    code = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert code, "README has no Python example"
    namespace: dict = {}  # the blocks read top to bottom, as a reader runs them
    for block in code:
        exec(compile(block, str(README), "exec"), namespace)
    # the shapes and the iteration count quoted beside assignments
    assert namespace["faces"].shape == (2429, 361)
    assert namespace["X"].shape == (72, 12582)
    # "ML in 54 steps": from random_state=0 (32-75 steps from other random starts, so the README seeds it)
    assert namespace["ppca"].n_iter_ == 54, namespace["ppca"].n_iter_
    # every number quoted in a comment is what the line gives
    quoted = quoted_numbers("\n".join(code))
    assert len(quoted) >= 4, quoted
    for expr, want in quoted:
        got = eval(expr, namespace)
        if isinstance(want, list):  # "(2, 12582), [50 50]": the integers of the value, in order
            assert [int(v) for v in re.findall(r"\d+", str(got))] == want, (expr, got, want)
        else:
            digits = len(want.split(".")[1])
            assert round(float(np.ravel(got)[0]), digits) == float(want), (expr, got, want)


# "expr  # ~0.82 ...", "expr  # ... = 2.56 here ...", "expr  # (2, 12582), [50 50]"
_APPROX = re.compile(r"(?:~|= )(\d+\.\d+)")
_REPR = re.compile(r"^\([\d, ]+\)(?:, \[[\d ]+\])?$")


def quoted_numbers(code: str) -> list[tuple[str, str | list[int]]]:
    """``(expression, quoted)`` for every line of the README's examples whose comment quotes its result."""
    out = []
    for line in code.splitlines():
        expr, sep, comment = line.partition("#")
        expr, comment = expr.strip(), comment.strip()
        if not sep or not expr or "=" in expr.split("(")[0]:
            continue  # no comment, or an assignment: nothing quoted about a value
        m = _APPROX.search(comment)
        if m:
            out.append((expr, m.group(1)))
        elif _REPR.match(comment):
            out.append((expr, [int(v) for v in re.findall(r"\d+", comment)]))
    return out


def test_quoted_numbers_are_found():
    code = "\n".join(re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S))
    exprs = [e for e, _ in quoted_numbers(code)]
    assert "metrics.certified_fraction(Xf, em.components_, 40)" in exprs
    assert "metrics.overlap(nn.U_.T)" in exprs
    assert any(e.startswith("spca.components_.shape") for e in exprs)


def test_scoreboard_is_the_committed_ledger():
    """The README's scoreboard is what `repro run` writes from figures/, and its totals are CLAIMS.md's."""
    from experiments.runner import claims as ledger

    text = README.read_text()
    block = text.split(ledger.README_START, 1)[1].split(ledger.README_END, 1)[0].strip("\n")
    figures = README.parent / "figures"
    assert block.splitlines() == ledger.scoreboard(ledger.read_ledger(figures))
    # the "all" row against the summary line of the committed CLAIMS.md
    summary = next(line for line in (figures / "CLAIMS.md").read_text().splitlines() if " claims. " in line)
    total = int(re.match(r"(\d+) claims\.", summary).group(1))
    math, timing = (
        int(n) for n in re.findall(r"\((\d+)\)", summary)
    )  # "statistical (108)", "dependent (37)"
    cells = [c.strip("* ") for c in block.splitlines()[-1].strip("|").split("|")]
    assert cells[0] == "all" and int(cells[1]) == math and cells[-1].startswith(f"{timing}:")
    assert math + timing == total
    head = [c.strip() for c in block.splitlines()[0].strip("|").split("|")]
    for verdict in ("reproduced", "partly reproduced", "not reproduced", "untestable here"):
        n = re.search(rf"(\d+) {verdict}", summary.split("Timing")[0])
        assert int(cells[head.index(verdict)]) == (int(n.group(1)) if n else 0), verdict


def test_readme_is_short():
    """The README says what the project is and how to run it; the gallery and the ledger live elsewhere."""
    text = README.read_text()
    assert len(text) < 12_000, len(text)
    assert len(text.splitlines()) <= 200
    assert "![" not in text  # no figure gallery: the figures are on the documentation site and in figures/
