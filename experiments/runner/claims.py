"""The claims ledger: every published claim, what this repository reproduces of it, and a verdict.

Each experiment module declares ``CLAIMS``, a list of :class:`Claim`. A claim carries the paper's
sentence, the published value (if the paper gives one) and a ``check``: a function of the experiment's
tidy CSV (a ``pandas.DataFrame``) that returns an :class:`Outcome` with the reproduced value and a verdict.
Checks look at the data only; they are written from the paper's sentence and never tuned to pass.

After an experiment runs, its rows are written to ``<out>/claims/<experiment>.csv`` and
``<out>/CLAIMS.md`` is rebuilt from every such file (a benchmark's ``GOALS``: ``<out>/goals/`` and
``<out>/BENCHMARKS.md``), so running one experiment updates its rows and
keeps the others. Every write is atomic (``experiments.runner._atomic``) and the rebuild holds the folder's
lock; each claims file is recorded with its sha256 in ``ledger.sha256``, and one that does not match it
(cut off, edited) or is not recorded is skipped and named in ``CLAIMS.md``, never shown, never fatal.
"""

from __future__ import annotations

import math
import re
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from ._atomic import atomic_write_text, folder_lock, recorded_path

__all__ = [
    "GOAL_VERDICTS",
    "NOT_REPRODUCED",
    "PARTIAL",
    "REPRODUCED",
    "TOO_CLOSE",
    "UNTESTABLE",
    "VERDICTS",
    "Claim",
    "Outcome",
    "TimingCall",
    "call_paired",
    "call_timing",
    "evaluate",
    "median_ci",
    "read_ledger",
    "render_benchmarks",
    "sentence_key",
    "write_ledger",
]

REPRODUCED = "reproduced"
PARTIAL = "partly reproduced"
NOT_REPRODUCED = "not reproduced"
TOO_CLOSE = "too close to call"
# a claim this repository cannot put to the test (its note says why and what would test it): not a
# failure of the paper, so it is never counted as "not reproduced"; the ledger counts it apart
UNTESTABLE = "untestable here"
ERROR = "check failed"
VERDICTS = (REPRODUCED, PARTIAL, NOT_REPRODUCED, TOO_CLOSE, UNTESTABLE, ERROR)
TESTED_VERDICTS = (REPRODUCED, PARTIAL, NOT_REPRODUCED, TOO_CLOSE)

# A benchmark's goal is met or missed, never reproduced: its check's verdict in the words of a goal.
MET, PARTLY_MET, MISSED = "met", "partly met", "missed"
GOAL_WORDS = {REPRODUCED: MET, PARTIAL: PARTLY_MET, NOT_REPRODUCED: MISSED}
GOAL_VERDICTS = (MET, PARTLY_MET, MISSED, TOO_CLOSE, UNTESTABLE, ERROR)

COLUMNS = [
    "experiment",
    "id",
    "claim",
    "published",
    "reproduced",
    "verdict",
    "note",
    "quick",
    "machine_dependent",
    "measured",
]


@dataclass(frozen=True)
class Outcome:
    """What a claim's check found.

    Parameters
    ----------
    reproduced : str
        The measured value, as it should read in the table (e.g. ``"3.4 +/- 0.6"``).
    verdict : str
        One of ``REPRODUCED``, ``PARTIAL``, ``NOT_REPRODUCED``, ``TOO_CLOSE`` (timing rows) or
        ``UNTESTABLE`` (this repository cannot test the claim; the note says why).
    note : str
        Why, especially when it does not reproduce: the best explanation of the difference.
    measured : str
        Times or memory measured on the way that are not what the claim's verdict of a mathematical
        row rests on (``"0.01 s"``): kept out of ``reproduced``, so that a mathematical row's text is the
        same from run to run, and written to the ledger's ``measured`` column (which ``repro verify``
        does not compare), shown in ``CLAIMS.md`` beside the note.
    """

    reproduced: str
    verdict: str
    note: str = ""
    measured: str = ""

    def __post_init__(self):
        if self.verdict not in VERDICTS:
            raise ValueError(f"verdict must be one of {VERDICTS}; got {self.verdict!r}.")


@dataclass(frozen=True)
class Claim:
    """A published claim and the check that tests it on an experiment's CSV.

    Parameters
    ----------
    id : str
        Short stable identifier, unique within the experiment (e.g. ``"iterations-constant"``).
    sentence : str
        The paper's claim, quoted or closely paraphrased, with its location (``"Sec. 3, Fig. 2"``).
    published : str
        The published value as the paper gives it, or ``""`` for a qualitative claim.
    check : callable
        ``check(df) -> Outcome`` on the experiment's tidy DataFrame.
    machine_dependent : bool
        True when the verdict rests on a measured time (a speed ratio, a slope of seconds): the ledger
        marks such rows and counts them apart from the mathematical ones. Their checks decide with
        :func:`call_timing` (the band stated in the check, the run's own interval of the median), so the
        verdict does not flip between two runs on the same machine.
    case : str
        The data set, setting or method on which this row tests its sentence, when one sentence is
        tested on several (``"spiked spectrum"``, ``"CBCL"``). Two rows of one experiment never test one
        sentence in one case: a second *reading* of a sentence is decided in the check and reported in
        its note, not given a row (:func:`sentence_key`).
    """

    id: str
    sentence: str
    published: str
    check: Callable[[pd.DataFrame], Outcome]
    machine_dependent: bool = False
    case: str = ""


def sentence_key(sentence: str, case: str = "") -> str:
    """What makes two claim rows test one sentence: its words without parenthesised remarks, and the case.

    Parenthesised text (a reading, a measure, a data set named in passing) is dropped, so
    ``"... remains (overlap measured on the raw U)"`` and ``"... remains"`` share a key: two readings
    of one sentence. Rows that test one sentence on different data say so in ``Claim.case``.

    Examples
    --------
    >>> sentence_key("t < 10 iterations (eps read as loose)") == sentence_key("t < 10 iterations")
    True
    >>> sentence_key("no slower (spiked)", "spiked") == sentence_key("no slower (decaying)", "decaying")
    False
    """
    text = str(sentence)
    while True:  # innermost parentheses first, so nested remarks go too
        stripped = re.sub(r"\([^()]*\)", " ", text)
        if stripped == text:
            break
        text = stripped
    words = " ".join(re.findall(r"[a-z0-9]+", text.lower()))
    return f"{words} | {' '.join(re.findall(r'[a-z0-9]+', str(case).lower()))}"


def check_one_verdict_per_sentence(experiment: str, claims: Sequence[Claim]) -> None:
    """Raise ValueError when two claims of ``experiment`` test one sentence in one case (or share an id).

    One published sentence gets one verdict: where a sentence admits two readings, the check decides
    which one the paper meant and reports the other's value in its note (docs/design.md, "Writing a claim
    check").

    Examples
    --------
    >>> def ok(df):
    ...     return Outcome("-", REPRODUCED)
    >>> two_readings = [Claim("a", "It holds", "", ok), Claim("b", "It holds (raw U)", "", ok)]
    >>> try:
    ...     check_one_verdict_per_sentence("x", two_readings)
    ... except ValueError as exc:
    ...     print(str(exc)[:44])
    x: claims 'a' and 'b' test one sentence ('It
    """
    ids, keys = {}, {}
    for claim in claims:
        if claim.id in ids:
            raise ValueError(f"{experiment}: duplicate claim id {claim.id!r}.")
        ids[claim.id] = claim
        key = sentence_key(claim.sentence, claim.case)
        if key in keys:
            raise ValueError(
                f"{experiment}: claims {keys[key].id!r} and {claim.id!r} test one sentence "
                f"({claim.sentence!r}); "
                "decide the reading in one check and put the other reading's value in its note, or name the "
                "data each tests in Claim.case."
            )
        keys[key] = claim


def verdict_from(ok: bool, partial: bool = False) -> str:
    """``REPRODUCED`` if ok, else ``PARTIAL`` if partial, else ``NOT_REPRODUCED``."""
    return REPRODUCED if ok else (PARTIAL if partial else NOT_REPRODUCED)


@dataclass(frozen=True)
class TimingCall:
    """A timing compared with a threshold, decided on the run's own interval so that reruns agree.

    ``state`` is ``"met"``, ``"missed"`` or ``"too close"``; ``median`` is the median of the repeated
    measurements and ``low``, ``high`` the ends of the within-run interval that decided
    (:func:`call_timing`); ``coverage`` is that interval's coverage of the median; ``band`` the relative
    band around ``threshold``, stated by the claim before the run.
    """

    median: float
    low: float
    high: float
    n: int
    threshold: float
    state: str
    band: float = 0.15
    interval: str = "ci"
    coverage: float = 0.95

    @property
    def verdict(self) -> str:
        return {"met": REPRODUCED, "missed": NOT_REPRODUCED}.get(self.state, TOO_CLOSE)

    def band_text(self) -> str:
        """The rule in words for a note: ``"a 15% band and the 95% interval of the median of 9"``.

        Examples
        --------
        >>> call_timing([0.8, 0.7, 0.9], 1.0).band_text()
        'a 15% band and the range of the 3 repeats (75% interval of the median)'
        """
        words = f"a {100 * self.band:.0f}% band and "
        if self.interval == "bootstrap":
            return words + f"the central 95% of the {self.n} bootstrap replicates"
        if self.interval == "range":
            cover = f"{100 * self.coverage:.0f}%"
            return words + f"the range of the {self.n} repeats ({cover} interval of the median)"
        return words + f"the 95% confidence interval of the median of the {self.n} repeats"

    def text(self, fmt: str = ".3g", unit: str = "") -> str:
        """``"0.86x (95% CI 0.82-0.90 of 15)"``: the median and the interval that decided."""
        what = {"ci": "95% CI", "range": "range", "bootstrap": "bootstrap 95%"}[self.interval]
        return f"{self.median:{fmt}}{unit} ({what} {self.low:{fmt}}-{self.high:{fmt}} of {self.n})"


#: The fewest interleaved pairs :func:`call_paired` decides on: with 9 the 95% interval of the median
#: leaves out the smallest and the largest ratio (with fewer, one outlying pair would set an end).
MIN_PAIRS = 9


def median_ci(samples, level: float = 0.95) -> tuple[float, float]:
    """A distribution-free confidence interval of the median: two order statistics of the samples.

    ``(x_(j), x_(n+1-j))`` with the largest ``j`` for which the interval covers the median with
    probability at least ``level`` whatever the distribution (``2 P(Binomial(n, 1/2) < j) <= 1 - level``).

    Parameters
    ----------
    samples : array-like
        Independent measurements (at least 6 for a 95% interval).
    level : float
        The coverage, in (0, 1).

    Returns
    -------
    tuple of float
        The lower and upper end.

    Examples
    --------
    >>> median_ci(range(1, 10))  # n = 9: x_(2) and x_(8), coverage 1 - 2 * 10/512 = 96.1%
    (2.0, 8.0)
    """
    x = np.sort(np.asarray(samples, dtype=float).ravel())
    n = x.size
    if not 0 < level < 1:
        raise ValueError(f"level must be in (0, 1); got {level!r}.")
    # P(Binomial(n, 1/2) <= i) for i = 0..n, exactly
    cdf = np.cumsum([math.comb(n, i) for i in range(n + 1)]) / 2.0**n
    ok = [j for j in range(1, n // 2 + 1) if 2 * cdf[j - 1] <= 1 - level]
    if not ok:
        raise ValueError(
            f"{n} samples cannot give a {100 * level:g}% interval of the median; measure at least "
            f"{next(m for m in range(1, 100) if 2 * 0.5**m <= 1 - level)}."
        )
    j = max(ok)
    return float(x[j - 1]), float(x[n - j])


def call_timing(
    samples,
    threshold: float,
    *,
    lower_is_better: bool = True,
    margin: float = 0.15,
    bootstrap: bool = False,
) -> TimingCall:
    """Decide a timing claim on the run's own interval: the one timing rule of the ledger.

    The goal is *met* when the whole within-run interval of the median lies beyond the threshold by the
    band ``margin`` (below ``threshold / (1 + margin)`` for lower-is-better), *missed* when it lies beyond
    it on the other side (above ``threshold * (1 + margin)``), and *too close to call* otherwise. The
    band is stated by the claim, fixed before the run; the interval is this run's uncertainty:

    * at least 6 repeats: the distribution-free 95% confidence interval of the median
      (:func:`median_ci`); the repeats are ratios against a reference timed in the same run, best in
      short interleaved pairs (:func:`call_paired`), so that what moves a whole run moves both sides;
    * 1 to 5 repeats: their range, whose coverage of the median is ``1 - 2**(1 - n)`` (a single value
      is its own interval: a counted or analytic number is decided on the band alone);
    * ``bootstrap=True``: ``samples`` are bootstrap replicates of one statistic, and the interval is
      their central 95% (the 2.5% and 97.5% percentiles).

    Parameters
    ----------
    samples : array-like
        The repeated measurements (ratios, seconds) or bootstrap replicates; non-finite values dropped.
    threshold : float
        The goal, > 0.
    lower_is_better : bool
        True when the goal is to stay below ``threshold``.
    margin : float
        The relative band around the threshold (default 15%), stated in the claim.
    bootstrap : bool
        ``samples`` are bootstrap replicates (the interval is their central 95%).

    Returns
    -------
    TimingCall
        Median, the interval's ends, count, threshold, the band and the state.

    Examples
    --------
    >>> call_timing([0.80, 0.82, 0.84], 1.0).state  # the whole range below 1 / 1.15 = 0.87
    'met'
    >>> call_timing([0.80, 0.82, 0.90], 1.0).state  # the range reaches into the band
    'too close'
    """
    x = np.asarray(samples, dtype=float).ravel()
    x = x[np.isfinite(x)]
    if x.size == 0:
        raise ValueError("samples holds no finite timing; measure at least one repeat.")
    if not threshold > 0 or not margin >= 0:
        raise ValueError(f"threshold must be > 0 and margin >= 0; got {threshold!r}, {margin!r}.")
    n = int(x.size)
    if bootstrap:
        lo, hi = (float(v) for v in np.percentile(x, [2.5, 97.5]))
        interval, coverage = "bootstrap", 0.95
    elif n >= 6:
        (lo, hi), interval, coverage = median_ci(x), "ci", 0.95
    else:
        lo, hi, interval, coverage = float(x.min()), float(x.max()), "range", 1.0 - 2.0 ** (1 - n)
    band_lo, band_hi = threshold / (1.0 + margin), threshold * (1.0 + margin)
    if lower_is_better:
        met, missed = hi < band_lo, lo > band_hi
    else:
        met, missed = lo > band_hi, hi < band_lo
    state = "met" if met else ("missed" if missed else "too close")
    med = float(np.median(x))
    return TimingCall(med, lo, hi, n, float(threshold), state, float(margin), interval, coverage)


def call_paired(
    ratios, threshold: float, *, lower_is_better: bool = True, margin: float = 0.15
) -> TimingCall:
    """:func:`call_timing` on many short interleaved pairs: at least ``MIN_PAIRS`` per-pair ratios.

    ``ratios`` are per-pair ratios, each of a measurement and its reference timed next to each other
    (A B, B A, ...: the order alternating), so that what moves a whole run (load, memory state) moves
    both sides of a pair; the 95% confidence interval of their median decides against the band.

    Examples
    --------
    >>> call_paired([0.95, 1.0, 1.0, 1.02, 1.05, 1.0, 0.98, 1.01, 0.99], 1.3).state  # CI 0.98-1.02 < 1.13
    'met'
    >>> call_paired([1.10, 1.12, 1.15, 1.13, 1.11, 1.14, 1.12, 1.16, 1.10], 1.3).state  # CI reaches 1.13
    'too close'
    """
    x = np.asarray(ratios, dtype=float).ravel()
    if int(np.isfinite(x).sum()) < MIN_PAIRS:
        raise ValueError(
            f"ratios holds {int(np.isfinite(x).sum())} finite pairs; call_paired needs at least {MIN_PAIRS} "
            "interleaved pairs (measure more pairs, or decide with call_timing)."
        )
    return call_timing(x, threshold, lower_is_better=lower_is_better, margin=margin)


def evaluate(
    experiment: str, claims: Sequence[Claim], df: pd.DataFrame, *, quick: bool, goals: bool = False
) -> pd.DataFrame:
    """Run every check on ``df`` and return the ledger rows of this experiment.

    A check that raises is recorded with verdict ``"check failed"`` and the error, never dropped. With
    ``goals=True`` the rows are a benchmark's goals: their verdicts read *met*, *partly met*, *missed*
    (:data:`GOAL_WORDS`), for ``BENCHMARKS.md``.
    """
    check_one_verdict_per_sentence(experiment, claims)
    rows = []
    for claim in claims:
        try:
            out = claim.check(df)
            if not isinstance(out, Outcome):
                raise TypeError(f"check returned {type(out).__name__}, expected Outcome")
        except Exception as exc:  # a broken check is reported, not hidden
            last = traceback.format_exception_only(type(exc), exc)[-1].strip()
            out = Outcome("-", ERROR, f"check raised {last}")
        rows.append(
            {
                "experiment": experiment,
                "id": claim.id,
                "claim": claim.sentence,
                "published": claim.published,
                "reproduced": out.reproduced,
                "verdict": GOAL_WORDS.get(out.verdict, out.verdict) if goals else out.verdict,
                "note": out.note,
                "quick": bool(quick),
                "machine_dependent": bool(claim.machine_dependent),
                "measured": out.measured,
            }
        )
    return pd.DataFrame(rows, columns=COLUMNS)


def write_ledger(
    out_dir: Path, experiment: str, rows: pd.DataFrame, *, render: bool = True, folder: str = "claims"
) -> Path:
    """Store one experiment's rows (atomically) and, unless ``render=False``, rebuild ``CLAIMS.md``.

    ``folder="goals"`` stores a benchmark's goal rows and rebuilds ``BENCHMARKS.md`` instead. The file
    and the rebuild happen under the folder's lock, so two runs into one folder never rebuild the ledger
    from a set of files another run is changing.
    """
    out_dir = Path(out_dir)
    claims_dir = out_dir / folder
    claims_dir.mkdir(parents=True, exist_ok=True)
    render_fn = _render_benchmarks if folder == "goals" else _render_ledger
    with folder_lock(out_dir):
        # recorded in ledger.sha256 (read back only when it matches)
        with recorded_path(claims_dir / f"{experiment}.csv", ledger=True, locked=True) as tmp:
            rows.to_csv(tmp, index=False)
        if render:
            return render_fn(out_dir)
    return out_dir / ("BENCHMARKS.md" if folder == "goals" else "CLAIMS.md")


def _claim_files(out_dir: Path, folder: str = "claims") -> list[Path]:
    # hidden files are the atomic writer's temporaries (".<name>.<pid>.<hex>.tmp.csv"), never rows
    return sorted(p for p in (Path(out_dir) / folder).glob("*.csv") if not p.name.startswith("."))


def _read_claim_file(path: Path) -> pd.DataFrame:
    """One experiment's stored rows; raises ValueError naming the file when it is damaged."""
    from ._atomic import csv_problem, ledger_file_problem

    if problem := csv_problem(path) or ledger_file_problem(path):
        raise ValueError(f"{path}: {problem}")
    try:
        df = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (pd.errors.EmptyDataError, pd.errors.ParserError, UnicodeDecodeError, OSError) as exc:
        raise ValueError(f"{path}: unreadable ({type(exc).__name__}: {exc})") from exc
    if "machine_dependent" not in df.columns:
        df["machine_dependent"] = "False"
    if "measured" not in df.columns:  # a ledger written before the column existed
        df["measured"] = ""
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"{path}: missing column(s) {', '.join(missing)}")
    if df.empty:
        raise ValueError(f"{path}: no rows")
    df["machine_dependent"] = df["machine_dependent"].replace("", "False")
    return df[COLUMNS]


def read_ledger(out_dir: Path, folder: str = "claims") -> pd.DataFrame:
    """All stored claim rows under ``out_dir/claims`` (``folder="goals"``: the benchmarks' goal rows),
    ordered by experiment.

    A damaged file (empty, unparsable, without the ledger's columns) is skipped, never fatal: its path
    and the reason are listed in ``df.attrs["damaged"]`` (and in ``CLAIMS.md``); rerun that experiment
    to restore its rows.
    """
    frames, damaged = [], []
    for f in _claim_files(out_dir, folder):
        try:
            frames.append(_read_claim_file(f))
        except ValueError as exc:
            damaged.append(str(exc))
    df = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=COLUMNS)
    df.attrs["damaged"] = damaged
    return df


def is_timing(df: pd.DataFrame) -> pd.Series:
    """Boolean mask of the ledger rows whose verdict rests on a measured time."""
    return df["machine_dependent"].astype(str).str.lower().eq("true")


def _counts(df: pd.DataFrame) -> str:
    counts = df["verdict"].value_counts() if len(df) else pd.Series(dtype=int)
    return ", ".join(f"{int(counts.get(v, 0))} {v}" for v in VERDICTS if counts.get(v, 0)) or "none"


def render_ledger(out_dir: Path) -> Path:
    """Write ``out_dir/CLAIMS.md`` (atomically, under the folder's lock): a summary and one row per claim."""
    with folder_lock(out_dir):
        return _render_ledger(out_dir)


def _render_ledger(out_dir: Path) -> Path:
    df = read_ledger(out_dir)
    path = Path(out_dir) / "CLAIMS.md"
    timing = is_timing(df) if len(df) else pd.Series(dtype=bool)
    lines = [
        "# Claims ledger",
        "",
        "Every claim the experiments test: the paper's sentence, the published value, the value this",
        "repository reproduces, and the verdict. Generated by `repro run`; do not edit by hand.",
        "Rows marked *timing* rest on a measured time: their verdict depends on the machine, is decided",
        "with a margin around the threshold (inside it: *too close to call*), and is counted apart.",
        "",
        f"{len(df)} claims. Mathematical and statistical ({int((~timing).sum())}): "
        f"{_counts(df[~timing]) if len(df) else 'none yet'}. "
        f"Timing, machine-dependent ({int(timing.sum())}): {_counts(df[timing]) if len(df) else 'none'}.",
        "",
    ]
    n_untestable = int((df["verdict"] == UNTESTABLE).sum()) if len(df) else 0
    if n_untestable:
        lines += [
            f"*{UNTESTABLE}* ({n_untestable}): claims this repository cannot put to the test (the note says "
            "why); counted apart, never as *not reproduced*.",
            "",
        ]
    if df.attrs.get("damaged"):
        lines += [
            f"**Skipped {len(df.attrs['damaged'])} damaged claims file(s)** (rerun the experiment to restore "
            "its rows):",
            "",
            *(f"- {_cell(d)}" for d in df.attrs["damaged"]),
            "",
        ]
    lines += [
        "| experiment | id | claim | published | reproduced | verdict | note |",
        "|---|---|---|---|---|---|---|",
    ]
    for r, t in zip(df.itertuples(index=False), timing, strict=True):
        quick = " (quick run)" if str(r.quick).lower() == "true" else ""
        kind = " *timing*" if t else ""
        verdict = f"**{r.verdict}**{kind}{quick}"
        note = f"{r.note} (measured in this run: {r.measured})".strip() if r.measured else r.note
        cells = [r.experiment, r.id, r.claim, r.published, r.reproduced, verdict, note]
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    atomic_write_text(path, "\n".join(lines) + "\n")
    return path


def render_benchmarks(out_dir: Path) -> Path:
    """Write ``out_dir/BENCHMARKS.md`` (atomically, under the folder's lock) from the goal rows in
    ``out_dir/goals``: for every goal, what was measured against its reference in the same run, with its
    within-run interval, the goal, met or missed, and the benchmark's plot."""
    with folder_lock(out_dir):
        return _render_benchmarks(out_dir)


def _render_benchmarks(out_dir: Path) -> Path:
    df = read_ledger(out_dir, "goals")
    path = Path(out_dir) / "BENCHMARKS.md"
    counts = df["verdict"].value_counts() if len(df) else pd.Series(dtype=int)
    summary = ", ".join(f"{int(counts[v])} {v}" for v in GOAL_VERDICTS if v in counts) or "none yet"
    lines = [
        "# Benchmarks",
        "",
        "The project's own goals, apart from the reproduction (`figures/CLAIMS.md`): each ratio is measured",
        "against its reference in the same run; its interval is the run's own (the 95% confidence interval",
        "of the median, or the range of the repeats where there are fewer than 6, as the text says); a goal",
        "is met or missed when the whole interval clears the goal's band, else too close to call.",
        "Generated by `repro bench`; do not edit by hand.",
        "",
        f"{len(df)} goals: {summary}.",
        "",
    ]
    if df.attrs.get("damaged"):
        lines += [f"**Skipped damaged goals file(s):** {_cell('; '.join(df.attrs['damaged']))}", ""]
    lines += [
        "| benchmark | goal | target | measured (interval) | verdict | plot | note |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in df.itertuples(index=False):
        quick = " (quick run)" if str(r.quick).lower() == "true" else ""
        note = f"{r.note} (measured in this run: {r.measured})".strip() if r.measured else r.note
        plot = f"[{r.experiment}.png]({r.experiment}.png)"
        cells = [r.experiment, f"{r.id}: {r.claim}", r.published, r.reproduced, f"**{r.verdict}**{quick}"]
        lines.append("| " + " | ".join(_cell(c) for c in [*cells, plot, note]) + " |")
    atomic_write_text(path, "\n".join(lines) + "\n")
    return path


README_START = "<!-- scoreboard: written by `repro run` from the claims ledger -->"
README_END = "<!-- end of scoreboard -->"

# The first part of an experiment's name -> its row of the README's scoreboard, in the README's order.
PAPER_LABELS = {
    "data": "The papers' data sets",
    "roweis1997": "Roweis (1997)",
    "sigg2008": "Sigg & Buhmann (2008)",
    "zass2006": "Zass & Shashua (2006)",
    "asteris2014": "Asteris et al. (2014)",
    "mattei2016": "Mattei et al. (2016)",
    "bench": "Published numbers the benchmarks check",
}


def scoreboard(df: pd.DataFrame) -> list[str]:
    """The README's scoreboard: a Markdown table with one row per paper, counting the ledger's verdicts.

    Mathematical and statistical claims are counted by verdict; timing claims (a verdict that rests on a
    measured time) are counted apart, in the last column, as in the summary line of ``CLAIMS.md``.
    """
    # a mathematical claim is never "too close to call"; "check failed" only when some check did fail
    math_verdicts = [v for v in VERDICTS if v != TOO_CLOSE and (v != ERROR or (df["verdict"] == v).any())]
    head = ["paper", "claims", *math_verdicts, "timing claims"]
    lines = ["| " + " | ".join(head) + " |", "|---" * len(head) + "|"]
    prefix = df["experiment"].astype(str).str.split("_").str[0]
    order = list(PAPER_LABELS) + sorted(set(prefix) - set(PAPER_LABELS))
    groups = [(PAPER_LABELS.get(key, key), df[prefix == key]) for key in order if (prefix == key).any()]
    for label, g in [*groups, ("all", df)]:
        t = is_timing(g)
        counts = g[~t]["verdict"].value_counts()
        cells = [label, str(int((~t).sum())), *(str(int(counts.get(v, 0))) for v in math_verdicts)]
        cells.append(f"{int(t.sum())}: {_counts(g[t])}" if t.any() else "0")
        if label == "all":
            cells = [f"**{c}**" for c in cells]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def update_readme(readme: Path, out_dir: Path, titles: dict[str, str] | None = None) -> bool:
    """Rewrite the scoreboard of README.md from the ledger in ``out_dir`` (:func:`scoreboard`).

    Only the lines between ``README_START`` and ``README_END`` change; returns False (and changes nothing)
    when the markers are absent. ``titles`` is not used (the figure gallery is on the documentation site,
    not in the README).
    """
    readme, out_dir = Path(readme), Path(out_dir)
    with folder_lock(out_dir):
        return _update_readme(readme, out_dir)


def _update_readme(readme: Path, out_dir: Path) -> bool:
    text = readme.read_text()
    if README_START not in text or README_END not in text:
        return False
    lines = [README_START, *scoreboard(read_ledger(out_dir)), README_END]
    head, rest = text.split(README_START, 1)
    tail = rest.split(README_END, 1)[1]
    new = head + "\n".join(lines) + tail
    if new != text:
        atomic_write_text(readme, new)
    return True


def _cell(text) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")
