"""The ledger lock in the shared temporary folder cannot be redirected by a planted symlink."""

from __future__ import annotations

import os
import sys

import pytest

from experiments.runner import _atomic

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="no fcntl lock on Windows")


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    """A private temporary directory for the lock, so the test never touches the shared one."""
    import tempfile

    lock_dir = tmp_path / "tmp"
    lock_dir.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(lock_dir))
    return lock_dir


def test_planted_symlink_is_refused_and_target_untouched(tmp_path, private_tmp):
    out = tmp_path / "out"
    lock = _atomic.lock_path(out)
    assert lock.parent == private_tmp
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    os.symlink(victim, lock)
    with pytest.raises(RuntimeError, match="symbolic link"):
        with _atomic.folder_lock(out):
            pass
    assert victim.read_text() == "precious\n"
    assert lock.is_symlink()  # reported, not removed


def test_dangling_symlink_creates_nothing(tmp_path, private_tmp):
    out = tmp_path / "out"
    lock = _atomic.lock_path(out)
    target = tmp_path / "would_be_created"
    os.symlink(target, lock)
    with pytest.raises(RuntimeError, match="symbolic link"):
        with _atomic.folder_lock(out):
            pass
    assert not target.exists()


def test_plain_lock_file_still_works(tmp_path, private_tmp):
    out = tmp_path / "out"
    with _atomic.folder_lock(out):
        assert _atomic.lock_path(out).is_file()
    with _atomic.folder_lock(out):  # reopened, not recreated
        pass
