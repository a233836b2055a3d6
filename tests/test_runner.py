"""The experiment protocol, the claims ledger and the `repro` command line."""

import textwrap

import numpy as np
import pandas as pd
import pytest

from experiments.runner import claims as ledger
from experiments.runner import cli, registry
from experiments.runner._common import Config, preprocess, run_module

TOY = textwrap.dedent(
    '''
    """A toy experiment for the runner tests."""
    import matplotlib.pyplot as plt
    import pandas as pd

    from experiments.runner import _common
    from experiments.runner.claims import Claim, Outcome, REPRODUCED, NOT_REPRODUCED

    TITLE = "Toy: y = 2x"

    def _slope(df):
        s = (df.y.iloc[-1] - df.y.iloc[0]) / (df.x.iloc[-1] - df.x.iloc[0])
        return Outcome(f"{s:.2f}", REPRODUCED if abs(s - 2) < 1e-9 else NOT_REPRODUCED)

    def _broken(df):
        raise KeyError("no such column")

    CLAIMS = [
        Claim("slope", "The slope is 2 (Toy 2024, Fig. 1).", "2", _slope),
        Claim("third", "The slope is 3.", "3", lambda df: Outcome("2", NOT_REPRODUCED, "it is 2")),
        Claim("broken", "A check that raises.", "", _broken),
    ]

    def compute(cfg):
        n = 3 if cfg.quick else 10
        return pd.DataFrame({"x": range(n), "y": [2 * i for i in range(n)]})

    def plot(df, cfg):
        fig, ax = plt.subplots()
        ax.plot(df.x, df.y)
        return fig

    def table(df, cfg):
        return _common.markdown_table(df)

    def main(argv=None):
        return _common.run(__name__, argv)
    '''
)


@pytest.fixture
def toy_module(tmp_path, monkeypatch):
    pkg = tmp_path / "toypkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "toy_fig1.py").write_text(TOY)
    monkeypatch.syspath_prepend(str(tmp_path))
    return "toypkg.toy_fig1"


def test_run_module_writes_csv_png_and_ledger(toy_module, tmp_path):
    out = tmp_path / "figs"
    summary = run_module(toy_module, Config(quick=True, out=out))
    assert "toy_fig1: 3 rows" in summary
    assert (out / "toy_fig1.png").stat().st_size > 0
    assert pd.read_csv(out / "toy_fig1.csv").shape == (3, 2)
    assert (out / "toy_fig1.md").read_text().splitlines()[:3] == ["| x | y |", "|---|---|", "| 0 | 0 |"]
    rows = pd.read_csv(out / "claims" / "toy_fig1.csv")
    assert list(rows.id) == ["slope", "third", "broken"]
    assert list(rows.verdict) == [ledger.REPRODUCED, ledger.NOT_REPRODUCED, ledger.ERROR]
    assert "KeyError" in rows.note.iloc[2]
    md = (out / "CLAIMS.md").read_text()
    assert (
        "3 claims. Mathematical and statistical (3): 1 reproduced, 1 not reproduced, 1 check failed. "
        "Timing, machine-dependent (0): none." in md
    )
    assert (
        "| toy_fig1 | slope | The slope is 2 (Toy 2024, Fig. 1). | 2 | 2.00 | **reproduced** (quick run) |"
        in md
    )


def test_ledger_keeps_other_experiments_rows(tmp_path):
    other = ledger.evaluate(
        "other",
        [ledger.Claim("a", "s", "", lambda df: ledger.Outcome("1", "reproduced"))],
        pd.DataFrame({"x": [1]}),
        quick=False,
    )
    ledger.write_ledger(tmp_path, "other", other)
    mine = ledger.evaluate(
        "mine",
        [ledger.Claim("b", "t|u", "", lambda df: ledger.Outcome("2", "not reproduced"))],
        pd.DataFrame({"x": [1]}),
        quick=False,
    )
    ledger.write_ledger(tmp_path, "mine", mine)
    df = ledger.read_ledger(tmp_path)
    assert sorted(df.experiment) == ["mine", "other"]
    md = (tmp_path / "CLAIMS.md").read_text()
    assert "t\\|u" in md and "(quick run)" not in md


def test_duplicate_claim_ids_and_bad_verdicts_are_refused():
    c = ledger.Claim("x", "s", "", lambda df: ledger.Outcome("1", ledger.REPRODUCED))
    with pytest.raises(ValueError, match="duplicate claim id"):
        ledger.evaluate("e", [c, c], pd.DataFrame(), quick=True)
    with pytest.raises(ValueError, match="verdict"):
        ledger.Outcome("1", "kind of")


def test_empty_result_is_an_error(toy_module, tmp_path, monkeypatch):
    import importlib

    mod = importlib.import_module(toy_module)
    monkeypatch.setattr(mod, "compute", lambda cfg: pd.DataFrame())
    with pytest.raises(RuntimeError, match="no data"):
        run_module(toy_module, Config(quick=True, out=tmp_path))


def test_cli_list_run_claims(capsys, tmp_path):
    assert cli.main(["list"]) == 0
    listed = capsys.readouterr().out
    assert "data_overview" in listed.split()[0] or "data_overview" in listed
    assert cli.main(["run", "no_such_experiment", "--out", str(tmp_path)]) == 2
    assert "unknown experiment" in capsys.readouterr().err
    assert cli.main(["claims", "--out", str(tmp_path)]) == 1


def test_experiment_names_order():
    names = registry.experiment_names()
    assert names[0] == "data_overview"
    benches = [i for i, n in enumerate(names) if n.startswith("bench_")]
    assert all(i > j for i in benches for j, n in enumerate(names) if not n.startswith("bench_"))
    # `repro run all` is the reproduction, `repro bench all` the benchmarks: each experiment in one
    papers, bench = registry.paper_names(), registry.benchmark_names()
    assert names == papers + bench and not any(n.startswith("bench_") for n in papers)
    assert len(bench) == 11 and all(registry.is_benchmark(n) for n in bench)
    for n in bench:
        module = registry.module_name(n)
        assert module == f"experiments.benchmarks.{n.removeprefix('bench_')}"
        assert registry.stem(module) == n and registry.source(n).parent == registry.BENCH_DIR
        assert registry.verdict_folders(n)[0] == "goals"
    assert registry.verdict_folders("bench_optimal") == ("goals", "claims")  # the published optima
    assert registry.source("bench_no_such") is None and registry.source("em_pca") is None


def test_preprocess_named_steps():
    X = pd.DataFrame({"a": [0.0, 255.0, 51.0], "b": [1.0, 2.0, 6.0]}).to_numpy()
    assert preprocess(X, "unit")[1, 0] == 1.0
    assert abs(preprocess(X, "center").mean(0)).max() < 1e-12
    assert abs(preprocess(X, "standardize").std(0, ddof=1) - 1).max() < 1e-12
    assert abs(preprocess(X, "unit-center").mean(0)).max() < 1e-12
    with pytest.raises(ValueError, match="how must be one of"):
        preprocess(X, "whiten")


def test_redraw_rebuilds_figure_and_ledger_from_csv(toy_module, tmp_path):
    from experiments.runner._common import redraw_module

    out = tmp_path / "figs"
    run_module(toy_module, Config(quick=True, out=out))
    before = (out / "claims" / "toy_fig1.csv").read_text()
    (out / "toy_fig1.png").unlink()
    summary = redraw_module(toy_module, Config(quick=False, out=out))
    assert "toy_fig1: 3 rows" in summary and (out / "toy_fig1.png").exists()
    assert (out / "claims" / "toy_fig1.csv").read_text() == before  # quick flag kept from the ledger
    with pytest.raises(ValueError, match=r"no .*toy_fig1\.csv to redraw from.*repro run"):
        redraw_module(toy_module, Config(out=tmp_path / "empty"))


def test_call_timing_decides_with_a_margin():
    # clearly below a lower-is-better threshold, clearly above it, and straddling it
    assert ledger.call_timing([0.5, 0.55, 0.6], 1.0).state == "met"
    assert ledger.call_timing([1.5, 1.6, 1.4], 1.0).state == "missed"
    close = ledger.call_timing([0.95, 1.02, 0.99, 1.05], 1.0)
    assert close.state == "too close" and close.verdict == ledger.TOO_CLOSE
    # a median just past the threshold but inside the margin is not called either way
    assert ledger.call_timing([0.9, 0.91, 0.92], 1.0, margin=0.15).state == "too close"
    # higher is better mirrors it
    assert ledger.call_timing([30.0, 25.0, 28.0], 20.0, lower_is_better=False).state == "met"
    assert ledger.call_timing([10.0, 12.0], 20.0, lower_is_better=False).state == "missed"
    assert "range" in ledger.call_timing([1.0, 2.0, 3.0], 10.0).text()
    with pytest.raises(ValueError, match="samples"):
        ledger.call_timing([np.nan], 1.0)


def test_timing_rows_are_marked_and_counted_apart(tmp_path):
    rows = pd.DataFrame(
        [
            dict(
                experiment="e",
                id="a",
                claim="c",
                published="",
                reproduced="1",
                verdict=ledger.REPRODUCED,
                note="",
                quick=False,
                machine_dependent=False,
            ),
            dict(
                experiment="e",
                id="b",
                claim="c",
                published="",
                reproduced="2",
                verdict=ledger.TOO_CLOSE,
                note="",
                quick=False,
                machine_dependent=True,
            ),
        ]
    )
    ledger.write_ledger(tmp_path, "e", rows)
    md = (tmp_path / "CLAIMS.md").read_text()
    assert "Mathematical and statistical (1): 1 reproduced. Timing, machine-dependent (1): 1 too close" in md
    assert "**too close to call** *timing*" in md


THREADS_TOY = textwrap.dedent(
    '''
    """Records the BLAS threads its computation saw."""
    import matplotlib.pyplot as plt
    import pandas as pd
    from threadpoolctl import threadpool_info

    from experiments.runner import _common

    TITLE = "Toy: threads"
    CLAIMS = []
    RUN_ALONE = {alone}

    def compute(cfg):
        n = [p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"]
        return pd.DataFrame({"threads": n or [-1]})

    def plot(df, cfg):
        fig, ax = plt.subplots()
        ax.plot(df.threads)
        return fig

    def main(argv=None):
        return _common.run(__name__, argv)
    '''
)


@pytest.mark.parametrize("alone", [False, True])
def test_experiments_compute_with_one_blas_thread_unless_run_alone(alone, tmp_path, monkeypatch):
    from threadpoolctl import threadpool_info, threadpool_limits

    pkg = tmp_path / f"threadpkg_{alone}"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / f"toy_threads_{alone}.py").write_text(THREADS_TOY.replace("{alone}", str(alone)))
    monkeypatch.syspath_prepend(str(tmp_path))
    if not [p for p in threadpool_info() if p["user_api"] == "blas"]:
        pytest.skip("no BLAS thread pool to limit")
    with threadpool_limits(limits=2, user_api="blas"):  # as on a 2-core machine, whatever this one has
        run_module(f"threadpkg_{alone}.toy_threads_{alone}", Config(quick=True, out=tmp_path / "out"))
    seen = pd.read_csv(tmp_path / "out" / f"toy_threads_{alone}.csv")["threads"]
    assert (seen == (2 if alone else 1)).all(), seen.tolist()
