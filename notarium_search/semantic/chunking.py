"""Notes → fragments for embedding. Pure: no I/O.

A fragment is a contiguous span of the note's plain text: paragraphs packed
up to a target size, with some overlap so that an idea cut at a boundary is
whole in one of the two fragments. Long paragraphs are split at sentence
ends, then at word boundaries; fenced code blocks are never split. The note
title (in a Zettelkasten note, its claim) and the heading path are prepended
to the embedded text so that short, oblique queries reach the note's thesis.

Changing any constant here changes `CHUNKING_FINGERPRINT`, which forces the
vectors to be rebuilt: never mix fragments cut two ways.

Linear in the note's text (issue 28): what each paragraph, window or
fragment needs of the code blocks, the spans or the headings is found by a
binary search over them in order, not by a walk through all of them (a note
of 20,000 code blocks took 1.0 s, a quarter of it 0.08 s); a run of sentence
ends is tried from its first character only (from each, a run of 100,000 dots
was read again to its end: minutes).
"""

from __future__ import annotations

import hashlib
import itertools
import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass

from notarium_search.settings import CHUNKING_MODES, PAGE_CHUNKING
from notarium_search.types import Fragment, ParsedNote

TARGET_CHARS = 1000  # ~250 tokens: well inside every model's window, one idea or two
OVERLAP_CHARS = 200  # carried from the end of a fragment into the next
LONG_PARAGRAPH_CHARS = 1500  # a paragraph longer than this is split at sentence ends
MIN_FRAGMENT_CHARS = 10  # shorter pieces ("Voir aussi", "---") carry no meaning
SECTION_BREAK_CHARS = 200  # a heading closes the current fragment once it holds this much
HEADING_SEPARATOR = " > "
# The headings line of the embedded text is cut here. A heading is as long as
# its line, and every fragment under it carried it whole: a note whose heading
# held a quarter of its million characters hashed 200 MB for its 813 fragments
# (0.38 s; 4x the note, 10x the time). Left out of CHUNKING_FINGERPRINT: the
# fragments are cut as before, and a model reads a few hundred tokens of the
# embedded text, so headings longer than this never let it see the fragment.
MAX_HEADINGS_CHARS = 1000
PARAGRAPH, SECTION = CHUNKING_MODES

SECTION_LEVEL = 2  # "section" mode cuts at headings of this level or above (#, ##)
CHUNKING_VERSION = 1
CHUNKING_FINGERPRINT = (
    f"chunk-v{CHUNKING_VERSION}-t{TARGET_CHARS}-o{OVERLAP_CHARS}-p{LONG_PARAGRAPH_CHARS}"
    f"-m{MIN_FRAGMENT_CHARS}-s{SECTION_BREAK_CHARS}"
)

_PARAGRAPH_BREAK_RE = re.compile(r"\n\s*\n")
# A run of sentence ends, from its first character only, then the quotes and
# brackets that close the sentence, before a blank or the end. Every start in
# a run reaches the same end, so the lookbehind drops no match; the possessive
# runs give back nothing, which could not have helped either.
_SENTENCE_END_RE = re.compile(r"(?<![.!?؟！。])[.!?؟！。]++[\"»”')\]]*+(?=\s|$)")


@dataclass(frozen=True, slots=True)
class _Span:
    start: int
    end: int
    atomic: bool = False  # a code block: never cut inside


def chunk_note(note: ParsedNote) -> tuple[Fragment, ...]:
    """The note's fragments in text order, without duplicates. `note.chunking`
    is "paragraph" (packed paragraphs, the default), "page" (the same, each
    section closing the fragment before it: a PDF's pages) or "section" (one fragment
    per `##` section: long documents such as books, where a section is the
    unit a reader looks for; the model reads its first max_tokens)."""
    text = note.text
    if note.chunking == SECTION:
        windows = _sections(note)
    else:
        spans = [piece for span in _paragraphs(text, note.code_blocks) for piece in _split_long(text, span)]
        # A PDF's page is a section that always closes the fragment before it, however short.
        fresh = 0 if note.chunking == PAGE_CHUNKING else SECTION_BREAK_CHARS
        windows = _pack(text, spans, {at for at, _, _ in note.sections}, fresh)
    paths = _HeadingPaths(note.sections)
    fragments: dict[str, Fragment] = {}
    for start, end in windows:
        body = text[start:end].strip()
        if len(body) < MIN_FRAGMENT_CHARS:
            continue
        embed_text = _embed_text(note, paths.at(start), body)
        fragment_id = fragment_digest(note.id, embed_text)
        fragments.setdefault(
            fragment_id, Fragment(fragment_id, key_of(fragment_id), note.id, start, end, body, embed_text)
        )
    return tuple(fragments.values())


def _sections(note: ParsedNote) -> list[tuple[int, int]]:
    """[start, end) of the text before the first `#`/`##` heading, then of each
    such section (deeper headings stay inside their section)."""
    cuts = [at for at, level, _ in note.sections if level <= SECTION_LEVEL and at > 0]
    bounds = [0, *dict.fromkeys(cuts), len(note.text)]
    return [(a, b) for a, b in itertools.pairwise(bounds) if b > a]


def fragment_digest(note_id: str, embed_text: str) -> str:
    """Stable id: the same note and the same embedded text (context included,
    so a renamed title re-embeds) always give the same id."""
    return hashlib.blake2b(f"{note_id}\0{embed_text}".encode(), digest_size=16).hexdigest()


def key_of(fragment_id: str) -> int:
    """A uint64 vector key from the id (the first 8 bytes of the digest)."""
    return int(fragment_id[:16], 16)


def _paragraphs(text: str, code_blocks: tuple[tuple[int, int], ...]) -> list[_Span]:
    """Paragraph spans; a code block (blank lines inside included) is one atomic span.
    `code_blocks` in order, apart (as notes/markdown.py gives them)."""
    starts = [start for start, _ in code_blocks]
    ends = [end for _, end in code_blocks]
    spans: list[_Span] = []
    pos = 0
    for match in _PARAGRAPH_BREAK_RE.finditer(text):
        block = bisect_left(starts, match.start()) - 1  # the last block starting before the break
        if block >= 0 and match.start() < ends[block]:
            continue  # a blank line inside a code block is not a paragraph break
        spans.append(_Span(pos, match.start()))
        pos = match.end()
    spans.append(_Span(pos, len(text)))
    atomic = []
    for s in spans:
        if s.end > s.start:
            block = bisect_right(ends, s.start)  # the first block ending after the span starts
            atomic.append(_Span(s.start, s.end, block < len(starts) and starts[block] < s.end))
    return atomic


def _split_long(text: str, span: _Span) -> list[_Span]:
    if span.atomic or span.end - span.start <= LONG_PARAGRAPH_CHARS:
        return [span]
    pieces: list[_Span] = []
    pos = span.start
    for match in _SENTENCE_END_RE.finditer(text, span.start, span.end):
        if match.end() - pos >= MIN_FRAGMENT_CHARS:
            pieces.extend(_split_words(text, _Span(pos, match.end())))
            pos = match.end()
    if span.end > pos:
        pieces.extend(_split_words(text, _Span(pos, span.end)))
    return pieces


def _split_words(text: str, span: _Span) -> list[_Span]:
    """A sentence longer than the target is cut at the last space before it."""
    pieces: list[_Span] = []
    pos = span.start
    while span.end - pos > TARGET_CHARS:
        cut = text.rfind(" ", pos + TARGET_CHARS // 2, pos + TARGET_CHARS)
        cut = cut if cut != -1 else pos + TARGET_CHARS
        pieces.append(_Span(pos, cut))
        pos = cut
    pieces.append(_Span(pos, span.end))
    return pieces


def _pack(text: str, spans: list[_Span], headings: set[int], fresh: int = SECTION_BREAK_CHARS) -> list[tuple[int, int]]:
    """Greedy packing into ~TARGET_CHARS windows; each window after the first
    starts OVERLAP_CHARS (at a word boundary) before the previous one's end,
    except at a heading once the window holds `fresh` characters, where a new
    topic starts afresh."""
    if not spans:
        return []
    windows: list[tuple[int, int]] = []
    starts = [span.start for span in spans]
    start = spans[0].start
    end = spans[0].end
    for span in spans[1:]:
        new_section = span.start in headings and end - start >= fresh
        if span.end - start <= TARGET_CHARS and not new_section:
            end = span.end
            continue
        windows.append((start, end))
        start = span.start if new_section else _overlap_start(text, spans, starts, start, end, span.start)
        end = span.end
    windows.append((start, end))
    return windows


def _overlap_start(
    text: str, spans: list[_Span], starts: list[int], previous_start: int, previous_end: int, next_start: int
) -> int:
    """Where the next window starts: about OVERLAP_CHARS back (never before the
    previous window), at a word start, never inside a code block (then the
    next span simply starts fresh). `starts`: the spans' starts, in order."""
    wanted = max(previous_end - OVERLAP_CHARS, previous_start)
    at = bisect_right(starts, wanted) - 1  # the last span starting at or before `wanted`
    if at < 0 or wanted >= spans[at].end or spans[at].atomic:
        return next_start
    space = text.find(" ", wanted, previous_end)
    return space + 1 if space != -1 and space + 1 < previous_end else next_start


class _HeadingPaths:
    """The headings in force at each offset of a note's text: those of the
    sections up to the first that starts after it."""

    def __init__(self, sections: tuple[tuple[int, int, str], ...]) -> None:
        self._reach: list[int] = []  # the furthest start among the sections up to each
        self._paths: list[list[str]] = []
        path: list[str] = []
        for at, level, heading in sections:
            path = [*path[: level - 1], heading]
            self._reach.append(max(at, self._reach[-1]) if self._reach else at)
            self._paths.append(path)

    def at(self, offset: int) -> list[str]:
        count = bisect_right(self._reach, offset)  # the sections before the first starting after `offset`
        return self._paths[count - 1] if count else []


def _embed_text(note: ParsedNote, path: list[str], body: str) -> str:
    """ "Title\nH1 > H2\nbody": the title, the headings in force (`path`),
    then the fragment, without repeating what the fragment already opens with."""
    path = [h for h in path if h and h != note.title]
    if path and body.startswith(path[-1]):
        path.pop()
    lines = [] if body.startswith(note.title) else [note.title]
    if path:
        lines.append(HEADING_SEPARATOR.join(h[:MAX_HEADINGS_CHARS] for h in path)[:MAX_HEADINGS_CHARS])
    return "\n".join([*lines, body])
