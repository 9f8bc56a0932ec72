"""A regular expression tried only where a literal it needs occurs. Pure."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator


class GuardedPattern:
    """A pattern that can only match where one of `needles` occurs, tried only
    when one does. `re` tries a pattern that does not start with one literal
    character at every position of the note: over the bench vault's notes
    (1.4 kB of Markdown on average) `_MARKER_RE` took 29 µs, `_BLANKS_RE` 24,
    `_MANY_NEWLINES_RE` 10, each with nothing to find in most notes, where
    `in` looks for a needle at memchr speed (under a microsecond). The
    answers are the pattern's own: no needle, no match."""

    __slots__ = ("_needles", "_pattern")

    def __init__(self, pattern: str, *needles: str, flags: int = 0) -> None:
        self._pattern = re.compile(pattern, flags)
        self._needles = needles

    def _possible(self, text: str) -> bool:
        return any(needle in text for needle in self._needles)

    def sub(self, repl: str | Callable[[re.Match[str]], str], text: str) -> str:
        return self._pattern.sub(repl, text) if self._possible(text) else text

    def finditer(self, text: str) -> Iterator[re.Match[str]]:
        return self._pattern.finditer(text) if self._possible(text) else iter(())
