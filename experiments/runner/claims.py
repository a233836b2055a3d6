"""The claims ledger: every published claim, what this repository reproduces of it, and a verdict.

Each experiment module declares ``CLAIMS``, a list of :class:`Claim`. A claim carries the paper's
sentence, the published value (if the paper gives one) and a ``check``: a function of the experiment's
tidy CSV (a ``pandas.DataFrame``) that returns an :class:`Outcome` with the reproduced value and a verdict.
Checks look at the data only; they are written from the paper's sentence and never tuned to pass.

After an experiment runs, its rows are written to ``<out>/claims/<experiment>.csv`` and
``<out>/CLAIMS.md`` is rebuilt from every such file, so running one experiment updates its rows and
keeps the others. Every write is atomic (``experiments.runner._atomic``) and the rebuild holds the folder's
lock; each claims file is recorded with its sha256 in ``ledger.sha256``, and one that does not match it
(cut off, edited) or is not recorded is skipped and named in ``CLAIMS.md``, never shown, never fatal.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
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
    "call_paired_or_timing",
    "call_timing",
    "evaluate",
    "median_ci",
    "read_ledger",
    "run_noise",
    "sentence_key",
    "timing_row",
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
        marks such rows and counts them apart from the mathematical ones. Their checks should decide
        with :func:`call_timing`, so the verdict does not flip between two runs on the same machine.
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
    """A timing compared with a threshold, decided with a margin so that reruns agree.

    ``state`` is ``"met"``, ``"missed"`` or ``"too close"``; ``median``, ``low`` and ``high`` are the
    median and the quartiles of the repeated measurements; ``band`` the relative band used around
    ``threshold`` (the default margin or the row's run-to-run noise, :func:`call_timing`). A call made by
    :func:`call_paired` has ``interval = "ci"``: ``low`` and ``high`` are then the ends of the 95%
    confidence interval of the median instead of the quartiles.
    """

    median: float
    low: float
    high: float
    n: int
    threshold: float
    state: str
    band: float = 0.15
    noise: float = 0.0
    interval: str = "quartiles"

    @property
    def verdict(self) -> str:
        return {"met": REPRODUCED, "missed": NOT_REPRODUCED}.get(self.state, TOO_CLOSE)

    def band_text(self) -> str:
        """The band in words for a note: ``"a 26% band (2 run-to-run sd of this row)"`` or ``"a 15% band"``.

        Examples
        --------
        >>> TimingCall(0.8, 0.7, 0.9, 3, 1.0, "met").band_text()
        'a 15% band'
        """
        words = f"a {100 * self.band:.0f}% band"
        if self.interval == "ci":
            return words + f" and the 95% confidence interval of the median of the {self.n} interleaved pairs"
        if self.noise > 0 and math.expm1(NOISE_Z * self.noise) >= self.band - 1e-12:
            words += f" ({NOISE_Z:g} run-to-run sd of this row)"
        return words

    def text(self, fmt: str = ".3g", unit: str = "") -> str:
        """``"0.86x (quartiles 0.80-0.91 of 7)"``: the median and quartiles of the measurements.

        For a paired call (:func:`call_paired`): ``"0.86x (95% CI 0.82-0.90, 15 pairs)"``.
        """
        if self.interval == "ci":
            return f"{self.median:{fmt}}{unit} (95% CI {self.low:{fmt}}-{self.high:{fmt}}, {self.n} pairs)"
        return f"{self.median:{fmt}}{unit} (quartiles {self.low:{fmt}}-{self.high:{fmt}} of {self.n})"


# The noise band of a timing call: NOISE_Z run-to-run standard deviations of the row's log value, measured
# on the committed full runs (experiments/runner/timing_noise.py, its table timing_noise.csv).
NOISE_Z = 2.0
_ROW: contextvars.ContextVar[tuple[str, str] | None] = contextvars.ContextVar("timing_row", default=None)


@functools.lru_cache(maxsize=1)
def _noise_table() -> dict[tuple[str, str], float]:
    from .timing_noise import TABLE

    if not TABLE.exists():
        return {}
    t = pd.read_csv(TABLE, dtype={"experiment": str, "id": str}, keep_default_na=False)
    return {(e, i): float(s) for e, i, s in zip(t.experiment, t.id, t.sigma, strict=True)}


def run_noise(experiment: str, row_id: str) -> float:
    """The run-to-run standard deviation of a timing row's log value, measured on past full runs.

    From the committed table ``experiments/runner/timing_noise.csv`` (made by
    ``python -m experiments.runner.timing_noise`` from the ledgers of the full runs in the history);
    ``0.0`` for a row the table does not list (a new row: its band is the default margin until it has
    runs).

    Examples
    --------
    >>> run_noise("no_such_experiment", "no-such-row")
    0.0
    """
    return _noise_table().get((str(experiment), str(row_id)), 0.0)


@contextlib.contextmanager
def timing_row(experiment: str, row_id: str):
    """Within this block, :func:`call_timing` widens its band to the row's measured run-to-run noise.

    :func:`evaluate` runs every check inside ``timing_row(experiment, claim.id)``, so each timing call
    of a ledger row gets that row's band without the check naming it.

    Examples
    --------
    >>> with timing_row("no_such_experiment", "no-such-row"):
    ...     call_timing([0.5, 0.6, 0.55], 1.0).state
    'met'
    """
    token = _ROW.set((str(experiment), str(row_id)))
    try:
        yield
    finally:
        _ROW.reset(token)


def call_timing(
    samples,
    threshold: float,
    *,
    lower_is_better: bool = True,
    margin: float = 0.15,
    noise: float | None = None,
) -> TimingCall:
    """Decide a timing claim from repeated measurements, with a band around the threshold.

    The goal is *met* when the median is better than the threshold by more than the band (a relative
    factor: beyond ``threshold / (1 + band)`` for lower-is-better) and the worse quartile is still on
    the good side of the threshold; *missed* in the mirror case; otherwise it is *too close to call*,
    and the verdict says so instead of flipping with the machine's load. Measure ratios against a
    reference timed in the same run, interleaved, with several repeats (``samples``).

    The band is the larger of ``margin`` and the row's run-to-run noise: ``exp(NOISE_Z * noise) - 1``
    with ``noise`` the standard deviation of the log of the row's value between full runs. The quartiles
    of one run do not show that noise (load, memory state and the neighbour move a whole run), so it is
    measured on the committed full runs (:func:`run_noise`); ``noise=None`` takes it for the ledger row
    being evaluated (:func:`timing_row`), none outside a row.

    Parameters
    ----------
    samples : array-like
        The repeated measurements (ratios, seconds); non-finite values are dropped.
    threshold : float
        The goal, > 0.
    lower_is_better : bool
        True when the goal is to stay below ``threshold``.
    margin : float
        The smallest relative band (default 15%).
    noise : float, optional
        Run-to-run standard deviation of ``log(value)``; default: the evaluated row's (:func:`run_noise`).

    Returns
    -------
    TimingCall
        Median, quartiles, count, threshold, the band used and the state.

    Examples
    --------
    >>> call_timing([0.80, 0.82, 0.84], 1.0).state  # 18% better than the goal, quartiles below it
    'met'
    >>> call_timing([0.80, 0.82, 0.84], 1.0, noise=0.1).state  # inside 2 run-to-run sd (22%) of it
    'too close'
    """
    x = np.asarray(samples, dtype=float).ravel()
    x = x[np.isfinite(x)]
    if x.size == 0:
        raise ValueError("samples holds no finite timing; measure at least one repeat.")
    if not threshold > 0 or margin < 0:
        raise ValueError(f"threshold must be > 0 and margin >= 0; got {threshold!r}, {margin!r}.")
    if noise is None:
        row = _ROW.get()
        noise = run_noise(*row) if row else 0.0
    if not (noise >= 0 and math.isfinite(noise)):
        raise ValueError(f"noise must be a finite standard deviation >= 0; got {noise!r}.")
    band = max(float(margin), math.expm1(NOISE_Z * float(noise)))
    med = float(np.median(x))
    lo, hi = (float(v) for v in np.percentile(x, [25, 75]))
    band_lo, band_hi = threshold / (1.0 + band), threshold * (1.0 + band)
    if lower_is_better:
        met = med < band_lo and hi < threshold
        missed = med > band_hi and lo > threshold
    else:
        met = med > band_hi and lo > threshold
        missed = med < band_lo and hi < threshold
    state = "met" if met else ("missed" if missed else "too close")
    return TimingCall(med, lo, hi, int(x.size), float(threshold), state, band, float(noise))


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


def call_paired(
    ratios, threshold: float, *, lower_is_better: bool = True, margin: float = 0.15
) -> TimingCall:
    """Decide a timing claim from many short interleaved pairs, on the run's own uncertainty.

    ``ratios`` are per-pair ratios, each of a measurement and its reference timed next to each other
    (A B, B A, ...: the order alternating), so that what moves a whole run (load, memory state) moves
    both sides of a pair. The goal is *met* when the whole 95% confidence interval of the median ratio
    (:func:`median_ci`) lies beyond the threshold by the ``margin`` (below ``threshold / (1 + margin)``
    for lower-is-better); *missed* when it lies beyond it on the other side; otherwise *too close to
    call*. The run-to-run band of :func:`call_timing` (the row's history) does not enter: the interval
    is this run's uncertainty of the median, and docs/notes/2026-11-28-timing-rules.md records the
    repeated runs that checked that it covers the spread between runs of the rows decided so.

    Parameters
    ----------
    ratios : array-like
        At least ``MIN_PAIRS`` (9) per-pair ratios; non-finite values are dropped.
    threshold : float
        The goal, > 0.
    lower_is_better : bool
        True when the goal is to stay below ``threshold``.
    margin : float
        The relative band around the threshold (default 15%).

    Returns
    -------
    TimingCall
        Median, the interval's ends (``interval = "ci"``), count, threshold, band and state.

    Examples
    --------
    >>> call_paired([0.95, 1.0, 1.0, 1.02, 1.05, 1.0, 0.98, 1.01, 0.99], 1.3).state  # CI 0.98-1.02 < 1.13
    'met'
    >>> call_paired([1.10, 1.12, 1.15, 1.13, 1.11, 1.14, 1.12, 1.16, 1.10], 1.3).state  # CI reaches 1.13
    'too close'
    """
    x = np.asarray(ratios, dtype=float).ravel()
    x = x[np.isfinite(x)]
    if x.size < MIN_PAIRS:
        raise ValueError(
            f"ratios holds {x.size} finite pairs; call_paired needs at least {MIN_PAIRS} interleaved pairs "
            "(measure more pairs, or decide with call_timing)."
        )
    if not threshold > 0 or margin < 0:
        raise ValueError(f"threshold must be > 0 and margin >= 0; got {threshold!r}, {margin!r}.")
    lo, hi = median_ci(x)
    band_lo, band_hi = threshold / (1.0 + margin), threshold * (1.0 + margin)
    if lower_is_better:
        met, missed = hi < band_lo, lo > band_hi
    else:
        met, missed = lo > band_hi, hi < band_lo
    state = "met" if met else ("missed" if missed else "too close")
    med = float(np.median(x))
    return TimingCall(med, lo, hi, int(x.size), float(threshold), state, float(margin), 0.0, "ci")


def call_paired_or_timing(samples, threshold: float, *, lower_is_better: bool = True) -> TimingCall:
    """:func:`call_paired` on a row of at least ``MIN_PAIRS`` finite interleaved pairs, else
    :func:`call_timing` (the row's run-to-run band): for experiments whose rows have different repeats.

    Examples
    --------
    >>> call_paired_or_timing([0.95, 1.0, 1.0, 1.02, 1.05, 1.0, 0.98, 1.01, 0.99], 1.3).interval
    'ci'
    >>> call_paired_or_timing([0.80, 0.82, 0.84], 1.0, lower_is_better=True).state
    'met'
    """
    x = np.asarray(samples, dtype=float).ravel()
    if np.isfinite(x).sum() >= MIN_PAIRS:
        return call_paired(x, threshold, lower_is_better=lower_is_better)
    return call_timing(x, threshold, lower_is_better=lower_is_better)


def evaluate(experiment: str, claims: Sequence[Claim], df: pd.DataFrame, *, quick: bool) -> pd.DataFrame:
    """Run every check on ``df`` and return the ledger rows of this experiment.

    A check that raises is recorded with verdict ``"check failed"`` and the error, never dropped.
    """
    check_one_verdict_per_sentence(experiment, claims)
    rows = []
    for claim in claims:
        try:
            with timing_row(experiment, claim.id):
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
                "verdict": out.verdict,
                "note": out.note,
                "quick": bool(quick),
                "machine_dependent": bool(claim.machine_dependent),
                "measured": out.measured,
            }
        )
    return pd.DataFrame(rows, columns=COLUMNS)


def write_ledger(out_dir: Path, experiment: str, rows: pd.DataFrame, *, render: bool = True) -> Path:
    """Store one experiment's rows (atomically) and, unless ``render=False``, rebuild ``CLAIMS.md``.

    The claims file and the rebuild happen under the folder's lock, so two runs into one folder never
    rebuild the ledger from a set of files another run is changing.
    """
    out_dir = Path(out_dir)
    claims_dir = out_dir / "claims"
    claims_dir.mkdir(parents=True, exist_ok=True)
    with folder_lock(out_dir):
        # recorded in ledger.sha256 (read back only when it matches)
        with recorded_path(claims_dir / f"{experiment}.csv", ledger=True, locked=True) as tmp:
            rows.to_csv(tmp, index=False)
        if render:
            return _render_ledger(out_dir)
    return out_dir / "CLAIMS.md"


def _claim_files(out_dir: Path) -> list[Path]:
    # hidden files are the atomic writer's temporaries (".<name>.<pid>.<hex>.tmp.csv"), never rows
    return sorted(p for p in (Path(out_dir) / "claims").glob("*.csv") if not p.name.startswith("."))


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


def read_ledger(out_dir: Path) -> pd.DataFrame:
    """All stored claim rows under ``out_dir/claims``, ordered by experiment.

    A damaged file (empty, unparsable, without the ledger's columns) is skipped, never fatal: its path
    and the reason are listed in ``df.attrs["damaged"]`` (and in ``CLAIMS.md``); rerun that experiment
    to restore its rows.
    """
    frames, damaged = [], []
    for f in _claim_files(out_dir):
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
    "bench": "Benchmarks (the project's own goals)",
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
