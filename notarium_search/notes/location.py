"""Where in a note's file a place of its plain text is: the line and column
as saved (frontmatter included, so that `path:line` opens at the right place
in any editor), and the headings it sits under. Pure: no I/O.

The plain text (notes/markdown.py) drops markup but keeps the words in order,
so each line of the body is tied to the plain text by its first word, found
just after where the previous line's was (a line's markup cannot move its
words past the next line's). A line whose first word the plain text does not
hold (a wiki-link shown by its alias, a table rule) gets no anchor; a place
takes the line of the nearest anchor before it.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence

_WORD = re.compile(r"\w{2,}")
# Characters of the markup notes/markdown.py removes or rewrites inside a line.
_MARKUP = re.compile(r"[\[\]*_`<>=~|!(#%$]")
# How far past the previous line's length the next line's first word may be
# found: what markup removal and block spacing may leave between them.
SLACK_CHARS = 200

Anchor = tuple[int, int, int]  # (offset in the plain text, 1-based line, 1-based column) of a line's first word


def line_anchors(body: str, plain: str, first_line: int) -> tuple[Anchor, ...]:
    """Anchors of the body's lines, in order; `first_line`: the file line the body starts on.

    A line of prose gets one anchor, its first word; a line with markup gets
    one more wherever the markup shifts the words (`[[Cible|alias]] des
    prestataires`), so that columns stay exact after it."""
    anchors: list[Anchor] = []
    cursor, reach = 0, len(plain)
    for number, line in enumerate(body.split("\n"), start=first_line):
        words = _WORD.finditer(line) if _MARKUP.search(line) else _first(line)
        shift = None
        for word in words:
            at = plain.find(word[0], cursor, min(reach, len(plain)))
            if at < 0:
                continue
            if shift is None:
                reach = at + len(line) + SLACK_CHARS + len(word[0])  # the next line starts within this line's reach
            if at - word.start() != shift:
                anchors.append((at, number, word.start() + 1))
                shift = at - word.start()
            cursor = at + 1
    return tuple(anchors)


def _first(line: str) -> list[re.Match[str]]:
    found = _WORD.search(line)
    return [found] if found is not None else []


def line_and_column(anchors: Sequence[Anchor], offset: int) -> tuple[int, int] | None:
    """The file line and column of a plain-text offset; None when no line is known."""
    index = bisect_right(anchors, (offset, 1 << 62, 1 << 62)) - 1
    if index < 0:
        return (anchors[0][1], anchors[0][2]) if anchors else None
    at, line, column = anchors[index]
    return line, column + (offset - at)


def heading_path(sections: Sequence[tuple[int, int, str]], offset: int) -> tuple[str, ...]:
    """The headings a plain-text offset sits under, outermost first (["Projets", "DORA"])."""
    path: list[tuple[int, str]] = []
    for at, level, heading in sections:
        if at > offset:
            break
        while path and path[-1][0] >= level:
            path.pop()
        path.append((level, heading))
    return tuple(heading for _, heading in path)
