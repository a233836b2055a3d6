"""The authors' own code, run side by side with the project when it is installed.

The peers are nsprcomp (R; Sigg's EM-PCA), ``spanpc.m`` (Octave; the spannogram of Asteris et al.) and
GSPPCA.R (R; Mattei et al.), installed by the recipe in ``../shared/peers/install.sh`` under ``PEERS_HOME``
(default ``~/.cache/repro-peers``): ``Rlib/`` (nsprcomp, Bessel, RSpectra), ``spannogram/``, ``GSPPCA/``.
None of their code is in this repository; this module only calls it.

* :func:`available` says whether a peer can be run here (the interpreter on ``PATH`` and the peer's files
  under ``PEERS_HOME``); ``REPRO_PEERS=off`` turns every peer off (the tests use it for the fallback).
* :class:`NsprcompSession` keeps one R process with nsprcomp loaded for many timed calls (a benchmark's
  interleaved rounds: no interpreter start, data transfer or package load between them), timed in wall or
  CPU time of the R process (``clock``).
* :func:`run_nsprcomp` and :func:`run_spanpc` make one call of the peer in a child process (so in the
  benchmark's process tree, between the project's own calls) and return the seconds the peer measured around
  the call itself (R ``Sys.time``, Octave ``tic``/``toc``; interpreter start, data loading and an untimed
  warm-up call excluded) and the vector it returned. One BLAS thread on both sides.
* :func:`run_gsppca` calls GSPPCA.R's ``gsppca(X, d)`` with every default in a child ``Rscript`` (the same
  call as the peers' ``gsppca/gsppca_server.R``) and returns its time (R ``Sys.time`` around the call, no
  warm-up: one call at ``d = 1`` already takes about 30 s), its selection, noise estimate, evidences and
  ``u``.
* :func:`recorded` reads the peers' times of the last side-by-side run (``experiments/peers_recorded/``, with
  their provenance); a benchmark that cannot run a peer uses these rows and marks its ratios ``recorded``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

__all__ = [
    "PEERS",
    "NsprcompSession",
    "available",
    "peers_home",
    "recorded",
    "run_gsppca",
    "run_nsprcomp",
    "run_spanpc",
    "source_note",
]

PEERS = ("nsprcomp", "spanpc", "gsppca")
RECORDED_DIR = Path(__file__).with_name("peers_recorded")
_FILES = {  # peer -> (interpreter, a file under PEERS_HOME that the install leaves)
    "nsprcomp": ("Rscript", "Rlib/nsprcomp/DESCRIPTION"),
    "spanpc": ("octave-cli", "spannogram/spanpc.m"),
    "gsppca": ("Rscript", "GSPPCA/GSPPCA.R"),
}
_THREADS = {v: "1" for v in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")}
TIMEOUT_S = 1800


def peers_home() -> Path:
    """``PEERS_HOME``, or the install recipe's default ``${XDG_CACHE_HOME:-~/.cache}/repro-peers``."""
    if os.environ.get("PEERS_HOME"):
        return Path(os.environ["PEERS_HOME"])
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "repro-peers"


def available(peer: str) -> bool:
    """Whether ``peer`` (one of :data:`PEERS`) can be run here."""
    if peer not in _FILES:
        raise ValueError(f"peer must be one of {PEERS}; got {peer!r}.")
    if os.environ.get("REPRO_PEERS", "").lower() in ("off", "0", "no"):
        return False
    exe, marker = _FILES[peer]
    return shutil.which(exe) is not None and (peers_home() / marker).is_file()


def recorded(peer: str) -> pd.DataFrame:
    """The peer's rows of the last side-by-side run (``experiments/peers_recorded/<peer>.csv``)."""
    if peer not in _FILES:
        raise ValueError(f"peer must be one of {PEERS}; got {peer!r}.")
    return pd.read_csv(RECORDED_DIR / f"{peer}.csv")


def source_note(live: bool, peer: str) -> str:
    """The words a ledger row uses for where the peer's time came from."""
    if live:
        return f"{peer} run side by side in this run, interleaved"
    return (
        f"{peer} not installed here (PEERS_HOME={peers_home()}): its RECORDED times of the last side-by-side "
        "run (experiments/peers_recorded/, 2026-11-25, same kind of machine) against this run's times"
    )


def _write(X: np.ndarray, folder: str) -> tuple[int, int]:
    """Column-major raw little-endian float64 (what R ``readBin`` and Octave ``fread`` read)."""
    X = np.asarray(X, dtype="<f8")
    np.asfortranarray(X).T.tofile(os.path.join(folder, "X.f64"))  # .T of F-order is C-order of the bytes
    return X.shape


def _run(cmd: list[str], folder: str, env_extra: dict) -> tuple[float, np.ndarray]:
    env = {**os.environ, **_THREADS, **env_extra}
    res = subprocess.run(cmd, cwd=folder, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    out = os.path.join(folder, "out.txt")
    if res.returncode != 0 or not os.path.exists(out):
        raise RuntimeError(f"{cmd[0]} failed (exit {res.returncode}): {(res.stderr or res.stdout)[-2000:]}")
    vals = np.loadtxt(out, ndmin=1)
    return float(vals[0]), vals[1:]


_R_NSPRCOMP = """
suppressMessages(library(nsprcomp))
con <- file("X.f64", "rb")
x <- readBin(con, "double", n = {n} * {p}, size = 8, endian = "little")
close(con)
X <- matrix(x, nrow = {n}, ncol = {p})
f <- function() {{ set.seed(0); nsprcomp(X, ncomp = 1, k = {k}, nneg = {nneg}, nrestart = {nrestart},
                                       center = TRUE, scale. = FALSE) }}
invisible(f())  # untimed warm-up
t0 <- Sys.time(); fit <- f(); t1 <- Sys.time()
writeLines(format(c(as.numeric(difftime(t1, t0, units = "secs")), fit$rotation[, 1]), digits = 17), "out.txt")
"""

_OCTAVE_SPANPC = """
addpath('{home}/spannogram');
fid = fopen('X.f64', 'r', 'ieee-le'); X = reshape(fread(fid, Inf, 'double'), {n}, {p}); fclose(fid);
p = struct('algorithm', 'nnsparse', 'nnz', {k}, 'apprxrank', {rank}, 'maxsamples', {samples},
           'maxnoupditer', {samples}, 'centerdata', true, 'standardata', false, 'inputdata', 'rows',
           'logfile', '', 'logfilelevel', 'off', 'logcwlevel', 'off');
randn('seed', 0); rand('seed', 0);
c0 = cputime(); t0 = tic(); v = spanpc(X, p); t = toc(t0); c = cputime() - c0;
if strcmp('{clock}', 'cpu'), t = c; end
fid = fopen('out.txt', 'w'); fprintf(fid, '%.17g\\n', [t; v(:)]); fclose(fid);
"""


def run_nsprcomp(X, k: int, nonneg: bool, *, nrestart: int = 5) -> tuple[float, np.ndarray]:
    """One timed ``nsprcomp(X, ncomp=1, k, nneg, nrestart, center=TRUE, scale.=FALSE)`` after ``set.seed(0)``.

    Returns (seconds measured in R around the call, the loading vector). ``X`` is passed as is (standardize
    it first for Sigg & Buhmann's setting).
    """
    if not available("nsprcomp"):
        raise RuntimeError(f"nsprcomp is not installed (R and {peers_home()}/Rlib/nsprcomp needed).")
    with tempfile.TemporaryDirectory(prefix="repro-peer-") as d:
        n, p = _write(X, d)
        nn = "TRUE" if nonneg else "FALSE"
        script = _R_NSPRCOMP.format(n=n, p=p, k=int(k), nneg=nn, nrestart=int(nrestart))
        Path(d, "run.R").write_text(script)
        return _run(["Rscript", "--vanilla", "run.R"], d, {"R_LIBS": str(peers_home() / "Rlib")})


_R_NSPRCOMP_SERVER = """
suppressMessages(library(nsprcomp))
data <- list()
inp <- file("stdin"); open(inp)
say <- function(x) { cat(x, "\\n", sep = ""); flush(stdout()) }
say("READY")
repeat {
  tok <- strsplit(trimws(readLines(inp, n = 1)), " +")[[1]]
  if (length(tok) == 0 || tok[1] == "QUIT") break
  res <- tryCatch({
    if (tok[1] == "LOAD") {
      con <- file(tok[3], "rb")
      x <- readBin(con, "double", n = as.integer(tok[4]) * as.integer(tok[5]), size = 8, endian = "little")
      close(con)
      data[[tok[2]]] <- matrix(x, nrow = as.integer(tok[4]), ncol = as.integer(tok[5]))
      "OK"
    } else {  # RUN name k nneg nrestart outfile
      X <- data[[tok[2]]]
      set.seed(0)
      c0 <- proc.time()
      t0 <- Sys.time()
      fit <- nsprcomp(X, ncomp = 1, k = as.integer(tok[3]), nneg = as.logical(tok[4]),
                      nrestart = as.integer(tok[5]), center = TRUE, scale. = FALSE)
      t1 <- Sys.time()
      c1 <- proc.time() - c0
      writeLines(format(fit$rotation[, 1], digits = 17), tok[6])
      cpu <- c1[["user.self"]] + c1[["sys.self"]]
      sprintf("OK %.9f %.9f", as.double(difftime(t1, t0, units = "secs")), cpu)
    }
  }, error = function(e) paste("ERR", gsub("[\\r\\n]+", " ", conditionMessage(e))))
  say(res)
}
"""


class NsprcompSession:
    """One long-lived R process with nsprcomp loaded, for many timed calls on matrices loaded once.

    Each :meth:`run` is ``set.seed(0); nsprcomp(X, ncomp=1, k, nneg, nrestart, center=TRUE,
    scale.=FALSE)`` timed in R around the call only (wall time by ``Sys.time``, like :func:`run_nsprcomp`, or
    the R process's CPU time by ``proc.time``, user + system), without a new interpreter, package load or
    data transfer per call; one BLAS thread. Use it as a context manager.

    Parameters
    ----------
    timeout : float
        Seconds to wait for any one answer of R.

    Examples
    --------
    >>> import numpy as np
    >>> if available("nsprcomp"):  # doctest: +SKIP
    ...     with NsprcompSession() as r:
    ...         r.load("x", np.random.default_rng(0).standard_normal((30, 8)))
    ...         seconds, w = r.run("x", 3, True)
    ...         cpu_seconds, w = r.run("x", 3, True, clock="cpu")
    """

    def __init__(self, timeout: float = TIMEOUT_S):
        if not available("nsprcomp"):
            raise RuntimeError(f"nsprcomp is not installed (R and {peers_home()}/Rlib/nsprcomp needed).")
        self._dir = tempfile.TemporaryDirectory(prefix="repro-peer-")
        Path(self._dir.name, "server.R").write_text(_R_NSPRCOMP_SERVER)
        env = {**os.environ, **_THREADS, "R_LIBS": str(peers_home() / "Rlib")}
        self._p = subprocess.Popen(
            ["Rscript", "--vanilla", "server.R"], cwd=self._dir.name, env=env, text=True, bufsize=1,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        )  # fmt: skip
        self.timeout = float(timeout)
        self._shapes: dict[str, int] = {}
        self._ask(None, "READY")

    def _ask(self, cmd, expect="OK"):
        if cmd is not None:
            self._p.stdin.write(cmd + "\n")
            self._p.stdin.flush()
        line = self._p.stdout.readline().strip()
        if not line.startswith(expect):
            raise RuntimeError(f"nsprcomp session: R answered {line!r} to {cmd!r}")
        return line.split()[1:]

    def load(self, name: str, X) -> None:
        """Send ``X`` (as float64) to R under ``name``."""
        f = os.path.join(self._dir.name, f"{name}.f64")
        X = np.asarray(X, dtype="<f8")
        np.asfortranarray(X).T.tofile(f)
        self._ask(f"LOAD {name} {f} {X.shape[0]} {X.shape[1]}")
        self._shapes[name] = X.shape[1]

    def run(
        self, name: str, k: int, nonneg: bool, *, nrestart: int = 5, clock: str = "wall"
    ) -> tuple[float, np.ndarray]:
        """One timed call on the matrix ``name``: (seconds measured in R around it, the loading vector).

        ``clock="wall"`` (default): elapsed time (``Sys.time``); ``"cpu"``: the R process's CPU time
        (``proc.time``, user + system), which other processes do not enter."""
        if clock not in ("wall", "cpu"):
            raise ValueError(f"clock must be 'wall' or 'cpu'; got {clock!r}.")
        out = os.path.join(self._dir.name, "w.txt")
        wall, cpu = self._ask(f"RUN {name} {int(k)} {'TRUE' if nonneg else 'FALSE'} {int(nrestart)} {out}")
        return float(wall if clock == "wall" else cpu), np.loadtxt(out, ndmin=1)

    def close(self) -> None:
        """Stop R and remove the scratch folder."""
        try:
            self._p.stdin.write("QUIT\n")
            self._p.stdin.flush()
            self._p.wait(timeout=30)
        except Exception:  # pragma: no cover - R already gone
            self._p.kill()
        self._dir.cleanup()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def run_spanpc(
    X, k: int, *, rank: int = 3, n_samples: int = 10000, clock: str = "wall"
) -> tuple[float, np.ndarray]:
    """One timed ``spanpc`` (nnsparse, ``rank``, ``n_samples`` samples, early stop off, centred) on ``X``.

    The settings of Asteris et al.'s experiments, ``randn``/``rand`` seeded 0 before the call, one BLAS
    thread.

    Parameters
    ----------
    X : ndarray (n_samples, n_features)
    k : int
        Cardinality.
    rank, n_samples : int
        ``apprxrank`` and ``maxsamples`` of spanpc.
    clock : {"wall", "cpu"}
        ``"wall"``: Octave ``tic``/``toc`` around ``spanpc``; ``"cpu"``: Octave ``cputime`` (CPU time of
        the Octave process) around it, which other processes' load does not inflate.

    Returns
    -------
    seconds : float
        Measured in Octave around ``spanpc`` by ``clock``.
    w : ndarray (n_features,)
        The vector it returned.

    Examples
    --------
    >>> seconds, w = run_spanpc(X, 10, clock="cpu")  # doctest: +SKIP
    """
    if clock not in ("wall", "cpu"):
        raise ValueError(f"clock must be 'wall' or 'cpu'; got {clock!r}.")
    if not available("spanpc"):
        raise RuntimeError(f"spanpc is not installed (octave-cli and {peers_home()}/spannogram needed).")
    with tempfile.TemporaryDirectory(prefix="repro-peer-") as d:
        n, p = _write(X, d)
        script = _OCTAVE_SPANPC.format(
            home=peers_home(), n=n, p=p, k=int(k), rank=int(rank), samples=int(n_samples), clock=clock
        )
        Path(d, "run.m").write_text(script)
        return _run(["octave-cli", "--norc", "--no-history", "-q", "run.m"], d, {})


_R_GSPPCA = """
suppressMessages({{library(Bessel); library(RSpectra)}})
source("{home}/GSPPCA/GSPPCA.R")
con <- file("X.f64", "rb")
x <- readBin(con, "double", n = {n} * {p}, size = 8, endian = "little")
close(con)
X <- matrix(x, nrow = {n}, ncol = {p})
set.seed({seed})
t0 <- Sys.time(); out <- gsppca(X, d = {d}); t1 <- Sys.time()
writeLines(format(c(as.numeric(difftime(t1, t0, units = "secs")), out$qhat, out$s, max(out$l), length(out$l),
                    out$l, out$u), digits = 17), "out.txt")
"""


def run_gsppca(X, d: int, *, seed: int = 0) -> dict:
    """One timed ``gsppca(X, d = d)`` of GSPPCA.R (every default) after ``set.seed(seed)``.

    The defaults are those of pamattei/GSPPCA @ 57de9a93: ``nit = 200``, ``epsi = 1e-5``, ``method = "BC"``
    (the bias-corrected noise estimate), ``numvar = "Occam"``, the uniform prior, models ``q = d+1..p-1``.

    Returns
    -------
    dict
        ``seconds`` (measured in R around the call), ``q`` (its selection), ``sigma`` (its noise standard
        deviation), ``max_log_evidence`` (over its models), ``log_evidence`` (of ``q = d+1..``) and ``u``
        (the VEM's weights, one per variable).
    """
    if not available("gsppca"):
        raise RuntimeError(f"GSPPCA.R is not installed (Rscript and {peers_home()}/GSPPCA/GSPPCA.R needed).")
    with tempfile.TemporaryDirectory(prefix="repro-peer-") as folder:
        n, p = _write(X, folder)
        script = _R_GSPPCA.format(home=peers_home(), n=n, p=p, d=int(d), seed=int(seed))
        Path(folder, "run.R").write_text(script)
        seconds, vals = _run(
            ["Rscript", "--vanilla", "run.R"], folder, {"R_LIBS": str(peers_home() / "Rlib")}
        )
    m = int(vals[3])
    return {
        "seconds": seconds,
        "q": int(vals[0]),
        "sigma": float(vals[1]),
        "max_log_evidence": float(vals[2]),
        "log_evidence": vals[4 : 4 + m],
        "u": vals[4 + m :],
    }
