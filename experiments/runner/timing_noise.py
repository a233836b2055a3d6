"""Run-to-run noise of every timing row, measured on the full runs recorded in the repository's history.

A timing verdict must not flip between two full runs of the same code on the same kind of machine. The
spread *within* a run (the quartiles that :func:`experiments.runner.claims.call_timing` sees) understates
the spread *between* runs: load from other processes, the memory state and what runs on the other core
move whole runs together (``bench_em_pca`` svds / EMPCA: quartiles 0.83-0.89 in one run, medians from 0.87
to 1.31 over the last nine). This module measures that spread, per ledger row, from the committed ledgers
of past full runs (``git log -- figures/claims/``), so that the band of each row's timing call is fixed
before the run that it decides (the rule is in :func:`experiments.runner.claims.call_timing`, docs/design.md
"Writing a claim check").

The measure, the same for every row: the full runs are the commits that rewrote at least
:data:`FULL_RUN_FILES` ledger files at once (``repro run all``; a commit that reran one experiment is not
one); in each, the row's medians as its ``reproduced`` text gives them (every ``<value>x (quartiles ...``,
or the row's own pattern, :data:`PATTERNS`), a row whose text a full run left unchanged counted once; over
the last :data:`WINDOW` runs whose text holds as many values as the newest one (older runs measured
older code), the standard deviation of the log of each value, and the row's ``sigma`` the root mean
square over its values (the pooled deviation). A row with
fewer than :data:`MIN_RUNS` such runs gets the root mean square of all rows' sigmas. Rows whose text shows
a fitted exponent ``e`` decided on ``2**e`` (:data:`EXPONENT_ROWS`) take ``e ln 2`` as their log value.
Loaded runs count: the ledger is made by ``repro run all`` on a machine that also runs other work, and
their spread is the noise a verdict must survive.

Regenerate the table after a full run is committed (the ledger's new rows are then part of the history)::

    python -m experiments.runner.timing_noise            # writes experiments/runner/timing_noise.csv
"""

from __future__ import annotations

import io
import math
import re
import subprocess
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = [
    "FULL_RUN_FILES",
    "MIN_RUNS",
    "TABLE",
    "WINDOW",
    "full_runs",
    "history",
    "measure",
    "row_values",
    "timing_rows",
]

TABLE = Path(__file__).with_name("timing_noise.csv")
MIN_RUNS = 5  # full runs of a row's current form before it gets its own sigma
WINDOW = 8  # the newest full runs that measure a row's spread
FULL_RUN_FILES = 10  # a commit rewriting this many ledger files at once is a full run
_NUM = r"(-?\d+(?:\.\d+)?(?:e[+-]?\d+)?)"
DEFAULT_PATTERN = _NUM + r"x? \((?:quartiles|95% CI)"
# rows whose reproduced text gives their decided values in another form than "<v>x (quartiles ...)"
PATTERNS = {
    ("sigg2008_timing", "nn-time-ratio"): r"ratio " + _NUM,
    ("sigg2008_timing", "nn-time-no-K-dependence"): r"= " + _NUM + r" \(bootstrap",
    ("bench_em_scale", "vs-svd-compressed"): r"EM (?:CPU )?time at sin [^:]*: " + _NUM + "x",
    ("bench_em_scale", "few-hours"): _NUM + r" s per iteration",
    ("bench_em_sparse_pca", "vs-sklearn"): r"sklearn " + _NUM + r"x the time",
    ("bench_nspca", "fit-under-1s"): _NUM + r" s \(quartiles",
}
# rows that print a fitted exponent e and decide on 2**e (bench_nspca passes growth factors per doubling)
EXPONENT_ROWS = {("bench_nspca", "sweep-is-O(d^2 k)")}


def full_runs(repo: Path | str = ".") -> list[tuple[str, str]]:
    """``(commit, date)`` of every full run in the history, oldest first (:data:`FULL_RUN_FILES`)."""
    out = subprocess.run(
        ["git", "log", "--reverse", "--format=@%H %cI", "--name-only", "--", "figures/claims/"],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    runs = []
    for block in out.split("@")[1:]:
        lines = [ln for ln in block.splitlines() if ln.strip()]
        commit, date = lines[0].split()
        if sum(ln.startswith("figures/claims/") for ln in lines[1:]) >= FULL_RUN_FILES:
            runs.append((commit, date))
    return runs


def row_values(experiment: str, row_id: str, text: str) -> list[float]:
    """The numbers a timing row's ``reproduced`` text reports as its decided medians.

    Examples
    --------
    >>> row_values("bench_em_pca", "fit-vs-svds-spiked", "svds / EMPCA: 0.87x (quartiles 0.83-0.89 of 3)")
    [0.87]
    >>> row_values("sigg2008_timing", "nn-time-ratio", "NSPCA 3.16 s: ratio 150.9; per alpha ...")
    [150.9]
    """
    pattern = PATTERNS.get((experiment, row_id), DEFAULT_PATTERN)
    return [float(v) for v in re.findall(pattern, str(text))]


def timing_rows(repo: Path | str = ".") -> list[tuple[str, str]]:
    """``(experiment, id)`` of the ``machine_dependent`` rows of the working tree's ledger."""
    frames = [
        pd.read_csv(f, dtype=str, keep_default_na=False)
        for f in sorted((Path(repo) / "figures" / "claims").glob("*.csv"))
    ]
    cur = pd.concat(frames, ignore_index=True)
    cur = cur[cur.get("machine_dependent", "False") == "True"]
    return list(zip(cur.experiment, cur.id, strict=True))


def history(repo: Path | str = ".", rows: list[tuple[str, str]] | None = None) -> pd.DataFrame:
    """The timing rows as each full run (:func:`full_runs`) left them: one line per (row, run).

    A row a full run did not rewrite (the same text as before) is counted once.

    ``rows`` defaults to the ``machine_dependent`` rows of the working tree's ledger. Returns columns
    ``experiment, id, commit, date, verdict, reproduced`` in commit order.
    """
    repo = Path(repo)
    if rows is None:
        rows = timing_rows(repo)
    out = []
    runs = full_runs(repo)
    for experiment in sorted({e for e, _ in rows}):
        ids = {i for e, i in rows if e == experiment}
        path = f"figures/claims/{experiment}.csv"
        for commit, date in runs:
            shown = subprocess.run(
                ["git", "show", f"{commit}:{path}"], cwd=repo, capture_output=True, text=True
            )
            if shown.returncode:
                continue
            try:
                df = pd.read_csv(io.StringIO(shown.stdout), dtype=str, keep_default_na=False)
            except (pd.errors.ParserError, pd.errors.EmptyDataError):
                continue
            for _, r in df[df.id.isin(ids)].iterrows():
                out.append(
                    (experiment, r.id, commit[:10], date, r.get("verdict", ""), r.get("reproduced", ""))
                )
    h = pd.DataFrame(out, columns=["experiment", "id", "commit", "date", "verdict", "reproduced"])
    keep = ~h.duplicated(["experiment", "id", "reproduced"])
    return h[keep].reset_index(drop=True)


def _row_logs(experiment: str, row_id: str, texts: list[str]) -> np.ndarray:
    """Log values (runs x values) of a row's runs of its newest form (as many values as the newest text)."""
    values = [row_values(experiment, row_id, t) for t in texts]
    if not values or not values[-1]:
        return np.empty((0, 0))
    n, k = len(values[-1]), len(values)
    while k > 0 and len(values[k - 1]) == n:
        k -= 1
    v = np.array(values[max(k, len(values) - WINDOW) :], dtype=float)
    if (experiment, row_id) in EXPONENT_ROWS:
        return v * math.log(2.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.log(np.abs(v))


def measure(hist: pd.DataFrame, rows: list[tuple[str, str]] | None = None) -> pd.DataFrame:
    """Each row's run-to-run sigma (of the log of its decided values) from :func:`history`'s table.

    Returns columns ``experiment, id, runs, values, sigma, source`` where ``source`` is ``"row"`` (its own
    runs) or ``"pooled"`` (fewer than :data:`MIN_RUNS` comparable runs: the root mean square of the
    rows' own sigmas). ``rows`` (optional) lists rows to include even without a recorded run (a new or
    renamed row): they get the pooled sigma.

    Examples
    --------
    >>> runs = (1.0, 1.1, 1.0, 1.1, 1.0, 1.1)
    >>> h = pd.DataFrame({"experiment": ["e"] * 6, "id": ["r"] * 6,
    ...                   "reproduced": [f"{v}x (quartiles 0-9 of 3)" for v in runs]})
    >>> round(float(measure(h).sigma.iloc[0]), 4)  # sd of log over 6 runs alternating 1.0 and 1.1
    0.0522
    """
    stats = []
    for (experiment, row_id), g in hist.groupby(["experiment", "id"], sort=True):
        logs = _row_logs(experiment, row_id, list(g.reproduced))
        sigma = math.nan
        if logs.shape[0] >= MIN_RUNS:
            sd = np.nanstd(logs, axis=0, ddof=1)
            sigma = float(np.sqrt(np.nanmean(sd**2)))
        stats.append([experiment, row_id, logs.shape[0], logs.shape[1] if logs.size else 0, sigma])
    seen = {(s[0], s[1]) for s in stats}
    stats += [[e, i, 0, 0, math.nan] for e, i in (rows or []) if (e, i) not in seen]
    out = pd.DataFrame(stats, columns=["experiment", "id", "runs", "values", "sigma"])
    own = out.sigma.dropna()
    pooled = float(np.sqrt(np.mean(own**2))) if own.size else 0.0
    out["source"] = np.where(out.sigma.notna(), "row", "pooled")
    out["sigma"] = out.sigma.fillna(pooled).round(4)
    return out.sort_values(["experiment", "id"], ignore_index=True)


def main() -> None:  # pragma: no cover - a maintenance command, run by hand after a full run
    repo = Path(__file__).resolve().parents[2]
    rows = timing_rows(repo)
    table = measure(history(repo, rows), rows)
    table.to_csv(TABLE, index=False)
    print(table.to_string(index=False))
    print(f"wrote {TABLE}")


if __name__ == "__main__":  # pragma: no cover
    main()
