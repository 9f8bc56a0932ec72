"""The semantic channel of a space whose writer is another process (the HTTP
server's other workers): it embeds queries with the service's model (its
model process, semantic/model_server.py, or a copy of its own), and
answers from the vectors the writer checkpoints, read again whenever the
writer's manifest changes. It never plans, embeds notes or writes.

It answers once it has read vectors of the writer: complete when the writer
says its channel is ready; while the writer builds, from the vectors of its
last checkpoint, with a caveat saying the answer is partial.
"""

from __future__ import annotations

from pathlib import Path

from notarium_search.lexical.store import LexicalIndex
from notarium_search.logsetup import get_logger
from notarium_search.semantic.channel import PARTIAL_WEIGHT_POWER, SemanticChannel
from notarium_search.semantic.embedding import Embedder
from notarium_search.semantic.index import SemanticIndex
from notarium_search.storage.faults import StorageFault
from notarium_search.storage.signature import Signature, file_signature
from notarium_search.types import ChannelState, ChannelStatus

log = get_logger(__name__)

MANIFEST = "vectors.json"


class FollowedSemanticChannel(SemanticChannel):
    def __init__(self, space_name: str, directory: Path, lexical_index: LexicalIndex) -> None:
        super().__init__(space_name, directory, lexical_index)
        self.embedder: Embedder | None = None
        self.published = ChannelStatus(ChannelState.BUILDING, "model loading")
        self._read: Signature | None = None  # the manifest version the vectors were read from

    def attach(self, embedder: Embedder, in_slices: bool = False) -> None:
        """The model is loaded (for queries): the next `refresh` reads the writer's vectors."""
        self.embedder = embedder
        self.unavailable = None

    def follow(self, published: ChannelStatus | None) -> bool:
        """Follow the writer: its status, and its vectors when it saved new
        ones; returns whether they were read anew."""
        if published is not None:
            self.published = published
        if self.embedder is None:
            return False
        signature = file_signature(self.directory / MANIFEST)
        if signature is None or signature == self._read:
            return False
        reference = self.index.reference if self.index is not None else None
        try:
            index = SemanticIndex(self.directory, self.embedder, read_only=True, reference=reference)
        except StorageFault as exc:  # a passing fault: tried again at the next look
            log.warning("vectors_not_read", space=self.space_name, error=str(exc))
            return False
        if index.unread is not None:
            # Another model's vectors (the writer has not yet rebuilt them), or
            # a file replaced while it was read: the next look tries again.
            return False
        self.index, self._read = index, signature
        return True

    # -- what the writer does, a follower does not ------------------------

    def replan(self, in_slices: bool = False) -> None:
        pass

    def rebuild(self) -> None:
        pass

    def after_lexical(self, changed: set[str], deleted: set[str]) -> None:
        pass

    @property
    def has_work(self) -> bool:
        return False

    # -- readers -----------------------------------------------------------

    @property
    def complete(self) -> bool:
        return self.index is not None and self.published.state == ChannelState.READY

    @property
    def ready(self) -> bool:
        if self.unavailable is not None or self.index is None:
            return False
        return self.complete or (self.published.state == ChannelState.BUILDING and self.index.size() > 0)

    @property
    def building(self) -> bool:
        return not self.unavailable and self.published.state == ChannelState.BUILDING

    def why_not_ready(self) -> str:
        if self.unavailable:
            return self.unavailable
        if self.embedder is None:
            return "model loading"
        state = self.published
        if state.state == ChannelState.UNAVAILABLE:
            return state.reason or "unavailable"
        if state.state == ChannelState.READY:
            return "reading the vectors"
        if state.total:
            return f"index building: {state.embedded or 0}/{state.total} fragments embedded"
        return f"index building: {state.reason or 'model loading'}"

    def status(self) -> ChannelStatus:
        if self.unavailable:
            return ChannelStatus(ChannelState.UNAVAILABLE, self.unavailable)
        if self.published.state == ChannelState.READY and not self.complete:
            return ChannelStatus(ChannelState.BUILDING, self.why_not_ready())
        return self.published

    def coverage(self) -> float:
        """The share of the fragments in the vectors read: the writer's last
        checkpoint, against what its status says is still pending."""
        if self.complete or self.index is None:
            return 1.0
        state = self.published
        size = self.index.size()
        pending = max((state.total or 0) - (state.embedded or 0), 0)
        return size / max(size + pending, 1)

    def partial(self) -> str | None:
        if self.complete or self.index is None:
            return None
        state = self.published
        progress = f" ({state.embedded or 0}/{state.total} fragments embedded)" if state.total else ""
        return (
            f"partial: answered from the {self.index.size()} fragments the writer has saved so far, the index"
            f" building{progress}: notes not yet embedded are missing or matched on part of their text;"
            f" weighed {self.coverage() ** PARTIAL_WEIGHT_POWER:.2f} in fusion (the share embedded, squared)"
        )
