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
