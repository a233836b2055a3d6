"""Outside a checkout (a wheel), ``repro list`` reads the recorded run times that the wheel carries."""

from __future__ import annotations

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
