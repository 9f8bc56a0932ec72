"""A serve's sockets folder: locked while the service runs (systemd-tmpfiles
leaves it alone), removed at stop, and removed by the next start when its
service died without removing it — never another live service's
(storage/sockets_folder.py)."""

from __future__ import annotations

import fcntl
import os
import shutil
import socket
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from notarium_search import model_process
from notarium_search.settings import Settings
from notarium_search.storage import sockets_folder
from notarium_search.storage.sockets_folder import PREFIX, STALE_AFTER_SECONDS


@pytest.fixture
def place() -> Iterator[Path]:
    """A folder with a short path (a Unix socket's path fits in 108 bytes)."""
    made = Path(tempfile.mkdtemp(prefix="nsk-", dir="/tmp"))
    yield made
    shutil.rmtree(made, ignore_errors=True)


def aged(folder: Path) -> Path:
    """The folder (or link) as a service long gone would have left it."""
    old = time.time() - 10 * STALE_AFTER_SECONDS
    os.utime(folder, (old, old), follow_symlinks=False)
    return folder


def locked(folder: Path, how: int) -> int | None:
    """An open descriptor of the folder holding `how`, or None when someone holds a conflicting lock."""
    descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    try:
        fcntl.flock(descriptor, how | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(descriptor)
        return None
    return descriptor


def test_the_folder_is_locked_while_the_service_holds_it_and_let_go_when_removed(place: Path):
    folder = sockets_folder.make([str(place)], "model.sock")
    assert folder is not None
    assert folder.parent == place
    assert folder.stat().st_mode & 0o777 == 0o700
    # What systemd-tmpfiles tries before aging a folder, and the next start before removing one.
    assert locked(folder, fcntl.LOCK_EX) is None
    sockets_folder.remove(folder)
    assert not folder.exists()
    folder = sockets_folder.make([str(place)], "model.sock")
    assert folder is not None
    descriptor = os.open(folder, os.O_RDONLY | os.O_DIRECTORY)
    sockets_folder.remove(folder)  # the service's lock let go: only a removed folder's descriptor is left
    fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    os.close(descriptor)


def test_a_dead_service_s_folder_is_removed_and_no_live_one(place: Path):
    dead = place / f"{PREFIX}dead"
    dead.mkdir(mode=0o700)
    left = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    left.bind(str(dead / "model.sock"))  # its socket file stays; nothing listens on it any more
    left.close()
    (dead / "graph-0123456789abcdef.sock").touch()
    aged(dead)

    held = place / f"{PREFIX}held"  # a live service's: locked by its supervisor
    held.mkdir(mode=0o700)
    aged(held)
    holder = locked(held, fcntl.LOCK_SH)
    assert holder is not None

    older = place / f"{PREFIX}older"  # a live service of a version that did not lock: its socket answers
    older.mkdir(mode=0o700)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(older / "model.sock"))
    listener.listen()
    aged(older)

    young = place / f"{PREFIX}young"  # another service's, made an instant ago, not locked yet
    young.mkdir(mode=0o700)

    elsewhere = place / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "keep.txt").write_text("not ours")
    link = place / f"{PREFIX}link"  # never followed
    link.symlink_to(elsewhere)
    aged(elsewhere)
    aged(link)
    other = place / "other-folder"
    other.mkdir()
    aged(other)
    others = place / f"{PREFIX}others"  # another user's (the tests run as root in CI)
    others.mkdir(mode=0o700)
    if os.geteuid() == 0:
        os.chown(others, 65534, 65534)
    aged(others)
    try:
        assert sockets_folder.remove_stale(str(place)) == [dead]
        assert not dead.exists()
        assert all(path.exists() for path in (held, older, young, link, elsewhere / "keep.txt", other, others))
        # Once its service is gone, a folder is removed by the next start.
        os.close(holder)
        listener.close()
        aged(older)
        assert sorted(sockets_folder.remove_stale(str(place))) == sorted([held, older])
    finally:
        listener.close()


def test_serve_removes_the_folders_left_in_the_temporary_folder(place: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(tempfile, "tempdir", str(place))
    left = place / f"{PREFIX}killed"
    left.mkdir(mode=0o700)
    (left / "model.sock").touch()
    aged(left)
    folder = model_process.socket_folder(Settings(index_dir=place / "index"))
    assert folder is not None
    try:
        assert not left.exists()
        assert [path.name for path in place.iterdir()] == [folder.name]
        assert locked(folder, fcntl.LOCK_EX) is None
    finally:
        model_process.remove_socket_folder(folder)
    assert list(place.iterdir()) == []
