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
    "leukemia_golub/golub.RData",
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
