"""Where in a note's file a place of its plain text is: the line and column
as saved (frontmatter included, so that `path:line` opens at the right place
in any editor), and the headings it sits under. Pure: no I/O.

The plain text (notes/markdown.py) drops markup but keeps the words in order,
so each line of the body is tied to the plain text by its first word, found
just after where the previous line's was (a line's markup cannot move its
words past the next line's). A line whose first word the plain text does not
hold (a wiki-link shown by its alias, a table rule) gets no anchor; a place
takes the line of the nearest anchor before it.

Linear in the note (issue 28). A search that finds nothing leaves the window
of the next one where it was, so the words of a thousand lines after a long
one were each looked for across all of it (6.7 s for 16,000 lines of
`[[zz|yy]]` after a line of 160,000 characters: 4x the note, 20x the time),
and the words of a line of `[[zz|..]]` links each across the whole line
before them (17.8 s at 320,000 characters). Such searches share a budget, a
multiple of the note's length that the notes we measured stay well within
(3.8x at most, 707 Markdown files: docs, changelogs, references); past it,
each looks only where the word would be had at most SLACK_CHARS of markup been
removed before it. And each run of markup looked for the next word up to the
end of its line, which for `[ [ [ … fin` is every run the same word, read up
to again (36.9 s at 80,000 characters): a run before the word the previous
run found is skipped, which changes no anchor.
"""

from __future__ import annotations

import re
from array import array
from bisect import bisect_right
from collections.abc import Sequence

_WORD = re.compile(r"\w{2,}")
# A line's first word: the start of a line, anything but a word on it, the word.
_FIRST_WORD = re.compile(r"^[^\n]*?(\w{2,})", re.M)
# Characters of the markup notes/markdown.py removes or rewrites inside a line.
_MARKUP = re.compile(r"[\[\]*_`<>=~|!(#%$]+")
# How far past the previous line's length the next line's first word may be
# found: what markup removal and block spacing may leave between them.
SLACK_CHARS = 200
# What the searches that find nothing may read in all: this many characters
# per character of the body and of the plain text, and MISSED_SEARCH_CHARS more.
MISSED_SEARCH_FACTOR = 32
MISSED_SEARCH_CHARS = 1_000_000

Anchor = tuple[int, int, int]  # (offset in the plain text, 1-based line, 1-based column) of a line's first word


def line_anchors(body: str, plain: str, first_line: int) -> tuple[Anchor, ...]:
    """Anchors of the body's lines, in order; `first_line`: the file line the body starts on.

    A line of prose gets one anchor, its first word; a line with markup gets
    one more after each run of markup characters that shifts the words
    (`[[Cible|alias]] des prestataires`), so that columns stay exact after it.
    One pass of one expression over the body finds each line's first word
    (a split and a search per line cost a quarter of a note's parse)."""
    anchors: list[Anchor] = []
    cursor, reach, number, counted = 0, len(plain), first_line, 0
    budget = MISSED_SEARCH_FACTOR * (len(body) + len(plain)) + MISSED_SEARCH_CHARS
    for first in _FIRST_WORD.finditer(body):
        start = first.start()
        number += body.count("\n", counted, start)
        counted = start
        end = body.find("\n", start)
        end = len(body) if end < 0 else end
        word, column = first[1], first.start(1) - start
        high = min(reach, len(plain))
        low = cursor if budget > 0 else max(cursor, high - SLACK_CHARS - len(word))
        at = plain.find(word, low, high)
        if at < 0:
            budget -= max(0, high - low)
            continue
        anchors.append((at, number, column + 1))
        shift, cursor = at - column, at + 1
        reach = at + (end - start) + SLACK_CHARS + len(word)  # the next line starts within this line's reach
        following_start = -1
        for markup in _MARKUP.finditer(body, first.end(1), end):
            if markup.end() <= following_start:
                continue  # no word before the one this run would find again
            following = _WORD.search(body, markup.end(), end)
            if following is None:
                break
            following_start = following.start()
            column = following_start - start
            # Markup only ever shortens a line: the word is at most where the
            # current shift puts it (a wiki-link's target, shown by its alias, is not found).
            high = column + shift + len(following[0])
            low = cursor if budget > 0 else max(cursor, high - SLACK_CHARS - len(following[0]))
            found = plain.find(following[0], low, high)
            if found < 0:
                budget -= max(0, high - low)
                continue
            if found - column != shift:
                anchors.append((found, number, column + 1))
                shift = found - column
            cursor = found + 1
    return tuple(anchors)


def pack(anchors: Sequence[Anchor]) -> bytes:
    """Anchors as stored with the note: flat unsigned 32-bit integers, read in
    place at query time (a tuple per line made every hit's decode slower)."""
    return array("I", [value for anchor in anchors for value in anchor]).tobytes()


def unpack(packed: bytes) -> array[int]:
    values = array("I")
    values.frombytes(packed)
    return values


def line_and_column(flat: array[int], offset: int) -> tuple[int, int] | None:
    """The file line and column of a plain-text offset (`flat`: the anchors as
    `unpack` reads them); None when no line is known."""
    if not flat:
        return None
    index = max(bisect_right(flat[0::3], offset) - 1, 0)
    at, line, column = flat[3 * index], flat[3 * index + 1], flat[3 * index + 2]
    return line, column + max(offset - at, 0)


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
