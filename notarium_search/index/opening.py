"""How a space opens, by what this process does with it (`Role`): one
factory instead of construction flags.

- WRITER, SHARED_WRITER: take the writer lock, then open the index to write
  (`rebuild`: forget it and read every note again); the role is a
  `SpaceWriter` (index/space_writer.py), which a shared writer has publish
  its status and changes for the other workers.
- FOLLOWER: another worker of the same server writes; open read-only and
  follow it (index/follower.py).
- READER: `notarium-search search` beside a running service: open what it
  wrote, read-only, run nothing (`NotIndexed` when there is nothing yet).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

from notarium_search.index.channels import ChannelContext, Role, open_channels
from notarium_search.index.folder import cursor_codec, index_fingerprint
from notarium_search.index.manifest import Manifest
from notarium_search.index.peers import Step
from notarium_search.index.space import Space, SpaceRole
from notarium_search.index.writer_lock import WriterLock
from notarium_search.lexical.store import LexicalIndex
from notarium_search.settings import Settings, SpaceConfig
from notarium_search.types import SpaceStatus

__all__ = ["NotIndexed", "Role", "open_space"]


class NotIndexed(RuntimeError):
    """A reader found no index for the space."""


def open_space(
    config: SpaceConfig, settings: Settings, role: Role, *, rebuild: bool = False, records: bool = True
) -> Space:
    """The space, opened for `role` (see the module's docstring). Its writer
    thread, watcher or peer looks start with `Space.start`. `records=False`:
    a reader that reads no file's record (a search), their counts only."""
    directory = settings.index_dir / config.name
    # A follower reads no file's record: what it tells comes from its writer.
    load = Manifest.load_head if role is Role.FOLLOWER else Manifest.load
    if role is Role.READER and not records:
        load = Manifest.load_counted
    path, fingerprint = directory / "manifest.json", index_fingerprint(config, settings)
    writes = role in (Role.WRITER, Role.SHARED_WRITER)
    lock = WriterLock(config.name, directory)
    # A writer reads the manifest once the lock is its own (WriterLock.take).
    manifest = lock.take(lambda: load(path, fingerprint), forget=rebuild) if writes else load(path, fingerprint)
    if role is Role.READER and (not manifest.file_count() or not (directory / "lexical" / "meta.json").exists()):
        raise NotIndexed(f"space {config.name} is not indexed yet: run `notarium-search index {config.name}`")
    lexical = LexicalIndex(directory / "lexical", config.analyzed, read_only=not writes)
    if lexical.created:
        manifest.forget()
    # Each role's modules are imported by the role that needs them: a reader
    # (the CLI's `search`) loads neither the writer's thread, passes and
    # watcher (watchfiles) nor the follower's looks (issue 34).
    if writes:
        from notarium_search.index.indexer import SpaceIndexer
        from notarium_search.index.passes import Passes

        indexer = SpaceIndexer(config, settings, lexical, manifest)
        passes: Passes | None = Passes(indexer, threading.Event())  # the writer thread's stop
    else:
        passes = None
    context = ChannelContext(config.name, directory, lexical, settings, role, passes)

    def role_of(space: Space) -> SpaceRole:
        if passes is not None:
            from notarium_search.index import sharing
            from notarium_search.index.space_writer import SpaceWriter

            changes = sharing.ChangeWriter(directory) if role is Role.SHARED_WRITER else None
            return SpaceWriter(space, passes.indexer, passes, lock, changes)
        if role is Role.FOLLOWER:
            from notarium_search.index.follower import Follower

            return Follower(space)
        return Reader(space)

    cursors = cursor_codec(directory, read_only=not writes)
    return Space(config, settings, lexical, manifest, cursors, open_channels(context), role_of)


class Reader:
    """The role of a space this process only reads (`notarium-search search`)."""

    def __init__(self, space: Space) -> None:
        self.space = space

    @property
    def ready(self) -> bool:
        """It runs no pass: the writer's records say whether the index holds every note."""
        return not self.space.behind

    folder_away = False

    def start(self) -> None:
        return None

    def request_reindex(self, full: bool = False, paths: Iterable[str] | None = None) -> None:
        return None  # the running service's watcher follows the files

    def request_repair(self, reason: str) -> None:
        return None  # the running service repairs what its own reads find damaged

    def attach_embedder(self, embedder: Any) -> None:
        return None

    def status(self, space: Space) -> SpaceStatus:
        return space.own_status("off (read-only)")

    def catch_up(self) -> None:
        return None  # one command's read: the index as it opened

    def peer_steps(self) -> tuple[list[Step], list[Step]]:
        return [], []

    def request_stop(self) -> None:
        return None

    def stop(self, timeout: float = 30.0) -> None:
        self.space.lexical.close()
