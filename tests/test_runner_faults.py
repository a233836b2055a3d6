"""The runner never loses a good output: kills at random moments, and two runs into one folder.

A tiny toy experiment (a few thousand CSV rows, a PNG, a Markdown table, claims) keeps this fast. The
kill test forks the already-imported command line (the same code as ``python -m experiments run``,
without 1-2 s of interpreter start per kill) and SIGKILLs it at random moments of its run, most of
which is spent writing; two more kills hit real ``python -m experiments run`` subprocesses. After every
kill each output of the earlier complete run must be byte-identical (the outputs are deterministic, so
the old and the new version are the same bytes: anything else is a torn write) and the ledger complete.
"""

from __future__ import annotations

import os
import random
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from experiments.runner import _atomic, _runtimes, cli
from experiments.runner import claims as ledger

REPO = Path(__file__).resolve().parent.parent

TOY = textwrap.dedent(
    '''
    """Toy experiment {n} for the fault tests."""
    import matplotlib.pyplot as plt
    import numpy as np
    import pandas as pd

    from experiments.runner import _common
    from experiments.runner.claims import Claim, Outcome, REPRODUCED

    TITLE = "Toy {n}: y = {n} x"
    DATA = ()

    CLAIMS = [
        Claim("slope", "The slope is {n}.", "{n}", lambda df: Outcome(f"{{df.y.iloc[1]:.0f}}", REPRODUCED)),
        Claim("rows", "There are many rows.", "", lambda df: Outcome(str(len(df)), REPRODUCED)),
    ]

    def compute(cfg):
        x = np.arange(4000)
        return pd.DataFrame({{"x": x, "y": {n} * x, "z": np.sin(x / 7.0) * 1e3}})

    def plot(df, cfg):
        fig, ax = plt.subplots(figsize=(3, 2))
        ax.plot(df.x, df.z, lw=0.5)
        return fig

    def table(df, cfg):
        return _common.markdown_table(df.head(200))

    def main(argv=None):
        return _common.run(__name__, argv)
    '''
)

NAMES = [f"toyfault.toy{n}" for n in (1, 2)]


@pytest.fixture
def toypkg(tmp_path, monkeypatch):
    root = tmp_path / "src"
    pkg = root / "toyfault"
    pkg.mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    for name in NAMES:
        n = int(name[-1])
        (pkg / f"toy{n}.py").write_text(TOY.format(n=n))
    monkeypatch.syspath_prepend(str(root))
    return root


def _snapshot(out: Path) -> dict[str, bytes]:
    varying = ("runtimes.csv", _atomic.LEDGER_DIGESTS)  # the times, and the record of their file
    return {
        str(p.relative_to(out)): p.read_bytes()
        for p in sorted(out.rglob("*"))
        if p.is_file() and not p.name.startswith(".") and p.name not in varying
    }


def _assert_intact(out: Path, baseline: dict[str, bytes], where: str) -> None:
    now = _snapshot(out)
    for rel, data in baseline.items():
        assert rel in now, f"{where}: {rel} disappeared"
        assert now[rel] == data, f"{where}: {rel} changed ({len(now[rel])} bytes, expected {len(data)})"
    rows = ledger.read_ledger(out)
    assert rows.attrs["damaged"] == [], f"{where}: {rows.attrs['damaged']}"
    assert sorted(set(rows.experiment)) == ["toy1", "toy2"], where
    assert len(rows) == 4, where
    times = _runtimes.read(out)
    assert {("toy1", True), ("toy2", True)} <= set(times), f"{where}: {times}"


def _forked_run(argv: list[str]) -> int:
    pid = os.fork()
    if pid == 0:  # child: the command line, output discarded
        rc = 99
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, 1)
            os.dup2(devnull, 2)
            rc = cli.main(argv)
        finally:
            os._exit(rc)
    return pid


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_kills_at_random_moments_never_damage_an_output(toypkg, tmp_path):
    out = tmp_path / "out"
    # in one process (--jobs 1, the default until it became the cores), so that a SIGKILL stops all the
    # work at the random moment (a killed parent's pool workers would finish their experiment on their own)
    argv = ["run", *NAMES, "--quick", "--jobs", "1", "--out", str(out)]
    assert cli.main(argv) == 0  # the first run also warms matplotlib's caches
    baseline = _snapshot(out)
    assert {"toy1.csv", "toy1.png", "toy1.md", "claims/toy1.csv", "CLAIMS.md"} <= set(baseline)
    t0 = time.monotonic()
    pid = _forked_run(argv)
    assert os.waitpid(pid, 0)[1] == 0
    duration = time.monotonic() - t0

    rng = random.Random(20261123)
    kills = attempts = 0
    while kills < 20 and attempts < 60:  # a run that finished before its kill does not count
        attempts += 1
        pid = _forked_run(argv)
        time.sleep(rng.uniform(0.0, 0.9 * duration))
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        kills += os.WIFSIGNALED(status)
        _assert_intact(out, baseline, f"kill {attempts}")
    assert kills >= 20

    # and a kill of the real command, in its own interpreter
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(toypkg), str(REPO)]), "MPLBACKEND": "Agg"}
    for i, delay in enumerate((1.5,)):
        proc = subprocess.Popen(
            [sys.executable, "-m", "experiments", *argv], env=env, cwd=REPO,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        time.sleep(delay)
        proc.kill()
        proc.wait()
        _assert_intact(out, baseline, f"subprocess kill {i}")

    # a clean run afterwards succeeds and clears the temporaries a kill left between write and rename
    for p in out.rglob(".*.tmp*"):
        os.utime(p, (time.time() - 7200, time.time() - 7200))
    assert cli.main(argv) == 0
    _assert_intact(out, baseline, "after the final run")
    assert not list(out.rglob(".*.tmp*"))


def test_two_concurrent_parallel_runs_into_one_folder(toypkg, tmp_path):
    out = tmp_path / "out"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(toypkg), str(REPO)]), "MPLBACKEND": "Agg"}
    cmd = [sys.executable, "-m", "experiments", "run", *NAMES, "--quick", "--jobs", "2", "--out", str(out)]
    procs = [
        subprocess.Popen(cmd, env=env, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        for _ in range(2)
    ]
    logs = [p.communicate(timeout=240)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0], logs
    rows = ledger.read_ledger(out)
    assert rows.attrs["damaged"] == [] and len(rows) == 4
    assert sorted(set(rows.experiment)) == ["toy1", "toy2"]
    # CLAIMS.md is exactly what the stored rows render to, and nothing temporary is left
    fresh = tmp_path / "fresh"
    shutil.copytree(out / "claims", fresh / "claims")
    shutil.copy(out / _atomic.LEDGER_DIGESTS, fresh)  # the record that vouches for them
    ledger.render_ledger(fresh)
    assert (out / "CLAIMS.md").read_text() == (fresh / "CLAIMS.md").read_text()
    assert not list(out.rglob(".*.tmp*"))
    assert {k[0] for k in _runtimes.read(out)} == {"toy1", "toy2"}


def test_atomic_path_keeps_the_old_file_on_error_and_uses_unique_names(tmp_path):
    target = tmp_path / "a.csv"
    target.write_text("old\n")
    with pytest.raises(RuntimeError), _atomic.atomic_path(target) as tmp:
        tmp.write_text("half")
        raise RuntimeError("killed")
    assert target.read_text() == "old\n" and list(tmp_path.iterdir()) == [target]
    with _atomic.atomic_path(target) as t1, _atomic.atomic_path(target) as t2:
        assert t1 != t2 and t1.parent == t2.parent == tmp_path and t1.suffix == ".csv"
        t1.write_text("one\n")
        t2.write_text("two\n")
    assert target.read_text() == "one\n"  # the outer block renames last
    assert oct(target.stat().st_mode & 0o777) == oct(0o666 & ~_atomic._UMASK)


# --------------------------------------------------------------------------- files read back
def _one_line(err: str) -> None:
    """The command's complaint is short: no traceback; one line per failed experiment (after the
    runner's "NAME FAILED:") and the run's summary."""
    lines = err.strip().splitlines()
    assert "Traceback" not in err and not any(x.startswith("  File ") for x in lines), err
    assert len(lines) <= 5, err


def _cut_at_row_boundary(path: Path) -> None:
    path.write_bytes(b"".join(path.read_bytes().splitlines(keepends=True)[:-1]))


@pytest.fixture
def quick_run(toypkg, tmp_path):
    """A complete quick run of the two toys in ``tmp_path / "out"``."""
    out = tmp_path / "out"
    assert cli.main(["run", *NAMES, "--quick", "--jobs", "1", "--out", str(out)]) == 0
    return out


@pytest.mark.parametrize("record", ["missing", "empty", "binary", "lacks the entry", "cut inside a line"])
def test_redraw_refuses_a_csv_its_record_does_not_vouch_for(quick_run, record, capsys):
    out = quick_run
    _cut_at_row_boundary(out / "toy1.csv")  # a cut at a row boundary: the file itself looks whole
    digests = out / _atomic.DIGESTS
    text = digests.read_text()
    damage = {
        "missing": lambda: digests.unlink(),
        "empty": lambda: digests.write_text(""),
        "binary": lambda: digests.write_bytes(bytes(range(256))),
        "lacks the entry": lambda: digests.write_text(
            "".join(x for x in text.splitlines(keepends=True) if "toy1.csv" not in x)
        ),
        "cut inside a line": lambda: digests.write_text(text[:-20]),
    }
    damage[record]()
    damaged = digests.read_bytes() if digests.exists() else None
    ledger_before = (out / "CLAIMS.md").read_bytes()
    capsys.readouterr()
    assert cli.main(["redraw", *NAMES, "--jobs", "1", "--out", str(out)]) in (1, 2)
    err = capsys.readouterr().err
    _one_line(err)
    assert str(out) in err and ("toy1.csv" in err or _atomic.DIGESTS in err)
    assert (out / "CLAIMS.md").read_bytes() == ledger_before  # not rebuilt from the cut file
    if record in ("binary", "empty", "cut inside a line"):  # a damaged record is refused, not replaced
        assert "nothing was computed" in err and "remove it" in err
        assert cli.main(["run", NAMES[1], "--quick", "--jobs", "1", "--out", str(out)]) == 2
        assert digests.read_bytes() == damaged  # left for the user to restore, not overwritten


def test_redraw_keeps_the_mode_when_the_claims_files_are_gone(quick_run, capsys):
    out = quick_run
    for p in (out / "claims").glob("*.csv"):
        p.unlink()
    (out / "claims" / "toy2.csv").write_text("damaged\n")
    assert cli.main(["redraw", *NAMES, "--jobs", "1", "--out", str(out)]) == 0
    rows = ledger.read_ledger(out)
    assert rows.attrs["damaged"] == [] and len(rows) == 4
    assert set(rows.quick) == {"True"}  # still a quick run: recorded with the results, not inferred
    assert "(quick run)" in (out / "CLAIMS.md").read_text()
    # a record of the earlier format says no mode: the redraw refuses rather than guess
    digests = out / _atomic.DIGESTS
    digests.write_text(digests.read_text().replace("  quick\n", "\n"))
    capsys.readouterr()
    assert cli.main(["redraw", NAMES[0], "--out", str(out)]) == 1
    err = capsys.readouterr().err
    _one_line(err)
    assert "quick or a full run" in err


@pytest.mark.parametrize("damage", ["cut at a row boundary", "verdict edited", "not recorded"])
def test_a_claims_file_that_is_not_the_runners_is_never_shown(quick_run, damage):
    out = quick_run
    path = out / "claims" / "toy1.csv"
    if damage == "cut at a row boundary":
        _cut_at_row_boundary(path)
    elif damage == "verdict edited":
        path.write_text(path.read_text().replace(",reproduced,", ",not reproduced,"))
    else:
        record = out / _atomic.LEDGER_DIGESTS
        record.write_text("".join(x for x in record.read_text().splitlines(True) if "toy1" not in x))
    rows = ledger.read_ledger(out)
    assert set(rows.experiment) == {"toy2"}
    (why,) = rows.attrs["damaged"]
    assert str(path) in why
    ledger.render_ledger(out)
    text = (out / "CLAIMS.md").read_text()
    assert "Skipped 1 damaged claims file" in text and "not reproduced**" not in text
    # running the experiment again restores its rows
    assert cli.main(["run", NAMES[0], "--quick", "--jobs", "1", "--out", str(out)]) == 0
    assert ledger.read_ledger(out).attrs["damaged"] == [] and len(ledger.read_ledger(out)) == 4


def test_a_damaged_runtimes_file_is_set_aside_in_one_line(quick_run, capsys):
    out = quick_run
    (out / "runtimes.csv").write_bytes(bytes(range(256)) * 4)
    assert _runtimes.read(out) == {}
    capsys.readouterr()
    assert cli.main(["run", NAMES[0], "--quick", "--jobs", "1", "--out", str(out)]) == 0
    err = capsys.readouterr().err
    assert "Traceback" not in err
    (line,) = [x for x in err.splitlines() if "runtimes.csv" in x]
    assert "not used" in line and "writes it again" in line
    assert set(_runtimes.read(out)) == {("toy1", True)}  # written anew
    # a time edited by hand no longer matches its record
    path = out / "runtimes.csv"
    path.write_text(path.read_text().replace("True,", "False,"))
    assert _runtimes.read(out) == {} and "does not match" in _runtimes.problem(out)


@pytest.mark.parametrize("after", [0, 1, 2, 4, 6, 9, 12])
def test_a_full_disk_ends_in_one_line_and_loses_nothing(quick_run, monkeypatch, capsys, after):
    """The ``after``-th fsync (each write's, of the CSV, its record, the PNG, the claims, ...) finds the disk
    full: the run stops with one line naming the file, and every output of the earlier run is intact."""
    import errno

    out = quick_run
    baseline = _snapshot(out)
    real = os.fsync
    calls = []

    def fsync(fd):
        calls.append(fd)
        if len(calls) > after:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    capsys.readouterr()
    status = cli.main(["run", *NAMES, "--quick", "--jobs", "1", "--out", str(out)])
    err = capsys.readouterr().err
    monkeypatch.setattr(os, "fsync", real)
    assert status == 1
    assert "Traceback" not in err, err
    lines = [x for x in err.splitlines() if "No space left on device" in x]
    assert lines and all("cannot write" in x and str(out) in x for x in lines), err
    _assert_intact(out, baseline, f"full disk after {after} writes")
