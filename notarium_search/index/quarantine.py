"""Notes that took the indexer down, set aside until they change.

The parsers run in linear time (notes/markdown.py), but one input we did not
foresee could still hold the writer for minutes or crash the process: a note
of 100,000 `[` held it for over 60 s, the watchdog killed the worker, the new
worker read the same note again, for ever, and no later edit was indexed.

So the writer says which note it is reading (`Marks.reading`, one small
write at the start of a file it keeps open, the mark ended by a NUL) and
clears it once the note is in (`Marks.done`: a NUL written first). Writes
only, no truncation: truncating the file twice a note cost 27 µs a note on
ext4 here against 4.6 for two writes (1.1 s of the writer's CPU in a first
index of 50,000 notes). A process that finds a mark at start died while reading
that note: a strike. A note with QUARANTINE_STRIKES strikes, unchanged since
(same size and modification time), is skipped with its reason, in status and
the log, until the file changes. One strike is not enough: a `kill -9` or a
power cut lands on whatever note was being read, and an innocent note must
not be set aside for it.

Notes that finish but take more than `read_budget` of the writer's CPU time
(10 s, and 10 s a MiB: over 10,000 times a normal note) are set aside the
same way (SpaceIndexer._read): every edit and every rebuild would pay that
again.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import msgspec

from notarium_search.logsetup import get_logger
from notarium_search.types import SourceFile

MARK_FILE = "reading"  # in the space's index folder (never among the notes)
QUARANTINE_STRIKES = 2
# A note whose read takes more than this much of the writer thread's CPU
# time is set aside: ~1 ms is usual, ~0.6 s a MiB here (a 3.2 MB note 2 s);
# a machine ten times slower stays inside. CPU time, not the clock on the
# wall: 8 busy request threads made a 2 s read take 12 s of wall time (the
# attack review), and an innocent note must not be set aside for the load.
READ_BUDGET_SECONDS = 10.0
READ_BUDGET_SECONDS_PER_MIB = 10.0


def read_budget(size: int) -> float:
    """The CPU seconds a note of `size` bytes may take to read."""
    return READ_BUDGET_SECONDS + READ_BUDGET_SECONDS_PER_MIB * size / 2**20


log = get_logger(__name__)

Version = tuple[str, int, int]  # path, size, modification time (ns): a note as it was read


class Suspect(msgspec.Struct, frozen=True):
    version: Version
    strikes: int  # deaths of the process while it read this version


class Marks:
    """The writer's mark of the note it reads, and the suspects earlier marks left."""

    def __init__(self, directory: Path, space: str) -> None:
        self.path = directory / MARK_FILE
        self.space = space
        self._fd: int | None = None
        self._current: Version | None = None
        self.suspect = self._left_behind()

    def _left_behind(self) -> Suspect | None:
        """What the last process was reading when it died, with one strike more."""
        try:
            fields = self.path.read_text(encoding="utf-8").split("\0", 1)[0].split("\t")
        except (OSError, UnicodeDecodeError):
            return None
        if len(fields) != 4 or not all(f.lstrip("-").isdigit() for f in fields[1:]):
            return None
        version = (fields[0], int(fields[1]), int(fields[2]))
        suspect = Suspect(version, int(fields[3]) + 1)
        log.warning(
            "note_suspected",
            space=self.space,
            path=version[0],
            strikes=suspect.strikes,
            why="the indexer stopped while reading it (killed, crashed, or out of time)",
        )
        return suspect

    def quarantined(self, source: SourceFile) -> str | None:
        """Why `source` is set aside, or None: it is read."""
        suspect = self.suspect
        if suspect is None or suspect.strikes < QUARANTINE_STRIKES or suspect.version != _version(source):
            return None
        return (
            f"reading it stopped the indexer {suspect.strikes} times (killed, crashed or out of time):"
            " skipped until the file changes"
        )

    def reading(self, source: SourceFile) -> None:
        """Mark `source` as being read (its strikes so far carried)."""
        version = self._current = _version(source)
        strikes = self.suspect.strikes if self.suspect is not None and self.suspect.version == version else 0
        data = f"{version[0]}\t{version[1]}\t{version[2]}\t{strikes}\0".encode()  # no path holds a NUL
        try:
            if self._fd is None:
                self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
            os.pwrite(self._fd, data, 0)  # what a longer mark left after the NUL is not read
        except OSError:
            self.close()  # best effort: a full disk fails the pass soon enough

    def done(self) -> None:
        """The note is in (or skipped for a reason of its own): no mark, and
        its strikes forgiven (a death while reading it days later is one strike)."""
        if self.suspect is not None and self.suspect.version == self._current:
            self.suspect = None
        if self._fd is not None:
            try:
                os.pwrite(self._fd, b"\0", 0)
            except OSError:
                self.close()

    def close(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None


def _version(source: SourceFile) -> Version:
    return source.path, source.size, source.mtime_ns
