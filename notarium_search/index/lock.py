"""A space's writer lock: a flock on `writer.lock` in its index folder, held
by the one process that writes the space, for the space's lifetime. The
holder writes down who it is (process, parent, command), so that a process
that finds the lock taken can tell a sibling worker (to follow), a command
that will finish (`notarium-search index`), a holder on its way out (to wait
for) and another service (to refuse). Imports nothing heavy: the server's
supervisor asks before it starts its workers (cli/serving.py)."""

from __future__ import annotations

import fcntl
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

import msgspec

from notarium_search.storage.faults import IndexLocked

LOCK_FILE = "writer.lock"
# A holder on its way out is waited for this long at most: killed with its
# supervisor (PR_SET_PDEATHSIG, api/server.py), a worker is gone within
# milliseconds; one stuck in uninterruptible I/O (a hung network share) may not be.
LOCK_HANDOVER_SECONDS = 30.0
LOCK_POLL_SECONDS = 0.05
COMMANDS = ("serve", "mcp", "index")  # the commands that take writer locks


def lock_space(
    directory: Path,
    handover_seconds: float = LOCK_HANDOVER_SECONDS,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
) -> TextIO:
    """Take the space's writer lock (held for the space's lifetime); IndexLocked
    if another process has it. The holder writes its process id, its
    parent's and its command into the file: the HTTP server's other workers
    read there that the writer is one of them, and a process that finds the
    lock taken, who holds it (`lock_holder`). A holder on its way out (its
    service's supervisor was killed: `Holder.leaving`) is waited for, at most
    `handover_seconds`: a service restarted at once after a `kill -9` found
    the lock still held by a dying worker and crash-looped."""
    # Opened without truncating: a process that fails to take the lock must not erase the holder's ids.
    handle = open(directory / LOCK_FILE, "a+")  # noqa: SIM115 - held open for the space's lifetime
    try:
        _take(handle, directory, handover_seconds, clock, sleep)
    except BaseException:
        handle.close()
        raise
    handle.truncate(0)
    handle.write(f"{os.getpid()} {os.getppid()} {command_name()}\n")
    handle.flush()
    return handle


def held_for_good(directory: Path, handover_seconds: float = LOCK_HANDOVER_SECONDS) -> Holder | None:
    """Who holds the space's lock and is not leaving it (None: free, or freed
    within the handover), asked without keeping it: what `serve` and `mcp`
    look at before they start (a second service on a live index gave up only
    after its workers had each failed, 12-30 s later)."""
    try:
        if not (directory / LOCK_FILE).exists():
            return None
        handle = open(directory / LOCK_FILE, "a+")  # noqa: SIM115 - closed below
    except OSError:  # a lock file or folder this process may not open: the space opens, or says why
        return None
    with handle:
        try:
            _take(handle, directory, handover_seconds, time.monotonic, time.sleep)
        except IndexLocked:
            return lock_holder(directory) or Holder(0, 0, "")
        fcntl.flock(handle, fcntl.LOCK_UN)
    return None


def _take(
    handle: TextIO, directory: Path, handover_seconds: float, clock: Callable[[], float], sleep: Callable[[float], None]
) -> None:
    deadline = clock() + handover_seconds
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return
        except BlockingIOError as exc:
            holder = lock_holder(directory)
            if holder is None or not holder.leaving or clock() >= deadline:
                raise IndexLocked(f"space index {directory} is in use by another process{_who(holder)}") from exc
            sleep(LOCK_POLL_SECONDS)


class Holder(msgspec.Struct, frozen=True):
    """The process that holds a space's writer lock, as it wrote itself down."""

    pid: int
    parent: int  # its parent when it took the lock (a server's supervisor)
    command: str  # "serve", "mcp", "index", or "" (another program: a script, a test)

    @property
    def leaving(self) -> bool:
        """Whether it is on its way out: a server's worker orphaned (the
        supervisor it had when it took the lock is not its parent any more),
        which the kernel kills with its supervisor. Only a `serve` worker: an
        `index` run with nohup, or from a script that exited, is orphaned too,
        and lives on (waiting for it stalled a start by 30 s a space)."""
        if self.command != "serve" or not _alive(self.pid):
            return False  # gone and still locked: held by another process, whoever it is
        current = _parent_of(self.pid)
        return current != self.parent if current is not None else not _alive(self.parent)

    @property
    def killed(self) -> bool:
        """Whether it was a server's worker that ended without a clean stop
        (which empties the lock file: WriterLock.release), or is ending."""
        return self.command == "serve" and (self.leaving or not _alive(self.pid))

    def __str__(self) -> str:
        command = f"`notarium-search {self.command}`, " if self.command else ""
        return f"{command}pid {self.pid}" if self.pid else "unknown"


def lock_holder(directory: Path) -> Holder | None:
    """Who holds the lock, as it wrote it (None: unknown)."""
    try:
        fields = (directory / LOCK_FILE).read_text(encoding="ascii").split()
        return Holder(int(fields[0]), int(fields[1]), fields[2] if len(fields) > 2 else "")
    except (OSError, ValueError, IndexError):
        return None


def command_name() -> str:
    """This process's notarium-search command (`serve`, `mcp`, `index`…), or "" for another program."""
    return next((arg for arg in sys.argv[1:] if arg in COMMANDS), "")


def _who(holder: Holder | None) -> str:
    return "" if holder is None or not holder.pid else f" ({holder})"


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's: alive
        return True
    return True


def _parent_of(pid: int) -> int | None:
    """`pid`'s parent now (Linux's /proc; None elsewhere, or when it is gone)."""
    try:
        stat_line = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    fields = stat_line[stat_line.rfind(")") + 2 :].split()  # after the command, which may hold spaces
    return int(fields[1]) if len(fields) > 1 and fields[1].isdigit() else None


def holds_lock(handle: TextIO, directory: Path) -> bool:
    """Whether the lock held is still on the folder's writer.lock (same file):
    not when the folder was deleted (and maybe made again) under us."""
    try:
        current = os.stat(directory / LOCK_FILE)
    except OSError:
        return False
    held = os.fstat(handle.fileno())
    return (current.st_dev, current.st_ino) == (held.st_dev, held.st_ino)
