"""Command line: ``python -m experiments`` or ``repro``.

repro list                          the experiments, one line each
repro run NAME... [--quick] [--out DIR] [--seed S] [--jobs N]
repro run all [--quick] ...         every figure, table and benchmark, then figures/CLAIMS.md
repro claims [--out DIR]            print the claims ledger
repro data [--fetch]                dataset files and their state (mirror / cached / missing)
"""

from __future__ import annotations

import argparse
import importlib
import pkgutil
import sys
import time
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path

from . import _common
from . import claims as ledger

_NOT_EXPERIMENTS = {"claims", "__main__"}


def experiment_names() -> list[str]:
    """Every experiment module: the data overview first, then papers in order, benchmarks last."""
    pkg = importlib.import_module("experiments")
    names = [
        m.name
        for m in pkgutil.iter_modules(pkg.__path__)
        if not m.name.startswith("_") and m.name not in _NOT_EXPERIMENTS
    ]

    def key(name: str):
        return (name != "data_overview", name.startswith("bench_"), name)

    return sorted(names, key=key)


def _title(name: str) -> str:
    mod = importlib.import_module(f"experiments.{name}")
    return getattr(mod, "TITLE", "")


def _run_one(name: str, cfg: _common.Config, redraw: bool = False) -> tuple[str, bool, str]:
    try:
        fn = _common.redraw_module if redraw else _common.run_module
        return name, True, fn(f"experiments.{name}", cfg)
    except Exception:
        return name, False, traceback.format_exc()


def cmd_run(args) -> int:
    available = experiment_names()
    names = available if args.names == ["all"] else args.names
    if args.redraw and args.names == ["all"]:
        names = [n for n in available if (args.out / f"{n}.csv").exists()]
    unknown = [n for n in names if n not in available]
    if unknown:
        print(
            f"unknown experiment(s): {', '.join(unknown)}; `repro list` lists all {len(available)}.",
            file=sys.stderr,
        )
        return 2
    cfg = _common.Config(quick=args.quick, seed=args.seed, out=args.out)
    cfg.out.mkdir(parents=True, exist_ok=True)
    failed = []
    t0 = time.perf_counter()
    bar = _common.progress(range(len(names)), desc="experiments", total=len(names))
    results = []
    if args.jobs > 1 and len(names) > 1:
        with ProcessPoolExecutor(max_workers=args.jobs) as pool:
            futures = [pool.submit(_run_one, n, cfg, args.redraw) for n in names]
            for fut in as_completed(futures):
                results.append(fut.result())
                _report(results[-1], failed)
                bar.update(1)
    else:
        for n in names:
            print(f"{'redrawing' if args.redraw else 'running'} {n} ...", flush=True)
            results.append(_run_one(n, cfg, args.redraw))
            _report(results[-1], failed)
            bar.update(1)
    bar.close()
    path = ledger.render_ledger(cfg.out)
    if cfg.out.resolve() == _common.FIGURES_DIR.resolve():
        readme = _common.REPO_ROOT / "README.md"
        if readme.exists():
            ledger.update_readme(readme, cfg.out, {n: _title(n) for n in available})
    print(
        f"{len(names) - len(failed)}/{len(names)} experiments ran in {time.perf_counter() - t0:.0f} s; "
        f"ledger: {path}"
    )
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
        return 1
    return 0


def _report(result, failed) -> None:
    name, ok, text = result
    if ok:
        print(text, flush=True)
    else:
        failed.append(name)
        print(f"{name} FAILED:\n{text}", file=sys.stderr, flush=True)


def cmd_list(_args) -> int:
    for name in experiment_names():
        print(f"{name:32s} {_title(name)}")
    return 0


def cmd_claims(args) -> int:
    path = Path(args.out) / "CLAIMS.md"
    if not path.exists():
        print(f"no ledger at {path}; run `repro run all` first.", file=sys.stderr)
        return 1
    print(path.read_text())
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="repro", description="Regenerate the papers' figures and tables.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("list", help="list the experiments")
    p_run = sub.add_parser("run", help="run experiments by name, or `all`")
    p_run.add_argument("names", nargs="+", help="experiment names, or `all`")
    _common.add_common_flags(p_run)
    p_run.add_argument(
        "--jobs", type=int, default=1, help="experiments run in parallel processes (default 1)"
    )
    p_run.set_defaults(redraw=False)
    p_redraw = sub.add_parser("redraw", help="redraw figures and re-check claims from the CSVs, no compute")
    p_redraw.add_argument("names", nargs="+", help="experiment names, or `all` (those with a CSV)")
    p_redraw.add_argument("--out", type=Path, default=_common.FIGURES_DIR)
    p_redraw.add_argument("--jobs", type=int, default=1)
    p_redraw.set_defaults(redraw=True, quick=False, seed=0)
    p_claims = sub.add_parser("claims", help="print the claims ledger")
    p_claims.add_argument("--out", type=Path, default=_common.FIGURES_DIR)
    sub.add_parser(
        "data", help="dataset files and their state; --fetch downloads the missing", add_help=False
    )
    args, rest = parser.parse_known_args(argv)
    if args.command == "data":
        from data_fetch import cli

        return cli(rest)
    if rest:
        parser.error(f"unrecognized arguments: {' '.join(rest)}")
    if args.command in ("run", "redraw") and args.jobs < 1:
        parser.error("--jobs must be at least 1")
    return {"list": cmd_list, "run": cmd_run, "redraw": cmd_run, "claims": cmd_claims}[args.command](args)


if __name__ == "__main__":
    sys.exit(main())
