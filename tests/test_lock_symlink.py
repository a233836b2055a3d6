"""The ledger lock: in the user's own cache (never the shared temporary folder), and not redirected by a
planted symlink."""

from __future__ import annotations

import os
import sys

import pytest

from experiments.runner import _atomic

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="no fcntl lock on Windows")


@pytest.fixture
def private_tmp(tmp_path, monkeypatch):
    """A private cache for the lock, so the test never touches the user's."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return tmp_path / "cache" / "repro" / "locks"


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


def test_lock_is_never_in_the_shared_temporary_folder(tmp_path, private_tmp):
    """Issue 35: a predictable name in /tmp could be held by another local user (runs waited 600 s)."""
    import tempfile

    out = tmp_path / "out"
    lock = _atomic.lock_path(out)
    assert lock.parent == private_tmp
    assert not str(lock).startswith(tempfile.gettempdir() + os.sep + "repro-")
    with _atomic.folder_lock(out):
        pass
    assert (private_tmp.stat().st_mode & 0o777) == 0o700


def test_lock_falls_back_to_the_output_folder_when_the_cache_is_shared(tmp_path, private_tmp):
    private_tmp.mkdir(parents=True)
    private_tmp.chmod(0o777)  # writable by others: not the user's alone
    out = tmp_path / "out"
    assert _atomic.lock_path(out) == out / ".repro.lock"
    with _atomic.folder_lock(out):
        assert (out / ".repro.lock").is_file()
