"""Per-space manifest: what the lexical index holds, by file.

It lets a restart skip unchanged files (same mtime and size, or same content
hash) and tells which note id a path had, so edits and deletions reach the
index. Written atomically: a crash leaves the previous manifest, never half
of one.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

import msgspec
import structlog

log = structlog.get_logger(__name__)


class Entry(msgspec.Struct, array_like=True):
    mtime_ns: int
    size: int
    digest: str
    note_id: str | None  # None: the file was skipped (binary, not UTF-8, too large)
    skip_reason: str | None = None


class _File(msgspec.Struct):
    fingerprint: str
    entries: dict[str, Entry]


@dataclass(slots=True)
class Manifest:
    path: Path
    fingerprint: str
    entries: dict[str, Entry] = field(default_factory=dict)

    @classmethod
    def load(cls, path: Path, fingerprint: str) -> Manifest:
        """The stored manifest, or an empty one when it is missing, unreadable
        or was written for another fingerprint (forcing a rebuild)."""
        try:
            stored = msgspec.json.decode(path.read_bytes(), type=_File)
        except FileNotFoundError:
            return cls(path, fingerprint)
        except (OSError, msgspec.DecodeError) as exc:
            log.warning("manifest_unreadable", path=str(path), error=str(exc))
            return cls(path, fingerprint)
        if stored.fingerprint != fingerprint:
            log.info("manifest_fingerprint_changed", old=stored.fingerprint, new=fingerprint)
            return cls(path, fingerprint)
        return cls(path, fingerprint, stored.entries)

    def save(self) -> None:
        write_atomic(self.path, msgspec.json.encode(_File(self.fingerprint, self.entries)))

    def skipped(self) -> dict[str, str]:
        """path → why it is not indexed."""
        return {p: e.skip_reason or "skipped" for p, e in self.entries.items() if e.note_id is None}

    def ids(self) -> dict[str, str]:
        """note id → path, for the notes currently indexed."""
        return {e.note_id: p for p, e in self.entries.items() if e.note_id is not None}


def write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(path.name + ".tmp")
    with open(tmp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
