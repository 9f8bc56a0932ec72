"""Short highlighted excerpts of a note for a query. Pure: no I/O.

Matches are found with the same analyzers as the index, so a query for
`interopérabilité` highlights `Interoperabilites`. Offsets come from
`pre_tokenize` in code points (Python string indices), never from Tantivy's
UTF-8 byte ranges, so accents cannot shift a highlight.
"""

from __future__ import annotations

import functools
import html
import re
import unicodedata
from collections.abc import Iterable
from dataclasses import dataclass

from notarium_search.analysis import Analyzers
from notarium_search.lexical.query import QueryPlan
from notarium_search.models import Snippet, TextRange

SNIPPET_CHARS = 200  # long enough for a sentence of context, short enough for a list
LEAD_CHARS = 60  # context kept before the first match of a window
MAX_SNIPPETS = 3
MAX_SCAN_CHARS = 200_000  # a huge note is only searched for highlights this far
ELLIPSIS = "…"
MAX_WINDOW_STARTS = 200  # candidate windows: enough for any real note, bounded for pathological ones


@dataclass(frozen=True, slots=True)
class _Match:
    start: int
    end: int
    key: str  # which query term matched, to reward windows with distinct terms


@dataclass(frozen=True, slots=True)
class HighlightTerms:
    """What to highlight for one query, computed once and used for every hit."""

    stems: frozenset[str]
    loose: frozenset[str]  # plain forms matched at edit distance <= 1 (typos, stop-word queries)
    prefix: str | None  # the word being typed, matched as a prefix of plain forms
    prefix_stem: str | None

    @classmethod
    def from_plan(cls, plan: QueryPlan, absent_stems: set[str]) -> HighlightTerms:
        """`absent_stems`: query stems that occur in no note (likely typos)."""
        if plan.stop_words_only:
            loose = frozenset(t.plain for t in plan.positive)
        else:
            loose = frozenset(t.plain for t in plan.positive if t.stem in absent_stems and len(t.plain) >= 5)
        # The last word counts as unfinished only if no note contains it whole.
        typing = plan.prefix is not None and (plan.prefix.stem is None or plan.prefix.stem in absent_stems)
        return cls(
            stems=frozenset(t.stem for u in plan.units if not u.excluded for t in u.terms if t.stem),
            loose=loose,
            prefix=plan.prefix.plain if typing and plan.prefix is not None else None,
            prefix_stem=plan.prefix.stem if typing and plan.prefix is not None else None,
        )


def make_snippets(
    text: str, terms: HighlightTerms, analyzers: Analyzers, limit: int = MAX_SNIPPETS
) -> tuple[Snippet, ...]:
    """Up to `limit` non-overlapping excerpts, best first; the note's opening
    lines when nothing matches (a title or fuzzy hit)."""
    if not text:
        return ()
    matches = find_matches(text[:MAX_SCAN_CHARS], terms, analyzers)
    if not matches:
        return (_render(text, 0, _cut_end(text, SNIPPET_CHARS), []),)
    windows: list[tuple[int, int]] = []
    for start, end in _rank_windows(text, matches):
        if len(windows) >= limit:
            break
        if all(end <= s or start >= e for s, e in windows):
            windows.append((start, end))
    return tuple(_render(text, s, e, [m for m in matches if m.start >= s and m.end <= e]) for s, e in windows)


def find_matches(text: str, terms: HighlightTerms, analyzers: Analyzers) -> list[_Match]:
    folded = fold(text)
    if len(folded) != len(text):  # a rare case-mapping changed lengths: offsets would shift
        return _find_matches_tokenized(text, terms, analyzers)
    matches: list[_Match] = []
    pattern = _candidates_re(terms.stems)
    if pattern is not None:
        for found in pattern.finditer(folded):
            stems = analyzers.stemmed.analyze(text[found.start() : found.end()])
            if len(stems) == 1 and stems[0] in terms.stems:
                matches.append(_Match(found.start(), found.end(), stems[0]))
    keys = {m.key for m in matches}
    prefix = terms.prefix if terms.prefix is not None and terms.prefix_stem not in keys else None
    if prefix is not None:
        matches.extend(
            _Match(m.start(), m.end(), prefix) for m in re.finditer(rf"(?<!\w){re.escape(prefix)}\w*", folded)
        )
    if terms.loose:
        matches.extend(_loose_matches(text, terms.loose, analyzers, {m.start for m in matches}))
    matches.sort(key=lambda m: m.start)
    return matches


def fold(text: str) -> str:
    """Lowercase and strip accents, one character for one where possible."""
    lowered = text.lower()
    return lowered if lowered.isascii() else lowered.translate(_FOLD_TABLE)


def _build_fold_table() -> dict[int, str]:
    table = {}
    for code in range(0xC0, 0x250):
        base = unicodedata.normalize("NFKD", chr(code))[0]
        if base.isascii() and base.isalpha() and base != chr(code):
            table[code] = base.lower()
    return table


_FOLD_TABLE = _build_fold_table()


@functools.lru_cache(maxsize=256)
def _candidates_re(stems: frozenset[str]) -> re.Pattern[str] | None:
    """Words that may stem to one of `stems`. A Snowball stem is the folded
    word's prefix except, sometimes, for its last letter (happy → happi), so
    candidates start with the stem minus one letter; each is then verified by
    the real analyzer."""
    starts = sorted({stem if len(stem) <= 3 else stem[:-1] for stem in stems}, key=len, reverse=True)
    if not starts:
        return None
    return re.compile(r"(?<!\w)(?:" + "|".join(map(re.escape, starts)) + r")\w*")


def _find_matches_tokenized(text: str, terms: HighlightTerms, analyzers: Analyzers) -> list[_Match]:
    matches = [
        _Match(tok.char_offset_from, tok.char_offset_to, tok.text)
        for tok in analyzers.stemmed.pre_tokenize(text).tokens
        if tok.text in terms.stems
    ]
    loose = terms.loose | ({terms.prefix} if terms.prefix else set())
    matches.extend(_loose_matches(text, frozenset(loose), analyzers, {m.start for m in matches}, terms.prefix))
    matches.sort(key=lambda m: m.start)
    return matches


def _loose_matches(
    text: str, loose: frozenset[str], analyzers: Analyzers, seen: set[int], prefix: str | None = None
) -> list[_Match]:
    """Unstemmed words within one edit of a loose form (typos, stop-word queries)."""
    out = []
    for tok in analyzers.plain.pre_tokenize(text).tokens:
        if tok.char_offset_from in seen:
            continue
        key = _loose_key(tok.text, loose, prefix)
        if key is not None:
            out.append(_Match(tok.char_offset_from, tok.char_offset_to, key))
    return out


def _loose_key(token: str, loose: frozenset[str], prefix: str | None) -> str | None:
    if prefix is not None and token.startswith(prefix):
        return prefix
    if token in loose:
        return token
    for form in loose:
        if abs(len(token) - len(form)) <= 1 and _within_one_edit(token, form):
            return form
    return None


def _within_one_edit(a: str, b: str) -> bool:
    if len(a) > len(b):
        a, b = b, a
    i = 0
    while i < len(a) and a[i] == b[i]:
        i += 1
    if len(a) == len(b):
        return a[i + 1 :] == b[i + 1 :] or (
            i + 1 < len(a) and a[i] == b[i + 1] and a[i + 1] == b[i] and a[i + 2 :] == b[i + 2 :]
        )
    return a[i:] == b[i + 1 :]


def _rank_windows(text: str, matches: list[_Match]) -> Iterable[tuple[int, int]]:
    scored = []
    for i, first in enumerate(matches[:MAX_WINDOW_STARTS]):
        start = _cut_start(text, max(0, first.start - LEAD_CHARS))
        end = _cut_end(text, start + SNIPPET_CHARS)
        inside = []
        for match in matches[i:]:
            if match.end > end:
                break
            inside.append(match)
        distinct = len({m.key for m in inside})
        scored.append((-distinct, -len(inside), first.start, start, end))
    scored.sort()
    return ((start, end) for *_, start, end in scored)


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


def _render(text: str, start: int, end: int, matches: list[_Match]) -> Snippet:
    body = text[start:end].replace("\n", " ")
    lead = ELLIPSIS if start > 0 else ""
    tail = ELLIPSIS if end < len(text) else ""
    shift = len(lead) - start
    ranges = tuple(TextRange(m.start + shift, m.end + shift) for m in matches)
    snippet_text = lead + body + tail
    return Snippet(text=snippet_text, highlights=ranges, html=highlight_html(snippet_text, ranges))


def highlight_html(text: str, ranges: Iterable[TextRange]) -> str:
    """Escaped text in which only our `<mark>` tags are markup."""
    parts: list[str] = []
    pos = 0
    for r in sorted(ranges, key=lambda r: r.start):
        if r.start < pos:
            continue
        parts.append(html.escape(text[pos : r.start]))
        parts.append("<mark>" + html.escape(text[r.start : r.end]) + "</mark>")
        pos = r.end
    parts.append(html.escape(text[pos:]))
    return "".join(parts)
