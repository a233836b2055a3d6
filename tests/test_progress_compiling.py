"""The progress line says "compiling kernels (first run only)" while a first run compiles the kernels."""

from __future__ import annotations

import os
import time

from experiments.runner import _progress


def _status(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    p = _progress.Progress(["a", "b"], quick=True, jobs=1, out=tmp_path)
    try:
        p.start("a")
        return p, p.status()
    finally:
        p.close()


def test_empty_cache_says_compiling(tmp_path, monkeypatch):
    p, text = _status(tmp_path, monkeypatch)
    assert p.cold_cache
    assert _progress.COMPILING in text
    assert "taking longer" not in text


def test_recent_cache_write_still_compiling_then_quiet_is_not(tmp_path, monkeypatch):
    monkeypatch.setenv("NUMBA_CACHE_DIR", str(tmp_path))
    p = _progress.Progress(["a"], quick=True, jobs=1, out=tmp_path)
    try:
        assert p.cold_cache
        index = tmp_path / "k.py" / "f-1.py311.nbi"
        index.parent.mkdir()
        index.write_bytes(b"")
        assert p.compiling()  # a kernel cached just now: compilation goes on
        old = time.time() - 2 * _progress._COMPILE_QUIET_S
        os.utime(index, (old, old))
        assert not p.compiling()  # nothing cached for a while: compiled
        assert _progress.COMPILING not in p.status()
    finally:
        p.close()


def test_warm_cache_never_says_compiling(tmp_path, monkeypatch):
    (tmp_path / "f-1.py311.nbi").write_bytes(b"")
    p, text = _status(tmp_path, monkeypatch)
    assert not p.cold_cache
    assert _progress.COMPILING not in text
