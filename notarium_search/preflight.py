"""What `serve`, `mcp` and `index` check before they start anything: the
index folders writable, no other process holding a space's index, a previous
service killed. Its own module, light (the index's lock and folder checks
only), because `serve`'s supervisor runs it: every module the supervisor
imports is inherited by each worker granian forks, and `offline` (the CLI's
indexing) brought Tantivy and the whole index stack with it."""

from __future__ import annotations

from collections.abc import Iterable

from notarium_search.index.lock import held_for_good, lock_holder
from notarium_search.index.root import IndexRootUnwritable, ensure_writable
from notarium_search.settings import Settings, SpaceConfig


def why_unwritable(settings: Settings, spaces: Iterable[SpaceConfig]) -> str | None:
    """Make the index folder and those of `spaces` and prove this process can
    write them; otherwise why not, in one line (who owns the folder, who we
    are, the fixes). For the commands that write indexes only."""
    try:
        ensure_writable(settings.index_dir)
        for config in spaces:
            ensure_writable(settings.index_dir / config.name, settings.index_dir)  # left by a run as root?
    except IndexRootUnwritable as exc:
        return str(exc)
    return None


def index_held_elsewhere(settings: Settings) -> str | None:
    """Why this service cannot write its spaces (one sentence), or None: a
    space's lock held by a process that will not let it go (another service,
    a script), asked before any worker starts. A holder on its way out (the
    workers of a service whose supervisor was killed) is waited for, a
    bounded time (held_for_good); `notarium-search index` is not an obstacle:
    the space opens when it finishes (index/registry.py)."""
    for config in settings.spaces:
        holder = held_for_good(settings.index_dir / config.name)
        if holder is not None and holder.command != "index":
            return f"space index {settings.index_dir / config.name} is in use by another process ({holder})"
    return None


def previous_service_killed(settings: Settings) -> bool:
    """Whether the last writer of a space was a server's worker gone without
    a clean stop (a clean stop empties the lock file): its sockets may still
    be closing for a moment, so a taken port is looked at again."""
    holders = (lock_holder(settings.index_dir / config.name) for config in settings.spaces)
    return any(holder is not None and holder.killed for holder in holders)
