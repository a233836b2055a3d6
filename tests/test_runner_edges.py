"""The runner's edges: bounded ``--jobs``, no empty folder argument, experiments imported from the package
or the installed modules only, a missing reference said before anything runs, Ctrl-C in one line, and
worker processes that do not outlive their parent."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from toys import TOY

from experiments.runner import _args, cli, engine

REPO = Path(__file__).resolve().parent.parent

#: records its process, then works for ``TOY_SLEEP`` seconds (default 60)
BODY = (
    'open(os.environ["TOY_PIDS"], "a").write(f"{os.getpid()}\\n"); '
    'time.sleep(float(os.environ.get("TOY_SLEEP", "60")))'
)


@pytest.fixture
def slow_toys(tmp_path, monkeypatch):
    """A package ``toyedge`` of two experiments that sleep (``TOY_SLEEP`` seconds, default 60), importable
    here, and the environment to run ``python -m experiments`` on them in a subprocess."""
    monkeypatch.syspath_prepend(str(tmp_path / "src"))
    monkeypatch.setenv("TOY_PIDS", str(tmp_path / "pids"))
    pkg = tmp_path / "src" / "toyedge"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    for name in ("a", "b"):
        (pkg / f"{name}.py").write_text(TOY.format(name=name, body=BODY, data=()))
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tmp_path / "src"), str(REPO)]),
        "MPLBACKEND": "Agg",
        "REPRO_OFFLINE": "1",
        "TOY_PIDS": str(tmp_path / "pids"),
    }
    return env


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie, dead but not yet reaped, does not count)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        try:
            os.kill(pid, 0)
        except OSError:
            return False
        return True
    return state != "Z"


@pytest.fixture
def start(slow_toys, tmp_path):
    """``start()``: ``repro run toyedge.a toyedge.b --jobs 2`` in a session of its own, returned once both
    workers compute, with their pids; its stderr goes to ``tmp_path / "stderr"`` (a pipe would be held
    open by the workers). Whatever a test finds, no process of it is left behind."""
    started: list[int] = []

    def run() -> tuple[subprocess.Popen, list[int]]:
        cmd = [sys.executable, "-m", "experiments", "run", "toyedge.a", "toyedge.b", "--quick", "--jobs", "2"]
        with open(tmp_path / "stderr", "w") as err:
            proc = subprocess.Popen(
                [*cmd, "--out", str(tmp_path / "out")],
                env=slow_toys, cwd=REPO, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True,
            )  # fmt: skip
        started.append(proc.pid)
        pids: list[int] = []
        deadline = time.monotonic() + 120
        while len(pids) < 2 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.2)
            if (tmp_path / "pids").exists():
                pids = [int(x) for x in (tmp_path / "pids").read_text().split()]
        started.extend(pids)
        assert len(pids) == 2, (tmp_path / "stderr").read_text()
        return proc, pids

    yield run
    for pid in started:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


def _gone_within(pids: list[int], seconds: float) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline and any(map(_alive, pids)):
        time.sleep(0.2)
    return [p for p in pids if _alive(p)]


# --------------------------------------------------------------------------- --jobs and folders
@pytest.mark.parametrize("command", ["run", "redraw", "verify"])
def test_jobs_beyond_the_bound_is_one_line(command, tmp_path, capsys):
    argv = [command, "data_overview", "--jobs", "99999999999999999999", "--out", str(tmp_path)]
    if command == "verify":
        argv[-2:] = ["--quick"]
    try:
        status = cli.main(argv)
    except SystemExit as exc:  # run and redraw: the parser's error
        status = exc.code
    err = capsys.readouterr().err
    assert status == 2
    assert f"--jobs must be at most {_args.JOBS_MAX}" in err and len(err.strip().splitlines()) == 1, err
    assert not list(tmp_path.iterdir())  # nothing ran


def test_jobs_are_at_most_one_per_experiment(slow_toys, tmp_path, monkeypatch):
    """``--jobs 200`` for two experiments starts two worker processes, not 200."""
    import concurrent.futures

    started = []

    class Recording(concurrent.futures.ProcessPoolExecutor):
        def __init__(self, max_workers=None, **kwargs):
            started.append(max_workers)
            super().__init__(max_workers=max_workers, **kwargs)

    monkeypatch.setattr(concurrent.futures, "ProcessPoolExecutor", Recording)
    monkeypatch.setenv("TOY_SLEEP", "0")
    assert engine.run(["toyedge.a", "toyedge.b"], out=tmp_path / "out", quick=True, jobs=200) == 0
    assert started == [2] and len((tmp_path / "pids").read_text().split()) == 2


@pytest.mark.parametrize(
    "argv",
    [
        ["run", "data_overview", "--out", ""],
        ["redraw", "all", "--out", " "],
        ["claims", "--out", ""],
        ["verify", "data_overview", "--reference", ""],
        ["verify", "data_overview", "--keep", ""],
    ],
)
def test_an_empty_folder_is_refused(argv, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)  # an empty --out would have been this folder
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    err = capsys.readouterr().err
    assert exc.value.code == 2 and "is empty; name a folder" in err and len(err.strip().splitlines()) == 1
    assert not list(tmp_path.iterdir())


def test_an_experiments_own_command_refuses_an_empty_out():
    from experiments.runner import _common

    with pytest.raises(SystemExit) as exc:
        _common.experiment_parser("experiments.mattei2016_fig1").parse_args(["--out", ""])
    assert exc.value.code == 2


# --------------------------------------------------------------------------- the module runner
def test_module_runner_never_imports_from_the_working_folder(tmp_path):
    """``python -m experiments run evilmod.x`` in a folder holding ``evilmod`` runs none of its code: the
    working folder ``python -m`` puts on ``sys.path`` is taken off (``repro`` never had it)."""
    work = tmp_path / "work"
    (work / "evilmod").mkdir(parents=True)
    marker = tmp_path / "ran"
    code = f"open({str(marker)!r}, 'w').close()\ndef compute(cfg):\n    pass\n"
    for path in (work / "evilmod" / "__init__.py", work / "evilmod" / "x.py", work / "evilmod2.py"):
        path.write_text(code)
    env = {**os.environ, "PYTHONPATH": str(REPO), "REPRO_OFFLINE": "1", "MPLBACKEND": "Agg"}
    for name in ("evilmod.x", "evilmod2.compute"):
        res = subprocess.run(
            [sys.executable, "-m", "experiments", "run", name, "--quick", "--out", str(tmp_path / "out")],
            env=env, cwd=work, capture_output=True, text=True, timeout=120,
        )  # fmt: skip
        assert res.returncode == 2, res.stderr
        assert f"unknown experiment(s): {name}" in res.stderr
        assert not marker.exists(), f"{name}: code from the working folder ran"


# --------------------------------------------------------------------------- verify's reference
def test_verify_says_a_reference_is_missing_before_running(tmp_path, monkeypatch, capsys):
    def no_run(*args, **kwargs):
        raise AssertionError("ran an experiment before checking the reference")

    monkeypatch.setattr(engine, "run", no_run)
    missing, a_file, empty = tmp_path / "missing", tmp_path / "hostname", tmp_path / "empty"
    a_file.write_text("host\n")
    empty.mkdir()
    cases = {
        missing: f"the reference folder {missing} does not exist; nothing was run",
        a_file: f"--reference {a_file} is not a folder",
        empty: f"no reference for data_overview in {empty} (no {empty / 'data_overview.csv'}); make it with "
        f"`repro run data_overview --out {empty}`; nothing was run",
    }
    for reference, words in cases.items():
        assert cli.main(["verify", "data_overview", "--reference", str(reference)]) == 2
        err = capsys.readouterr().err
        assert words in err and len(err.strip().splitlines()) == 1, err
        assert "--out /" not in err.replace(f"--out {empty}", "")  # never --out for a file
    # --update writes the reference: a folder that does not exist yet is fine, a file is not
    assert cli.main(["verify", "data_overview", "--quick", "--update", "--reference", str(a_file)]) == 2
    assert "is not a folder" in capsys.readouterr().err


# --------------------------------------------------------------------------- Ctrl-C and kill -9
def test_ctrl_c_stops_the_run_and_its_workers_in_one_line(start, tmp_path):
    proc, pids = start()
    os.killpg(proc.pid, signal.SIGINT)  # what Ctrl-C in a terminal sends: the whole foreground group
    proc.wait(timeout=60)
    err = (tmp_path / "stderr").read_text()
    assert proc.returncode == 130, err
    assert "Traceback" not in err and "repro: interrupted" in err, err
    assert not _gone_within(pids, 10)
    assert not (tmp_path / "out" / "CLAIMS.md").exists()
    assert not [p for p in (tmp_path / "out").rglob("*") if p.name.startswith(".") and ".tmp" in p.name]


def test_workers_die_with_their_parent(start, tmp_path):
    """``kill -9`` of ``repro run A B --jobs 2``: both workers stop within seconds instead of finishing
    into ``--out`` and then waiting for work forever."""
    proc, pids = start()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    left = _gone_within(pids, 10)
    assert not left, f"workers alive 10 s after their parent was killed: {left}"
    assert not (tmp_path / "out" / "a.csv").exists() and not (tmp_path / "out" / "b.csv").exists()


# --------------------------------------------------------------------------- verify: timing flag, temporaries
def _claims(folder: Path, verdict: str, timing: bool) -> None:
    import pandas as pd

    (folder / "claims").mkdir(parents=True)
    pd.DataFrame({"k": [1, 2], "v": [0.5, 0.25]}).to_csv(folder / "toy.csv", index=False)
    rows = {"experiment": ["toy"], "id": ["speed"], "machine_dependent": [timing], "verdict": [verdict]}
    pd.DataFrame(rows).to_csv(folder / "claims" / "toy.csv", index=False)


def test_verify_takes_what_is_timing_from_the_code_not_the_reference(tmp_path):
    """A reference that marks a claim machine-dependent cannot hide its verdict's change: whether a claim
    is timing is what the run's own claims file says (the code that ran)."""
    from experiments.runner.verify import compare_experiment

    _claims(tmp_path / "ref", "not reproduced", timing=True)  # flag edited in the reference
    _claims(tmp_path / "new", "reproduced", timing=False)
    report = compare_experiment("toy", tmp_path / "new", tmp_path / "ref")
    assert not report.ok and report.verdicts == [
        {"id": "speed", "old": "not reproduced", "new": "reproduced"}
    ]
    _claims(tmp_path / "new2", "reproduced", timing=True)  # a timing claim of the code: reported apart
    report = compare_experiment("toy", tmp_path / "new2", tmp_path / "ref")
    assert report.ok and report.timing_verdicts and not report.verdicts


def test_verify_removes_the_run_folders_of_killed_verifies(tmp_path):
    from experiments.runner.verify import RUN_PREFIX, remove_stale_runs

    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    )
    stale = tmp_path / f"{RUN_PREFIX}{int(dead.stdout)}-abc"
    live = tmp_path / f"{RUN_PREFIX}{os.getpid()}-def"
    other = tmp_path / f"{RUN_PREFIX}notapid-x"
    for folder in (stale, live, other):
        (folder / "claims").mkdir(parents=True)
    assert remove_stale_runs(tmp_path) == [stale]
    assert not stale.exists() and live.is_dir() and other.is_dir()


def test_a_reference_cut_inside_a_row_is_a_bad_reference(tmp_path):
    """A reference whose last row was cut (a copy interrupted, a disk full) is damaged (exit status 2),
    not a row of moved numbers (1)."""
    from experiments.runner.verify import compare_experiment

    for folder in ("ref", "new"):
        _claims(tmp_path / folder, "reproduced", timing=False)
    csv = tmp_path / "ref" / "toy.csv"
    csv.write_text(csv.read_text().rstrip("\n").rsplit(",", 1)[0] + "\n")  # "2,0.25" -> "2"
    report = compare_experiment("toy", tmp_path / "new", tmp_path / "ref")
    assert "is malformed (row 2 has 1 of 2 fields)" in report.error and not report.ok


def test_a_missing_reference_names_the_command_that_makes_it(tmp_path):
    """A paper experiment's reference is made by `repro run`, a benchmark's by `repro bench`."""
    from experiments.runner.verify import _make_it

    got = _make_it("bench_cli sigg2008_fig2 bench_nspca", tmp_path)
    assert got == (
        f"make it with `repro run sigg2008_fig2 --out {tmp_path}` and "
        f"`repro bench bench_cli bench_nspca --out {tmp_path}`"
    )
    assert _make_it("sigg2008_fig2", tmp_path) == f"make it with `repro run sigg2008_fig2 --out {tmp_path}`"
