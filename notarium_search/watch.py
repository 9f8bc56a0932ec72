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
import threading
from collections.abc import Callable
from pathlib import Path

import structlog
from watchfiles import DefaultFilter, watch

# Longest wait for a burst to go quiet: a sync client writing for a minute
# still gets its changes applied every few seconds.
MAX_BURST_MS = 3000
# How often the watch loop looks at the stop flag while nothing happens.
STOP_CHECK_MS = 500

log = structlog.get_logger(__name__)


class _NoteFilter(DefaultFilter):
    """Ignore tool and editor noise (swap files, `~` backups, `.git`): they
    are never notes, and a change there would only cost an idle reconcile."""

    def __init__(self) -> None:
        super().__init__(ignore_dirs=(*DefaultFilter.ignore_dirs, ".obsidian", ".trash"))


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

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        if self.enabled:
            try:
                self._watch()
                return
            except Exception as exc:  # noqa: BLE001 - any watcher failure: fall back to polling, never stop serving
                log.warning("watch_unavailable", space=self.name, error=str(exc))
                self._poll(f"watching failed: {exc}")
                return
        self._poll("watching is off")

    def _watch(self) -> None:
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
        for batch in changes:
            if self._stop.is_set():
                return
            if batch:
                log.debug("files_changed", space=self.name, changes=len(batch))
                self.on_change(self._relative({path for _, path in batch}))

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
