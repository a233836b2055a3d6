"""Command line: ``python -m experiments`` or ``repro``.

repro list                          the experiments, one line each, with their recorded run times
repro run NAME... [--quick] [--out DIR] [--seed S] [--jobs N]   (--jobs: default the machine's cores)
repro run all [--quick] ...         every paper figure and table, then figures/CLAIMS.md
repro bench NAME...|all [--quick] ...  the benchmarks (the project's goals), then figures/BENCHMARKS.md
repro run NAME --help               what the experiment reproduces, its choices, claims and run time
repro redraw NAME...|all            figures and claims again from the CSVs, no compute
repro claims [NAME...] [--verdict V] [--paper P] [--timing|--no-timing] [--markdown] [--out DIR]
repro data [--fetch]                dataset files and their state (mirror / cached / missing)
repro verify NAME...|all [--quick] [--jobs N] [--json] [--update]   re-run and compare every number
repro verify --run DIR [NAME...] [--reference REF]   compare a folder a run wrote, nothing re-run

Only the standard library is imported at start (``repro --help`` and ``repro list`` read the
experiments' sources with ``ast``); NumPy, Numba and the library load when something runs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import textwrap
from pathlib import Path

from . import _args, _runtimes, engine, registry, verify
from ._paths import FIGURES_DIR, default_out, recorded_runtimes
from ._progress import PROGRESS_ENV

__all__ = ["main"]


# --------------------------------------------------------------------------- run, redraw
def cmd_run(args) -> int:
    """``repro run`` and ``repro redraw``: the run engine with the parsed arguments."""
    return engine.run(
        args.names,
        out=args.out,
        quick=args.quick,
        seed=args.seed,
        jobs=args.jobs,
        redraw=args.redraw,
        bench=args.bench,
    )


# --------------------------------------------------------------------------- list, help
def _recorded_where() -> str:
    """Where ``repro list``'s times come from: ``figures/runtimes.csv`` in a checkout, else the wheel's."""
    path = recorded_runtimes(FIGURES_DIR)
    return "figures/runtimes.csv" if path.parent == FIGURES_DIR else f"{path} (the committed full run's)"


def cmd_list(_args) -> int:
    names = registry.experiment_names()
    times = _runtimes.read(FIGURES_DIR)
    width = max(len(n) for n in names)
    columns = _columns()
    # the time columns as wide as their longest entry ("12 min 07 s" is 11 characters), at least 10
    tw = max([10] + [len(_runtimes.fmt_seconds(t[0])) for t in times.values()])
    indent = " " * (width + 2 + tw + 2 + tw + 2)
    print(f"{'experiment':<{width}}  {'full':>{tw}}  {'--quick':>{tw}}  title")
    for name in names:
        full = times.get((name, False))
        quick = times.get((name, True))
        head = (
            f"{name:<{width}}  {_runtimes.fmt_seconds(full[0]) if full else '?':>{tw}}  "
            f"{_runtimes.fmt_seconds(quick[0]) if quick else '?':>{tw}}  "
        )
        # the title wrapped at word boundaries under its column, never cut
        lines = textwrap.wrap(
            registry.title(name),
            max(columns - len(indent), 20),
            break_long_words=False,
            break_on_hyphens=False,
        )
        print(head + "\n".join([lines[0] if lines else "", *(indent + line for line in lines[1:])]))
    groups = []
    for command, group in (
        ("repro run all", registry.paper_names()),
        ("repro bench all", registry.benchmark_names()),
    ):
        totals = []
        for quick, label in ((False, "full"), (True, "--quick")):
            got = [times[(n, quick)][0] for n in group if (n, quick) in times]
            if got:
                partial = "" if len(got) == len(group) else f" ({len(got)} of {len(group)} recorded)"
                totals.append(f"{_runtimes.fmt_seconds(sum(got))} {label}{partial}")
        groups.append(f"`{command}` {', '.join(totals) or 'none yet'}")
    footer = (
        f"Run times recorded in {_recorded_where()}, one after the other: {'; '.join(groups)}. The "
        "bench_* experiments are the benchmarks (`repro bench`). `repro run NAME --help` explains one "
        "experiment."
    )
    print("\n" + textwrap.fill(footer, columns, break_long_words=False, break_on_hyphens=False))
    return 0


def _columns() -> int:
    """The terminal's width (``COLUMNS`` when set; 100 when not a terminal), at least 60."""
    return max(shutil.get_terminal_size((100, 24)).columns, 60)


def _experiment_help(names: list[str]) -> int:
    available = registry.experiment_names()
    unknown = [n for n in names if n not in available]
    if unknown:
        print(f"unknown experiment(s): {', '.join(unknown)}; `repro list` lists all.", file=sys.stderr)
        return 2
    from . import _common

    for i, name in enumerate(names):
        if i:
            print("\n" + "-" * 100 + "\n")
        prog = f"repro {registry.command(name)} {name}"
        _common.experiment_parser(registry.module_name(name), prog=prog).print_help()
    return 0


# --------------------------------------------------------------------------- claims
_VERDICT_WORDS = {
    "reproduced": "reproduced",
    "partly": "partly reproduced",
    "partly reproduced": "partly reproduced",
    "partial": "partly reproduced",
    "not": "not reproduced",
    "not reproduced": "not reproduced",
    "too close": "too close to call",
    "too close to call": "too close to call",
    "untestable": "untestable here",
    "untestable here": "untestable here",
    "check failed": "check failed",
    "failed": "check failed",
    "error": "check failed",
}


def _short(text: str, width: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= width else text[: max(width - 3, 1)] + "..."


def cmd_claims(args) -> int:
    out = Path(args.out)
    claims_dir = out / "claims"
    if not claims_dir.is_dir() or not any(p for p in claims_dir.glob("*.csv") if not p.name.startswith(".")):
        print(
            f"no ledger in {out} (no {claims_dir}/*.csv). Make it with `repro run all` "
            f"(writes {default_out()}; "
            f"`repro list` shows the time), or for a quick look `repro run all --quick --out /tmp/repro` "
            f"then `repro claims --out /tmp/repro`.",
            file=sys.stderr,
        )
        return 1
    if args.markdown and not (args.names or args.verdict or args.paper or args.timing is not None):
        path = out / "CLAIMS.md"
        if path.exists():
            print(path.read_text(), end="")
            return 0
    from . import claims as ledger

    df = ledger.read_ledger(out)
    for d in df.attrs.get("damaged", []):
        print(f"skipped damaged claims file: {d}", file=sys.stderr)
    if args.names:
        unknown = [n for n in args.names if n not in set(df.experiment)]
        if unknown:
            print(
                f"no claims for {', '.join(unknown)} in {out}; experiments with claims: "
                f"{', '.join(sorted(set(df.experiment)))}.",
                file=sys.stderr,
            )
            return 2
        df = df[df.experiment.isin(args.names)]
    if args.paper:
        df = df[df.experiment.map(registry.paper).isin(args.paper)]
    if args.verdict:
        wanted = []
        for v in args.verdict:
            key = v.strip().lower()
            if key not in _VERDICT_WORDS:
                print(
                    f"--verdict {v!r} is not a verdict; use one of: {', '.join(ledger.VERDICTS)}.",
                    file=sys.stderr,
                )
                return 2
            wanted.append(_VERDICT_WORDS[key])
        df = df[df.verdict.isin(wanted)]
    timing = ledger.is_timing(df) if len(df) else df.experiment.astype(bool)
    if args.timing is not None:
        df = df[timing if args.timing else ~timing]
        timing = ledger.is_timing(df) if len(df) else df.experiment.astype(bool)
    if args.markdown:
        print("| experiment | id | claim | published | reproduced | verdict | note |")
        print("|---|---|---|---|---|---|---|")
        for r in df.itertuples(index=False):
            cells = (r.experiment, r.id, r.claim, r.published, r.reproduced, r.verdict, r.note)
            print("| " + " | ".join(ledger._cell(c) for c in cells) + " |")
        return 0
    width = max(shutil.get_terminal_size((120, 24)).columns, 80)

    def whole(text: str, first: str = "    ") -> str:  # -v: the whole text, wrapped, never cut
        return textwrap.fill(
            " ".join(str(text).split()),
            width,
            initial_indent=first,
            subsequent_indent="    ",
            break_long_words=False,
            break_on_hyphens=False,
        )

    for r, t in zip(df.itertuples(index=False), timing, strict=True):
        mark = "T" if t else " "
        quick = " (quick)" if str(r.quick).lower() == "true" else ""
        head = f"{r.verdict:<17}  {mark}  {r.experiment}/{r.id}{quick}"
        print(head if len(head) <= width else head[: width - 3] + "...")
        detail = f"published {r.published or '(qualitative)'}; reproduced {r.reproduced}"
        if args.verbose:
            print(whole(detail))
            print(whole(r.claim))
            if r.note:
                print(whole(r.note, "    note: "))
            if r.measured:
                print(whole(r.measured, "    measured (not compared): "))
        else:
            print("    " + _short(detail, width - 4))
    counts = df.verdict.value_counts()
    summary = ", ".join(f"{int(counts[v])} {v}" for v in ledger.VERDICTS if v in counts) or "no rows"
    print(
        f"\n{len(df)} claim(s): {summary}. T = timing claim (machine-dependent). Full text: --verbose, "
        f"or {out / 'CLAIMS.md'}."
    )
    return 0


# --------------------------------------------------------------------------- main
def _parser() -> argparse.ArgumentParser:
    parser = _args.OneLineParser(
        prog="repro",
        description="Regenerate the papers' figures and tables and check their claims.",
        epilog=(
            "Examples: `repro list`; `repro run sigg2008_fig2 --help`; `repro run all --quick --out /tmp/q`; "
            "`repro run all` (full run into figures/ in a checkout, ./repro-figures elsewhere, one "
            "experiment per core; --jobs 1 for one process); `repro bench all` (the benchmarks); "
            "`repro claims --verdict 'not reproduced'`. "
            f"Environment: REPRO_DATA_MIRROR (read-only data folder), REPRO_DATA_DIR (cache), "
            f"REPRO_OFFLINE=1 (never download), {PROGRESS_ENV} (seconds between progress lines in logs, "
            "default 30)."
        ),
    )
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list the experiments with their recorded run times")
    p_run = sub.add_parser(
        "run",
        help="run experiments by name, or `all` (every paper figure and table)",
        description=(
            "Run experiments: compute, write <out>/NAME.csv and .png, check the claims, record the run "
            "time; then rebuild <out>/CLAIMS.md (and README.md when --out is figures/) if every selected "
            "experiment succeeded. `repro run NAME --help` explains one experiment."
        ),
    )
    p_bench = sub.add_parser(
        "bench",
        help="run benchmarks by name, or `all` (the project's goals, apart from the reproduction)",
        description=(
            "Run benchmarks: compute, write <out>/NAME.csv and .png, measure every goal against its "
            "reference in the same run, record the run time; then rebuild <out>/BENCHMARKS.md (and "
            "CLAIMS.md for the published numbers a benchmark checks) if every selected benchmark succeeded."
        ),
    )
    for p, what in ((p_run, "experiment"), (p_bench, "benchmark")):
        p.add_argument("names", nargs="+", help=f"{what} names, or `all`")
        p.add_argument("--quick", action="store_true", help="small sizes, seconds (used by the tests)")
        p.add_argument(
            "--seed", type=_args.seed, default=0, help=f"root random seed, 0..{_args.SEED_MAX} (default 0)"
        )
        p.add_argument(
            "--out", type=_args.folder, default=default_out(),
            help="output folder (default figures/, the committed outputs, in a source checkout; "
            "./repro-figures outside one; use another to keep them)",
        )  # fmt: skip
        p.add_argument(
            "--jobs", type=int, default=None,
            help=f"{what}s run in parallel processes (default: the machine's cores, at most one per "
            f"{what}; each is seeded on its own, so N changes no number)",
        )  # fmt: skip
    p_run.set_defaults(redraw=False, bench=False)
    p_bench.set_defaults(redraw=False, bench=True)
    p_redraw = sub.add_parser("redraw", help="redraw figures and re-check claims from the CSVs, no compute")
    p_redraw.add_argument(
        "names", nargs="+", help="experiment or benchmark names, or `all` (every one with a CSV)"
    )
    p_redraw.add_argument("--out", type=_args.folder, default=default_out())
    p_redraw.add_argument("--jobs", type=int, default=None, help="parallel processes (default: the cores)")
    p_redraw.set_defaults(redraw=True, quick=False, seed=0, bench=False)
    p_claims = sub.add_parser(
        "claims",
        help="query the claims ledger",
        description=(
            "The claims ledger as a compact list: verdict, T for a timing (machine-dependent) claim, "
            "experiment/id, published and reproduced values. Filters combine."
        ),
    )
    p_claims.add_argument("names", nargs="*", help="only these experiments (e.g. sigg2008_fig3)")
    p_claims.add_argument(
        "--verdict", action="append",
        help="only this verdict (repeatable): reproduced, 'partly reproduced', 'not reproduced', "
        "'too close to call', 'check failed'",
    )  # fmt: skip
    p_claims.add_argument(
        "--paper",
        action="append",
        choices=registry.papers(),
        help="only this paper's experiments (repeatable)",
    )
    g = p_claims.add_mutually_exclusive_group()
    g.add_argument("--timing", dest="timing", action="store_true", default=None, help="only timing claims")
    g.add_argument("--no-timing", dest="timing", action="store_false", help="only non-timing claims")
    p_claims.add_argument("-v", "--verbose", action="store_true", help="also the claim's sentence and note")
    p_claims.add_argument("--markdown", action="store_true", help="Markdown table (no filter: CLAIMS.md)")
    p_claims.add_argument(
        "--out", type=_args.folder, default=default_out(),
        help="folder of the ledger (default: that of `repro run`): the --out of the run that wrote it",
    )  # fmt: skip
    sub.add_parser(
        "data", help="dataset files and their state; --fetch downloads the missing", add_help=False
    )
    verify.add_parser(sub)  # `repro verify`: its parser and command live in verify.py
    return parser


def main(argv=None) -> int:
    """``repro ARGS``; output cut short by the reader (``repro claims | head``) ends quietly, Ctrl-C
    with one line and exit status 130 (the worker processes stopped, no traceback), and a full disk or a
    damaged digest record with one line and exit status 1."""
    try:
        return _main(argv)
    except KeyboardInterrupt:
        print(
            "repro: interrupted; the experiments that finished kept their outputs, files being written were "
            "removed, CLAIMS.md and README.md were left as they were.",
            file=sys.stderr,
        )
        return 130
    except BrokenPipeError:
        # the reader has what it wanted: no traceback, and no second error when Python flushes stdout
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0
    except (OSError, ValueError) as exc:  # a full disk, a damaged record: one line, no traceback
        from ._atomic import write_error

        if (text := write_error(exc)) is None:
            raise
        print(f"repro: {text}", file=sys.stderr)
        return 1


def _main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] in (["run"], ["bench"]) and ({"-h", "--help"} & set(argv)):
        available = registry.experiment_names()
        names = [a for a in argv[1:] if a in available]
        if names:
            return _experiment_help(names)
    parser = _parser()
    args, rest = parser.parse_known_args(argv)
    if args.command == "data":
        from data_fetch._cli import cli

        return cli(rest, prog="repro data")
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    if args.command == "verify":
        return verify.cmd_verify(args)
    if args.command in ("run", "bench", "redraw") and (problem := _args.jobs_problem(args.jobs)):
        parser.error(problem)
    commands = {"list": cmd_list, "run": cmd_run, "bench": cmd_run, "redraw": cmd_run, "claims": cmd_claims}
    return commands[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
