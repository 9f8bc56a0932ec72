"""What every search channel is (lexical/, semantic/, graph/, or a plug-in
registered in index/channels.py): the `Channel` protocol, its whole
lifecycle, and `ChannelHooks`, the hooks a channel without such work leaves
as they are. Data only flows through it: the shapes are in types.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from notarium_search.types import ChannelHit, ChannelQuery, ChannelResult, ChannelStatus, Snippet


class Channel(Protocol):
    """A search channel of one space (lexical/, semantic/, graph/, or a
    plug-in: index/channels.py registers them), with its whole lifecycle:
    how it answers a query, what it says of itself in /status, how it
    follows the lexical index's passes on the writer thread, and how a worker
    that is not the writer follows the writer's. `ChannelHooks` gives the
    hooks a channel without such work leaves as they are."""

    @property
    def name(self) -> str:
        """What answers, traces, fusion weights and /status call it."""

    @property
    def needs(self) -> frozenset[str]:
        """The query inputs it waits for, besides the text (`ChannelQuery`):
        "vector" (the query's embedding: the service loads a model for it),
        "seeds" (the notes the channels without this need found, fused: it
        runs after them). Empty: it runs first, with the text alone."""

    @property
    def enabled(self) -> bool:
        """Whether it takes part in answers in this configuration (a channel
        turned off by a setting still reports itself, `disabled`)."""

    @property
    def ready(self) -> bool:
        """Whether it can answer a query now."""

    @property
    def building(self) -> bool:
        """Whether it is being built (the status then says "Building search index…")."""

    def why_not_ready(self) -> str:
        """Why it cannot answer now (for `degraded`)."""

    def search(self, query: ChannelQuery) -> ChannelResult:
        """The notes it finds for the query, best first."""

    def snippets(self, hit: ChannelHit) -> tuple[Snippet, ...]:
        """The snippets of one of its hits made without them (past `snippet_depth`)."""

    def caveat(self, result: ChannelResult) -> str | None:
        """Why its answer to this query counts less than it seems (hits below a floor), or None."""

    def status(self) -> ChannelStatus:
        """What /status shows of it."""

    # -- the space's writer thread ------------------------------------------

    @property
    def has_work(self) -> bool:
        """Whether it has work to do between the writer's jobs (embedding)."""

    def work_slice(self) -> None:
        """One bounded slice of that work, on the writer thread."""

    def after_lexical(self, changed: set[str], deleted: set[str]) -> None:
        """Follow a lexical pass: these notes were (re)indexed, these deleted
        (on the writer thread; on a follower, as the writer's journal says)."""

    def rebuild(self) -> None:
        """Every note was read again (a full reindex, a repair): read them all again."""

    def on_writer(self, run: Callable[[Callable[[], None]], None]) -> None:
        """How it queues a job of its own on the space's writer thread (a
        paused build resuming): given by the writer role when it opens."""

    def writer_stopped(self) -> None:
        """The space's writer thread has stopped: end what runs beside it (a
        compaction's thread), before the process may exit."""

    def attach(self, embedder: Any, in_slices: bool = False) -> None:
        """The embedding model is loaded (a channel that needs "vector"):
        build now, or (`in_slices`, the service) in `work_slice` calls."""

    def model_unavailable(self, reason: str) -> None:
        """The model could not be had: say why in status."""

    # -- a worker that is not the writer --------------------------------------

    def follow(self, published: ChannelStatus | None) -> bool:
        """One look at what the writer of its space built (its status as the
        writer published it, or None before any); whether it read anything anew."""


class ChannelHooks:
    """The lifecycle hooks of `Channel` for a channel that has no such work:
    it is on, needs the text alone, builds nothing beside the lexical index
    and follows nothing. A channel overrides what it does."""

    needs: frozenset[str] = frozenset()
    enabled = True

    @property
    def has_work(self) -> bool:
        return False

    def work_slice(self) -> None:
        return None

    def after_lexical(self, changed: set[str], deleted: set[str]) -> None:
        return None

    def rebuild(self) -> None:
        return None

    def on_writer(self, run: Callable[[Callable[[], None]], None]) -> None:
        return None

    def writer_stopped(self) -> None:
        return None

    def attach(self, embedder: Any, in_slices: bool = False) -> None:
        return None

    def model_unavailable(self, reason: str) -> None:
        return None

    def follow(self, published: ChannelStatus | None) -> bool:
        return False
