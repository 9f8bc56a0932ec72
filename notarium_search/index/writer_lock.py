"""The writer lock as a writing space holds it, for the space's lifetime:
taken when the space opens, before anything destructive is done to its
index folder; taken again when the folder is deleted under the running
service; released when the space stops. The lock itself (a flock on the
folder's writer.lock) is index/folder.py's."""

from __future__ import annotations

import contextlib
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from notarium_search.index.folder import save_cursor_key
from notarium_search.index.lock import holds_lock, lock_space
from notarium_search.index.manifest import Manifest
from notarium_search.logsetup import get_logger

log = get_logger(__name__)


class WriterLock:
    def __init__(self, space: str, directory: Path) -> None:
        """Not taken yet: a read-only space never takes it."""
        self.space = space
        self.directory = directory
        self._handle: TextIO | None = None

    def take(self, load: Callable[[], Manifest], forget: bool) -> Manifest:
        """Make the index folder and take its lock (IndexLocked if another
        process has it); only then read the manifest (`load`), and forget the
        index when asked to (`forget`) or when nothing trustworthy records
        what it holds. Read after the lock: each worker but a space's writer
        tries the lock first and follows when it is taken, and the whole
        manifest decoded before that, then dropped, left ~24 MB of half-empty
        pymalloc arenas in every follower at 50,000 notes (it holds a str, a
        tuple and ints for each of the files)."""
        self.directory.mkdir(parents=True, exist_ok=True)
        # Taken before anything destructive: a second writer (another
        # service, or `notarium-search index`) must never wipe a live index.
        self._handle = lock_space(self.directory)
        try:
            manifest = load()
        except BaseException:  # a passing fault (StorageFault): the space is tried again, by this process too
            self.release()
            raise
        if forget:
            manifest.forget()
        if not manifest.entries:
            # No trustworthy record of what the index holds: rebuild it from the files.
            shutil.rmtree(self.directory / "lexical", ignore_errors=True)
        return manifest

    def take_again(self, cursor_key: bytes) -> None:
        """The index folder deleted under the running service: make it again
        and lock it again (the held lock is on a file that no longer exists,
        so another process could have locked a new one)."""
        if self._handle is not None and holds_lock(self._handle, self.directory):
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        handle = lock_space(self.directory)
        if self._handle is not None:
            self._handle.close()
        self._handle = handle
        save_cursor_key(self.directory, cursor_key)  # cursors already issued stay valid
        log.warning("space_index_folder_recreated", space=self.space, directory=str(self.directory))

    def release(self) -> None:
        if self._handle is not None:
            with contextlib.suppress(OSError):  # a clean stop: no holder left to wait for (lock.Holder.killed)
                self._handle.truncate(0)
            self._handle.close()  # releases the flock
            self._handle = None
