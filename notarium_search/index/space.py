"""A space at run time, as requests read it: its indexes, its channels, its
status. The read path never writes: what a space does besides answering —
passes, a watcher, repairs (index/space_writer.py), or following another
worker's (index/space_follower.py) — is its `role`, given by the factory that
opens it (index/opening.py). Request threads only take Tantivy searchers,
which see the last commit and never block on the writer.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, Protocol, cast

from notarium_search.channel import Channel
from notarium_search.index import editor_link
from notarium_search.index.folder import index_mismatch
from notarium_search.index.manifest import Manifest
from notarium_search.index.peers import Step
from notarium_search.lexical import search as lexical_search
from notarium_search.lexical.channel import LexicalChannel
from notarium_search.lexical.cursor import CursorCodec
from notarium_search.lexical.integrity import Verdicts
from notarium_search.lexical.store import LexicalIndex
from notarium_search.settings import Settings, SpaceConfig
from notarium_search.types import BUILDING_MESSAGE, ChannelState, ChannelStatus, FeedFilter, NoteSummary, SpaceStatus

if TYPE_CHECKING:
    from notarium_search.graph.channel import GraphChannel
    from notarium_search.index.space_writer import SpaceWriter
    from notarium_search.semantic.channel import SemanticChannel


class SpaceRole(Protocol):
    """What a space does besides answering: write it, follow its writer, or nothing."""

    @property
    def ready(self) -> bool:
        """Whether the index holds every note (answers are not `partial`)."""

    @property
    def folder_away(self) -> bool:
        """Whether the last look found the whole notes folder away (an unmounted share)."""

    def start(self) -> None: ...

    def request_reindex(self, full: bool = False, paths: Iterable[str] | None = None) -> None: ...

    def request_repair(self, reason: str) -> None: ...

    def attach_embedder(self, embedder: Any) -> None: ...

    def status(self, space: Space) -> SpaceStatus: ...

    def catch_up(self) -> None:
        """Before a request reads the space: a follower reads the writer's
        last commit and status (two stats when nothing changed)."""

    def peer_steps(self) -> tuple[list[Step], list[Step]]:
        """What the peer loop runs for it: every round, and every publication."""

    def request_stop(self) -> None: ...

    def stop(self, timeout: float) -> None: ...


class Space:
    def __init__(
        self,
        config: SpaceConfig,
        settings: Settings,
        lexical: LexicalIndex,
        manifest: Manifest,
        cursors: CursorCodec,
        channels: dict[str, Channel | None],
        role: Callable[[Space], SpaceRole],
    ) -> None:
        """Opened by index/opening.py: `role` makes what it does besides answering."""
        self.config = config
        self.settings = settings
        self.name = config.name
        self._root = str(config.path)  # joined by os.path: on_disk 6.7 -> 3.7 us a hit (pathlib made a Path)
        self.directory = settings.index_dir / config.name
        self.lexical = lexical
        self.manifest = manifest
        self.integrity = Verdicts(self.directory / "lexical")  # whether a failed read met damage
        self.cursors = cursors
        self.opened = channels  # every registered channel, None where this configuration has none
        self._editor_template: str | None = None
        self._editor_template_known = False
        # Why the index does not match its manifest (an older meta.json put
        # back: notes lost with no error), or None; a writer repairs it first.
        self.mismatch = index_mismatch(lexical, manifest)
        self.role = role(self)

    # -- channels ---------------------------------------------------------

    @property
    def channels(self) -> list[Channel]:
        """The channels that take part in answers, in order (lexical first)."""
        return [c for c in self.every_channel if c.enabled]

    @property
    def every_channel(self) -> list[Channel]:
        """The channels this space opened, on or off: the writer and the
        followers keep each in step with the lexical index (the graph's links
        serve the note endpoint even with GRAPH_BOOST off)."""
        return [c for c in self.opened.values() if c is not None]

    def needing(self, given: str) -> list[Channel]:
        """The channels that wait for this query input ("vector": the model's)."""
        return [c for c in self.every_channel if given in c.needs]

    @property
    def lexical_channel(self) -> LexicalChannel:
        return cast("LexicalChannel", self.opened["lexical"])

    @property
    def semantic(self) -> SemanticChannel | None:
        return cast("SemanticChannel | None", self.opened.get("semantic"))

    @property
    def graph(self) -> GraphChannel:
        return cast("GraphChannel", self.opened["graph"])

    @property
    def writing(self) -> SpaceWriter:
        """Its writer role (the CLI's `index`, tests): a pass run now, a build."""
        from notarium_search.index.space_writer import SpaceWriter

        if not isinstance(self.role, SpaceWriter):
            raise TypeError(f"space {self.name} is not written by this process")
        return self.role

    # -- what the role does -------------------------------------------------

    def start(self) -> None:
        self.role.start()

    def request_reindex(self, full: bool = False, paths: Iterable[str] | None = None) -> None:
        """Queue a reconcile (returns at once): `paths` (relative to the space)
        are the files seen changing (None: every file); `full` reads every
        note again. A follower asks its writer."""
        self.role.request_reindex(full, paths)

    def request_repair(self, reason: str) -> None:
        """A read met damage: rebuild the lexical index from the notes, once."""
        self.role.request_repair(reason)

    def attach_embedder(self, embedder: Any) -> None:
        self.role.attach_embedder(embedder)

    def model_unavailable(self, reason: str) -> None:
        for channel in self.needing("vector"):
            channel.model_unavailable(reason)

    def request_stop(self) -> None:
        self.role.request_stop()

    def stop(self, timeout: float = 30.0) -> None:
        self.role.stop(timeout)

    @property
    def ready(self) -> bool:
        return self.role.ready

    def status(self) -> SpaceStatus:
        return self.role.status(self)

    def catch_up(self) -> None:
        """Read what its writer committed last, when another worker writes it:
        a client sees in every worker what one worker told it."""
        self.role.catch_up()

    # -- readers ----------------------------------------------------------

    @functools.cached_property
    def behind(self) -> list[str]:
        """What the index lacks by the writer's records (read once): a pass
        cut short, a mismatch found at open. (`status` also stats every file,
        ~0.14 s at 10,000 notes: too slow here.)"""
        return self.manifest.left_behind() + ([self.mismatch] if self.mismatch else [])

    @property
    def editor_template(self) -> str | None:
        """The space's `open_url` template (index/editor_link.py). Looked for
        once it can be: a folder the service may not read (yet) has none, and
        is looked at again later, instead of failing the space's open (one
        unreadable space stopped every worker of `serve`)."""
        if not self._editor_template_known:
            try:
                self._editor_template = editor_link.template_for(self.config)
            except OSError:
                return None
            self._editor_template_known = True
        return self._editor_template

    def open_url(self, path: str, heading: str = "", line: int | None = None) -> str | None:
        """The link that opens the note at `path` in its editor (at the match's
        section and line when known), or None (no template)."""
        if self.editor_template is None:
            return None
        return editor_link.render(self.editor_template, self.config.path, path, heading, line or 1)

    def on_disk(self, note: NoteSummary) -> bool:
        """Whether the note's file is still there. The index follows deletions
        within a second or so, but later while a long rebuild holds the writer
        (a 32-client load with full re-indexes every 15 s showed hits on notes
        deleted seconds before): answers never name a vanished file (a stat
        costs ~6 µs at 10,000 notes), and a vanished one triggers a reconcile
        in case the watcher missed it."""
        try:
            os.lstat(os.path.join(self._root, note.path))
            return True
        except (FileNotFoundError, NotADirectoryError):
            pass
        except OSError:
            return True  # an unreadable folder: its notes are kept in the index (notes/scan.py), so in answers too
        if self.role.folder_away or not os.path.isdir(self.config.path):
            # The whole folder is away (an unmounted share), not this note: the
            # index is kept for that case, so answers keep coming from it
            # (partial, status says why) and the retries follow the folder.
            return True
        self.request_reindex(paths=(note.path,))
        return False

    def channel_statuses(self) -> dict[str, ChannelStatus]:
        """Every registered channel's status, `disabled` where it has none."""
        disabled = ChannelStatus(ChannelState.DISABLED)
        return {name: c.status() if c is not None else disabled for name, c in self.opened.items()}

    def own_status(self, watch: str, skipped: int = 0, skipped_notes: tuple[Any, ...] = ()) -> SpaceStatus:
        """Its status from its own indexes and channels (a writer, a reader)."""
        channels = self.channel_statuses()
        disabled = ChannelStatus(ChannelState.DISABLED)
        # The state before the count: a pass says "ready" after its last
        # commit reloaded the searcher, so a "ready" read first comes with its notes.
        lexical = self.lexical_channel.indexing()
        return SpaceStatus(
            space=self.name,
            path=str(self.config.path),
            language=self.config.language,
            notes=int(self.lexical.searcher().num_docs),
            skipped=skipped,
            skipped_notes=skipped_notes,
            lexical=lexical,
            semantic=channels.get("semantic", disabled),
            graph=channels.get("graph", disabled),
            message=BUILDING_MESSAGE if any(c.building for c in self.channels) else None,
            watch=watch,
            languages=self.lexical.notes_per_language(),
            collections={
                c.name: self.lexical.counted(
                    ("collection", c.name),
                    functools.partial(lexical_search.count_notes, self.lexical, FeedFilter(collections=(c.name,))),
                )
                for c in self.config.collections
            },
            channels=channels,
        )
