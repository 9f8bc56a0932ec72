"""What a space's writer shares with the readers of other processes (the
HTTP server's other workers, index/follower.py), through files in the
space's index folder — never in the notes folder:

- `status.json`: the space's status as the writer sees it (build progress,
  failures), rewritten when it changes;
- `changes.json`: the notes each pass changed or deleted, the last
  JOURNAL_ENTRIES passes, so that a reader's link graph follows the
  commits without reading every note again (a reader that missed entries,
  or a journal begun anew, reads them all);
- `requests/`: what readers ask of the writer (a reconcile, a full
  reindex, a repair), one file per request, taken and deleted by the writer.

Files rather than a socket: nothing to connect, no port, and a writer that
dies leaves its last word for the one that replaces it (the first worker to
take the space's lock, index/folder.py).
"""

from __future__ import annotations

import os
import secrets
import shutil
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

import msgspec

from notarium_search.logsetup import get_logger
from notarium_search.storage.atomic import write_atomic
from notarium_search.types import SpaceStatus

STATUS_FILE = "status.json"
JOURNAL_FILE = "changes.json"
REQUESTS_DIR = "requests"
JOURNAL_ENTRIES = 64
# A pass that changed more notes than this is journaled as "read everything":
# a reader rebuilds its graph (~1 s at 10,000 notes) rather than reading a
# journal entry the size of the space at every look.
JOURNAL_MAX_IDS = 5_000
REQUESTS_MAX = 256  # requests waiting at once; more are dropped (a reconcile covers them)
# A request file still being written (its dot name) older than this was left
# by a worker that died while writing it: deleted.
STALE_REQUEST_SECONDS = 60.0

RequestKind = Literal["reconcile", "full", "repair"]

log = get_logger(__name__)


class Change(msgspec.Struct, frozen=True):
    serial: int
    changed: list[str] = []
    deleted: list[str] = []
    everything: bool = False  # every note was read again (a rebuild), or too many to list


class Journal(msgspec.Struct):
    epoch: str  # made anew with the file: a reader's serial counts only within one epoch
    entries: list[Change] = []

    @property
    def last_serial(self) -> int:
        return self.entries[-1].serial if self.entries else 0

    def since(self, epoch: str, serial: int) -> list[Change] | None:
        """The entries after `serial` of `epoch`, or None when some are
        missing (another epoch, or dropped): then read everything."""
        if epoch != self.epoch:
            return None
        newer = [entry for entry in self.entries if entry.serial > serial]
        if newer and newer[0].serial != serial + 1:
            return None
        return newer


class Request(msgspec.Struct, frozen=True):
    kind: RequestKind
    paths: list[str] | None = None  # reconcile: the files that changed (None: every file)
    reason: str = ""  # repair: what a reader saw


def publish_status(directory: Path, status: SpaceStatus, last: bytes | None) -> bytes:
    """Write the status when it changed since `last` (its encoding, returned)."""
    data = msgspec.json.encode(status)
    # Also when the file is gone (deleted by hand, or lost in a crash: it is
    # not synced): followers started meanwhile would wait for it.
    if data != last or not (directory / STATUS_FILE).exists():
        # Replaced whole, but not synced: up to 4 writes a second while a
        # space builds, and a status lost in a crash is published again.
        temporary = directory / f".{STATUS_FILE}.tmp"
        temporary.write_bytes(data)
        os.replace(temporary, directory / STATUS_FILE)
    return data


def read_status(directory: Path) -> SpaceStatus | None:
    """The writer's last published status, or None (none yet, or unreadable)."""
    try:
        return msgspec.json.decode((directory / STATUS_FILE).read_bytes(), type=SpaceStatus)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return None


def read_journal(directory: Path) -> Journal | None:
    try:
        return msgspec.json.decode((directory / JOURNAL_FILE).read_bytes(), type=Journal)
    except (OSError, msgspec.DecodeError, msgspec.ValidationError):
        return None


class ChangeWriter:
    """The writer's side of the journal: one entry a pass."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.journal = read_journal(directory) or Journal(secrets.token_hex(8))

    def record(self, changed: Iterable[str] = (), deleted: Iterable[str] = (), everything: bool = False) -> None:
        changed, deleted = sorted(changed), sorted(deleted)
        if not (changed or deleted or everything):
            return
        if len(changed) + len(deleted) > JOURNAL_MAX_IDS:
            changed, deleted, everything = [], [], True
        entry = Change(self.journal.last_serial + 1, changed, deleted, everything)
        self.journal.entries = [*self.journal.entries[-(JOURNAL_ENTRIES - 1) :], entry]
        write_atomic(self.directory / JOURNAL_FILE, msgspec.json.encode(self.journal))


def ask(directory: Path, request: Request) -> bool:
    """Leave a request for the writer; False when too many wait already."""
    folder = directory / REQUESTS_DIR
    folder.mkdir(exist_ok=True)
    if sum(1 for e in os.scandir(folder) if _complete(e.name)) >= REQUESTS_MAX:
        return False
    name = f"{secrets.token_hex(8)}.json"
    temporary = folder / f".{name}"  # dot files are not taken: not yet complete
    temporary.write_bytes(msgspec.json.encode(request))
    os.replace(temporary, folder / name)
    return True


def _complete(name: str) -> bool:
    return name.endswith(".json") and not name.startswith(".")


def take_requests(directory: Path, now: float | None = None) -> list[Request]:
    """The requests waiting, deleted as they are read. Anything else in the
    folder — a file that does not decode, a folder, a request a dead worker
    left half-written — is deleted with a log line: left there, such entries
    filled the folder until every request was refused."""
    folder = directory / REQUESTS_DIR
    try:
        entries = list(os.scandir(folder))
    except FileNotFoundError:
        return []
    now = time.time() if now is None else now
    taken: list[Request] = []
    for entry in entries:
        path = Path(entry.path)
        if not _complete(entry.name):
            if entry.name.startswith(".") and not _older(entry, now):
                continue  # being written
            log.warning("reader_request_dropped", file=str(path), why="not a request file")
        else:
            try:
                taken.append(msgspec.json.decode(path.read_bytes(), type=Request))
            except FileNotFoundError:
                continue  # gone meanwhile
            except (OSError, msgspec.DecodeError, msgspec.ValidationError) as exc:
                log.warning("reader_request_dropped", file=str(path), why=str(exc))
        _remove(path)
    return taken


def _older(entry: os.DirEntry[str], now: float) -> bool:
    try:
        return now - entry.stat(follow_symlinks=False).st_mtime > STALE_REQUEST_SECONDS
    except OSError:
        return False


def _remove(path: Path) -> None:
    try:
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            path.unlink(missing_ok=True)
    except OSError as exc:
        log.warning("reader_request_not_removed", file=str(path), error=str(exc))
