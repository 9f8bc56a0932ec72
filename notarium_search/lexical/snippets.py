"""Short highlighted excerpts of a note for a query, cut around its matches
(lexical/word_matches.py), and where in the note's file each one is. Pure: no I/O.
"""

from __future__ import annotations

import html
import re
from array import array
from bisect import bisect_right
from collections.abc import Iterable, Sequence, Set

from msgspec.structs import replace

from notarium_search.lexical.analysis import Analyzers
from notarium_search.lexical.word_matches import (
    MAX_SCAN_CHARS,
    HighlightTerms,
    Match,
    find_matches,
    find_matches_bounded,
    fold,
    is_query,
)
from notarium_search.notes.location import heading_path, line_and_column, unpack
from notarium_search.types import Snippet, TextRange

SNIPPET_CHARS = 200  # long enough for a sentence of context, short enough for a list
LEAD_CHARS = 60  # context kept before the first match of a window
MAX_SNIPPETS = 3
ELLIPSIS = "…"
MAX_LATE_HEADINGS = 4_096  # headings past MAX_SCAN_CHARS compared with the query (a heading typed as is)
PHRASE_GAP_CHARS = 40  # at most this much between two words of the phrase (stop words, punctuation)
_HTML_SPECIAL = re.compile("[&<>\"']")  # what html.escape replaces


def make_snippets(
    text: str,
    terms: HighlightTerms,
    analyzers: Analyzers,
    limit: int = MAX_SNIPPETS,
    fallback: str = "",
    sections: Sequence[tuple[int, int, str]] = (),
) -> tuple[Snippet, ...]:
    """Up to `limit` non-overlapping excerpts, best first; the note's opening
    lines when nothing matches (a title or fuzzy hit). `fallback` (the note's
    title) stands in for a blank text, so that a note with a title and no body
    still gets a snippet; none only when both are blank.

    `sections` (the note's, as notes/markdown.py finds them): the first
    excerpt is then in the section the query matches best (`_Sections`), and
    each excerpt starts within the section of its first match."""
    if not text or text.isspace():  # isspace stops at the first letter: no cost for a real note
        title = fallback.strip()
        # The title stands in: no place in the body to point at.
        return tuple(replace(s, at=-1) for s in _excerpts(title, terms, analyzers, limit)) if title else ()
    return _excerpts(text, terms, analyzers, limit, sections)


def _excerpts(
    text: str,
    terms: HighlightTerms,
    analyzers: Analyzers,
    limit: int,
    sections: Sequence[tuple[int, int, str]] = (),
) -> tuple[Snippet, ...]:
    matches, complete = find_matches_bounded(text, terms, analyzers)
    within = _Sections.of(text, sections, matches, complete, terms, analyzers) if sections else None
    if within is not None:
        matches = within.matches
    if not matches:
        return (_render(text, 0, _cut_end(text, SNIPPET_CHARS), []),)
    windows: list[tuple[int, int]] = []
    for start, end in _rank_windows(text, matches, within):
        if len(windows) >= limit:
            break
        if all(end <= s or start >= e for s, e in windows):
            windows.append((start, end))
    return tuple(_render(text, s, e, [m for m in matches if m.start >= s and m.end <= e]) for s, e in windows)


class _Sections:
    """Where a note's matches lie among its sections, and how well each
    section matches the query: where a hit opens.

    A section runs from its heading (a line of the plain text) to the next
    heading of any level. Best first: a section whose heading is the query
    (case, accents and punctuation aside; the last word may be unfinished),
    then the most distinct query words (its own heading's and those of the
    headings it sits under count), then the most of them in those headings,
    then the longest run of the query's words in order with nothing but its
    stop words between (the phrase), then the earliest. Linear: one pass
    over the headings, each compared with the query only when the matches
    may have missed its words (past MAX_MATCHES, or past MAX_SCAN_CHARS: at
    most MAX_LATE_HEADINGS of those; its words are then added to the
    matches), else only those holding a match."""

    __slots__ = ("matches", "rank", "starts")

    def __init__(self, matches: list[Match], starts: list[int], rank: dict[int, tuple[int, ...]]) -> None:
        self.matches = matches  # the note's matches, with those of headings equal to the query
        self.starts = starts  # each section's offset; a match before the first heading is in none (-1)
        self.rank = rank  # per section holding a match (-1: before the first heading): lower is better

    def of_match(self, offset: int) -> int:
        return bisect_right(self.starts, offset) - 1

    def start(self, section: int) -> int:
        return self.starts[section] if section >= 0 else 0

    @classmethod
    def of(
        cls,
        text: str,
        sections: Sequence[tuple[int, int, str]],
        matches: list[Match],
        complete: bool,
        terms: HighlightTerms,
        analyzers: Analyzers,
    ) -> _Sections:
        """`complete`: `matches` are every match within MAX_SCAN_CHARS, so a
        heading equal to the query holds some (its words): only those are read."""
        scanned = min(len(text), MAX_SCAN_CHARS)
        starts: list[int] = []
        levels: list[int] = []
        equal: set[int] = set()
        extra: list[Match] = []
        shortest = sum(map(len, terms.words))  # a heading shorter than the query's letters is not it
        late = 0  # headings past MAX_SCAN_CHARS compared with the query
        for at, level, heading in sections:
            if at >= scanned:
                late += 1
                if late > MAX_LATE_HEADINGS:
                    break
            if (not complete or at >= scanned) and len(heading) >= shortest and is_query(heading, terms, analyzers):
                equal.add(len(starts))
                if not any(at <= m.start < at + len(heading) for m in matches):
                    # Past MAX_MATCHES: the heading's own words, found in it alone.
                    extra += (Match(m.start + at, m.end + at, m.key) for m in find_matches(heading, terms, analyzers))
            starts.append(at)
            levels.append(level)
        if complete:  # the headings holding a match
            for section in {bisect_right(starts, m.start) - 1 for m in matches} - {-1}:
                heading = sections[section][2]
                if len(heading) >= shortest and is_query(heading, terms, analyzers):
                    equal.add(section)
        if extra:
            matches = sorted({m.start: m for m in (*matches, *extra)}.values())
        # Per section holding matches (-1: before the first heading): its keys, its heading's, its longest phrase.
        own: dict[int, set[str]] = {}
        heading_keys: dict[int, set[str]] = {}
        runs: dict[int, int] = {}
        significant = [k for k in terms.keys if k is not None]
        order = {k: i for i, k in reversed(list(enumerate(significant)))}
        between = frozenset(w for w, k in zip(terms.words, terms.keys, strict=True) if k is None)
        run, previous, previous_section = 0, None, None
        for match in matches:
            section = bisect_right(starts, match.start) - 1
            own.setdefault(section, set()).add(match.key)
            if section >= 0 and match.start < starts[section] + len(sections[section][2]):
                heading_keys.setdefault(section, set()).add(match.key)
            follows = (
                previous is not None
                and previous_section == section
                and order.get(match.key) == order.get(previous.key, -2) + 1
                and _only_words_between(text, previous.end, match.start, between)
            )
            run = run + 1 if follows else 1
            runs[section] = max(runs.get(section, 0), run)
            previous, previous_section = match, section

        def phrase(section: int) -> int:
            return -runs[section] if runs[section] > 1 else 0

        rank: dict[int, tuple[int, ...]] = {}
        if -1 in own:
            rank[-1] = (1, -len(own[-1]), 0, phrase(-1), -1)
        # The keys of the headings each section sits under, by a stack of levels.
        stack: list[tuple[int, frozenset[str]]] = []
        none: frozenset[str] = frozenset()
        for index, level in enumerate(levels):
            while stack and stack[-1][0] >= level:
                stack.pop()
            above = stack[-1][1] if stack else none
            mine = above | heading_keys[index] if index in heading_keys else above
            stack.append((level, mine))
            if index in own:
                words = len(own[index] | above) if above else len(own[index])
                rank[index] = (0 if index in equal else 1, -words, -len(mine), phrase(index), index)
        return cls(matches, starts, rank)


def _only_words_between(text: str, start: int, end: int, words: Set[str]) -> bool:
    """Whether text[start:end] holds nothing but separators and these words (the query's stop words)."""
    if end - start > PHRASE_GAP_CHARS:
        return False
    return all(word in words for word in fold(text[start:end]).split())


def _rank_windows(text: str, matches: list[Match], within: _Sections | None = None) -> Iterable[tuple[int, int]]:
    """A window opens LEAD_CHARS before each match (not before its section);
    best first: in the best section (`_Sections`), then most distinct terms,
    then most matches, then earliest. Window ends only move forward, so the
    matches inside are counted with two pointers, in linear time."""
    scored = []
    inside: dict[str, int] = {}  # key → count, for matches[i:j]: the ones in the current window
    j = 0
    count = len(matches)
    for i, (first_start, _, first_key) in enumerate(matches):
        start = _cut_start(text, first_start - LEAD_CHARS)
        rank: tuple[int, ...] = ()
        if within is not None:
            section = within.of_match(first_start)
            start = max(start, within.start(section))
            rank = within.rank[section]
        end = _cut_end(text, start + SNIPPET_CHARS)
        if j < i:
            j = i
        while j < count and matches[j].end <= end:
            key = matches[j].key
            inside[key] = inside.get(key, 0) + 1
            j += 1
        scored.append((rank, -len(inside), i - j, first_start, start, end))
        if j > i:  # the first match leaves the window before the next one opens
            left = inside.pop(first_key) - 1
            if left:
                inside[first_key] = left
    scored.sort()
    return (entry[4:] for entry in scored)  # (start, end)


def _cut_start(text: str, pos: int) -> int:
    """Move a window start forward to a word boundary (or keep a sentence start)."""
    if pos <= 0:
        return 0
    space = text.find(" ", pos, pos + 30)
    return space + 1 if space != -1 else pos


def _cut_end(text: str, pos: int) -> int:
    if pos >= len(text):
        return len(text)
    space = text.rfind(" ", pos - 40, pos)
    return space if space != -1 else pos


def _render(text: str, start: int, end: int, matches: list[Match]) -> Snippet:
    body = text[start:end].replace("\n", " ")
    lead = ELLIPSIS if start > 0 else ""
    tail = ELLIPSIS if end < len(text) else ""
    shift = len(lead) - start
    ranges = tuple(TextRange(m.start + shift, m.end + shift) for m in matches)
    snippet_text = lead + body + tail
    at = matches[0].start if matches else start
    return Snippet(text=snippet_text, highlights=ranges, html=highlight_html(snippet_text, ranges), at=at)


def located(
    snippets: Iterable[Snippet], sections: Sequence[tuple[int, int, str]], packed_lines: bytes
) -> tuple[Snippet, ...]:
    """The snippets with where they are in the note's file: the headings they
    sit under, the line and column of their first highlight (notes/location.py;
    `packed_lines` as the payload stores them, decoded only here)."""
    snippets = tuple(snippets)
    if all(snippet.at < 0 for snippet in snippets):
        return snippets
    lines = unpack(packed_lines)
    return tuple(_located(snippet, sections, lines) for snippet in snippets)


def _located(snippet: Snippet, sections: Sequence[tuple[int, int, str]], lines: array[int]) -> Snippet:
    if snippet.at < 0:
        return snippet
    where = line_and_column(lines, snippet.at)
    line, column = where if where is not None else (None, None)
    # A new Snippet rather than a replace: this runs for every snippet shown (dataclasses.replace was 4 % of a search).
    heading = heading_path(sections, snippet.at)
    return Snippet(snippet.text, snippet.highlights, snippet.html, snippet.at, heading, line, column)


def highlight_html(text: str, ranges: Iterable[TextRange]) -> str:
    """Escaped text in which only our `<mark>` tags are markup."""
    escape = html.escape if _HTML_SPECIAL.search(text) else str  # most snippets need no escaping
    parts: list[str] = []
    pos = 0
    for r in sorted(ranges, key=lambda r: r.start):
        if r.start < pos:
            continue
        parts.append(escape(text[pos : r.start]))
        parts.append("<mark>" + escape(text[r.start : r.end]) + "</mark>")
        pos = r.end
    parts.append(escape(text[pos:]))
    return "".join(parts)
