"""What every experiment shares: paths, flags, the run protocol, writers, plot style, preprocessing.

An experiment module (``experiments/<paper><year>_<fig|table><n>.py``) defines

``TITLE``
    One line: the paper and the figure or table it regenerates.
``CLAIMS``
    A list of :class:`experiments.runner.claims.Claim` checked on its CSV: the published sentences and
    numbers it tests (the ledger, ``CLAIMS.md``).
``GOALS`` (a benchmark, ``experiments/benchmarks/``)
    The same for the project's own goals, met or missed (``BENCHMARKS.md``); a benchmark has ``CLAIMS``
    only for a published number it checks on what it measures.
``compute(cfg: Config) -> pandas.DataFrame``
    All the work, returning one tidy frame (one row per method x setting x seed). ``cfg.quick`` asks
    for small sizes that finish in seconds (the test suite runs every experiment that way).
``plot(df, cfg) -> matplotlib.figure.Figure`` (optional)
    Draws the figure from the frame alone, so it can be redrawn from the committed CSV.
``table(df, cfg) -> str`` (optional)
    A Markdown table, for experiments that regenerate a published table.
``main(argv=None) -> int``
    Always ``return run(__name__, argv)``.
``DATA`` (optional)
    A tuple of the dataset files the full run reads: registry names (``"cbcl_faces/CBCL_Face.mat"``) or
    loader names (``"load_cbcl_faces"``); ``DATA_QUICK`` the same for ``--quick`` (default ``DATA``).
    Without it the runner maps the ``data_fetch`` loaders the module mentions (see
    ``experiments.runner._preflight``). Every file is checked before anything is computed.

Nothing runs at import time; the module docstring states every choice the paper left open (it is shown,
with the title, the claims and the recorded run time, by ``python -m experiments.NAME --help``).

Outputs are written atomically (``experiments.runner._atomic``): a kill never leaves a truncated CSV, PNG or
table, and never loses the previous version. A panel a figure cannot draw is never dropped silently:
raise :class:`PanelDroppedWarning` (or any ``UserWarning`` saying a panel was skipped or dropped) and
the run fails instead of writing a figure with a hole in it.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import importlib
import re
import sys
import time
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from . import _args, _preflight, _runtimes, registry
from . import claims as ledger
from ._atomic import (
    atomic_path,
    atomic_write_text,
    csv_problem,
    recorded_digest,
    recorded_mode,
    recorded_path,
)
from ._paths import FIGURES_DIR, REPO_ROOT, default_out, out_notice

__all__ = [
    "FIGURES_DIR",
    "METHOD_STYLE",
    "REPO_ROOT",
    "Config",
    "PanelDroppedWarning",
    "ResultFileError",
    "add_common_flags",
    "cpu_seconds_per_call",
    "markdown_table",
    "minus_first_pc",
    "preprocess",
    "progress",
    "read_result",
    "redraw_module",
    "run",
    "run_module",
    "save_figure",
    "style",
    "write_csv",
]


@dataclass(frozen=True)
class Config:
    """The settings every experiment receives.

    Attributes
    ----------
    quick : bool
        Small sizes for a run of seconds (tests, smoke checks). Claims are still evaluated and the
        ledger marks such rows "(quick run)".
    seed : int
        Root seed; experiments derive every random stream from it (``np.random.default_rng(seed)``).
    out : Path
        Output folder (default ``figures/``).
    render_ledger : bool
        Rebuild ``CLAIMS.md`` after this experiment (``repro run`` sets it False and rebuilds once at
        the end, only when every selected experiment succeeded).
    """

    quick: bool = False
    seed: int = 0
    out: Path = field(default_factory=default_out)
    render_ledger: bool = True

    def rng(self, *stream: int) -> np.random.Generator:
        """An independent generator for a sub-stream, e.g. ``cfg.rng(run_index)``."""
        return np.random.default_rng([self.seed, *stream])


def add_common_flags(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """``--quick``, ``--seed`` and ``--out``, shared by every experiment and by ``repro run``."""
    parser.add_argument("--quick", action="store_true", help="small sizes, seconds (used by the tests)")
    parser.add_argument(
        "--seed", type=_args.seed, default=0, help=f"root random seed, 0..{_args.SEED_MAX} (default 0)"
    )
    parser.add_argument(
        "--out",
        type=_args.folder,
        default=default_out(),
        help="output folder (default figures/ in a source checkout, else ./repro-figures)",
    )
    return parser


class PanelDroppedWarning(UserWarning):
    """A figure cannot draw one of its panels (e.g. its data are missing): the run fails, loudly."""


#: UserWarnings with such a message are treated as a dropped panel, so experiments that warn in prose
#: ("..., right panel skipped") fail as well.
_DROPPED_PANEL_MESSAGE = r"(?is).*\b(panel|subplot|figure)s?\b.*\b(skipped|dropped|omitted|left out)\b"


class PanelDroppedError(RuntimeError):
    """Raised by the runner when an experiment dropped a panel of its figure."""


class ResultFileError(ValueError):
    """A result CSV that is not one the runner wrote whole: cut off, damaged, or another file's columns.

    The command line reports it in one line naming the file and the fix (run the experiment again)."""


def _guarded(step, name: str, what: str):
    """Run ``step()``; a dropped-panel warning raised inside becomes a :class:`PanelDroppedError`."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", PanelDroppedWarning)
        warnings.filterwarnings("error", message=_DROPPED_PANEL_MESSAGE, category=UserWarning)
        try:
            return step()
        except UserWarning as w:
            if not (isinstance(w, PanelDroppedWarning) or re.match(_DROPPED_PANEL_MESSAGE, str(w))):
                raise
            raise PanelDroppedError(
                f"{name}: the {what} dropped a panel of the figure ({w}); nothing was written for it. "
                "Provide what it needs (see `repro data`) and run it again."
            ) from w


def experiment_parser(module_name: str, module=None, prog: str | None = None) -> argparse.ArgumentParser:
    """The argument parser of one experiment, its ``--help`` explaining the experiment.

    ``prog`` is the command shown in the usage line (default ``python -m experiments.NAME``; ``repro run
    NAME`` passes its own).
    """
    short = registry.stem(module_name)
    from ._describe import describe

    parser = _args.OneLineParser(
        prog=prog or f"python -m {registry.module_name(short)}",
        description=describe(short, module),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    return add_common_flags(parser)


def run(module_name: str, argv=None) -> int:
    """The whole protocol of one experiment: compute, write CSV, draw, check claims, update the ledger."""
    if module_name == "__main__":  # `python -m experiments.NAME`: use the real module name
        spec = sys.modules["__main__"].__spec__
        module_name = spec.name if spec is not None else module_name
    short = registry.stem(module_name)
    mod = importlib.import_module(module_name)
    args = experiment_parser(module_name, mod).parse_args(argv)
    cfg = Config(quick=args.quick, seed=args.seed, out=args.out)
    from ._atomic import record_problem

    problem = (
        _preflight.check_out(cfg.out)
        or record_problem(cfg.out)
        or _preflight.check_data([short], cfg.quick, {short: Path(mod.__file__)})
    )
    if problem:
        print(problem, file=sys.stderr)
        return 2
    if notice := out_notice(cfg.out):
        print(notice, file=sys.stderr)
    from ._progress import Progress

    prog = Progress([short], cfg.quick, 1, cfg.out)
    prog.start(short)
    from . import environment

    try:
        summary = run_module(module_name, cfg)
        environment.write(cfg.out, [short], quick=cfg.quick, seed=cfg.seed)  # what made its numbers
    except (PanelDroppedError, ResultFileError, OSError) as exc:  # known failures: one line
        from ._atomic import write_error

        text = str(exc) if isinstance(exc, (PanelDroppedError, ResultFileError)) else write_error(exc)
        if text is None:
            raise
        print(f"{short}: {text}", file=sys.stderr)
        return 1
    finally:
        prog.finish(short)
        prog.close()
    print(summary)
    return 0


def experiment_threads(mod):
    """The BLAS/OpenMP threads an experiment computes with: one, unless it sets ``RUN_ALONE``.

    The library's own solvers already run with one BLAS thread (:mod:`repro._threads`); this extends the
    policy to what an experiment calls beside them (scikit-learn's NMF, PCA and SVM, SciPy's LAPACK). Two
    reasons. Speed: in a parallel run (``repro run all`` uses every core) two workers with a BLAS thread per
    core oversubscribe the machine; one zass2006_fig4 split's NMF, PCA and SVM fits took 29-55 s with two
    threads per process beside another experiment and 4.5-6 s with one (2-core machine). Reproducibility: a
    thread count can move a multithreaded LAPACK result in its last bits (an unconverged NSPCA's AUC by
    3e-7, measured), so the count must not depend on ``--jobs`` or on the machine's cores: fixed at one,
    ``repro run``, ``repro verify`` and the tests compute the same numbers with any ``--jobs`` on any machine.
    The timing experiments that set ``RUN_ALONE`` run with nothing beside them and keep BLAS's own threads,
    as their references (NumPy and SciPy solvers timed against ours) would be run by a user.

    Examples
    --------
    >>> import types
    >>> with experiment_threads(types.SimpleNamespace()):
    ...     pass
    """
    if getattr(mod, "RUN_ALONE", False) is True:
        return contextlib.nullcontext()
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=1)


def run_module(module_name: str, cfg: Config) -> str:
    """Run an experiment module with ``cfg``; return a one-line summary (used by ``repro run``).

    The frame ``compute`` returns is written to CSV and read back, and everything after that (figure,
    table, claims) works from the CSV as written: it is the source of truth, so a later
    :func:`redraw_module` on the committed CSV gives the same figure and ledger rows. The run's duration
    is recorded in ``<out>/runtimes.csv`` (shown by ``--help`` and ``repro list``), the module's import
    included (the library and Numba load there).
    """
    t_import = time.perf_counter()
    mod = importlib.import_module(module_name)
    name = registry.stem(module_name)
    cfg.out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    with experiment_threads(mod):
        df = _guarded(lambda: mod.compute(cfg), name, "computation")
        if not isinstance(df, pd.DataFrame) or df.empty:
            raise RuntimeError(
                f"{name}.compute returned no data; an experiment must return a non-empty frame."
            )
        write_csv(df, cfg.out / f"{name}.csv", quick=cfg.quick)
        summary = _render(mod, name, cfg, t0)
    _runtimes.record(cfg.out, name, cfg.quick, time.perf_counter() - t_import)
    return summary


def redraw_module(module_name: str, cfg: Config) -> str:
    """Redraw the figure and re-check the claims of an experiment from its CSV in ``cfg.out``, no compute.

    Whether the CSV came from a quick or a full run is read from its record (``results.sha256``), never
    inferred: a CSV whose record does not say is refused.
    """
    mod = importlib.import_module(module_name)
    name = registry.stem(module_name)
    path = cfg.out / f"{name}.csv"
    command = registry.command(name)
    if not path.exists():
        raise ResultFileError(f"no {path} to redraw from; run `repro {command} {name}` first.")
    read_result(cfg.out, name)  # refused (one line) unless it is the CSV the runner wrote
    quick = recorded_mode(path)
    if quick is None:
        raise ResultFileError(
            f"{path}: its record ({cfg.out / 'results.sha256'}) does not say whether a quick or a full run "
            f"wrote it (an earlier version's record); run `repro {command} {name}` (with --quick for a quick "
            "run) to write it again."
        )
    return _render(mod, name, dataclasses.replace(cfg, quick=quick), time.perf_counter())


def read_result(out: Path, name: str) -> pd.DataFrame:
    """An experiment's CSV as the figure, table and claims see it, read as strictly as it is written.

    :func:`write_csv` writes a header of unique column names, rows of exactly as many fields and a line
    end after the last row, atomically. A file that is not so (cut off mid-row by a copy, a full disk or
    an editor; empty; not UTF-8; rows of another length; not CSV) is refused with a
    :class:`ResultFileError` naming it, never read as fewer or partly empty rows; and a file whose
    non-timing content differs from the digest recorded when it was written (``results.sha256``,
    :func:`_atomic.recorded_path`: a file cut off at a row boundary, its numbers edited or replaced), or
    that the record does not list, is refused too.
    """
    path = Path(out) / f"{name}.csv"
    fix = f"run `repro run {name}` to write it again."
    problem = csv_problem(path) or recorded_digest(path)
    if problem:
        raise ResultFileError(f"{path} {problem}; {fix}")
    try:
        return pd.read_csv(path, low_memory=False)
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise ResultFileError(f"{path} is damaged ({type(exc).__name__}: {exc}); {fix}") from exc


def _render(mod, name: str, cfg: Config, t0: float) -> str:
    df = read_result(cfg.out, name)
    try:
        if hasattr(mod, "plot"):
            with style():
                fig = _guarded(lambda: mod.plot(df, cfg), name, "figure")
                save_figure(fig, cfg.out / f"{name}.png")
        if hasattr(mod, "table"):
            atomic_write_text(cfg.out / f"{name}.md", mod.table(df, cfg))
    except (KeyError, AttributeError) as exc:  # a column the experiment reads is not there
        missing = exc.args[0] if isinstance(exc, KeyError) and exc.args else None
        if isinstance(exc, AttributeError):  # df.column of a missing column
            if not str(exc).startswith("'DataFrame' object has no attribute"):
                raise
            missing = getattr(exc, "name", None) or str(exc).rsplit(" ", 1)[-1]
        raise ResultFileError(
            f"{cfg.out / name}.csv lacks the column {missing!r} that {name} reads (its columns: "
            f"{', '.join(map(str, df.columns[:8]))}{', ...' if len(df.columns) > 8 else ''}): a foreign or "
            f"damaged result file; run `repro run {name}` to write it again."
        ) from exc
    claims, goals = getattr(mod, "CLAIMS", []), getattr(mod, "GOALS", [])
    rows = ledger.evaluate(name, claims, df, quick=cfg.quick)
    if claims or not goals:  # a benchmark's ledger rows: only the published numbers it checks
        ledger.write_ledger(cfg.out, name, rows, render=cfg.render_ledger)
    if goals:
        goal_rows = ledger.evaluate(name, goals, df, quick=cfg.quick, goals=True)
        ledger.write_ledger(cfg.out, name, goal_rows, render=cfg.render_ledger, folder="goals")
        rows = pd.concat([rows, goal_rows], ignore_index=True)
    counts = rows["verdict"].value_counts().to_dict()
    verdicts = ", ".join(f"{n} {v}" for v, n in counts.items()) or "no claims"
    return f"{name}: {len(df)} rows, {time.perf_counter() - t0:.1f} s, claims: {verdicts}"


# --------------------------------------------------------------------------- writers
def write_csv(df: pd.DataFrame, path: Path, quick: bool | None = None) -> Path:
    """Tidy CSV with stable float formatting (10 significant digits) so reruns diff cleanly; atomic, and
    recorded with its digest (and the run's mode, ``quick``) in its folder's ``results.sha256``: what
    :func:`read_result` checks it against."""
    path = Path(path)
    with recorded_path(path, quick=quick) as tmp:
        df.to_csv(tmp, index=False, float_format="%.10g", lineterminator="\n")
    return path


def markdown_table(df: pd.DataFrame, floatfmt: str = ".4g") -> str:
    """A GitHub Markdown table of ``df`` (no extra dependency; ``DataFrame.to_markdown`` needs tabulate)."""

    def fmt(v) -> str:
        if isinstance(v, (float, np.floating)):
            return format(float(v), floatfmt)
        return str(v).replace("|", "\\|")

    head = "| " + " | ".join(map(str, df.columns)) + " |"
    rule = "|" + "|".join("---" for _ in df.columns) + "|"
    body = ["| " + " | ".join(fmt(v) for v in row) + " |" for row in df.itertuples(index=False)]
    return "\n".join([head, rule, *body]) + "\n"


def save_figure(fig, path: Path) -> Path:
    """Save a PNG without volatile metadata (atomically) and close the figure."""
    path = Path(path)
    try:
        with atomic_path(path) as tmp:
            fig.savefig(tmp, dpi=150, bbox_inches="tight", metadata={"Software": None}, format="png")
    finally:
        plt.close(fig)
    return path


# --------------------------------------------------------------------------- style
#: One colour and marker per method, used by every figure so a method looks the same everywhere.
METHOD_STYLE: dict[str, dict] = {
    "PCA": {"color": "black", "marker": "", "linestyle": "--"},
    "EM": {"color": "tab:blue", "marker": "o"},
    "emPCA": {"color": "tab:blue", "marker": "o"},
    "emPCAopt": {"color": "tab:cyan", "marker": "s"},
    "emPCA(nn)": {"color": "tab:blue", "marker": "^"},
    "SPCA": {"color": "tab:red", "marker": "x"},
    "SPCAopt": {"color": "tab:pink", "marker": "+"},
    "PathSPCA": {"color": "tab:green", "marker": "d"},
    "thresholding": {"color": "tab:gray", "marker": "v"},
    "NSPCA": {"color": "tab:orange", "marker": "*"},
    "GSPCA": {"color": "tab:purple", "marker": "p"},
    "NMF": {"color": "tab:brown", "marker": "h"},
    "CE+SR": {"color": "tab:olive", "marker": "<"},
    "Spannogram": {"color": "tab:red", "marker": "o"},
    "GSPPCA": {"color": "tab:blue", "marker": "o"},
    "SSPCA": {"color": "tab:purple", "marker": "s"},
}

_RC = {
    "font.family": "serif",
    "font.size": 9,
    "axes.titlesize": 9,
    "axes.labelsize": 9,
    "legend.fontsize": 8,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "lines.linewidth": 1.2,
    "lines.markersize": 4,
    "axes.grid": False,
    "legend.frameon": True,
    "legend.framealpha": 1.0,
    "legend.edgecolor": "black",
    "legend.fancybox": False,
    "figure.dpi": 100,
    "image.cmap": "gray",
}


def style():
    """Context manager with the plot style: small serif type, boxed axes, as in the papers."""
    return plt.rc_context(_RC)


def method_style(method: str) -> dict:
    """Plot keyword arguments for a method label (a neutral style for unknown labels)."""
    return dict(METHOD_STYLE.get(method, {"marker": "."}))


# --------------------------------------------------------------------------- preprocessing
def preprocess(X: np.ndarray, how: str) -> np.ndarray:
    """The one place where experiments apply a paper's preprocessing, by name.

    ``"none"``: as loaded. ``"center"``: subtract column means. ``"standardize"``: center and divide by the
    column standard deviation (ddof=1); constant columns are refused. ``"unit"``: divide by 255 (pixels to
    [0, 1]). ``"unit-center"``: divide by 255, then center.
    """
    from repro.linalg import center, standardize  # lazy: the runner itself does not need Numba

    X = np.asarray(X, dtype=np.float64)
    if how == "none":
        return X.copy()
    if how == "center":
        return center(X)[0]
    if how == "standardize":
        return standardize(X)[0]
    if how == "unit":
        return X / 255.0
    if how == "unit-center":
        return center(X / 255.0)[0]
    raise ValueError(
        f"how must be one of 'none', 'center', 'standardize', 'unit', 'unit-center'; got {how!r}."
    )


def minus_first_pc(X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Project the (centred) data onto the orthogonal complement of its first principal component.

    ``X <- X (I - w1 w1')``: Sigg & Buhmann (2008, Sec. 5.2) do this to the standardized faces so the
    non-negativity constraint becomes active (their first PC lies in the non-negative orthant).
    Returns the projected data and ``w1`` (unit norm, canonical sign).
    """
    from repro.linalg import Covariance

    X = np.asarray(X, dtype=np.float64)
    _, V = Covariance.from_data(X).eigh(1)
    w1 = V[:, 0]
    return X - np.outer(X @ w1, w1), w1


# --------------------------------------------------------------------------- progress
def progress(iterable: Iterable, desc: str, total: int | None = None) -> Iterable:
    """A progress bar on long loops (hidden when stderr is not a terminal, e.g. in CI logs)."""
    return tqdm(iterable, desc=desc, total=total, leave=False, disable=None, file=sys.stderr)


# --------------------------------------------------------------------------- timing
def cpu_seconds_per_call(fn, min_seconds: float = 0.3) -> tuple[float, int]:
    """CPU time of this process per call of ``fn()``, calling it until ``min_seconds`` of CPU time are spent.

    For timing rows whose single call takes a few hundredths of a second: one call is then mostly noise
    (timer, caches, other processes' load), and the average over enough calls is stable from
    run to run. CPU time (``time.process_time``) counts the work of this process only; run it with BLAS
    and numba on one thread so that it is the work of one thread.

    Returns
    -------
    seconds : float
        CPU seconds per call.
    calls : int
        How many calls were averaged.

    Examples
    --------
    >>> sec, calls = cpu_seconds_per_call(lambda: sum(range(1000)), min_seconds=0.01)
    >>> sec > 0 and calls >= 1
    True
    """
    if not min_seconds > 0:
        raise ValueError(f"min_seconds must be > 0; got {min_seconds!r}.")
    calls = 0
    t0 = time.process_time()
    while True:
        fn()
        calls += 1
        spent = time.process_time() - t0
        if spent >= min_seconds:
            return spent / calls, calls
