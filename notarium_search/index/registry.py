"""The spaces of one process, each opened on its own: a space that cannot
open — a folder the service's user may not read, an index folder it may not
write, a lock another process holds, a mount gone — is reported with its
reason and tried again at growing intervals, while the others serve.

One unreadable sub-folder of the spaces root made every worker of `serve`
fail as it opened the spaces, and the supervisor gave up ("Worker crash loop
detected, exiting"); `mcp` exited before answering `initialize`. A read-only
process (`notarium-search search`) asks for one space and is told why it
cannot have it instead (`fail_fast`).

The open spaces are a dict replaced whole, never changed in place: request
threads iterate it while a retry thread adds a space.
"""

from __future__ import annotations

import fcntl
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

import msgspec

from notarium_search.index.channels import registered
from notarium_search.index.lock import lock_holder
from notarium_search.index.opening import Role, open_space
from notarium_search.index.space import Space
from notarium_search.lexical.channel import generic_status
from notarium_search.lexical.store import IndexLocked
from notarium_search.logsetup import get_logger
from notarium_search.settings import Settings, SpaceConfig
from notarium_search.storage.backoff import Backoff
from notarium_search.storage.faults import describe
from notarium_search.types import ChannelState, ChannelStatus, IndexState, LexicalStatus, SpaceStatus

ELECTION_LOCK = "workers.lock"  # in the index folder: the workers open their spaces one at a time
# A space that could not open is tried again after this, doubling up to the
# max: a folder made readable, a mount back or a lock released is picked up
# without a restart, and a space broken for good costs one try every 5 minutes.
RETRY_FIRST_SECONDS = 5.0
RETRY_MAX_SECONDS = 300.0

log = get_logger(__name__)


class Unopened(msgspec.Struct, frozen=True):
    """A space that could not open, and why."""

    config: SpaceConfig
    reason: str
    retry_seconds: float | None = None  # when it is tried again (None: not scheduled yet)

    @property
    def why(self) -> str:
        retry = f"; tried again in {self.retry_seconds:g} s" if self.retry_seconds is not None else ""
        return f"space {self.config.name} could not open: {self.reason}{retry}"

    def status(self) -> SpaceStatus:
        """Its status: the lexical channel failed with the reason (what the
        page, `status` and MCP show of a failed space), the others unavailable."""
        lexical = LexicalStatus(IndexState.FAILED, 0, 0, None, None, None, error=self.why)
        unavailable = ChannelStatus(ChannelState.UNAVAILABLE, reason="the space could not open")
        return SpaceStatus(
            space=self.config.name,
            path=str(self.config.path),
            language=self.config.language,
            notes=0,
            skipped=0,
            lexical=lexical,
            semantic=unavailable,
            graph=unavailable,
            message=None,
            watch="off (the space could not open)",
            channels={p.name: generic_status(lexical) if p.name == "lexical" else unavailable for p in registered()},
        )


class Spaces:
    def __init__(self, settings: Settings, *, read_only: bool = False, shared: bool = False) -> None:
        """Open every configured space. `read_only`: the CLI's searches, which
        open what a service wrote and fail on the first space that cannot open.
        `shared`: one of several worker processes (see `_open_one`)."""
        self.settings = settings
        self.read_only = read_only
        self.shared = shared
        self.opened: dict[str, Space] = {}
        self.unopened: dict[str, Unopened] = {}
        self._retries: dict[str, Backoff] = {}
        self._on_open: Callable[[Space], None] | None = None
        self._stopped = threading.Event()
        self._lock = threading.Lock()  # one retry's open (or scheduling) at a time
        if shared:
            settings.index_dir.mkdir(parents=True, exist_ok=True)
        with self._elected():
            for config in settings.spaces:
                self._open(config)

    def _open(self, config: SpaceConfig) -> Space | None:
        try:
            space = self._open_one(config)
        except Exception as exc:
            if self.read_only:
                raise
            reason = why_unopened(config, exc)
            log.error("space_unopened", space=config.name, reason=reason)
            # A retry that fails keeps saying it is tried again until the next
            # try is scheduled (`_retry_later`, at once): a status read between
            # the two said only "could not open" (CI, tests/index/test_registry.py).
            earlier = self.unopened.get(config.name)
            retry = earlier.retry_seconds if earlier is not None else None
            self.unopened = {**self.unopened, config.name: Unopened(config, reason, retry)}
            return None
        self.opened = {**self.opened, config.name: space}
        self.unopened = {name: u for name, u in self.unopened.items() if name != config.name}
        return space

    def _open_one(self, config: SpaceConfig) -> Space:
        """The space as its writer when this process takes its lock first,
        else, for one of several workers, as a follower of the worker that
        did. The workers open their spaces one at a time (`_elected`): a
        follower then finds the writer's index, cursor key and lock holder
        written. A space locked by a process that is not one of this server's
        workers (`notarium-search index`, another service) is IndexLocked."""
        if not self.shared:
            return open_space(config, self.settings, Role.READER if self.read_only else Role.WRITER)
        try:
            return open_space(config, self.settings, Role.SHARED_WRITER)
        except IndexLocked:
            holder = lock_holder(self.settings.index_dir / config.name)
            if holder is None or holder.parent != os.getppid():
                raise
            return open_space(config, self.settings, Role.FOLLOWER)

    @contextmanager
    def _elected(self) -> Iterator[None]:
        """The election lock of several workers (released when closed); nothing for one process."""
        if not self.shared:
            yield
            return
        with open(self.settings.index_dir / ELECTION_LOCK, "a") as election:
            fcntl.flock(election, fcntl.LOCK_EX)
            yield

    def retry(self, on_open: Callable[[Space], None]) -> None:
        """Try the spaces that could not open again, later, each on its own
        timer; `on_open` starts one that opens (the service is running)."""
        with self._lock:  # a first retry due at once must not find its Unopened written back after it opened
            self._on_open = on_open
            for name, unopened in self.unopened.items():
                self._retry_later(name, unopened.config)

    def _retry_later(self, name: str, config: SpaceConfig) -> None:
        backoff = self._retries.setdefault(name, Backoff(RETRY_FIRST_SECONDS, RETRY_MAX_SECONDS))
        delay = backoff.later(lambda: self._try_again(config))
        unopened = self.unopened.get(name)
        if unopened is not None:
            self.unopened = {**self.unopened, name: Unopened(config, unopened.reason, delay)}

    def _try_again(self, config: SpaceConfig) -> None:
        with self._lock:
            if self._stopped.is_set():
                return
            with self._elected():
                space = self._open(config)
            if space is None:
                if not self._stopped.is_set():
                    self._retry_later(config.name, config)
                return
            if self._stopped.is_set():  # stopped while it opened: nobody will stop it later
                space.stop()
                return
            log.info("space_opened", space=config.name, after="an earlier failure")
            if self._on_open is not None:
                self._on_open(space)

    def stop(self) -> None:
        """No more retries (the spaces themselves are stopped by their owner).
        Does not wait for a retry under way (an open may wait for a lock):
        that one stops what it opened itself."""
        self._stopped.set()
        for backoff in list(self._retries.values()):
            backoff.cancel()

    def statuses(self, of_open: Callable[[Space], SpaceStatus]) -> list[SpaceStatus]:
        """Every configured space's status, in the configuration's order."""
        opened, unopened = self.opened, self.unopened
        found = []
        for config in self.settings.spaces:
            if config.name in opened:
                found.append(of_open(opened[config.name]))
            elif config.name in unopened:
                found.append(unopened[config.name].status())
        return found


def why_unopened(config: SpaceConfig, exc: Exception) -> str:
    """One sentence: why the space could not open, and what to do."""
    if isinstance(exc, IndexLocked):
        return str(exc)
    if isinstance(exc, PermissionError):
        return (
            f"cannot read {exc.filename or config.path}: permission denied to the service's user"
            f" (uid {os.getuid()}); give it read and search permission on the folder"
        )
    if isinstance(exc, OSError):
        return f"cannot open {exc.filename or config.path}: {describe(exc)}"
    return f"cannot open the space: {describe(exc)}"
