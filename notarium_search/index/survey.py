"""Which files a pass reads: the space's files compared with its manifest,
by stat alone (no note is read, nothing written: safe beside a running
writer, so `status` uses it too).
"""

from __future__ import annotations

from collections.abc import Collection

import msgspec

from notarium_search.index.manifest import Manifest
from notarium_search.notes.scan import SpaceUnavailable, scan_space, stat_paths
from notarium_search.settings import SpaceConfig
from notarium_search.types import SourceFile


class Pending(msgspec.Struct, frozen=True):
    """What the next pass over every file would do."""

    files: int  # note files on disk (include/exclude applied)
    changed: int  # new or changed since they were indexed: read at the next pass
    gone: int  # still in the index, their file deleted: dropped at the next pass


class Survey(msgspec.Struct, frozen=True):
    files: list[SourceFile]  # the files to compare with the manifest
    gone: list[str]  # recorded, their file deleted
    everything: bool  # every file of the space, not only the reported ones


def survey(config: SpaceConfig, manifest: Manifest, paths: Collection[str] | None) -> Survey:
    """Only `paths` when they are all plain files (or vanished ones), else
    every file of the space. Raises SpaceUnavailable when the folder looks
    unmounted."""
    targeted = None if paths is None else _stat_targeted(config, manifest, paths)
    if targeted is not None:
        return Survey(*targeted, everything=False)
    scan = scan_space(config.path, config.include, config.exclude)
    if not scan.files and manifest.entries:
        # What an unmounted share looks like from its empty mount point. Taken
        # for "every note deleted", it would cost a whole rebuild (and every
        # embedding) once the share is back; a full reindex empties the index
        # when that is really wanted (it starts from an empty manifest).
        raise SpaceUnavailable(
            f"the notes folder {config.path} holds no note while the index holds"
            f" {len(manifest.entries)} (an empty mount point?): the index is kept; if every note"
            f" was really deleted, POST /spaces/{config.name}/reindex?full=1 empties it"
        )
    present = {f.path for f in scan.files}
    # Where the scan could not see (a folder not listed, a file not stat'ed), notes are unknown: kept.
    return Survey(scan.files, [p for p in manifest.entries if p not in present and not scan.keeps(p)], everything=True)


def _stat_targeted(
    config: SpaceConfig, manifest: Manifest, paths: Collection[str]
) -> tuple[list[SourceFile], list[str]] | None:
    surveyed = stat_paths(config.path, paths, config.include, config.exclude)
    if surveyed is None:
        return None
    files, missing = surveyed
    entries = manifest.entries
    if any(p not in entries and _holds_notes_below(manifest, p) for p in missing):
        return None  # a folder went away (moved or deleted) with its notes
    gone = [p for p in missing if p in entries]
    freed = {entries[p].note_id for p in gone}
    claimants = [p for p, e in entries.items() if e.claimed_id is not None and e.claimed_id in freed]
    if claimants:  # notes that wanted an id a deleted note held take it back (see to_read)
        more = stat_paths(config.path, claimants, config.include, config.exclude)
        files += more[0] if more is not None else []
    return files, gone


def _holds_notes_below(manifest: Manifest, rel_path: str) -> bool:
    prefix = rel_path.rstrip("/") + "/"
    return any(p.startswith(prefix) for p in manifest.entries)


def to_read(manifest: Manifest, files: list[SourceFile]) -> list[SourceFile]:
    """New and changed files, and those whose wanted id has come free
    (its holder was deleted or moved): a clean build would give it to them."""
    owners = manifest.ids()
    entries = manifest.entries
    return [
        f
        for f in files
        if (entry := entries.get(f.path)) is None
        or entry.mtime_ns != f.mtime_ns
        or entry.size != f.size
        or (entry.claimed_id is not None and entry.claimed_id not in owners)
    ]
