"""Progress of a run over experiments: a bar in a terminal, a heartbeat line in logs.

Used by ``repro run`` and by ``python -m experiments.NAME``, so every experiment reports progress whether
or not it has a loop of its own. Standard library only, plus tqdm in a terminal.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path

from . import _runtimes
from ._paths import FIGURES_DIR

__all__ = ["PROGRESS_ENV", "Progress"]

PROGRESS_ENV = "REPRO_PROGRESS_INTERVAL"
_REPRO_DIR = Path(__file__).resolve().parents[2] / "repro"
COMPILING = "compiling kernels (first run only)"
_COMPILE_QUIET_S = 60.0  # no kernel cached for this long: compilation is over


def _kernel_cache_files() -> list[Path]:
    """Numba's cache index files of the library's kernels (``*.nbi``; none before the first run).

    Numba caches each compiled kernel in ``__pycache__`` beside its source, or under ``NUMBA_CACHE_DIR``
    when that is set. Looked up by file name only: no import of numba here.
    """
    root = Path(os.environ["NUMBA_CACHE_DIR"]) if os.environ.get("NUMBA_CACHE_DIR") else _REPRO_DIR
    try:
        return list(root.rglob("*.nbi"))
    except OSError:
        return []


def _interval() -> float:
    raw = os.environ.get(PROGRESS_ENV, "").strip()
    try:
        value = float(raw) if raw else 30.0
    except ValueError:
        value = 30.0
    return value if value > 0 else 30.0


class Progress:
    """Progress of a ``repro run`` over every experiment, whether or not it has its own loop.

    In a terminal: one bar, its text showing what runs and an estimate of what is left; messages go
    above it (``tqdm.write``). Without a terminal (logs, CI): a line at most every
    ``REPRO_PROGRESS_INTERVAL`` seconds (default 30) from a heartbeat thread, with what is done, what
    runs for how long, and the time left estimated from the recorded run times (``runtimes.csv``).
    """

    def __init__(self, names: list[str], quick: bool, jobs: int, out: Path, verb: str = "running", key=None):
        self.names, self.quick, self.jobs, self.verb = names, quick, max(1, jobs), verb
        key = key or (lambda n: n)
        self.expected = {n: _runtimes.typical(key(n), quick, out, FIGURES_DIR) for n in names}
        self.started: dict[str, float] = {}
        self.done: list[str] = []
        self.t0 = time.monotonic()
        # No kernel in Numba's cache yet: this run compiles them (a minute or more on the first run).
        self.cold_cache = not _kernel_cache_files()
        self.lock = threading.Lock()
        self.stop = threading.Event()
        self.tty = sys.stderr.isatty()
        self.bar = None
        if self.tty:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=len(names), desc=f"{verb} experiments", file=sys.stderr, leave=False)
        self.thread = threading.Thread(target=self._beat, daemon=True)
        self.thread.start()

    def say(self, text: str, err: bool = False) -> None:
        stream = sys.stderr if err else sys.stdout
        if self.bar is not None:
            self.bar.write(text, file=stream)
        else:
            print(text, file=stream, flush=True)

    def start(self, name: str) -> None:
        with self.lock:
            self.started[name] = time.monotonic()
        if self.bar is not None:
            self.bar.set_postfix_str(self.status(), refresh=True)
        else:
            self.say(f"{self.verb} {name} ...")

    def finish(self, name: str) -> None:
        with self.lock:
            self.done.append(name)
            self.started.pop(name, None)
        if self.bar is not None:
            self.bar.update(1)
            self.bar.set_postfix_str(self.status(), refresh=True)

    def _overdue(self, now: float) -> list[str]:
        """The running experiments already past their recorded time."""
        return [
            n
            for n, t in self.started.items()
            if self.expected.get(n) is not None and now - t > self.expected[n]
        ]

    def left(self) -> float | None:
        """Seconds left by the recorded run times (None when one of the remaining is unrecorded).

        An experiment past its recorded time counts 0 here; :meth:`status` says it is taking longer.
        """
        now, total = time.monotonic(), 0.0
        for n in self.names:
            if n in self.done:
                continue
            exp = self.expected.get(n)
            if exp is None:
                return None
            total += max(exp - (now - self.started[n]), 0.0) if n in self.started else exp
        return total / min(self.jobs, max(1, len(self.names) - len(self.done)))

    def compiling(self) -> bool:
        """Whether the run is compiling the kernels: the cache was empty at the start and a kernel was
        cached less than a minute ago (or none yet)."""
        if not self.cold_cache:
            return False
        files = _kernel_cache_files()
        if not files:
            return True
        try:
            newest = max(f.stat().st_mtime for f in files)
        except OSError:
            return True
        if time.time() - newest < _COMPILE_QUIET_S:
            return True
        self.cold_cache = False  # compiled: from now on the recorded times hold
        return False

    def status(self) -> str:
        now = time.monotonic()
        compiling = self.compiling()
        with self.lock:
            running = ", ".join(f"{n} {_runtimes.fmt_seconds(now - t)}" for n, t in self.started.items())
            left = self.left()
            overdue = self._overdue(now)
            others = [n for n in self.names if n not in self.done and n not in overdue]
        if compiling:
            est = COMPILING + (f"; recorded times: about {_runtimes.fmt_seconds(left)} left" if left else "")
        elif overdue:
            recorded = ", ".join(f"{n}: {_runtimes.fmt_seconds(self.expected[n])}" for n in overdue)
            est = f"taking longer than recorded ({recorded} recorded)"
            if others:
                est += f"; then about {_runtimes.fmt_seconds(left)} for the rest" if left else ""
        else:
            est = f"about {_runtimes.fmt_seconds(left)} left" if left is not None else "time left unknown"
        return f"running {running or '-'}; {est}"

    def line(self) -> str:
        elapsed = _runtimes.fmt_seconds(time.monotonic() - self.t0)
        return f"[progress {elapsed}] {len(self.done)}/{len(self.names)} done; {self.status()}"

    def _beat(self) -> None:
        interval = _interval()
        while not self.stop.wait(min(interval, 1.0) if self.bar is not None else interval):
            if self.bar is not None:
                self.bar.set_postfix_str(self.status(), refresh=True)
            else:
                self.say(self.line())

    def close(self) -> None:
        self.stop.set()
        self.thread.join(timeout=5)
        if self.bar is not None:
            self.bar.close()
