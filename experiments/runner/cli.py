"""Command line: ``python -m experiments`` or ``repro``.

repro list                          the experiments, one line each, with their recorded run times
repro run NAME... [--quick] [--out DIR] [--seed S] [--jobs N]   (--jobs: default the machine's cores)
repro run all [--quick] ...         every figure, table and benchmark, then figures/CLAIMS.md
repro run NAME --help               what the experiment reproduces, its choices, claims and run time
repro redraw NAME...|all            figures and claims again from the CSVs, no compute
repro claims [NAME...] [--verdict V] [--paper P] [--timing|--no-timing] [--markdown] [--out DIR]
repro data [--fetch]                dataset files and their state (mirror / cached / missing)
repro verify NAME...|all [--quick] [--jobs N] [--json] [--update]   re-run and compare every number

Only the standard library is imported at start (``repro --help`` and ``repro list`` read the
experiments' sources with ``ast``); NumPy, Numba and the library load when something runs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import textwrap
import time
from pathlib import Path

from . import _args, _describe, _runtimes
from ._paths import FIGURES_DIR, default_out, out_notice, recorded_runtimes
from ._progress import PROGRESS_ENV, Progress

_NOT_EXPERIMENTS = {"__main__"}
_PKG_DIR = Path(__file__).resolve().parents[1]  # experiments/: the experiment modules
__all__ = ["FIGURES_DIR", "experiment_names", "main", "out_notice", "papers"]


def experiment_names() -> list[str]:
    """Every experiment module: the data overview first, then papers in order, benchmarks last."""
    names = [
        p.stem for p in _PKG_DIR.glob("*.py") if not p.stem.startswith("_") and p.stem not in _NOT_EXPERIMENTS
    ]

    def key(name: str):
        return (name != "data_overview", name.startswith("bench_"), name)

    return sorted(names, key=key)


def papers() -> list[str]:
    """The papers of ``--paper``: the name prefixes of the experiments (``sigg2008`` of ``sigg2008_fig2``)."""
    return list(dict.fromkeys(_paper(n) for n in experiment_names()))


def _paper(name: str) -> str:
    return name.split("_", 1)[0]


def _title(name: str) -> str:
    return _describe.title(name)


def _module_name(name: str) -> str:
    """``sigg2008_fig2`` -> ``experiments.sigg2008_fig2``; a dotted name is a module path used as is."""
    return name if "." in name else f"experiments.{name}"


def _stem(name: str) -> str:
    return name.rsplit(".", 1)[-1]


def _source(name: str) -> Path | None:
    """The source file of experiment ``name`` (None when there is no such module, or the module is not an
    experiment: no source file, or no top-level ``compute``), without importing it."""
    if _args.name_problem(name):
        return None
    if "." not in name:
        path = _PKG_DIR / f"{name}.py"
        return path if path.is_file() and name in experiment_names() else None
    import importlib.util

    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not spec.origin.endswith(".py") or not Path(spec.origin).is_file():
        return None  # a built-in or frozen module (os.path), a package without source, ...
    return Path(spec.origin) if _describe.defines(Path(spec.origin), "compute") else None


def longest_first(names: list[str], expected: dict) -> list[str]:
    """``names`` by recorded cost, longest first (unknown costs first of all), ties in the given order.

    With ``--jobs N`` the pool takes experiments in this order, so the long ones start at once and the
    short ones fill the gaps at the end (longest-processing-time scheduling): a full run then ends close
    to the summed cost divided by N instead of waiting on a long experiment started last.
    """
    order = {n: i for i, n in enumerate(names)}
    return sorted(names, key=lambda n: (-(expected.get(n) or float("inf")), order[n]))


def split_alone(names: list[str], sources: dict, *, redraw: bool = False) -> tuple[list[str], list[str]]:
    """``(alone, shared)``: the experiments that set ``RUN_ALONE = True``, and the others, in given order.

    With ``--jobs N`` the runner runs the first ones one at a time before the pool starts, so no other
    experiment runs beside them: their timing rows time milliseconds of work or memory-bound products,
    and a neighbour sharing the L3 cache and the memory bus moved such rows by 5-15% between two full
    runs, across their decision bands (too close to call <-> reproduced). A redraw times nothing, so
    it runs everything shared.
    """
    if redraw:
        return [], list(names)
    alone = [n for n in names if sources.get(n) is not None and _describe.runs_alone(sources[n])]
    return alone, [n for n in names if n not in alone]


def default_jobs(n_experiments: int) -> int:
    """``--jobs`` when not given: the cores this process may use, at most one per experiment, at least 1.

    Each experiment draws its random numbers from its own seeded streams (``Config.rng``) in its own
    process, with the same BLAS threads as in a run of its own, so how many run beside it changes no
    number. The experiments whose timing rows a neighbour would disturb (``RUN_ALONE``) still run one at
    a time before the pool starts.

    Examples
    --------
    >>> 1 <= default_jobs(3) <= 3
    True
    >>> default_jobs(1)
    1
    """
    try:
        cores = len(os.sched_getaffinity(0))  # the cores this process may run on (containers, taskset)
    except (AttributeError, OSError):  # not on every platform
        cores = os.cpu_count() or 1
    return max(1, min(cores, n_experiments))


def _run_one(name: str, cfg, redraw: bool = False) -> tuple[str, bool, str]:
    import traceback

    from . import _common

    try:
        fn = _common.redraw_module if redraw else _common.run_module
        return name, True, fn(_module_name(name), cfg)
    except Exception as exc:
        if isinstance(exc, (_common.PanelDroppedError, _common.ResultFileError)):  # known: one line
            return name, False, str(exc)
        return name, False, traceback.format_exc()


# --------------------------------------------------------------------------- run
def cmd_run(args) -> int:
    available = experiment_names()
    bad = [p for p in map(_args.name_problem, args.names) if p]
    if bad:
        print(f"repro: error: {bad[0]}", file=sys.stderr)
        return 2
    names = available if args.names == ["all"] else list(dict.fromkeys(args.names))
    if args.redraw and args.names == ["all"]:
        names = [n for n in available if (args.out / f"{n}.csv").exists()]
    sources = {n: _source(n) for n in names}
    unknown = [n for n, path in sources.items() if path is None]
    if unknown:
        print(
            f"unknown experiment(s): {', '.join(unknown)}; `repro list` lists all {len(available)} "
            "(a dotted name is taken as the module path of an experiment outside this package: a .py file "
            "that defines compute).",
            file=sys.stderr,
        )
        return 2
    from . import _atomic, _preflight

    problem = _preflight.check_out(args.out)
    if problem is None and not args.redraw:
        problem = _preflight.check_data(
            [_stem(n) for n in names], args.quick, {_stem(n): p for n, p in sources.items()}
        )
    if problem:
        print(problem, file=sys.stderr)
        return 2

    from . import _common
    from . import claims as ledger

    if notice := out_notice(args.out):
        print(notice, file=sys.stderr)
    _atomic.remove_stale_temporaries(args.out)  # left by a run killed between a write and its rename
    _atomic.exit_on_termination()  # a terminated run removes its temporaries as it unwinds
    cfg = _common.Config(quick=args.quick, seed=args.seed, out=args.out, render_ledger=False)
    if args.jobs is None:
        args.jobs = default_jobs(len(names))
    failed: list[str] = []
    t0 = time.perf_counter()
    prog = Progress(
        names, args.quick, args.jobs, cfg.out, "redrawing" if args.redraw else "running", key=_stem
    )
    try:
        if args.jobs > 1 and len(names) > 1:
            from concurrent.futures import ProcessPoolExecutor, as_completed

            alone, shared = split_alone(names, sources, redraw=args.redraw)
            _run_serially(alone, cfg, args.redraw, failed, prog)  # first, with the machine to themselves
            shared = longest_first(shared, prog.expected)
            with ProcessPoolExecutor(max_workers=args.jobs) as pool:
                futures = {}
                for n in shared:
                    futures[pool.submit(_run_one, n, cfg, args.redraw)] = n
                for n in shared[: args.jobs]:
                    prog.start(n)
                pending = shared[args.jobs :]
                for fut in as_completed(futures):
                    _report(fut.result(), failed, prog)
                    prog.finish(futures[fut])
                    if pending:
                        prog.start(pending.pop(0))
        else:
            _run_serially(names, cfg, args.redraw, failed, prog)
    finally:
        prog.close()
    took = time.perf_counter() - t0
    if failed:
        print(
            f"{len(names) - len(failed)}/{len(names)} experiments ran in {took:.0f} s; failed: "
            f"{', '.join(failed)}. {cfg.out / 'CLAIMS.md'} and README.md were left as they were (they are "
            f"rewritten only by a run in which every selected experiment succeeded); the claims files of "
            f"the others are in {cfg.out / 'claims'}.",
            file=sys.stderr,
        )
        return 1
    path = ledger.render_ledger(cfg.out)
    if cfg.out.resolve() == _common.FIGURES_DIR.resolve():
        readme = _common.REPO_ROOT / "README.md"
        if readme.exists():
            ledger.update_readme(readme, cfg.out, {n: _title(n) for n in available})
    print(f"{len(names)}/{len(names)} experiments ran in {took:.0f} s; ledger: {path}")
    return 0


def _run_serially(names, cfg, redraw, failed, prog) -> None:
    for n in names:
        prog.start(n)
        _report(_run_one(n, cfg, redraw), failed, prog)
        prog.finish(n)


def _report(result, failed, prog) -> None:
    name, ok, text = result
    if ok:
        prog.say(text)
    else:
        failed.append(name)
        prog.say(f"{name} FAILED:\n{text.rstrip()}", err=True)


# --------------------------------------------------------------------------- list, help
def _recorded_where() -> str:
    """Where ``repro list``'s times come from: ``figures/runtimes.csv`` in a checkout, else the wheel's."""
    path = recorded_runtimes(FIGURES_DIR)
    return "figures/runtimes.csv" if path.parent == FIGURES_DIR else f"{path} (the committed full run's)"


def cmd_list(_args) -> int:
    names = experiment_names()
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
            _title(name), max(columns - len(indent), 20), break_long_words=False, break_on_hyphens=False
        )
        print(head + "\n".join([lines[0] if lines else "", *(indent + line for line in lines[1:])]))
    totals = []
    for quick, label in ((False, "full"), (True, "--quick")):
        got = [times[(n, quick)][0] for n in names if (n, quick) in times]
        if got:
            partial = "" if len(got) == len(names) else f" ({len(got)} of {len(names)} recorded)"
            totals.append(f"{_runtimes.fmt_seconds(sum(got))} {label}{partial}")
    footer = (
        f"Run times recorded in {_recorded_where()}, one after the other: "
        f"{'; '.join(totals) or 'none yet'}. `repro run NAME --help` explains one experiment."
    )
    print("\n" + textwrap.fill(footer, columns, break_long_words=False, break_on_hyphens=False))
    return 0


def _columns() -> int:
    """The terminal's width (``COLUMNS`` when set; 100 when not a terminal), at least 60."""
    return max(shutil.get_terminal_size((100, 24)).columns, 60)


def _experiment_help(names: list[str]) -> int:
    available = experiment_names()
    unknown = [n for n in names if n not in available]
    if unknown:
        print(f"unknown experiment(s): {', '.join(unknown)}; `repro list` lists all.", file=sys.stderr)
        return 2
    from . import _common

    for i, name in enumerate(names):
        if i:
            print("\n" + "-" * 100 + "\n")
        _common.experiment_parser(f"experiments.{name}", prog=f"repro run {name}").print_help()
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
        df = df[df.experiment.map(_paper).isin(args.paper)]
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
            "experiment per core; --jobs 1 for one process); "
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
        help="run experiments by name, or `all`",
        description=(
            "Run experiments: compute, write <out>/NAME.csv and .png, check the claims, record the run "
            "time; then rebuild <out>/CLAIMS.md (and README.md when --out is figures/) if every selected "
            "experiment succeeded. `repro run NAME --help` explains one experiment."
        ),
    )
    p_run.add_argument("names", nargs="+", help="experiment names, or `all`")
    p_run.add_argument("--quick", action="store_true", help="small sizes, seconds (used by the tests)")
    p_run.add_argument(
        "--seed", type=_args.seed, default=0, help=f"root random seed, 0..{_args.SEED_MAX} (default 0)"
    )
    p_run.add_argument(
        "--out", type=Path, default=default_out(),
        help="output folder (default figures/, the committed outputs, in a source checkout; ./repro-figures "
        "outside one; use another to keep them)",
    )  # fmt: skip
    p_run.add_argument(
        "--jobs", type=int, default=None,
        help="experiments run in parallel processes (default: the machine's cores, at most one per "
        "experiment; each experiment is seeded on its own, so N changes no number)",
    )  # fmt: skip
    p_run.set_defaults(redraw=False)
    p_redraw = sub.add_parser("redraw", help="redraw figures and re-check claims from the CSVs, no compute")
    p_redraw.add_argument("names", nargs="+", help="experiment names, or `all` (those with a CSV)")
    p_redraw.add_argument("--out", type=Path, default=default_out())
    p_redraw.add_argument("--jobs", type=int, default=None, help="parallel processes (default: the cores)")
    p_redraw.set_defaults(redraw=True, quick=False, seed=0)
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
        "--paper", action="append", choices=papers(), help="only this paper's experiments (repeatable)"
    )
    g = p_claims.add_mutually_exclusive_group()
    g.add_argument("--timing", dest="timing", action="store_true", default=None, help="only timing claims")
    g.add_argument("--no-timing", dest="timing", action="store_false", help="only non-timing claims")
    p_claims.add_argument("-v", "--verbose", action="store_true", help="also the claim's sentence and note")
    p_claims.add_argument("--markdown", action="store_true", help="Markdown table (no filter: CLAIMS.md)")
    p_claims.add_argument(
        "--out", type=Path, default=default_out(),
        help="folder of the ledger (default: that of `repro run`): the --out of the run that wrote it",
    )  # fmt: skip
    sub.add_parser(
        "data", help="dataset files and their state; --fetch downloads the missing", add_help=False
    )
    from . import verify  # `repro verify` (issue 33): its parser and command live in verify.py

    verify.add_parser(sub)
    return parser


def main(argv=None) -> int:
    """``repro ARGS``; output cut short by the reader (``repro claims | head``) ends quietly."""
    try:
        return _main(argv)
    except BrokenPipeError:
        # the reader has what it wanted: no traceback, and no second error when Python flushes stdout
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 0


def _main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["run"] and ({"-h", "--help"} & set(argv)):
        available = experiment_names()
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
        from .verify import cmd_verify

        return cmd_verify(args)
    if args.command in ("run", "redraw") and args.jobs is not None and args.jobs < 1:
        parser.error("--jobs must be at least 1")
    return {"list": cmd_list, "run": cmd_run, "redraw": cmd_run, "claims": cmd_claims}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
