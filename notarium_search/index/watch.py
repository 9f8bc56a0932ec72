"""Follow a space's files: after a burst of changes goes quiet, ask for a
reconcile (the writer thread then compares the files with the index and
applies creates, edits, deletes and moves to every index).

A change event only says "look again" at the paths it names: the reconcile
reads those files (every file when a folder changed), not the events, so a
doubled or reordered event never leaves the index wrong,
and editor tricks (write to a temporary name, then rename over the note) end
as one edit of the note once the burst is quiet. When the operating system
cannot watch (inotify limits, network filesystems), or watching is turned
off, the space is reconciled every `reconcile_interval` seconds instead, and
`mode` says so (shown in /status).
"""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Callable
from pathlib import Path

from watchfiles import DefaultFilter, watch

from notarium_search.logsetup import get_logger

# Longest wait for a burst to go quiet: a sync client writing for a minute
# still gets its changes applied every few seconds.
MAX_BURST_MS = 3000
# How often the watch loop looks at the stop flag while nothing happens.
STOP_CHECK_MS = 500
# How often a watcher whose folder went away (deleted, unmounted) looks for it.
FOLDER_BACK_CHECK_SECONDS = 1.0

log = get_logger(__name__)


class _NoteFilter(DefaultFilter):
    """Ignore tool and editor noise (swap files, `~` backups, `.git`): they
    are never notes, and a change there would only cost an idle reconcile."""

    def __init__(self) -> None:
        super().__init__(ignore_dirs=(*DefaultFilter.ignore_dirs, ".obsidian", ".trash"))


def _identity(folder: Path) -> tuple[int, int] | None:
    """(device, inode) of the folder; None when it is not there as a folder."""
    try:
        info = os.stat(folder)
    except OSError:
        return None
    return (info.st_dev, info.st_ino) if stat.S_ISDIR(info.st_mode) else None


class SpaceWatcher:
    def __init__(
        self,
        name: str,
        root: Path,
        on_change: Callable[[set[str] | None], None],
        enabled: bool,
        quiet_ms: int,
        fallback_seconds: int,
    ) -> None:
        self.name = name
        self.root = root
        self.on_change = on_change
        self.enabled = enabled
        self.quiet_ms = quiet_ms
        self.fallback_seconds = fallback_seconds
        self.mode = "starting"
        """"watching", "polling every N s (why)" or "off": for status."""
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=f"watch-{self.name}", daemon=True)
        self._thread.start()

    def request_stop(self) -> None:
        """Ask the thread to end (it looks every STOP_CHECK_MS), without waiting."""
        self._stop.set()

    def stop(self, timeout: float = 5.0) -> None:
        self.request_stop()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        if not self.enabled:
            self._poll("watching is off")
            return
        catch_up = False
        while not self._stop.is_set():
            if _identity(self.root) is None:
                if not self._wait_for_folder():
                    return
                catch_up = True
            try:
                self._watch(catch_up)
            except Exception as exc:  # noqa: BLE001 - any watcher failure: fall back to polling, never stop serving
                log.warning("watch_unavailable", space=self.name, error=str(exc))
                self._poll(f"watching failed: {exc}")
                return
            catch_up = True  # the folder went or was replaced: what changed meanwhile is unknown

    def _wait_for_folder(self) -> bool:
        """The folder went (deleted, unmounted): say so, and wait for it to be
        back. False when told to stop meanwhile."""
        self.mode = "waiting for the notes folder to come back"
        log.warning("watch_ended", space=self.name, path=str(self.root))
        self.on_change(None)  # the pass finds the folder missing and reports it
        while _identity(self.root) is None:
            if self._stop.wait(FOLDER_BACK_CHECK_SECONDS):
                return False
        return True

    def _watch(self, catch_up: bool) -> None:
        """Watch until stopped or until the folder goes; `catch_up`: the folder
        was away, so once watched again every file is looked at (what changed
        meanwhile)."""
        watched = _identity(self.root)
        changes = watch(
            self.root,
            watch_filter=_NoteFilter(),
            debounce=max(MAX_BURST_MS, self.quiet_ms),
            step=max(self.quiet_ms, 1),
            stop_event=self._stop,
            rust_timeout=STOP_CHECK_MS,
            yield_on_timeout=True,
            raise_interrupt=False,
        )
        self.mode = "watching"
        log.info("watching", space=self.name, path=str(self.root))
        if catch_up:
            self.on_change(None)
        for batch in changes:
            if self._stop.is_set():
                return
            if batch:
                log.debug("files_changed", space=self.name, changes=len(batch))
                self.on_change(self._relative({path for _, path in batch}))
            # A deleted (or unmounted, or replaced) folder leaves the watch on
            # the old one, silent for good: checked at each quiet tick.
            if _identity(self.root) != watched:
                return

    def _poll(self, why: str) -> None:
        if self.fallback_seconds <= 0:
            self.mode = f"off ({why}; reconcile_interval is 0: changes are seen at the next start)"
            return
        self.mode = f"polling every {self.fallback_seconds} s ({why})"
        log.info("polling", space=self.name, interval=self.fallback_seconds, reason=why)
        while not self._stop.wait(self.fallback_seconds):
            self.on_change(None)  # a poll does not know what changed: every file is looked at

    def _relative(self, paths: set[str]) -> set[str] | None:
        """POSIX paths relative to the space; None (look at everything) when
        the root itself changed."""
        relative = set()
        for path in paths:
            rel = os.path.relpath(path, self.root)
            if rel == "." or rel.startswith(".."):
                return None
            relative.add(rel.replace(os.sep, "/"))
        return relative
