"""Where in a note's file a place of its plain text is: the line and column
as saved (frontmatter included, so that `path:line` opens at the right place
in any editor), and the headings it sits under. Pure: no I/O.

The plain text (notes/markdown.py) drops markup but keeps the words in order,
so each line of the body is tied to the plain text by its first word shown
(not a list's number, a callout's `[!type]`, an HTML tag's name, a wiki-link's
target before its alias, a code fence's info string; outside fenced code),
found as a whole word followed by the rest of its line, after the text the
previous line is seen to hold as is (a line's markup cannot move its words
past the next line's); a place where the word is not followed so is taken
only near where the line should start, so that a comment's words are not
tied to the same words further on. A line with no word found (a table rule,
a comment) gets no anchor; a place takes the line of the nearest anchor
before it. Of the words of 1,500 Markdown files on this machine (240,000),
97.4 % are placed on their own line and column (81.5 % when each line's
first word was found anywhere after the previous one's: `qu'on` in the
previous line's `qui`).

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
# A line's first word: the start of a line, the line prefix notes/markdown.py
# drops (blanks, `>` quote markers, a list marker and its checkbox, an ordered
# list's number) and a callout's `[!type]`, as one atomic group (no backtracking
# into it: a long line of blanks with no word is read once), then anything but
# a word, then the word. The list number `10.` and the callout's type are not
# in the plain text: taken for a line's first word, they were found elsewhere.
_FIRST_WORD = re.compile(
    r"^(?>[ \t]*(?:>[ \t]?)*(?:[-*+][ \t]+\[[ xX]\][ \t]+|[-*+][ \t]+|\d+[.)][ \t]+)?(?:\[!\w+\][+-]?)?)"
    r"[^\n]*?(\w{2,})",
    re.M,
)
# Characters of the markup notes/markdown.py removes or rewrites inside a line.
_MARKUP = re.compile(r"[\[\]*_`<>=~|!(#%$]+")
# Words a line holds and the plain text does not show: an HTML tag's (as
# notes/markdown.py drops tags), a wiki-link's target when it has an alias.
_TAG = re.compile(r"</?[A-Za-z][A-Za-z0-9-]*(?:\s[^<>\n]*)?/?>")
_WIKILINK = re.compile(r"!?\[\[([^\[\]\n]+?)\]\]")
# A code fence's line: its info string (```` ```js ````) is not shown.
_FENCE = re.compile(r" {0,3}(?:`{3}|~{3})")
# A fenced code block, as notes/markdown.py finds them: its text is shown as is, tags and links too.
_CODE_BLOCK = re.compile(r"^ {0,3}(`{3,}|~{3,})[^\n]*\n?(.*?)(?:^ {0,3}\1[`~]*[ \t]*$|\Z)", re.M | re.S)
# Where the words a line shows may start when its first word is not found
# anyway: after a `|` or a `>`.
_SHOWN_AFTER = re.compile(r"[|>]+")
SHOWN_AFTER_TRIES = 3  # such places tried per line
# How far past the previous line's length the next line's first word may be
# found: what markup removal and block spacing may leave between them.
SLACK_CHARS = 200
# What the searches that find nothing may read in all: this many characters
# per character of the body and of the plain text, and MISSED_SEARCH_CHARS more.
MISSED_SEARCH_FACTOR = 32
MISSED_SEARCH_CHARS = 1_000_000
# How much of the text that follows a word on its line must follow it in the
# plain text too, for a place of the word there to be taken before the others.
CONFIRM_CHARS = 40

Anchor = tuple[int, int, int]  # (offset in the plain text, 1-based line, 1-based column) of a line's first word


def line_anchors(body: str, plain: str, first_line: int) -> tuple[Anchor, ...]:
    """Anchors of the body's lines, in order; `first_line`: the file line the body starts on.

    A line of prose gets one anchor, its first word; a line with markup gets
    one more after each run of markup characters that shifts the words
    (`[[Cible|alias]] des prestataires`), so that columns stay exact after it.
    One pass of one expression over the body finds each line's first word
    (a split and a search per line cost a quarter of a note's parse).

    A word is taken where the plain text holds it as a whole word followed by
    what follows it on its line (`_find_word`), and the next line is looked
    for after the text the plain text is seen to hold verbatim: the `qu` of a
    wrapped line's `qu'on` was found in the previous line's `qui`, and all its
    words reported 53 columns off."""
    anchors: list[Anchor] = []
    cursor, reach, number, counted = 0, len(plain), first_line, 0
    budget = MISSED_SEARCH_FACTOR * (len(body) + len(plain)) + MISSED_SEARCH_CHARS
    fenced = "```" in body or "~~~" in body
    blocks = [(found.start(), found.end()) for found in _CODE_BLOCK.finditer(body)] if fenced else []
    block = 0
    for first in _FIRST_WORD.finditer(body):
        start = first.start()
        number += body.count("\n", counted, start)
        counted = start
        end = body.find("\n", start)
        end = len(body) if end < 0 else end
        if _FENCE.match(body, start):
            continue
        while block < len(blocks) and blocks[block][1] <= start:
            block += 1
        code = block < len(blocks) and blocks[block][0] <= start
        word, word_start = first[1], first.start(1)
        hidden = -1 if code else _hidden_end(body, word_start, end, start)
        if hidden >= 0:
            shown = _shown_word(body, hidden, end, hidden, code)
            if shown is None:
                continue
            word, word_start = shown[0], shown.start()
        high = min(reach, len(plain))
        at, tries, after = -1, SHOWN_AFTER_TRIES, word_start
        while True:
            low = cursor if budget > 0 else max(cursor, high - SLACK_CHARS - len(word))
            near = max(low, cursor) + SLACK_CHARS + word_start - start  # where the line should start
            at, cost = _find_word(plain, body, word, word_start, end, low, high, near)
            budget -= cost
            if at >= 0 or tries == 0:
                break
            # Not shown (a wiki-link's target, an HTML tag): the words after its `|` or `>` may be.
            shown = _SHOWN_AFTER.search(body, after, end)
            following = _WORD.search(body, shown.end(), end) if shown is not None else None
            if following is None:
                break
            word, word_start, after, tries = following[0], following.start(), following.end(), tries - 1
        if at < 0:
            continue
        column = word_start - start
        anchors.append((at, number, column + 1))
        shift, cursor = at - column, _after_verbatim(body, plain, word_start, end, at, len(word))
        reach = at + (end - start) + SLACK_CHARS + len(word)  # the next line starts within this line's reach
        following_start = -1
        for markup in _MARKUP.finditer(body, word_start + len(word), end):
            if markup.end() <= following_start:
                continue  # no word before the one this run would find again
            following = _shown_word(body, markup.end(), end, markup.start(), code)
            if following is None:
                break
            following_start = following.start()
            column = following_start - start
            # Markup only ever shortens a line: the word is at most where the
            # current shift puts it (a wiki-link's target, shown by its alias, is not found).
            high = column + shift + len(following[0])
            low = cursor if budget > 0 else max(cursor, high - SLACK_CHARS - len(following[0]))
            found, cost = _find_word(plain, body, following[0], following_start, end, low, high, high)
            budget -= cost
            if found < 0:
                continue
            if found - column != shift:
                anchors.append((found, number, column + 1))
                shift = found - column
            cursor = _after_verbatim(body, plain, following_start, end, found, len(following[0]))
    return tuple(anchors)


def _shown_word(body: str, pos: int, end: int, since: int, code: bool) -> re.Match[str] | None:
    """The first word of body[pos:end] that the plain text shows (`since`:
    where the text before it that may open a tag starts; `code`: the line is
    in a fenced code block, shown as is)."""
    while (word := _WORD.search(body, pos, end)) is not None:
        hidden = -1 if code else _hidden_end(body, word.start(), end, since)
        if hidden < 0:
            return word
        pos = since = hidden
    return None


def _hidden_end(body: str, start: int, end: int, since: int) -> int:
    """Where the text the word at `start` belongs to and the plain text does
    not show ends: an HTML tag (`<processor>`, the word found further on as
    "microprocessor"; `<i id="x">`) opened in body[since:start], a wiki-link's
    target before its alias (to just after the `|`); -1 when the word is
    shown. Each pattern stops at the next bracket or line end: linear."""
    opening = body.rfind("<", since, start)
    if opening >= 0:
        tag = _TAG.match(body, opening, end)
        if tag is not None and tag.end() > start:
            return tag.end()
    if start > 1 and body.startswith("[[", start - 2):
        link = _WIKILINK.match(body, start - 2, end)
        if link is not None and "|" in link[1]:
            return link.start(1) + link[1].index("|") + 1
    return -1


def _find_word(
    plain: str, body: str, word: str, word_start: int, line_end: int, low: int, high: int, near: int
) -> tuple[int, int]:
    """Where in plain[low:high] the body's word at `word_start` is, and what
    the search read past that place (charged to the budget of missed searches).

    The first place where the plain text goes on as the line does (up to
    CONFIRM_CHARS, or the next markup), else, before `near`, the first where
    the word is whole, else the first where it starts a word, else the first
    at all (a word the markup glues to another: `[[chat]]s` is "chats"). A
    word the plain text does not hold (in a comment) is thus not taken for
    the same word further on. Each place is checked in constant time, so the
    search reads the window once."""
    size = len(word)
    found = plain.find(word, low, high)
    if found < 0:
        return -1, max(0, high - low)
    markup = _MARKUP.search(body, word_start + size, min(line_end, word_start + CONFIRM_CHARS))
    confirm = body[word_start : markup.start() if markup is not None else min(line_end, word_start + CONFIRM_CHARS)]
    confirm = confirm.rstrip()
    best, best_rank = -1, -1
    at = found
    while at >= 0:
        before = at == 0 or not _is_word(plain[at - 1])
        after = at + size == len(plain) or not _is_word(plain[at + size])
        if before and after and plain.startswith(confirm, at):
            return at, 0 if at == found else at - found
        rank = 2 if before and after else 1 if before else 0
        if rank > best_rank and at < near:
            best, best_rank = at, rank
        at = plain.find(word, at + 1, high)
    return best, max(0, high - (found if best >= 0 else low))


def _is_word(char: str) -> bool:
    return char.isalnum() or char == "_"


def _after_verbatim(body: str, plain: str, word_start: int, line_end: int, at: int, size: int) -> int:
    """Where the plain text goes on after the body's text from `word_start`
    to the next markup or the end of its line, when it holds that text as is
    at `at`; else just after the word. A line of prose is held as is: the
    next line is then looked for after it, not in it."""
    markup = _MARKUP.search(body, word_start + size, line_end)
    verbatim = body[word_start : markup.start() if markup is not None else line_end].rstrip()
    return at + len(verbatim) if plain.startswith(verbatim, at) else at + size


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
