"""How long each experiment took: ``<out>/runtimes.csv``, written by the runner after every run.

One row per experiment and mode (``experiment,quick,seconds,date``), the latest run's. The committed
``figures/runtimes.csv`` comes from the full run that produced the committed figures; ``--help``,
``repro list`` and the progress estimates read it. Standard library only (``repro list`` stays fast).
"""

from __future__ import annotations

import csv
import datetime
import io
import math
import os
from pathlib import Path

from ._atomic import csv_problem, folder_lock, ledger_file_problem, recorded_path
from ._paths import PACKAGED_RUNTIMES, recorded_runtimes

__all__ = ["FIELDS", "fmt_seconds", "problem", "read", "record", "typical"]

FIELDS = ("experiment", "quick", "seconds", "date")
FILENAME = "runtimes.csv"


def problem(folder: str | os.PathLike) -> str | None:
    """Why ``folder/runtimes.csv`` is not read (None: it is, or there is none): one line naming the file.

    It is read only when it matches its sha256 in ``ledger.sha256`` (written with it) and parses; the
    packaged copy of the committed file (an installed wheel) is the wheel's own. A refused file is not
    fatal: its times are estimates, and the next run writes the file again.
    """
    path = recorded_runtimes(Path(folder))
    if path == PACKAGED_RUNTIMES or not path.exists():
        return None
    why = csv_problem(path) or ledger_file_problem(path)
    if why is None:
        text = path.read_text(encoding="utf-8")
        rows = list(csv.reader(io.StringIO(text)))
        if tuple(rows[0]) != FIELDS or any(_row(r) is None for r in rows[1:]):
            why = f"is damaged: not the columns {','.join(FIELDS)} with a time in each row"
    if why is None:
        return None
    return f"{path} {why}; its recorded times are not used (the next run writes it again)"


def _row(row: list[str]) -> tuple[tuple[str, bool], tuple[float, str]] | None:
    try:
        name, quick, seconds, date = row
        sec = float(seconds)
    except ValueError:
        return None
    if quick not in ("True", "False") or not name or not math.isfinite(sec) or sec < 0:
        return None
    return (name, quick == "True"), (sec, date)


def read(folder: str | os.PathLike) -> dict[tuple[str, bool], tuple[float, str]]:
    """``{(experiment, quick): (seconds, date)}`` from ``folder/runtimes.csv`` ({} if absent or refused,
    :func:`problem`).

    For ``figures/`` outside a checkout (an installed wheel), the copy of the committed file that the wheel
    carries.
    """
    path = recorded_runtimes(Path(folder))
    if not path.is_file() or problem(folder) is not None:
        return {}
    rows = csv.reader(io.StringIO(path.read_text(encoding="utf-8")))
    next(rows, None)
    return dict(filter(None, map(_row, rows)))


def record(folder: str | os.PathLike, experiment: str, quick: bool, seconds: float) -> Path:
    """Set the row of ``(experiment, quick)`` in ``folder/runtimes.csv`` (atomic, under the folder lock,
    recorded in ``ledger.sha256``); a refused file (:func:`problem`) is written anew."""
    folder = Path(folder)
    with folder_lock(folder):
        rows = read(folder)
        rows[(experiment, bool(quick))] = (float(seconds), datetime.date.today().isoformat())
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(FIELDS)
        for (name, q), (sec, date) in sorted(rows.items()):
            w.writerow([name, str(q), f"{sec:.1f}", date])
        path = folder / FILENAME
        with recorded_path(path, ledger=True, locked=True) as tmp:
            tmp.write_text(buf.getvalue(), encoding="utf-8")
        return path


def fmt_seconds(seconds: float | None) -> str:
    """``"4.2 s"``, ``"3 min 10 s"``, ``"1 h 05 min"``; ``"?"`` when unknown."""
    if seconds is None:
        return "?"
    if seconds < 60:
        return f"{seconds:.1f} s" if seconds < 10 else f"{seconds:.0f} s"
    if seconds < 3600:
        m, s = divmod(round(seconds), 60)
        return f"{m} min {s:02d} s"
    h, m = divmod(round(seconds / 60), 60)
    return f"{h} h {m:02d} min"


def typical(experiment: str, quick: bool, *folders) -> float | None:
    """Recorded seconds of ``experiment`` in the first folder that has them, or None."""
    for folder in folders:
        hit = read(folder).get((experiment, bool(quick)))
        if hit is not None:
            return hit[0]
    return None
