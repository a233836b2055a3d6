"""Outside a checkout (a wheel): ``repro list`` reads the recorded run times that the wheel carries, and
the wheel carries every file the packages read, checked by installing it and running from another folder."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from experiments.runner import _paths, _runtimes


def test_packaged_runtimes_are_the_committed_ones():
    # the wheel ships experiments/runner/recorded_runtimes.csv, a link to figures/runtimes.csv
    assert _paths.PACKAGED_RUNTIMES.read_bytes() == (_paths.FIGURES_DIR / "runtimes.csv").read_bytes()


def test_figures_absent_reads_the_packaged_times(tmp_path, monkeypatch):
    committed = _runtimes.read(_paths.FIGURES_DIR)
    assert len(committed) > 30
    # an installed copy: figures/ beside the packages does not exist
    monkeypatch.setattr(_paths, "FIGURES_DIR", tmp_path / "figures")
    assert _runtimes.read(tmp_path / "figures") == committed
    # any other folder without runtimes.csv has no recorded time
    assert _runtimes.read(tmp_path) == {}
    assert _runtimes.typical("asteris2014_fig3", True, tmp_path) is None


def test_messages_outside_a_checkout_name_the_folder_written(tmp_path, monkeypatch, capsys):
    from experiments.runner import cli

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(_paths, "in_checkout", lambda: False)
    monkeypatch.setattr(_paths, "FIGURES_DIR", tmp_path / "site-packages" / "figures")
    monkeypatch.setattr(cli, "FIGURES_DIR", _paths.FIGURES_DIR)
    assert cli.main(["claims", "--out", str(tmp_path / "nothing")]) == 1
    err = capsys.readouterr().err
    assert f"writes {tmp_path / 'repro-figures'}" in err and "writes figures/" not in err
    assert cli.main(["list"]) == 0
    out = capsys.readouterr().out
    assert "recorded_runtimes.csv (the committed full run's)" in " ".join(out.split())
    assert "  ?  " not in out  # every experiment has its recorded times


# --------------------------------------------------------------------------- the wheel itself
# Built, installed into a fresh virtual environment (the dependencies: this environment's, through a
# .pth file; the package: the wheel's only), and run from another folder: the files that an installed
# copy reads are those the wheel carries, not the checkout's (about 30 s).
ROOT = Path(__file__).resolve().parent.parent
QUICK = "roweis1997_fig1"  # a quick experiment of a few seconds, with timing and mathematical claims


def _source_files() -> list[str] | None:
    """The checkout's files (tracked, and new ones git does not ignore), or None outside a checkout."""
    res = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "--cached", "--others", "--exclude-standard"],
        capture_output=True,
        text=True,
    )
    return res.stdout.split("\n")[:-1] if res.returncode == 0 else None


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """The wheel, built from a clean copy of the sources (a build/ folder left in the checkout by an
    earlier build would put its stale files into the wheel)."""
    import shutil

    files = _source_files()
    if files is None:
        pytest.skip("not a git checkout")
    src, out = tmp_path_factory.mktemp("src"), tmp_path_factory.mktemp("wheel")
    for f in files:
        if (ROOT / f).is_file() or (ROOT / f).is_symlink():
            (src / f).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / f, src / f, follow_symlinks=False)
    res = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(src)],
        capture_output=True,
        text=True,
        cwd=out,
        timeout=300,
    )
    if res.returncode and "No matching distribution found for setuptools" in res.stderr:
        pytest.skip("the wheel's build backend (setuptools) cannot be installed here: no package index")
    assert res.returncode == 0, res.stderr[-3000:]
    (path,) = out.glob("*.whl")
    return path


def test_the_wheel_carries_every_file_the_packages_track(wheel):
    packaged = [f for f in _source_files() if f.split("/", 1)[0] in ("repro", "experiments", "data_fetch")]
    names = set(zipfile.ZipFile(wheel).namelist())
    missing = [f for f in packaged if f not in names]
    assert not missing, f"not in the wheel (pyproject.toml's package-data): {missing}"
    # the files the runner reads by name, whatever git says
    for f in ("data_fetch/registry.txt",
              "experiments/runner/recorded_runtimes.csv", f"experiments/references/quick/{QUICK}.csv",
              f"experiments/references/quick/claims/{QUICK}.csv",
              "experiments/references/library_defaults.csv"):  # fmt: skip
        assert f in names, f


def test_an_installed_wheel_runs_and_verifies_from_another_folder(wheel, tmp_path):
    import site

    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    purelib = subprocess.run(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "REPRO_QUICK_OUT")}
    env["MPLBACKEND"] = "Agg"
    # the wheel first, into the new environment alone (pip sees no other installation to replace)
    res = subprocess.run(
        [str(python), "-m", "pip", "install", "--no-deps", "--no-index", "--ignore-installed", "-q",
         str(wheel)],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    # then this environment's dependencies, appended to the path: their .pth files (an editable install
    # of this checkout among them) are not run, so the package comes from the wheel only
    Path(purelib, "_dependencies.pth").write_text("\n".join(site.getsitepackages()) + "\n")
    work = tmp_path / "elsewhere"
    work.mkdir()

    def repro(*args):
        res = subprocess.run(
            [str(venv / "bin" / "repro"), *args],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        return res.returncode, res.stdout + res.stderr

    res = subprocess.run(
        [str(python), "-c", "import repro, experiments; print(repro.__file__); print(experiments.__file__)"],
        cwd=work, env=env, capture_output=True, text=True,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    located = res.stdout.split()
    assert all(p.startswith(purelib) for p in located), located
    code, out = repro("run", QUICK, "--quick", "--out", "q", "--jobs", "1")
    assert code == 0, out
    assert (work / "q" / "environment.json").is_file() and (work / "q" / f"{QUICK}.csv").is_file()
    code, out = repro("verify", QUICK, "--quick", "--jobs", "1")
    assert code == 0, out
    assert "numbers moved: none" in out and purelib in out  # against the wheel's quick references
    code, out = repro("verify", "--run", "q")
    assert code == 0 and "numbers moved: none" in out, out
