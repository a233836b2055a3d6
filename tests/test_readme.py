"""README.md stays true: its commands exist and its Python example runs."""

import re
from pathlib import Path

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
)
def test_python_example_runs():
    code = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert code, "README has no Python example"
    namespace: dict = {}  # the blocks read top to bottom, as a reader runs them
    for block in code:
        exec(compile(block, str(README), "exec"), namespace)
