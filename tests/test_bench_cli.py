"""The command-line start-up benchmark end to end in --quick mode."""

from quickrun import check_outputs, quick_run

from experiments.benchmarks import cli as bench_cli


def test_bench_cli_quick(tmp_path):
    out = quick_run(bench_cli, tmp_path)
    df, rows = check_outputs(out, "bench_cli", bench_cli, min_png_bytes=2_000)
    assert set(df.command) == set(bench_cli.COMMANDS)
    assert (df.seconds > 0).all()
    assert set(rows.id) == {"help-fast", "list-fast"}
