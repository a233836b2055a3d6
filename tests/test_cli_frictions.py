"""What a newcomer trips over first at the command line (issue 18, items 7 and 8), run as they run it."""

from __future__ import annotations

import csv
import importlib
import io
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from experiments.runner import _describe, registry

REPO = Path(__file__).resolve().parent.parent
FIGURES = REPO / "figures"


def repro(*args, cwd=REPO, env=None, **kw) -> subprocess.CompletedProcess:
    """``repro ARGS`` (as ``python -m experiments``) in a fresh process."""
    env = {**os.environ, "PYTHONPATH": str(REPO), **(env or {})}
    return subprocess.run(
        [sys.executable, "-m", "experiments", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        **kw,
    )


def _experiment_names() -> list[str]:
    return sorted(
        p.stem
        for p in (REPO / "experiments").glob("*.py")
        if not p.name.startswith("_") and re.search(r"^TITLE\s*=", p.read_text(encoding="utf-8"), flags=re.M)
    )


def _title(name: str) -> str:
    """The experiment's ``TITLE`` as an import leaves it (the whole title, however it is written)."""
    return importlib.import_module(registry.module_name(name)).TITLE


@pytest.mark.parametrize("name", registry.experiment_names())
def test_title_read_without_import_is_the_whole_title(name):
    """``repro --help``, ``repro list`` and the site read titles from the source (ast, no import): what they
    read is the title the imported module has, also where it is built with ``+=``."""
    assert registry.title(name) == _title(name)


def test_title_reading_follows_augmented_assignments(tmp_path):
    src = tmp_path / "toy.py"
    src.write_text('TITLE = "a, "\nTITLE += "b"\nRUN_ALONE = True\n', encoding="utf-8")
    assert _describe._constant(src, "TITLE", "") == "a, b"
    src.write_text('TITLE = "a"\nTITLE += name\n', encoding="utf-8")  # not a literal: not read
    assert _describe._constant(src, "TITLE", "") == ""
    src.write_text("N = 2\nN *= 3\n", encoding="utf-8")  # only += is followed
    assert _describe._constant(src, "N", None) is None


def _ledger_rows() -> list[dict]:
    rows = []
    for path in sorted((FIGURES / "claims").glob("*.csv")):
        rows += list(csv.DictReader(io.StringIO(path.read_text(encoding="utf-8"))))
    return rows


@pytest.mark.parametrize("paper", sorted({n.split("_")[0] for n in _experiment_names()}))
def test_claims_paper_accepts_every_paper_of_the_experiments(paper):
    res = repro("claims", "--paper", paper)
    assert res.returncode == 0, res.stderr
    shown = set(re.findall(r"^\S.*?\s{2}[T ]\s{2}(\w+)/", res.stdout, flags=re.M))
    expected = {r["experiment"] for r in _ledger_rows() if r["experiment"].split("_")[0] == paper}
    assert shown == expected


def test_run_name_help_shows_the_command_it_documents():
    res = repro("run", "sigg2008_fig3", "--help")
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("usage: repro run sigg2008_fig3"), res.stdout[:200]


def test_claims_verbose_shows_every_sentence_and_note_whole():
    res = repro("claims", "sigg2008_fig3", "-v", env={"COLUMNS": "80"})
    assert res.returncode == 0, res.stderr
    text = " ".join(res.stdout.split())
    for r in _ledger_rows():
        if r["experiment"] == "sigg2008_fig3":
            for field in ("claim", "note", "reproduced"):
                assert " ".join(r[field].split()) in text, (r["id"], field)


def test_claims_into_a_closed_pipe_exits_quietly():
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "experiments", "claims", "-v"],
        cwd=REPO,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    proc.stdout.readline()  # what `| head -1` reads, then it exits
    proc.stdout.close()
    err = proc.stderr.read()
    assert proc.wait(timeout=60) == 0, err
    assert "Traceback" not in err and "BrokenPipe" not in err, err


def test_list_shows_quick_times_and_whole_titles():
    res = repro("list", env={"COLUMNS": "80"})
    assert res.returncode == 0, res.stderr
    text = " ".join(res.stdout.split())
    for name in _experiment_names():
        title = _title(name)
        assert " ".join(title.split()) in text, name  # whole, never cut mid-word
        assert all(len(line) <= 80 for line in res.stdout.splitlines()), "a line wider than the terminal"
        row = next(line for line in res.stdout.splitlines() if line.startswith(name + " "))
        assert "?" not in row.split()[1:3], f"{name}: no recorded time: {row}"


def test_progress_past_the_recorded_time_says_so(tmp_path):
    try:
        from experiments.runner._progress import Progress
    except ImportError:  # before the runner moved into its own package
        from experiments._progress import Progress

    prog = Progress(["data_overview"], quick=True, jobs=1, out=tmp_path)
    try:
        prog.cold_cache = False  # kernels compiled (else the line says "compiling kernels (first run only)")
        prog.expected["data_overview"] = 1.0
        prog.start("data_overview")
        prog.started["data_overview"] -= 5.0  # it has run 5 s of its recorded 1 s
        status = prog.status()
    finally:
        prog.close()
    assert "longer than recorded" in status, status
    assert "0.0 s left" not in status


def test_outside_a_checkout_run_writes_in_the_working_directory(tmp_path):
    """An installed copy (no pyproject.toml beside the packages) writes nowhere but the working directory."""
    site = tmp_path / "venv" / "lib" / "python3" / "site-packages"
    for pkg in ("repro", "data_fetch", "experiments"):
        shutil.copytree(REPO / pkg, site / pkg, ignore=shutil.ignore_patterns("__pycache__"))
    work = tmp_path / "work"
    work.mkdir()

    def files_outside_work():
        return {p for p in tmp_path.rglob("*") if "__pycache__" not in p.parts and work not in p.parents}

    before = files_outside_work()
    res = subprocess.run(
        [sys.executable, "-m", "experiments", "run", "mattei2016_fig1", "--quick"],
        cwd=work,
        env={**os.environ, "PYTHONPATH": str(site)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    written = files_outside_work() - before
    assert not written, f"written beside the installed packages: {sorted(map(str, written))[:5]}"
    out = work / "repro-figures"
    assert (out / "mattei2016_fig1.csv").is_file() and (out / "CLAIMS.md").is_file()
    assert str(out) in res.stdout + res.stderr  # it says where it wrote


def test_in_a_checkout_a_run_into_figures_says_it_rewrites_them(tmp_path):
    res = repro("run", "no_such_experiment")  # refused before anything runs: nothing is rewritten
    assert res.returncode == 2
    from experiments.runner._paths import out_notice

    assert "rewrites the committed" in out_notice(FIGURES)
    assert out_notice(tmp_path) == ""
