"""The run engine: run (or redraw) experiments, in parallel worker processes, then rebuild the ledger.

:func:`run` is ``repro run`` and ``repro redraw`` after their arguments are parsed, and what ``repro
verify`` runs into its temporary folder. It checks the names and the output folder (and, for a run, the
data) before anything is computed, runs the experiments that set ``RUN_ALONE`` one at a time, the others
in a pool of ``jobs`` processes, longest first, and rewrites ``CLAIMS.md`` (and ``README.md`` when the
folder is ``figures/``) only when every selected experiment succeeded; a run (not a redraw) records its
environment beside the ledger (:mod:`.environment`). One experiment's protocol
(compute, CSV, figure, claims, run time) is :func:`._common.run_module`.

Only the standard library is imported at import time; the experiments' code loads in :func:`run_one`.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from pathlib import Path

from . import _describe, registry
from ._paths import out_notice
from ._progress import Progress

__all__ = ["default_jobs", "longest_first", "run", "run_one", "select", "split_alone"]


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


def select(names: list[str], out: Path, *, redraw: bool = False, bench: bool = False) -> list[str]:
    """The experiments ``names`` stands for: ``["all"]`` is every paper experiment (``repro run all``),
    every benchmark with ``bench`` (``repro bench all``), every experiment with a CSV in ``out`` for a
    redraw; other names are kept in their order, once each.

    Examples
    --------
    >>> from pathlib import Path
    >>> any(n.startswith("bench_") for n in select(["all"], Path(".")))
    False
    >>> all(n.startswith("bench_") for n in select(["all"], Path("."), bench=True))
    True
    """
    if names != ["all"]:
        return list(dict.fromkeys(names))
    if redraw:
        return [n for n in registry.experiment_names() if (Path(out) / f"{n}.csv").exists()]
    return registry.benchmark_names() if bench else registry.paper_names()


def run_one(name: str, cfg, redraw: bool = False) -> tuple[str, bool, str]:
    """Run (or redraw) experiment ``name`` with ``cfg``: ``(name, succeeded, summary or error text)``.

    A known failure (a dropped panel, a damaged result file or record, a full disk) is its one-line
    message; any other, the traceback. Runs in the calling process or in a worker of the pool.
    """
    import traceback

    from . import _common
    from ._atomic import write_error

    try:
        fn = _common.redraw_module if redraw else _common.run_module
        return name, True, fn(registry.module_name(name), cfg)
    except Exception as exc:
        if isinstance(exc, (_common.PanelDroppedError, _common.ResultFileError)):  # known: one line
            return name, False, str(exc)
        if text := write_error(exc):  # a full disk, a damaged record: one line
            return name, False, text
        return name, False, traceback.format_exc()


def run(
    names: list[str],
    *,
    out: Path,
    quick: bool = False,
    seed: int = 0,
    jobs: int | None = None,
    redraw: bool = False,
    bench: bool = False,
) -> int:
    """Run (``redraw=True``: redraw) the experiments ``names`` (or ``["all"]``) into ``out``.

    ``all`` is the reproduction (every paper experiment, :func:`.registry.paper_names`); with
    ``bench=True`` (``repro bench all``) the benchmarks; a redraw of ``all`` redraws every experiment,
    paper or benchmark, that has a CSV in ``out``. Afterwards ``CLAIMS.md`` is rebuilt when an experiment
    that writes ledger rows ran, ``BENCHMARKS.md`` when a benchmark ran.

    Returns the exit status of ``repro run``: 0 when every experiment succeeded (the ledger rebuilt),
    1 when one failed, 2 when nothing ran (a bad name, an unusable folder, missing data).
    """
    from . import _args

    available = registry.experiment_names()
    bad = [p for p in map(_args.name_problem, names) if p]
    if bad:
        print(f"repro: error: {bad[0]}", file=sys.stderr)
        return 2
    names = select(names, out, redraw=redraw, bench=bench)
    sources = {n: registry.source(n) for n in names}
    unknown = [n for n, path in sources.items() if path is None]
    if unknown:
        print(
            f"unknown experiment(s): {', '.join(unknown)}; `repro list` lists all {len(available)} "
            "(a dotted name is taken as the module path of an experiment outside this package: a .py file "
            "that defines compute).",
            file=sys.stderr,
        )
        return 2
    from . import _atomic, _preflight, _runtimes

    problem = _preflight.check_out(out) or _atomic.record_problem(out)
    if problem is None and not redraw:
        problem = _preflight.check_data(
            [registry.stem(n) for n in names], quick, {registry.stem(n): p for n, p in sources.items()}
        )
    if problem:
        print(problem, file=sys.stderr)
        return 2

    from . import _common
    from . import claims as ledger

    for notice in (out_notice(out), _runtimes.problem(out)):
        if notice:
            print(notice, file=sys.stderr)
    _atomic.remove_stale_temporaries(out)  # left by a run killed between a write and its rename
    _atomic.exit_on_termination()  # a terminated run removes its temporaries as it unwinds
    cfg = _common.Config(quick=quick, seed=seed, out=out, render_ledger=False)
    # the cores (default), and never more processes than experiments
    jobs = default_jobs(len(names)) if jobs is None else max(1, min(jobs, len(names)))
    failed: list[str] = []
    t0 = time.perf_counter()
    prog = Progress(names, quick, jobs, cfg.out, "redrawing" if redraw else "running", key=registry.stem)
    try:
        if jobs > 1 and len(names) > 1:
            from concurrent.futures import ProcessPoolExecutor, as_completed

            alone, shared = split_alone(names, sources, redraw=redraw)
            _run_serially(alone, cfg, redraw, failed, prog)  # first, with the machine to themselves
            shared = longest_first(shared, prog.expected)
            parent = os.getpid()
            with ProcessPoolExecutor(max_workers=jobs, initializer=_worker_init, initargs=(parent,)) as pool:
                try:
                    futures = {}
                    for n in shared:
                        futures[pool.submit(run_one, n, cfg, redraw)] = n
                    for n in shared[:jobs]:
                        prog.start(n)
                    pending = shared[jobs:]
                    for fut in as_completed(futures):
                        _report(fut.result(), failed, prog)
                        prog.finish(futures[fut])
                        if pending:
                            prog.start(pending.pop(0))
                except BaseException:  # Ctrl-C, a termination: stop the workers, not wait for them
                    _stop_workers(pool)
                    raise
        else:
            _run_serially(names, cfg, redraw, failed, prog)
    finally:
        prog.close()
    took = time.perf_counter() - t0
    if not redraw and len(failed) < len(names):  # what made the numbers, beside the ledger
        from . import environment

        done = [registry.stem(n) for n in names if n not in failed]
        environment.write(cfg.out, done, quick=quick, seed=seed)
    if failed:
        print(
            f"{len(names) - len(failed)}/{len(names)} experiments ran in {took:.0f} s; failed: "
            f"{', '.join(failed)}. {cfg.out / 'CLAIMS.md'} and README.md were left as they were (they are "
            f"rewritten only by a run in which every selected experiment succeeded); the claims files of "
            f"the others are in {cfg.out / 'claims'}.",
            file=sys.stderr,
        )
        return 1
    written = []
    if any("claims" in registry.verdict_folders(n) for n in names):
        written.append(ledger.render_ledger(cfg.out))
        if cfg.out.resolve() == _common.FIGURES_DIR.resolve():
            readme = _common.REPO_ROOT / "README.md"
            if readme.exists():
                ledger.update_readme(readme, cfg.out, {n: registry.title(n) for n in available})
    if any(registry.is_benchmark(n) for n in names):
        written.append(ledger.render_benchmarks(cfg.out))
    ledgers = ", ".join(map(str, written))
    print(f"{len(names)}/{len(names)} experiments ran in {took:.0f} s; ledger: {ledgers}")
    return 0


def _worker_init(parent: int) -> None:
    """In each worker process: leave Ctrl-C to the parent (which stops the workers), and die with it.

    A worker whose parent is gone (killed with ``kill -9``) would otherwise finish its experiment into
    ``--out`` and then wait for work forever. On Linux the kernel sends it SIGTERM when the parent dies
    (``prctl(PR_SET_PDEATHSIG)``); everywhere a thread checks the parent every half second. SIGTERM unwinds
    the worker (:func:`._atomic.exit_on_termination`, inherited from the parent), so a file being written
    is removed; two seconds later the worker exits whatever it was doing.
    """
    import signal
    import threading

    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            ctypes.CDLL(None, use_errno=True).prctl(1, int(signal.SIGTERM), 0, 0, 0)  # 1: PR_SET_PDEATHSIG
        except (OSError, AttributeError):  # no libc to call: the thread below still watches
            pass

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        with contextlib.suppress(OSError):
            os.kill(os.getpid(), signal.SIGTERM)  # unwind the experiment it runs
        time.sleep(2.0)
        os._exit(1)

    threading.Thread(target=watch, name="repro-watch-parent", daemon=True).start()


def _stop_workers(pool) -> None:
    """Cancel what has not started and terminate the workers (they remove their temporaries as they go),
    then wait for them (at most 10 s each before a SIGKILL) and for the pool to close: a pool left
    half-shut has its wake-up pipe written to at interpreter exit, after its descriptor went, which
    prints a traceback after the one-line message."""
    import signal

    processes = dict(getattr(pool, "_processes", None) or {})  # the standard library's pid -> Process map
    pool.shutdown(wait=False, cancel_futures=True)
    for pid in processes:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGTERM)
    for pid, proc in processes.items():
        with contextlib.suppress(Exception):
            proc.join(timeout=10)
            if proc.is_alive():
                os.kill(pid, signal.SIGKILL)
                proc.join(timeout=5)
    with contextlib.suppress(Exception):
        pool.shutdown(wait=True)


def _run_serially(names, cfg, redraw, failed, prog) -> None:
    for n in names:
        prog.start(n)
        _report(run_one(n, cfg, redraw), failed, prog)
        prog.finish(n)


def _report(result, failed, prog) -> None:
    name, ok, text = result
    if ok:
        prog.say(text)
    else:
        failed.append(name)
        prog.say(f"{name} FAILED:\n{text.rstrip()}", err=True)
