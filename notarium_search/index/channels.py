"""The channels a space searches with: one ordered registry, read once per
space when it opens.

Adding a channel is a folder with its class (the `Channel` protocol in
channel.py; `ChannelHooks` gives the lifecycle hooks it has no use for) and one
`register_channel` call with the function that opens it for a space. The
built-in channels below are registered through the same call, in the order
answers and /status list them: lexical, semantic, graph. From then on the
space opens it (`Space.channels`), the service asks it in its stage (a channel
that needs "seeds" after the others, fusion.py weighs it by name: 1.0 unless
`[fusion]` says otherwise), /status reports it under `channels`, the writer
thread feeds it each pass and its idle slices, and a worker that is not the
writer calls its `follow` at every look (index/follower.py).
"""

from __future__ import annotations

from collections.abc import Callable
from enum import StrEnum
from pathlib import Path

import msgspec

from notarium_search.channel import Channel
from notarium_search.graph.channel import GraphChannel
from notarium_search.lexical.channel import LexicalChannel, PassView
from notarium_search.lexical.store import LexicalIndex
from notarium_search.settings import Settings


class Role(StrEnum):
    """What a process does with a space (index/opening.py opens it so)."""

    WRITER = "writer"  # the only writer: passes, watcher, derived builds
    SHARED_WRITER = "shared_writer"  # the writer among several workers: also publishes, takes requests
    FOLLOWER = "follower"  # another worker: serves the writer's indexes read-only and follows them
    READER = "reader"  # `notarium-search search` beside a service: reads what it wrote, never writes


class ChannelContext(msgspec.Struct, frozen=True):
    """What a channel is opened with."""

    space: str
    directory: Path  # the space's index folder: a channel keeps its files in a folder of its own there
    lexical: LexicalIndex  # the notes, as the last commit holds them
    settings: Settings
    role: Role
    passes: PassView | None  # the writer's lexical passes (None: this process runs none)

    @property
    def writes(self) -> bool:
        return self.role in (Role.WRITER, Role.SHARED_WRITER)


ChannelOpener = Callable[[ChannelContext], Channel | None]


class ChannelPlugin(msgspec.Struct, frozen=True):
    name: str
    open: ChannelOpener
    """The channel of one space, or None when this configuration or role
    has none (its status then says `disabled`)."""


_registered: list[ChannelPlugin] = []


def register_channel(name: str, open_channel: ChannelOpener) -> Callable[[], None]:
    """Add a channel to every space opened from now on, after those
    registered before it; returns what takes it away again (tests)."""
    if any(plugin.name == name for plugin in _registered):
        raise ValueError(f"a channel named {name!r} is registered already")
    plugin = ChannelPlugin(name, open_channel)
    _registered.append(plugin)
    return lambda: _registered.remove(plugin)


def registered() -> tuple[ChannelPlugin, ...]:
    return tuple(_registered)


def open_channels(context: ChannelContext) -> dict[str, Channel | None]:
    """Every registered channel of one space, by name, in order."""
    return {plugin.name: plugin.open(context) for plugin in _registered}


# -- the built-in channels, registered as a plug-in registers --------------


def _lexical(context: ChannelContext) -> Channel:
    return LexicalChannel(context.lexical, context.settings.ranking, context.passes)


def _semantic(context: ChannelContext) -> Channel | None:
    """The model's channel (VECTOR_SEARCH). A reader has none: it would load
    the model (~1-2 s) for one query, against a ~0.2 s start."""
    if not context.settings.vector_search or context.role is Role.READER:
        return None
    directory = context.directory / "vectors"
    if context.role is Role.FOLLOWER:
        from notarium_search.semantic.follower import FollowedSemanticChannel  # onnxruntime: only when on

        return FollowedSemanticChannel(context.space, directory, context.lexical)
    from notarium_search.semantic.channel import SemanticChannel

    return SemanticChannel(context.space, directory, context.lexical)


def _graph(context: ChannelContext) -> Channel:
    """Always opened (the note endpoint reads links even with GRAPH_BOOST
    off); `enabled` with GRAPH_BOOST. A follower of a `serve` asks its
    writer's graph (graph/remote.py) rather than read one of its own."""
    socket = graph_socket_of(context.settings, context.space) if context.role is Role.FOLLOWER else None
    remote = None
    if socket is not None:
        from notarium_search.graph.remote import RemoteGraph  # a serve's workers only: sockets

        remote = RemoteGraph(socket)
    settings = context.settings
    graph = GraphChannel(context.space, context.lexical, settings.graph_boost, settings.fusion.k, remote)
    if not context.writes and graph.enabled and remote is None:
        graph.ensure_built()  # no pass of this process will: read the committed links now
    return graph


def graph_socket_of(settings: Settings, space: str) -> Path | None:
    """Where the writer of `space` serves its graph to the other workers of a `serve` (None: each reads its own)."""
    if settings.sockets_dir is None:
        return None
    from notarium_search.graph.remote import graph_socket

    return graph_socket(settings.sockets_dir, space)


register_channel("lexical", _lexical)
register_channel("semantic", _semantic)
register_channel("graph", _graph)
