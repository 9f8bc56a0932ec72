"""Whether a Tantivy index's files are whole: the check that decides a repair.

A read that fails says little by itself: Tantivy raises a plain ValueError
for a flipped byte, an I/O error of a network share, an argument it refuses
and a bug alike, and pyo3 turns a Rust panic into a PanicException. Taking
any of them for damage let one query rebuild a whole index (`after:9999-12`
raised "year 10000 is out of range" in our own code, and the read path asked
for a rebuild: 21 s at 12,000 notes, answers partial meanwhile). So a read
error only makes us *suspect* damage (`suspected_damage`), and the files are
then checked (`check`): only a failed check triggers a repair.

The check is Tantivy's own (`Index::validate_checksum`, which tantivy-py
does not expose), read here: every file of every segment `meta.json` names
ends with a footer (JSON `{"version", "crc"}`, its length as a u32, the
magic number 1337 as a u32, little-endian) whose CRC-32 covers the rest of
the file. zlib's CRC-32 is crc32fast's (IEEE). Reading the whole index costs
~0.1 s per 100 MB; `Verdicts` keeps one verdict per commit so a failing read
repeated by many requests checks once.
"""

from __future__ import annotations

import struct
import threading
import time
import zlib
from collections.abc import Callable
from pathlib import Path

import msgspec

from notarium_search.storage.faults import StorageFault, describe, is_passing
from notarium_search.storage.signature import Signature, file_signature

FOOTER_MAGIC = 1337
FOOTER_TAIL = struct.Struct("<II")  # footer length, magic number
FOOTER_MAX_BYTES = 50_000  # Tantivy's FOOTER_MAX_LEN
# Every segment has these files (our schema has positions, fast and stored fields).
SEGMENT_PARTS = (".idx", ".term", ".pos", ".store", ".fast", ".fieldnorm")
READ_CHUNK_BYTES = 1 << 20
# TantivyError's Display (tantivy/src/error.rs) for the variants that can mean
# the files are bad. Not "An invalid argument was passed", "Schema error",
# "The field does not exist": the query or our code, never the files.
FILE_ERROR_PREFIXES = (
    "An IO error occurred",
    "Data corrupted",
    "Failed to open file for read",
    "Failed to open the directory",
    "Deserialize error",
    "Internal error",
)
VERDICT_SECONDS = 60.0  # a verdict is trusted this long within one commit
CHECK_ATTEMPTS = 3  # a commit or merge may replace meta.json (and delete segments) during a check


def suspected_damage(exc: BaseException) -> bool:
    """Whether a failed read may be the index's files failing: one of
    Tantivy's file errors, a Rust panic in it, or a stored payload that no
    longer decodes. Never a passing shortage of the machine (too many open
    files: faults.is_passing), nor any other exception (our own errors,
    Python's ValueErrors from bad input)."""
    if isinstance(exc, msgspec.DecodeError):
        return True
    if type(exc).__name__ == "PanicException":
        return True
    if type(exc) is not ValueError or is_passing(exc):
        return False
    return str(exc).startswith(FILE_ERROR_PREFIXES)


def check(directory: Path) -> str | None:
    """What is damaged in the index in `directory` (one sentence), or None:
    every file of its last commit is whole. StorageFault when the files could
    not be read for a passing reason (an I/O error, too many open files):
    that says nothing of their content."""
    for _ in range(CHECK_ATTEMPTS):
        before = file_signature(directory / "meta.json")
        try:
            verdict = _check_once(directory)
        except OSError as exc:
            if is_passing(exc):  # an I/O error, a shortage: says nothing of the content
                raise StorageFault(f"cannot check the index in {directory}: {describe(exc)}") from exc
            verdict = f"{Path(exc.filename or '?').name}: {exc.strerror or describe(exc)}"  # missing, or a folder
        if file_signature(directory / "meta.json") == before:
            return verdict
        # A commit or a merge replaced meta.json meanwhile (and may have deleted
        # files the old one named): the new commit is what readers see next.
    raise StorageFault(f"cannot check the index in {directory}: it kept changing during the check")


def _check_once(directory: Path) -> str | None:
    try:
        meta = msgspec.json.decode((directory / "meta.json").read_bytes())
    except msgspec.DecodeError as exc:
        return f"meta.json is not valid JSON ({exc})"
    if not isinstance(meta, dict) or not isinstance(meta.get("segments"), list):
        return "meta.json lists no segments"
    for segment in meta["segments"]:
        if not isinstance(segment, dict) or not isinstance(segment.get("segment_id"), str):
            return "meta.json names a segment without an id"
        stem = segment["segment_id"].replace("-", "")
        files = [f"{stem}{part}" for part in SEGMENT_PARTS]
        deletes = segment.get("deletes")
        if isinstance(deletes, dict):
            files.append(f"{stem}.{deletes.get('opstamp')}.del")
        for name in files:
            why = _file_damage(directory / name)
            if why is not None:
                return f"{name}: {why}"
    return None


def _file_damage(path: Path) -> str | None:
    """Why the file is not whole, or None (OSError: it could not be read)."""
    with open(path, "rb") as stream:
        size = stream.seek(0, 2)
        if size < FOOTER_TAIL.size:
            return f"{size} bytes, shorter than a footer"
        stream.seek(size - FOOTER_TAIL.size)
        footer_bytes, magic = FOOTER_TAIL.unpack(stream.read(FOOTER_TAIL.size))
        if magic != FOOTER_MAGIC or footer_bytes > FOOTER_MAX_BYTES or footer_bytes + FOOTER_TAIL.size > size:
            return "no valid footer (truncated or overwritten)"
        body = size - footer_bytes - FOOTER_TAIL.size
        stream.seek(body)
        try:
            footer = msgspec.json.decode(stream.read(footer_bytes))
            expected = footer["crc"]
        except (msgspec.DecodeError, TypeError, KeyError):
            return "its footer is not readable"
        stream.seek(0)
        crc, left = 0, body
        while left:
            chunk = stream.read(min(READ_CHUNK_BYTES, left))
            if not chunk:
                return "shorter than its footer says"
            crc = zlib.crc32(chunk, crc)
            left -= len(chunk)
    return None if crc == expected else "checksum mismatch (its bytes changed after they were written)"


class Verdicts:
    """At most one check per commit and per VERDICT_SECONDS: the verdict is
    kept while meta.json is the same file (a commit replaces it), for a
    minute at most (a segment damaged later, a bad block, must not be called
    whole until the next commit, which an idle space may never make).
    Thread-safe: requests failing together wait for one check instead of each
    reading the whole index."""

    def __init__(self, directory: Path, clock: Callable[[], float] = time.monotonic) -> None:
        self.directory = directory
        self.clock = clock
        self._lock = threading.Lock()
        self._last: tuple[Signature | None, float, str | None] | None = None

    def damage(self) -> str | None:
        """The check's verdict for the index as committed now (see `check`)."""
        with self._lock:
            signature = file_signature(self.directory / "meta.json")
            last, now = self._last, self.clock()
            if last is not None and signature is not None and last[0] == signature and now - last[1] < VERDICT_SECONDS:
                return last[2]
            verdict = check(self.directory)
            self._last = (signature, now, verdict)
            return verdict
