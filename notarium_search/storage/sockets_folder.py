"""The folder of a `serve`'s Unix sockets (the model process's: model_process.py;
each space writer's link graph: graph/remote.py), held for as long as the
service runs, and the folders of services that died without removing theirs.

The folder is made with mkdtemp (mode 0700: only the service's user connects)
in the system's temporary folder, else in the index folder (a container run
with a read-only root), where its path leaves room for a socket's name.

While the service runs, its supervisor holds a shared BSD lock (flock) on the
folder. systemd-tmpfiles leaves a locked folder and what is in it out of its
aging (tmpfiles.d(5)): on a distribution that ages /tmp (10 days on Fedora
or Arch), the sockets of a service that ran that long, never modified since
its start, would otherwise be deleted under it, and every worker would lose
the model and the writers' graphs until a restart.

A service killed with SIGKILL (the OOM killer, a container's stop past its
grace period) cannot remove its folder; the next `serve` removes such
folders in both places: those of the service's user, named as ours, that no
process holds locked, in which no socket accepts a connection (a service of
a version that did not lock), and older than STALE_AFTER_SECONDS (a service
starting beside this one, between its mkdtemp and its lock).
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import socket
import tempfile
import time
from pathlib import Path

from notarium_search.logsetup import get_logger

PREFIX = ".notarium-sockets-"
SOCKET_PATH_MAX = 108  # sun_path's size on Linux, its terminating zero included
# A folder modified this recently may be another service's, made an instant
# ago and not locked yet: left for a later start to look at again.
STALE_AFTER_SECONDS = 60.0
# A folder is opened to be locked, never through a link, nor kept by an exec'd child.
_OPEN_FOLDER = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC

log = get_logger(__name__)

# The open folders' descriptors, each holding its folder's lock until
# `remove` (a forked worker shares the lock: it lasts while any holds it).
_HELD: dict[Path, int] = {}


def make(places: list[str | None], longest_name: str) -> Path | None:
    """A new locked sockets folder in the first of `places` (None: the
    system's temporary folder) where it can be made and `longest_name`
    fits a socket's path in it, after removing the stale folders there."""
    for place in places:
        where = place or tempfile.gettempdir()
        remove_stale(where)
        try:
            folder = Path(tempfile.mkdtemp(prefix=PREFIX, dir=place))
        except OSError as exc:
            log.warning("sockets_folder", place=where, error=str(exc))
            continue
        if len(os.fsencode(folder / longest_name)) < SOCKET_PATH_MAX:
            _hold(folder)
            return folder
        shutil.rmtree(folder, ignore_errors=True)
    return None


def remove(folder: Path) -> None:
    """The folder and its sockets removed, and its lock let go (at the service's stop)."""
    shutil.rmtree(folder, ignore_errors=True)
    descriptor = _HELD.pop(folder, None)
    if descriptor is not None:
        os.close(descriptor)


def _hold(folder: Path) -> None:
    descriptor = os.open(folder, _OPEN_FOLDER)
    fcntl.flock(descriptor, fcntl.LOCK_SH)
    _HELD[folder] = descriptor


def remove_stale(place: str) -> list[Path]:
    """The sockets folders in `place` left by services that are gone, removed; returns them."""
    removed: list[Path] = []
    try:
        entries = list(os.scandir(place))
    except OSError:
        return removed  # no such place, or not ours to list: mkdtemp says why
    for entry in entries:
        if entry.name.startswith(PREFIX) and _stale(Path(entry.path)):
            shutil.rmtree(entry.path, ignore_errors=True)
            log.info("sockets_folder_removed", folder=entry.path, reason="left by a service that is gone")
            removed.append(Path(entry.path))
    return removed


def _stale(folder: Path) -> bool:
    try:
        seen = folder.lstat()
    except OSError:
        return False
    if seen.st_uid != os.geteuid() or time.time() - seen.st_mtime < STALE_AFTER_SECONDS:
        return False  # another user's, or maybe a service's starting now
    try:
        descriptor = os.open(folder, _OPEN_FOLDER)
    except OSError:
        return False  # a link (never followed), a file
    try:
        try:
            fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            return False  # a live service holds it
        return not any(_listening(path) for path in folder.glob("*.sock"))
    finally:
        os.close(descriptor)  # the lock with it


def _listening(path: Path) -> bool:
    """Whether a process accepts connections on the socket at `path` (a connection opened and closed at once)."""
    if len(os.fsencode(path)) >= SOCKET_PATH_MAX:
        return False
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as probe:
        probe.settimeout(1.0)
        with contextlib.suppress(OSError):
            probe.connect(str(path))
            return True
    return False
