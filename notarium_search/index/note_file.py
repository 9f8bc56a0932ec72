"""A note's file into a note: what the writer's thread (index/note_reader.py)
and the processes parsing ahead of it (index/parse_ahead.py) both do, so
that the two cannot drift apart. Pure but for the read itself, done with
scan.open_note's checks."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

from msgspec.structs import replace

from notarium_search.notes import formats
from notarium_search.notes.collection import CollectionRules
from notarium_search.notes.scan import open_note
from notarium_search.types import ParsedNote, SourceFile


def read_bounded(root_real: str, source: SourceFile, limit: int) -> tuple[bytes, bool]:
    """The file's bytes, at most `limit` of them, and whether it was cut."""
    too_big = source.size > limit
    with open_note(root_real, source.path) as handle:
        return handle.read(limit if too_big else -1), too_big


def digest(raw: bytes) -> str:
    """The content hash recorded in the manifest (a changed file is parsed again)."""
    return hashlib.blake2b(raw, digest_size=16).hexdigest()


def parse(fmt: formats.NoteFormat, raw: bytes, source: SourceFile, truncated: bool) -> ParsedNote:
    """The note in `raw` (raises the format's NotANote or ReadLater)."""
    return born(fmt.read(raw, source.path, file_time(source), truncated=truncated), source)


def with_collections(note: ParsedNote, rules: CollectionRules) -> ParsedNote:
    """The note with the collections its path belongs to, and their chunking."""
    collections = rules.member_of(note.path)
    if not collections:
        return note
    return replace(note, collections=collections, chunking=rules.chunking_for(collections))


def born(note: ParsedNote, source: SourceFile) -> ParsedNote:
    """The note created when its file was, where the platform says when
    (scan.birth_ns) and the note's dates come from its file (its frontmatter
    has none: a written `updated` is its `created` too, as before). Never
    after its `updated`, the file's modification time: a file written over
    in place keeps its birth time, one replaced by a new file does not."""
    if source.birth_ns is None or note.created_from != "file":
        return note
    birth = datetime.fromtimestamp(source.birth_ns / 1e9, tz=UTC)
    return replace(note, created=birth, created_from="file") if birth < note.updated else note


def file_time(source: SourceFile) -> datetime:
    """The file's modification time: a note's date when its frontmatter has none."""
    return datetime.fromtimestamp(source.mtime_ns / 1e9, tz=UTC)
