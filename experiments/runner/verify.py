"""``repro verify``: re-run experiments and compare every number of their CSVs with a reference.

The references
--------------
* A full run (``repro verify NAME``) is compared with the committed ``figures/NAME.csv`` and the
  verdicts of ``figures/claims/NAME.csv``.
* A quick run (``repro verify NAME --quick``) is compared with the committed quick references in
  ``experiments/references/quick/``: ``NAME.csv`` (the ``--quick`` CSV at seed 0, its timing columns
  left out, so that regenerating them is deterministic) and ``claims/NAME.csv`` (the claim ids and
  verdicts; a timing claim's verdict is stored as ``(timing)``, a quick run's timings deciding nothing).
  ``repro verify all --quick --update`` rewrites them, and prints what moved first (a value that moved
  within its tolerance keeps its old digits, so an update where nothing moved rewrites the same bytes:
  an update of all 32 experiments changed only ``peak_bytes`` before this rule, two updates of
  ``roweis1997_claims`` after it nothing); the test suite
  compares the quick run of every experiment it makes with them (``tests/quickrun.py``).

A run that exists
-----------------
``repro verify --run DIR [NAME...]`` compares the folder a ``repro run --out DIR`` already wrote (every
experiment it has, or the ones named) with the same references, by the same rules and exit statuses,
and runs nothing: seconds instead of a run. A folder whose claims say ``--quick`` is compared with the
quick references. A missing, empty or damaged folder or file is exit status 2.

When a number moved, the report ends with both environments (the ``environment.json`` that every run
writes beside its ledger, :mod:`.environment`: packages, BLAS and its kernel, NumPy's CPU features, the
CPU), the fields that differ marked ``*``: the first thing to look at.

How columns compare
-------------------
One default rule, :func:`column_rule`, and the declarations of :data:`DECLARED` where it is wrong:

* **timing** columns (a name with ``seconds``, ``_s`` at the end, ``speedup``, ``rss``, ``wall``; and the
  columns :data:`DECLARED` names, e.g. the speed ratios of the benchmarks and the call counts of their
  timing loops) are not compared. A timing claim whose verdict changed is reported apart and does not
  fail the check.
* **diagnostic** columns (declared in :data:`DECLARED`, each with its reason) are results the paper's
  method itself decides by round-off (NSPCA's support sizes either side of a jump it misses): written,
  kept in the digest, not compared. Counts that round-off moves by a bounded amount (a stopping test
  crossed one sweep apart) get a declared tolerance instead.
* **text** (labels, keys, booleans) compares exactly, as strings; an empty cell equals only an empty one.
* **integers**, and float columns whose values are whole numbers in both runs (counts, supports, iteration
  counts stored with NaN), compare exactly.
* **floats** compare within ``|new - old| <= ATOL + RTOL * |old|`` (NaN equals only NaN).
* **curves** (the rows that are points of a curve, declared in :data:`._columns.CURVES`: Fig. 4's ROC
  curves) compare as the figure shows them: by their area and their values on a common grid, within
  tolerances scaled to the unit square they lie in, whatever their number of points.

Tolerances, measured and reasoned
---------------------------------
*Run to run on one machine* the CSVs are bit-identical: two ``repro run all --quick`` on the 2-core
development machine (2026-11-27) wrote the same bytes in every non-timing column of every experiment
(every random stream is seeded from ``--seed``; no experiment reads the clock to decide anything but a
timing loop's number of calls, which is a timing column). So on one machine any difference is a change.

*Machine to machine* what can differ: the BLAS library and its kernels (OpenBLAS picks its kernels by CPU:
AVX2 and AVX-512 sum the products of a ``dot`` or ``gemm`` in different orders), BLAS and Numba thread
counts (the blocking of a product and the order of a parallel reduction follow them), and the NumPy and
SciPy versions (LAPACK drivers). Each changes the last bits of a product (relative ``1e-16``); an
iterative method stopped by a tolerance turns that into a difference of the order of its tolerance (the
experiments run to ``1e-6`` or finer), and the number of iterations it takes can move by one or two.
Hence ``RTOL = 1e-5`` (ten times the coarsest tolerance the experiments stop at) and ``ATOL = 1e-8``
for values that are rounding noise (an angle between eigenvectors computed two ways is ``1e-8`` from a
cosine of ``1 - 1e-16``). Counts compare exactly all the same: an iteration count that moved on another
machine is reported, for a reader to judge; that is what catches a changed default tolerance, start or
restart count on the same machine, where it matters most. The tolerances are not looser: a default
``tol`` of ``1e-2`` instead of ``1e-6`` moves EM's results by ``1e-3`` or more, far outside them.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from . import _args, engine, registry

# the rule of which columns are timing, shared with results.sha256 (DECLARED and TIMING_NAME re-exported)
from ._columns import CURVES, DECLARED, DIAGNOSTIC, EXACT, FLOAT, TEXT, TIMING, TIMING_NAME, declared_rule  # noqa: F401
from ._paths import FIGURES_DIR

__all__ = [
    "ATOL",
    "DECLARED",
    "QUICK_REFERENCES",
    "RTOL",
    "BadReference",
    "ExperimentReport",
    "column_rule",
    "compare_experiment",
    "compare_frames",
    "write_reference",
]

#: The name of a verify's temporary run folder: ``RUN_PREFIX<pid>-<random>`` (:func:`remove_stale_runs`).
RUN_PREFIX = "repro-verify-"
#: The quick references: ``NAME.csv`` and ``claims/NAME.csv`` per experiment (``--quick``, seed 0).
QUICK_REFERENCES = Path(__file__).resolve().parents[1] / "references" / "quick"

RTOL = 1e-5
ATOL = 1e-8
CURVE = "curve"  # the rule of the points of a curve (compare_curves)


class BadReference(RuntimeError):
    """A reference is missing or cannot be read: ``repro verify`` never passes on it."""


def column_rule(experiment: str, column: str, old=None, new=None) -> object:
    """How ``column`` of ``experiment`` compares: ``"timing"``, ``"text"``, ``"exact"`` or ``(rtol, atol)``.

    Parameters
    ----------
    experiment : str
        The experiment's name (``sigg2008_fig2``).
    column : str
        The CSV column.
    old, new : pandas.Series, optional
        The reference's and the new run's column; without them only the declared and name rules apply
        (``"float"`` is then returned for an undecided column).

    Returns
    -------
    object
        ``"timing"`` (not compared), ``"text"`` and ``"exact"`` (equal or moved), or a tuple
        ``(rtol, atol)``.

    Examples
    --------
    >>> import pandas as pd
    >>> column_rule("bench_em_pca", "seconds")
    'timing'
    >>> column_rule("mattei2016_fig2", "n_iter", pd.Series([3.0, float("nan")]), pd.Series([4.0, 5.0]))
    'exact'
    >>> column_rule("mattei2016_fig2", "fscore", pd.Series([0.5]), pd.Series([0.5]))
    (1e-05, 1e-08)
    """
    rule = declared_rule(experiment, column)
    if rule is not None:
        return rule
    if old is None or new is None:
        return FLOAT
    import pandas as pd

    if not all(pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s) for s in (old, new)):
        return TEXT
    if all(pd.api.types.is_integer_dtype(s) for s in (old, new)):
        return EXACT
    values = [s.to_numpy(dtype=float) for s in (old, new)]
    import numpy as np

    if all(np.all(np.isnan(v) | (v == np.round(v))) for v in values):
        return EXACT
    return (RTOL, ATOL)


# --------------------------------------------------------------------------- comparison
@dataclass
class Moved:
    """One column that moved: how many rows, the largest relative change, the first few rows."""

    column: str
    rule: object
    n_moved: int
    n_rows: int
    max_rel: float
    examples: list[dict] = field(default_factory=list)


@dataclass
class ExperimentReport:
    """What moved in one experiment between a reference and a new run."""

    name: str
    reference: str
    error: str = ""
    rows: tuple[int, int] = (0, 0)
    columns_added: list[str] = field(default_factory=list)
    columns_removed: list[str] = field(default_factory=list)
    moved: list[Moved] = field(default_factory=list)
    verdicts: list[dict] = field(default_factory=list)  # non-timing claims: a change fails
    timing_verdicts: list[dict] = field(default_factory=list)  # reported apart, never fails
    skipped: list[str] = field(default_factory=list)  # timing columns, not compared

    @property
    def ok(self) -> bool:
        """No error, and nothing moved beyond tolerance (timing verdicts aside)."""
        return not (
            self.error
            or self.rows[0] != self.rows[1]
            or self.columns_added
            or self.columns_removed
            or self.moved
            or self.verdicts
        )

    def to_dict(self) -> dict:
        return {
            "experiment": self.name,
            "reference": self.reference,
            "ok": self.ok,
            "error": self.error,
            "rows": {"old": self.rows[0], "new": self.rows[1]},
            "columns_added": self.columns_added,
            "columns_removed": self.columns_removed,
            "moved": [
                {
                    **m.__dict__,
                    "rule": m.rule if isinstance(m.rule, str) else list(m.rule),
                    "max_rel": m.max_rel if math.isfinite(m.max_rel) else None,  # strict JSON
                }
                for m in self.moved
            ],
            "verdicts": self.verdicts,
            "timing_verdicts": self.timing_verdicts,
            "timing_columns": self.skipped,
        }

    def text(self, examples: int = 5) -> str:
        """The readable report of this experiment (several lines)."""
        if self.error:
            return f"{self.name}: ERROR {self.error}"
        head = f"{self.name}: {'no number moved' if self.ok else 'MOVED'} (against {self.reference})"
        lines = [head]
        if self.rows[0] != self.rows[1]:
            lines.append(f"  rows: {self.rows[0]} -> {self.rows[1]} (compared in order up to the shorter)")
        if self.columns_removed:
            lines.append(f"  columns gone: {', '.join(self.columns_removed)}")
        if self.columns_added:
            lines.append(f"  columns new: {', '.join(self.columns_added)}")
        for m in self.moved:
            how = m.rule if isinstance(m.rule, str) else f"rtol {m.rule[0]:g}, atol {m.rule[1]:g}"
            rel = "" if math.isnan(m.max_rel) else f", largest relative change {m.max_rel:.3g}"
            unit = "curves" if how.startswith(CURVE) else "rows"
            lines.append(f"  column {m.column} ({how}): {m.n_moved} of {m.n_rows} {unit} moved{rel}")
            for e in m.examples[:examples]:
                r = "" if e["rel"] is None else f" ({e['rel']:+.3g})"  # none from 0 or NaN
                where = f"row {e['row']} " if e["row"] >= 0 else ""
                lines.append(f"    {where}[{e['key']}]: {e['old']} -> {e['new']}{r}")
        for v in self.verdicts:
            lines.append(f"  verdict {v['id']}: {v['old']} -> {v['new']}")
        for v in self.timing_verdicts:
            lines.append(f"  timing verdict (not counted) {v['id']}: {v['old']} -> {v['new']}")
        return "\n".join(lines)


def _read_csv(path: Path, what: str):
    import pandas as pd

    if not path.is_file():
        raise BadReference(f"no {what} {path}")
    try:
        df = pd.read_csv(path, low_memory=False)
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise BadReference(f"{what} {path} is malformed ({type(exc).__name__}: {exc})") from exc
    if df.empty or df.columns.duplicated().any() or any(str(c).startswith("Unnamed:") for c in df.columns):
        raise BadReference(f"{what} {path} is malformed (no rows, or unnamed or repeated columns)")
    if short := _short_row(path, len(df.columns)):
        raise BadReference(
            f"{what} {path} is malformed (row {short[0]} has {short[1]} of {len(df.columns)} fields)"
        )
    return df


def _short_row(path: Path, width: int) -> tuple[int, int] | None:
    """``(row, fields)`` of the first data row of ``path`` with fewer than ``width`` fields, or None.

    pandas fills the missing cells of a short row with NaN, so a file cut in the middle of a row would
    read as a row of moved numbers (exit status 1) instead of a damaged file (2). A cut at a row boundary,
    or inside the last field, leaves every row whole and cannot be seen here.
    """
    import csv

    with open(path, newline="", encoding="utf-8", errors="replace") as f:
        for i, row in enumerate(csv.reader(f)):
            if i and row and len(row) < width:
                return i, len(row)
    return None


def _cell(value) -> str:
    if isinstance(value, float):
        return "nan" if math.isnan(value) else format(value, ".10g")
    return str(value)


def _key(row, columns: list[str]) -> str:
    """The row named by its first five non-empty text and count cells (``method=EM, k=3``)."""
    cells = [(c, _cell(row[c])) for c in columns]
    return ", ".join(f"{c}={v}" for c, v in [(c, v) for c, v in cells if v not in ("nan", "", "<NA>")][:5])


def compare_frames(name: str, old, new, reference: str = "") -> ExperimentReport:
    """Compare the reference frame ``old`` with the new run's ``new``, column by column, row by row.

    Rows are matched in order (every experiment writes its rows in a fixed order); columns by name. A
    column only in the new frame is a change unless it is a timing column (the quick references leave
    those out). The rows that are points of curves (:data:`._columns.CURVES`: an ROC) are compared as
    curves instead (:func:`compare_curves`).

    Examples
    --------
    >>> import pandas as pd
    >>> old = pd.DataFrame({"method": ["EM", "PCA"], "variance": [1.0, 2.0], "seconds": [0.1, 0.2]})
    >>> new = old.assign(variance=[1.0, 2.5], seconds=[0.3, 0.1])
    >>> r = compare_frames("toy", old, new)
    >>> r.ok, [m.column for m in r.moved], r.skipped
    (False, ['variance'], ['seconds'])
    """
    curve = CURVES.get(name)
    if curve is None or not {curve.kind, *curve.keys, curve.x, curve.y} <= {*old.columns, *new.columns}:
        return _compare_rows(name, old, new, reference)
    # the points of curves compared as curves (their number is not compared), the other rows row by row
    is_old, is_new = (f[curve.kind].astype(str).eq(curve.value) for f in (old, new))
    report = _compare_rows(name, old[~is_old], new[~is_new], reference)
    report.moved += compare_curves(curve, old[is_old], new[is_new])
    return report


def _compare_rows(name: str, old, new, reference: str) -> ExperimentReport:
    """:func:`compare_frames` on rows that are not points of curves."""
    import numpy as np

    report = ExperimentReport(name, reference, rows=(len(old), len(new)))
    timing = {c for c in {*old.columns, *new.columns} if column_rule(name, c) in (TIMING, DIAGNOSTIC)}
    report.skipped = [c for c in new.columns if c in timing]
    report.columns_removed = [c for c in old.columns if c not in new.columns and c not in timing]
    report.columns_added = [c for c in new.columns if c not in old.columns and c not in timing]
    common = [c for c in old.columns if c in new.columns and c not in timing]
    n = min(len(old), len(new))
    old, new = old.iloc[:n].reset_index(drop=True), new.iloc[:n].reset_index(drop=True)
    rules = {c: column_rule(name, c, old[c], new[c]) for c in common}
    keys = [c for c in common if rules[c] in (TEXT, EXACT)]
    for c in common:
        rule = rules[c]
        if rule == TEXT:
            a, b = (s.astype(object).where(s.notna(), "").astype(str) for s in (old[c], new[c]))
            bad = (a != b).to_numpy()
            rel = np.full(n, np.nan)
        else:
            a = old[c].to_numpy(dtype=float)
            b = new[c].to_numpy(dtype=float)
            nan_a, nan_b = np.isnan(a), np.isnan(b)
            with np.errstate(invalid="ignore", divide="ignore"):
                diff = np.abs(b - a)
                rel = np.where(a != 0, (b - a) / np.abs(a), np.where(b == a, 0.0, np.inf))
                if rule == EXACT:
                    close = a == b
                else:
                    rtol, atol = rule
                    close = (a == b) | (diff <= atol + rtol * np.abs(a))  # a == b: also inf
            bad = (nan_a != nan_b) | (~nan_a & ~nan_b & ~close)
            rel = np.where(nan_a | nan_b, np.nan, rel)
        if not bad.any():
            continue
        idx = np.flatnonzero(bad)
        finite = np.abs(rel[idx])[~np.isnan(rel[idx])]
        examples = [
            {
                "row": int(i),
                "key": _key(old.iloc[i], [k for k in keys if k != c]),
                "old": _cell(old[c].iloc[i]),
                "new": _cell(new[c].iloc[i]),
                "rel": float(rel[i]) if np.isfinite(rel[i]) else None,  # None: NaN, or from 0
            }
            for i in idx[:10]
        ]
        report.moved.append(
            Moved(c, rule, int(bad.sum()), n, float(finite.max()) if finite.size else math.nan, examples)
        )
    return report


def compare_curves(curve, old, new) -> list[Moved]:
    """The curves of two runs compared as curves (:class:`._columns.Curve`): by area and on a common
    grid, whatever their number of points. A curve that only one run has is a moved curve.

    Examples
    --------
    >>> import pandas as pd
    >>> from experiments.runner._columns import Curve
    >>> roc = Curve("kind", "roc", ("m",), "fpr", "tpr", 1e-4, 5e-3)
    >>> old = pd.DataFrame({"kind": "roc", "m": "a", "fpr": [0, 0.5, 1], "tpr": [0, 0.5, 1]})
    >>> compare_curves(roc, old, old.iloc[[0, 2]])  # a collinear point fewer: the same curve
    []
    >>> [m.column for m in compare_curves(roc, old, old.assign(tpr=[0, 0.6, 1]))]
    ['tpr (curve)']
    """
    import numpy as np

    grid = np.linspace(0.0, 1.0, curve.grid)
    keys = list(curve.keys)

    def curves(df) -> dict[str, tuple]:
        out = {}
        for key, g in df.groupby(keys, dropna=False, sort=False):
            key = key if isinstance(key, tuple) else (key,)
            x, y = g[curve.x].to_numpy(dtype=float), g[curve.y].to_numpy(dtype=float)
            label = ", ".join(f"{k}={_cell(v)}" for k, v in zip(keys, key, strict=True))
            out[label] = (float(np.trapezoid(y, x)), np.interp(grid, x, y), len(g))
        return out

    a, b = curves(old), curves(new)
    examples = []
    for label in sorted(a.keys() | b.keys()):
        if label not in a or label not in b:
            what = "no such curve" if label not in a else f"{a[label][2]} points"
            now = "no such curve" if label not in b else f"{b[label][2]} points"
            examples.append({"row": -1, "key": label, "old": what, "new": now, "rel": None})
            continue
        (area_a, ya, na), (area_b, yb, nb) = a[label], b[label]
        gap = float(np.max(np.abs(yb - ya)))
        if abs(area_b - area_a) > curve.area_atol or gap > curve.curve_atol:
            examples.append(
                {
                    "row": -1,
                    "key": label,
                    "old": f"area {area_a:.6g} ({na} points)",
                    "new": f"area {area_b:.6g} ({nb} points), largest gap {gap:.3g}",
                    "rel": None,
                }
            )
    if not examples:
        return []
    rule = f"{CURVE}: area within {curve.area_atol:g}, {curve.y} within {curve.curve_atol:g} on a grid"
    n = len(a.keys() | b.keys())
    return [Moved(f"{curve.y} (curve)", rule, len(examples), n, math.nan, examples[:10])]


def _verdicts(path: Path, what: str) -> dict[str, tuple[str, bool]]:
    df = _read_csv(path, what)
    if not {"id", "verdict"} <= set(df.columns):
        raise BadReference(f"{what} {path} is malformed (no id or verdict column)")
    timing = (
        df["machine_dependent"].astype(str).str.lower().eq("true")
        if "machine_dependent" in df.columns
        else df["verdict"].eq("(timing)")
    )
    return {str(i): (str(v), bool(t)) for i, v, t in zip(df["id"], df["verdict"], timing, strict=True)}


def compare_experiment(name: str, out: Path, reference: Path) -> ExperimentReport:
    """Compare ``out/NAME.csv`` and its claims with the reference folder (``figures/`` or the quick ones).

    A missing or malformed reference is an error of the report (``ok`` is False), never a pass.

    Examples
    --------
    >>> import tempfile, pandas as pd
    >>> from pathlib import Path
    >>> ref, out = Path(tempfile.mkdtemp()), Path(tempfile.mkdtemp())
    >>> pd.DataFrame({"k": [1], "v": [0.5]}).to_csv(out / "toy.csv", index=False)
    >>> compare_experiment("toy", out, ref).error.startswith("no reference")
    True
    """
    out, reference = Path(out), Path(reference)
    try:
        old = _read_csv(reference / f"{name}.csv", "reference")
        new = _read_csv(out / f"{name}.csv", "new CSV")
        report = compare_frames(name, old, new, str(reference))
        old_v, new_v = {}, {}
        for folder in registry.verdict_folders(name):
            tag = "" if folder == "claims" else f"{folder}/"  # a goal's id beside a claim's of one module
            old_v.update(
                {
                    tag + k: v
                    for k, v in _verdicts(
                        reference / folder / f"{name}.csv", f"reference {folder} file"
                    ).items()
                }
            )
            new_v.update(
                {tag + k: v for k, v in _verdicts(out / folder / f"{name}.csv", f"new {folder} file").items()}
            )
    except BadReference as exc:
        return ExperimentReport(name, str(reference), error=f"{exc}; {_make_it(name, reference)}")
    for cid in sorted(old_v.keys() | new_v.keys()):
        none = ("(no such claim)", False)
        ov, (nv, timing) = old_v.get(cid, none)[0], new_v.get(cid, none)
        # timing or not is what the code that ran says (its claims file), never the reference's flag: a
        # reference that marks a claim machine-dependent cannot hide its verdict's change
        if timing:
            if ov != nv and "(timing)" not in (ov, nv):
                report.timing_verdicts.append({"id": cid, "old": ov, "new": nv})
        elif ov != nv:
            report.verdicts.append({"id": cid, "old": ov, "new": nv})
    return report


def _make_it(names: str, reference: Path) -> str:
    """How to make the reference of ``names`` (one name, or several joined by spaces) in ``reference``."""
    if reference.resolve() == QUICK_REFERENCES.resolve():
        return f"regenerate it with `repro verify {names} --quick --update`"
    out_flag = "" if reference.resolve() == FIGURES_DIR.resolve() else f" --out {reference}"
    by_command: dict[str, list[str]] = {"run": [], "bench": []}
    for n in names.split():
        by_command[registry.command(n)].append(n)
    commands = [f"`repro {cmd} {' '.join(ns)}{out_flag}`" for cmd, ns in by_command.items() if ns]
    return "make it with " + " and ".join(commands)


def reference_problem(stems: list[str], reference: Path, update: bool = False) -> str | None:
    """Why ``reference`` cannot be compared with (None when it can), checked before anything runs.

    Not a folder, or (without ``update``, which writes them) a missing ``NAME.csv`` or ``claims/NAME.csv``
    of an experiment: one line naming what is missing and how to make it, instead of a report after the
    runs. A malformed file is found when it is read (``compare_experiment``: an error, exit status 2).
    """
    reference = Path(reference)
    if reference.exists() and not reference.is_dir():
        return f"--reference {reference} is not a folder; give the folder of a run (laid out as figures/)."
    if update:
        return None
    if not reference.is_dir():
        return f"the reference folder {reference} does not exist; nothing was run."

    def absent(n: str) -> Path | None:
        paths = [reference / f"{n}.csv", *(reference / f / f"{n}.csv" for f in registry.verdict_folders(n))]
        return next((p for p in paths if not p.is_file()), None)

    missing = [n for n in stems if absent(n) is not None]
    if not missing:
        return None
    first = missing[0]
    what = absent(first)
    make = _make_it(" ".join(missing), reference)
    return f"no reference for {', '.join(missing)} in {reference} (no {what}); {make}; nothing was run."


# --------------------------------------------------------------------------- quick references
def write_reference(name: str, out: Path, reference: Path = QUICK_REFERENCES) -> None:
    """Copy a run's CSV (timing columns left out) and its claim verdicts into ``reference``.

    Deterministic: what is written depends only on the non-timing results, which are bit-identical from
    run to run on one machine; a timing claim's verdict is written as ``(timing)``.
    """
    import pandas as pd

    from ._common import write_csv

    df = _read_csv(Path(out) / f"{name}.csv", "new CSV")
    df = df[[c for c in df.columns if column_rule(name, c) != TIMING]]
    df = _keep_within_tolerance(name, df, Path(reference) / f"{name}.csv")
    write_csv(df, reference / f"{name}.csv")
    for folder in registry.verdict_folders(name):
        (reference / folder).mkdir(parents=True, exist_ok=True)
        claims = _read_csv(Path(out) / folder / f"{name}.csv", f"new {folder} file")
        timing = claims["machine_dependent"].astype(str).str.lower().eq("true")
        rows = pd.DataFrame(
            {
                "experiment": claims["experiment"],
                "id": claims["id"],
                "machine_dependent": timing,
                "verdict": claims["verdict"].where(~timing, "(timing)"),
            }
        )
        write_csv(rows, reference / folder / f"{name}.csv")


def _keep_within_tolerance(name: str, df, path: Path):
    """``df`` with the old reference's values wherever a float moved within its tolerance.

    So an update rewrites only what moved: a column declared with a tolerance for measured noise
    (``peak_bytes``) does not change the reference's bytes from one update to the next.
    """
    import numpy as np

    try:
        old = _read_csv(path, "reference")
    except BadReference:
        return df
    if len(old) != len(df):
        return df
    df = df.copy()
    for c in [c for c in df.columns if c in old.columns]:
        rule = column_rule(name, c, old[c], df[c])
        if not isinstance(rule, tuple):
            continue
        a, b = old[c].to_numpy(dtype=float), df[c].to_numpy(dtype=float)
        with np.errstate(invalid="ignore"):
            close = (a == b) | (np.abs(b - a) <= rule[1] + rule[0] * np.abs(a))
        if close.any():
            df[c] = df[c].where(~close, old[c])
    return df


# --------------------------------------------------------------------------- command
def add_parser(sub) -> None:
    """The ``verify`` subcommand of ``repro`` (added by the argparse front, :mod:`.cli`)."""
    p = sub.add_parser(
        "verify",
        help="re-run experiments and compare every number with the committed ones",
        description=(
            "Re-run the experiments into a temporary folder and compare every column of their CSVs, and "
            "their claim verdicts, with a reference: the committed figures/ for a full run, the committed "
            "quick references (experiments/references/quick/) with --quick. Timing columns are not "
            "compared; timing verdicts that changed are reported apart. Exit status 1 when anything moved "
            "beyond tolerance (see experiments/runner/verify.py), 2 on a missing or malformed reference. "
            "With --run DIR, compare a folder that a run already wrote: nothing runs. When a number "
            "moved, both environments (the reference's and the run's environment.json) are printed."
        ),
    )
    p.add_argument(
        "names", nargs="*",
        help="experiment names, or `all` (with --run: default every experiment the folder has)",
    )  # fmt: skip
    p.add_argument("--quick", action="store_true", help="quick sizes, against the quick references")
    p.add_argument(
        "--run", type=_args.folder, default=None, metavar="DIR",
        help="compare the existing output folder DIR (of `repro run --out DIR`) instead of running "
        "anything: seconds; a quick run is compared with the quick references",
    )  # fmt: skip
    p.add_argument(
        "--jobs", type=int, default=None,
        help="experiments run in parallel processes (default: the cores, as `repro run`)",
    )  # fmt: skip
    p.add_argument("--json", action="store_true", help="the report as JSON on stdout")
    p.add_argument(
        "--update", action="store_true",
        help="with --quick: rewrite the quick references from this run (after reporting what moved)",
    )  # fmt: skip
    p.add_argument(
        "--reference", type=_args.folder, default=None,
        help="compare with this folder (laid out as figures/) instead of the committed references",
    )  # fmt: skip
    p.add_argument(
        "--keep",
        type=_args.folder,
        default=None,
        help="run into this folder and keep it (default: a temporary one)",
    )


def cmd_verify(args) -> int:
    """Run ``args.names`` into a temporary folder and compare; the exit status of ``repro verify``."""
    if args.update and not args.quick and args.reference is None:
        print(
            "--update rewrites the quick references and needs --quick; the full references are figures/, "
            "rewritten by `repro run NAME` (with its ledger and README rows).",
            file=sys.stderr,
        )
        return 2
    if problem := _args.jobs_problem(args.jobs):
        print(problem, file=sys.stderr)
        return 2
    if args.run is not None:
        return _verify_run(args)
    if not args.names:
        print("name the experiments to verify, or `all` (or --run DIR to compare a folder).", file=sys.stderr)
        return 2
    available = registry.experiment_names()
    names = available if args.names == ["all"] else list(dict.fromkeys(args.names))
    unknown = [n for n in names if registry.source(n) is None]  # a dotted name: a module outside the package
    if unknown:
        print(f"unknown experiment(s): {', '.join(unknown)}; `repro list` lists them.", file=sys.stderr)
        return 2
    reference = args.reference or (QUICK_REFERENCES if args.quick else FIGURES_DIR)
    if problem := reference_problem([registry.stem(n) for n in names], reference, args.update):
        print(problem, file=sys.stderr)
        return 2
    from ._atomic import exit_on_termination

    exit_on_termination()  # a terminated verify unwinds: its temporary folder goes (finally, below)
    remove_stale_runs()
    tmp = None
    if args.keep is not None:
        out = Path(args.keep)
    else:
        tmp = tempfile.mkdtemp(prefix=f"{RUN_PREFIX}{os.getpid()}-")
        out = Path(tmp)
    try:
        # the runs' own lines go to stderr when stdout carries the JSON
        with contextlib.redirect_stdout(sys.stderr) if args.json else contextlib.nullcontext():
            status = engine.run(names, out=out, quick=args.quick, seed=0, jobs=args.jobs)
        if status == 2:
            return 2
        stems = [registry.stem(n) for n in names]
        ran = [n for n in stems if _run_file_problem(out, n) is None]
        reports = [compare_experiment(n, out, reference) for n in ran]
        failed = [n for n in stems if n not in ran]
        defaults = _library_defaults() if args.names == ["all"] else None
        if defaults is not None:
            reports.append(defaults[0])
        if args.update:
            if failed:
                print(f"--update: nothing written, {', '.join(failed)} failed.", file=sys.stderr)
            else:
                for n in stems:
                    write_reference(n, out, reference)
                _write_reference_environment(out, reference)
                if defaults is not None:
                    _write_library_defaults(defaults[1])
        _print(reports, failed, args, reference, out)
        if args.update:
            return 1 if failed else 0
        if any(r.error for r in reports):
            return 2  # a missing or malformed reference: never a pass
        return 0 if not failed and all(r.ok for r in reports) else 1
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def _run_is_quick(run: Path, stems: list[str]) -> bool | None:
    """Whether the folder's results of ``stems`` are of a quick run (True) or a full one (False), as
    recorded with them (``results.sha256``; the claims files for a record that does not say); None when
    nothing says; raises :class:`BadReference` when they mix the two."""
    import pandas as pd

    from ._atomic import recorded_mode

    kinds = set()
    for n in stems:
        if (mode := recorded_mode(run / f"{n}.csv")) is not None:
            kinds.add(mode)
            continue
        path = run / registry.verdict_folders(n)[0] / f"{n}.csv"
        with contextlib.suppress(OSError, ValueError, pd.errors.ParserError, UnicodeDecodeError):
            df = pd.read_csv(path, dtype=str, keep_default_na=False, usecols=["quick"])
            kinds |= set(df["quick"].str.lower().eq("true"))
    if len(kinds) > 1:
        raise BadReference(
            f"--run {run} mixes quick and full runs; compare them apart (name the experiments)."
        )
    return kinds.pop() if kinds else None


def _run_file_problem(run: Path, name: str) -> str | None:
    """Why ``run``'s files of ``name`` cannot be compared (missing, cut off, damaged), or None."""
    from ._atomic import csv_problem, ledger_file_problem, recorded_digest

    command = registry.command(name)
    for path in (run / f"{name}.csv", *(run / f / f"{name}.csv" for f in registry.verdict_folders(name))):
        if not path.is_file():
            return f"{path} is missing: the run did not write it (`repro {command} {name} --out {run}`)"
        check = recorded_digest if path.parent == run else ledger_file_problem
        if problem := csv_problem(path) or check(path):
            return f"{path} {problem}"
    return None


def _verify_run(args) -> int:
    """``repro verify --run DIR``: compare a folder a run wrote with the references; nothing runs."""
    run = Path(args.run)
    if args.update or args.keep is not None:
        print(
            "--run compares a folder that exists: drop --update and --keep (they need a new run).",
            file=sys.stderr,
        )
        return 2
    if not run.is_dir():
        print(f"--run {run}: no such folder; give the --out folder of a `repro run`.", file=sys.stderr)
        return 2
    available = registry.experiment_names()
    if not args.names:
        names = [n for n in available if (run / f"{n}.csv").is_file()]
        if not names:
            print(
                f"--run {run}: no experiment's CSV in it (NAME.csv and claims/NAME.csv); not the folder of a "
                "`repro run`.",
                file=sys.stderr,
            )
            return 2
    else:
        names = available if args.names == ["all"] else list(dict.fromkeys(args.names))
        unknown = [n for n in names if registry.source(n) is None]
        if unknown:
            print(f"unknown experiment(s): {', '.join(unknown)}; `repro list` lists them.", file=sys.stderr)
            return 2
    stems = [registry.stem(n) for n in names]
    try:
        quick = _run_is_quick(run, stems)
    except BadReference as exc:
        print(exc, file=sys.stderr)
        return 2
    if args.quick and quick is False:
        print(f"--run {run} holds a full run; drop --quick to compare it with figures/.", file=sys.stderr)
        return 2
    args.quick = bool(args.quick or quick)
    reference = args.reference or (QUICK_REFERENCES if args.quick else FIGURES_DIR)
    if problem := reference_problem(stems, reference):
        print(problem.replace("nothing was run", "nothing was compared"), file=sys.stderr)
        return 2
    reports = []
    for n in stems:
        if problem := _run_file_problem(run, n):
            reports.append(ExperimentReport(n, str(reference), error=problem))
        else:
            reports.append(compare_experiment(n, run, reference))
    _print(reports, [], args, reference, run)
    if any(r.error for r in reports):
        return 2
    return 0 if all(r.ok for r in reports) else 1


def remove_stale_runs(folder: Path | None = None) -> list[Path]:
    """Remove the temporary run folders of earlier ``repro verify``s that were killed (``kill -9`` cannot
    be caught, so their ``finally`` never ran): ``RUN_PREFIX<pid>-*`` folders of this user, in ``folder``
    (default: the system's temporary folder), whose process is gone. Returns what was removed."""
    from ._atomic import _alive

    folder = Path(folder or tempfile.gettempdir())
    removed = []
    for path in folder.glob(f"{RUN_PREFIX}*-*"):
        pid = path.name[len(RUN_PREFIX) :].split("-", 1)[0]
        with contextlib.suppress(OSError):
            mine = path.is_dir() and not path.is_symlink() and path.stat().st_uid == os.getuid()
            if mine and pid.isdigit() and not _alive(int(pid)):
                shutil.rmtree(path)
                removed.append(path)
    return removed


def _library_defaults():
    """The library's defaults probe (:mod:`.defaults_probe`) against its reference: (report, new table)."""
    from . import defaults_probe

    print(f"{defaults_probe.NAME}: fitting every public estimator with its defaults", file=sys.stderr)
    new = defaults_probe.probe()
    try:
        old = _read_csv(defaults_probe.REFERENCE, "reference")
    except BadReference as exc:
        hint = "; regenerate it with `repro verify all --quick --update`"
        return ExperimentReport(defaults_probe.NAME, str(defaults_probe.REFERENCE), error=f"{exc}{hint}"), new
    return compare_frames(defaults_probe.NAME, old, new, str(defaults_probe.REFERENCE)), new


def _write_library_defaults(table) -> None:
    from . import defaults_probe
    from ._common import write_csv

    path = defaults_probe.REFERENCE
    write_csv(_keep_within_tolerance(defaults_probe.NAME, table, path), path)


def _write_reference_environment(out: Path, reference: Path) -> None:
    """Copy the run's environment record into the rewritten references (what made them)."""
    from . import environment
    from ._atomic import atomic_write_text

    record = environment.read(out)
    if record is not None:
        text = json.dumps(record, indent=1, sort_keys=True) + "\n"
        atomic_write_text(Path(reference) / environment.JSON_NAME, text)


def _environments(reference: Path, out: Path) -> tuple[dict | None, dict | None]:
    from . import environment

    old, new = environment.read(reference), environment.read(out)
    return (old or {}).get("environment"), (new or {}).get("environment")


def _print(reports: list[ExperimentReport], failed: list[str], args, reference: Path, out: Path) -> None:
    from . import environment

    moved = [r.name for r in reports if not r.ok]
    old_env, new_env = _environments(reference, out)
    if args.json:
        print(
            json.dumps(
                {
                    "quick": bool(args.quick),
                    "reference": str(reference),
                    "run": str(out) if args.run is not None else None,
                    "ok": not moved and not failed,
                    "updated": bool(args.update and not failed),
                    "failed": failed,
                    "experiments": [r.to_dict() for r in reports],
                    "environment": {
                        "reference": old_env,
                        "run": new_env,
                        "differ": environment.differences(old_env or {}, new_env or {}),
                    },
                },
                indent=1,
                allow_nan=False,
            )
        )
        return
    print()
    for r in reports:
        print(r.text())
    if moved or failed:  # what made each side's numbers: the first thing to look at
        print()
        print(environment.render_pair(old_env, new_env, "reference", "this run"))
        print()
    timing = sum(len(r.timing_verdicts) for r in reports)
    summary = (
        f"verify{' --quick' if args.quick else ''}{f' --run {out}' if args.run is not None else ''}: "
        f"{len(reports)} experiment(s) compared with {reference}; "
        f"numbers moved: {', '.join(moved) if moved else 'none'}"
        f"{'; failed to run: ' + ', '.join(failed) if failed else ''}"
        f"{f'; {timing} timing verdict(s) changed (not counted)' if timing else ''}."
    )
    if args.update and not failed:
        summary += f" References rewritten in {reference}."
    print(summary)
