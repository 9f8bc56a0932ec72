"""Which collections of its space a note belongs to. Pure: no I/O.

A collection is a sub-folder of a space with its own file-name pattern,
optionally limited to the folder's own files, and its own fragment mode for
the semantic channel (settings.CollectionConfig). Membership depends on the
note's path only, so it is decided when the note is indexed.
"""

from __future__ import annotations

import hashlib
import posixpath
import re
from collections.abc import Sequence

import msgspec

from notarium_search.settings import CHUNKING_MODES, CollectionConfig

PARAGRAPH, SECTION = CHUNKING_MODES


class _Rule(msgspec.Struct, frozen=True):
    config: CollectionConfig
    pattern: re.Pattern[str]

    def holds(self, rel_path: str) -> bool:
        folder, name = posixpath.split(rel_path)
        wanted = self.config.folder
        inside = folder == wanted if self.config.root_only else not wanted or (folder + "/").startswith(wanted + "/")
        return inside and self.pattern.search(name) is not None


class CollectionRules:
    def __init__(self, configs: Sequence[CollectionConfig]) -> None:
        self._rules = tuple(_Rule(c, re.compile(c.pattern)) for c in configs)
        self.names = tuple(c.name for c in configs)
        described = "|".join(f"{c.name}:{c.folder}:{c.pattern}:{c.root_only}:{c.chunking}" for c in configs)
        self.fingerprint = hashlib.blake2b(described.encode(), digest_size=6).hexdigest() if configs else "none"
        """Changes with any collection setting: the index then re-reads every note."""

    def member_of(self, rel_path: str) -> tuple[str, ...]:
        return tuple(rule.config.name for rule in self._rules if rule.holds(rel_path))

    def chunking_for(self, collections: Sequence[str]) -> str:
        """Section fragments when any collection of the note asks for them."""
        modes = {rule.config.chunking for rule in self._rules if rule.config.name in collections}
        return SECTION if SECTION in modes else PARAGRAPH
